package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// The build's version, commit and date, stamped by the release build (make
// release, the Dockerfile) with
//
//	-ldflags "-X main.Version=v0.3.0 -X main.Commit=0276585ef88a -X main.Date=2026-11-23T10:00:00Z"
//
// A build that does not stamp them (go build, go install) falls back to what
// the Go toolchain recorded in the binary: see buildVersion.
var (
	// Version is usher's version; "dev" when not stamped.
	Version = "dev"
	// Commit is the commit the binary was built from; "" when not stamped.
	Commit = ""
	// Date is when the binary was built (RFC 3339, UTC); "" when not
	// stamped.
	Date = ""
)

// versionInfo is what `usher version` prints.
type versionInfo struct {
	Version string // "v0.3.0", a Go pseudo-version, or "dev"
	Commit  string // the commit, shortened to shortCommit digits; "" when unknown
	Date    string // the build date, or the commit's date (see Committed); "" when unknown
	// Committed says that Date is the commit's date from the build info,
	// not a stamped build date.
	Committed bool
	Go        string // the Go release, like go1.26.8
	OS        string // GOOS
	Arch      string // GOARCH
}

// shortCommit is how many digits of a full commit hash are shown.
const shortCommit = 12

// buildVersion returns the running binary's version: the stamped values,
// each missing one taken from the toolchain's build info.
func buildVersion() versionInfo {
	return resolveVersion(Version, Commit, Date, debug.ReadBuildInfo)
}

// resolveVersion fills in what was not stamped (version "dev" or "",
// commit or date "") from the build info that read returns: the main
// module's version (a tag, or a pseudo-version; not "(devel)"),
// vcs.revision (with "-dirty" when vcs.modified is true) and vcs.time.
// read is debug.ReadBuildInfo outside tests; it may report no info. The
// Go release and platform are the running program's.
func resolveVersion(version, commit, date string, read func() (*debug.BuildInfo, bool)) versionInfo {
	v := versionInfo{
		Version: version,
		Commit:  commit,
		Date:    date,
		Go:      runtime.Version(),
		OS:      runtime.GOOS,
		Arch:    runtime.GOARCH,
	}
	stamped := version != "" && version != "dev"
	var info *debug.BuildInfo
	if read != nil {
		if bi, ok := read(); ok {
			info = bi
		}
	}
	if info != nil {
		if !stamped {
			if mv := info.Main.Version; mv != "" && mv != "(devel)" {
				v.Version = mv
			}
		}
		var revision, modified, vcsTime string
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				revision = s.Value
			case "vcs.modified":
				modified = s.Value
			case "vcs.time":
				vcsTime = s.Value
			}
		}
		if v.Commit == "" && revision != "" {
			v.Commit = shorten(revision)
			if modified == "true" {
				v.Commit += "-dirty"
			}
		}
		if v.Date == "" && vcsTime != "" {
			v.Date, v.Committed = vcsTime, true
		}
	}
	if v.Version == "" {
		v.Version = "dev"
	}
	v.Commit = shorten(v.Commit)
	return v
}

// shorten cuts a full hexadecimal commit hash to shortCommit digits, and
// leaves anything else (a short hash, "abc-dirty") as it is.
func shorten(commit string) string {
	if len(commit) > shortCommit && strings.Trim(commit, "0123456789abcdef") == "" {
		return commit[:shortCommit]
	}
	return commit
}

// String is the line `usher version` prints, such as
//
//	usher v0.3.0 (commit 0276585ef88a, built 2026-11-23T10:00:00Z, go1.26.8 linux/amd64)
//
// leaving out the commit and the date when they are unknown, and saying
// "committed" instead of "built" when the date is the commit's.
func (v versionInfo) String() string {
	var parts []string
	if v.Commit != "" {
		parts = append(parts, "commit "+v.Commit)
	}
	switch {
	case v.Date != "" && v.Committed:
		parts = append(parts, "committed "+v.Date)
	case v.Date != "":
		parts = append(parts, "built "+v.Date)
	}
	parts = append(parts, fmt.Sprintf("%s %s/%s", v.Go, v.OS, v.Arch))
	return fmt.Sprintf("usher %s (%s)", v.Version, strings.Join(parts, ", "))
}
