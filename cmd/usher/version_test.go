package main

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

// buildInfo returns a build-info reader that reports the main module's
// version and the given settings (key, value pairs).
func buildInfo(mainVersion string, settings ...string) func() (*debug.BuildInfo, bool) {
	return func() (*debug.BuildInfo, bool) {
		bi := &debug.BuildInfo{GoVersion: "go1.0", Main: debug.Module{Path: "github.com/usherhq/usher", Version: mainVersion}}
		for i := 0; i+1 < len(settings); i += 2 {
			bi.Settings = append(bi.Settings, debug.BuildSetting{Key: settings[i], Value: settings[i+1]})
		}
		return bi, true
	}
}

func noBuildInfo() (*debug.BuildInfo, bool) { return nil, false }

func TestVersionResolve(t *testing.T) {
	t.Parallel()
	const rev = "0276585ef88ad977c2a3a2ffd2f816a6cda4452c"
	vcs := buildInfo("v0.0.0-20261122011230-0276585ef88a",
		"vcs", "git", "vcs.revision", rev, "vcs.time", "2026-11-22T01:12:30Z", "vcs.modified", "false")
	cases := []struct {
		name                  string
		version, commit, date string
		read                  func() (*debug.BuildInfo, bool)
		want                  versionInfo
	}{
		{"stamped wins over build info", "v0.3.0", "abc1234", "2026-11-23T10:00:00Z", vcs,
			versionInfo{Version: "v0.3.0", Commit: "abc1234", Date: "2026-11-23T10:00:00Z"}},
		{"stamped full hash is shortened", "v0.3.0", rev, "2026-11-23T10:00:00Z", noBuildInfo,
			versionInfo{Version: "v0.3.0", Commit: "0276585ef88a", Date: "2026-11-23T10:00:00Z"}},
		{"go install: module version and vcs", "dev", "", "", vcs,
			versionInfo{Version: "v0.0.0-20261122011230-0276585ef88a", Commit: "0276585ef88a", Date: "2026-11-22T01:12:30Z", Committed: true}},
		{"tagged module version", "dev", "", "", buildInfo("v0.3.0"),
			versionInfo{Version: "v0.3.0"}},
		{"modified tree is dirty", "", "", "", buildInfo("(devel)", "vcs.revision", rev, "vcs.modified", "true"),
			versionInfo{Version: "dev", Commit: "0276585ef88a-dirty"}},
		{"(devel) stays dev", "dev", "", "", buildInfo("(devel)"),
			versionInfo{Version: "dev"}},
		{"no build info", "dev", "", "", noBuildInfo,
			versionInfo{Version: "dev"}},
		{"stamped version, commit from vcs", "v0.3.0", "", "", vcs,
			versionInfo{Version: "v0.3.0", Commit: "0276585ef88a", Date: "2026-11-22T01:12:30Z", Committed: true}},
		{"stamped version ignores the module version", "v0.3.0", "", "", buildInfo("v9.9.9"),
			versionInfo{Version: "v0.3.0"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := resolveVersion(tc.version, tc.commit, tc.date, tc.read)
			want := tc.want
			want.Go, want.OS, want.Arch = runtime.Version(), runtime.GOOS, runtime.GOARCH
			if got != want {
				t.Errorf("resolveVersion(%q, %q, %q) =\n %+v, want\n %+v", tc.version, tc.commit, tc.date, got, want)
			}
		})
	}
}

func TestVersionString(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		v    versionInfo
		want string
	}{
		{"everything", versionInfo{Version: "v0.3.0", Commit: "0276585", Date: "2026-11-23T10:00:00Z", Go: "go1.26.8", OS: "linux", Arch: "amd64"},
			"usher v0.3.0 (commit 0276585, built 2026-11-23T10:00:00Z, go1.26.8 linux/amd64)"},
		{"commit date", versionInfo{Version: "v0.3.0", Commit: "0276585", Date: "2026-11-22T01:12:30Z", Committed: true, Go: "go1.26.8", OS: "darwin", Arch: "arm64"},
			"usher v0.3.0 (commit 0276585, committed 2026-11-22T01:12:30Z, go1.26.8 darwin/arm64)"},
		{"nothing known", versionInfo{Version: "dev", Go: "go1.26.8", OS: "linux", Arch: "arm64"},
			"usher dev (go1.26.8 linux/arm64)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := tc.v.String(); got != tc.want {
				t.Errorf("String() = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestVersionCommand runs `usher version` and `usher --version` in-process:
// one line, naming the Go release and platform this test runs on.
func TestVersionCommand(t *testing.T) {
	t.Parallel()
	for _, arg := range []string{"version", "--version"} {
		code, out, errs := runMain(t, arg)
		if code != 0 || errs != "" {
			t.Fatalf("usher %s: exit %d, stderr %q", arg, code, errs)
		}
		platform := runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH + ")\n"
		if !strings.HasPrefix(out, "usher ") || !strings.HasSuffix(out, platform) || strings.Count(out, "\n") != 1 {
			t.Errorf("usher %s printed %q, want one line ending %q", arg, out, platform)
		}
	}
}
