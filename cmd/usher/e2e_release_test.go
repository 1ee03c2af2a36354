package main

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestE2EReleaseVersion runs `make release` for this platform into a
// temporary directory, with the version scripts/version.sh gives (the one
// make image and the release workflow use too), and checks the archive:
// its checksum in SHA256SUMS, the release notes from the changelog, the
// license and changelog beside the binary, and that the binary's `usher version` prints the stamped
// version and commit.
func TestE2EReleaseVersion(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"make", "git", "tar"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	script, err := exec.CommandContext(t.Context(), filepath.Join(root, "scripts", "version.sh")).Output()
	if err != nil {
		t.Fatalf("scripts/version.sh: %v", err)
	}
	version := strings.TrimSpace(string(script))
	base := releaseVersion(t)
	if !strings.HasPrefix(version, "v") || (!strings.HasPrefix(version, base) && !strings.Contains(version, "-g")) {
		t.Errorf("scripts/version.sh printed %q: want a tag, git describe after one, or %s-dev.COMMIT", version, base)
	}
	head, err := exec.CommandContext(t.Context(), "git", "-C", root, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	commit := strings.TrimSpace(string(head))

	dist := t.TempDir()
	platform := runtime.GOOS + "/" + runtime.GOARCH
	mk := exec.CommandContext(t.Context(), "make", "-C", root, "release", "PLATFORMS="+platform, "DIST="+dist)
	if out, err := mk.CombinedOutput(); err != nil {
		t.Fatalf("make release: %v\n%s", err, out)
	}
	name := "usher_" + version + "_" + runtime.GOOS + "_" + runtime.GOARCH
	archive := filepath.Join(dist, name+".tar.gz")
	data, err := os.ReadFile(archive)
	if err != nil {
		t.Fatalf("make release did not write %s: %v", archive, err)
	}
	sum := sha256.Sum256(data)
	sums, err := os.ReadFile(filepath.Join(dist, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	if want := hex.EncodeToString(sum[:]) + "  " + name + ".tar.gz\n"; string(sums) != want {
		t.Errorf("SHA256SUMS is\n%s, want\n%s", sums, want)
	}
	if notes, err := os.ReadFile(filepath.Join(dist, "NOTES.md")); err != nil || len(strings.TrimSpace(string(notes))) == 0 {
		t.Errorf("NOTES.md (the version's section of CHANGELOG.md): %q, %v", notes, err)
	}
	files := archiveFiles(t, archive)
	for _, f := range []string{"usher", "LICENSE", "README.md", "CHANGELOG.md"} {
		if !files[name+"/"+f] {
			t.Errorf("%s has no %s/%s (it holds %v)", filepath.Base(archive), name, f, files)
		}
	}

	out, err := exec.CommandContext(t.Context(), filepath.Join(dist, name, "usher"), "version").CombinedOutput()
	if err != nil {
		t.Fatalf("usher version: %v\n%s", err, out)
	}
	want := "usher " + version + " (commit " + commit[:shortCommit] + ", built "
	if !strings.HasPrefix(string(out), want) {
		t.Errorf("usher version of the release build printed\n %q, want it to start\n %q", out, want)
	}
}

// archiveFiles returns the names of the files in a .tar.gz.
func archiveFiles(t *testing.T, path string) map[string]bool {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	files := map[string]bool{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name] = true
	}
}
