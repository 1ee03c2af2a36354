package main

// Every sample config under deploy/ passes `usher check`, with the files it
// names created as its comments and docs/install.md tell an operator to;
// the published image and the version scheme agree.

import (
	"crypto/rand"
	"encoding/base64"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// randomSecret returns 32 random bytes in base64, as
// `head -c 32 /dev/urandom | base64` writes them.
func randomSecret(t *testing.T) string {
	t.Helper()
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b) + "\n"
}

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

// checkConfig runs `usher check` on the config at path and fails the test
// with its output unless it says the file is valid.
func checkConfig(t *testing.T, name, path string) {
	t.Helper()
	code, out, errs := runMain(t, "check", "--config", path)
	if code != 0 || !strings.Contains(out, "is valid") {
		t.Errorf("usher check on %s: exit %d\n%s%s", name, code, out, errs)
	}
}

// TestDeploySampleConfigsCheck runs `usher check` on every sample config:
// the container's with its token beside it (docker run mounts it there),
// the systemd unit's with CREDENTIALS_DIRECTORY naming the directory of
// the token (as the unit's comment says to check before the first start;
// systemd sets it while the service runs), and the Kubernetes ConfigMap's
// with the Secret's keys written where its mount puts them (the path
// rewritten to a temporary directory). Not parallel: it sets an
// environment variable.
func TestDeploySampleConfigsCheck(t *testing.T) {
	t.Run("docker", func(t *testing.T) {
		dir := t.TempDir()
		writeFile(t, filepath.Join(dir, "usher.yaml"), string(readRepoFile(t, "deploy/docker/usher.yaml")))
		writeFile(t, filepath.Join(dir, "admin.token"), randomSecret(t))
		checkConfig(t, "deploy/docker/usher.yaml", filepath.Join(dir, "usher.yaml"))
	})
	t.Run("systemd", func(t *testing.T) {
		etc := t.TempDir()
		body := string(readRepoFile(t, "deploy/systemd/usher.yaml"))
		if !strings.Contains(body, "token_file: $CREDENTIALS_DIRECTORY/admin.token") {
			t.Fatal("deploy/systemd/usher.yaml does not read the token from $CREDENTIALS_DIRECTORY/admin.token")
		}
		writeFile(t, filepath.Join(etc, "usher.yaml"), body)
		writeFile(t, filepath.Join(etc, "admin.token"), randomSecret(t))
		t.Setenv("CREDENTIALS_DIRECTORY", "")
		code, _, errs := runMain(t, "check", "--config", filepath.Join(etc, "usher.yaml"))
		if code == 0 || !strings.Contains(errs, "$CREDENTIALS_DIRECTORY, which is not set") {
			t.Errorf("usher check without CREDENTIALS_DIRECTORY: exit %d, want the variable named: %s", code, errs)
		}
		t.Setenv("CREDENTIALS_DIRECTORY", etc)
		checkConfig(t, "deploy/systemd/usher.yaml", filepath.Join(etc, "usher.yaml"))
	})
	t.Run("kubernetes", func(t *testing.T) {
		var cm struct {
			Data map[string]string `yaml:"data"`
		}
		if err := yaml.Unmarshal(readRepoFile(t, "deploy/kubernetes/configmap.yaml"), &cm); err != nil {
			t.Fatal(err)
		}
		body := cm.Data["usher.yaml"]
		const mount = "/etc/usher-secrets/"
		if !strings.Contains(body, mount) {
			t.Fatalf("the ConfigMap's config reads nothing under %s", mount)
		}
		dir := t.TempDir()
		secrets := filepath.Join(dir, "secrets") + "/"
		for _, key := range []string{"admin-token", "ticket-key"} {
			writeFile(t, secrets+key, randomSecret(t))
		}
		writeFile(t, filepath.Join(dir, "usher.yaml"), strings.ReplaceAll(body, mount, secrets))
		checkConfig(t, "deploy/kubernetes/configmap.yaml", filepath.Join(dir, "usher.yaml"))
	})
}

// releaseVersion returns the VERSION file's version.
func releaseVersion(t *testing.T) string {
	t.Helper()
	v := strings.TrimSpace(string(readRepoFile(t, "VERSION")))
	if !regexp.MustCompile(`^v\d+\.\d+\.\d+$`).MatchString(v) {
		t.Fatalf("VERSION holds %q, want a version like v0.1.0", v)
	}
	return v
}

// TestDeployVersionAgrees checks that the VERSION file, the changelog's
// latest release and the image the Kubernetes manifests run name the same
// version.
func TestDeployVersionAgrees(t *testing.T) {
	t.Parallel()
	v := releaseVersion(t)
	changelog := string(readRepoFile(t, "CHANGELOG.md"))
	latest := regexp.MustCompile(`(?m)^## \[(\d+\.\d+\.\d+)\] - \d{4}-\d{2}-\d{2}$`).FindStringSubmatch(changelog)
	if latest == nil || "v"+latest[1] != v {
		t.Errorf("CHANGELOG.md's latest release %v, want %s (the VERSION file)", latest, v)
	}
	if !strings.Contains(changelog, "## [Unreleased]") {
		t.Error("CHANGELOG.md has no Unreleased section")
	}
	var dep struct {
		Spec struct {
			Template struct {
				Spec struct {
					Containers []struct {
						Name  string `yaml:"name"`
						Image string `yaml:"image"`
					} `yaml:"containers"`
				} `yaml:"spec"`
			} `yaml:"template"`
		} `yaml:"spec"`
	}
	if err := yaml.Unmarshal(readRepoFile(t, "deploy/kubernetes/deployment.yaml"), &dep); err != nil {
		t.Fatal(err)
	}
	const image = "ghcr.io/usherhq/usher"
	var found bool
	for _, c := range dep.Spec.Template.Spec.Containers {
		if c.Name == "usher" {
			found = true
			if c.Image != image+":"+v {
				t.Errorf("the usher container runs %q, want the published %s:%s", c.Image, image, v)
			}
		}
	}
	if !found {
		t.Error("deployment.yaml has no usher container")
	}
	var k struct {
		Images []struct {
			Name    string `yaml:"name"`
			NewName string `yaml:"newName"`
			NewTag  string `yaml:"newTag"`
		} `yaml:"images"`
	}
	if err := yaml.Unmarshal(readRepoFile(t, "deploy/kubernetes/kustomization.yaml"), &k); err != nil {
		t.Fatal(err)
	}
	if len(k.Images) != 1 || k.Images[0].Name != image || k.Images[0].NewTag != v || (k.Images[0].NewName != "" && k.Images[0].NewName != image) {
		t.Errorf("kustomization.yaml images %+v, want %s at tag %s", k.Images, image, v)
	}
	makefile := string(readRepoFile(t, "Makefile"))
	if !strings.Contains(makefile, "IMAGE ?= "+image+"\n") {
		t.Errorf("the Makefile's IMAGE is not %s", image)
	}
}

// TestDeployReleaseWorkflow checks that the release workflow builds with
// make targets the Makefile has, on a version tag, with the history
// scripts/version.sh needs.
func TestDeployReleaseWorkflow(t *testing.T) {
	t.Parallel()
	var wf struct {
		On struct {
			Push struct {
				Tags []string `yaml:"tags"`
			} `yaml:"push"`
		} `yaml:"on"`
		Jobs map[string]struct {
			Steps []struct {
				Uses string         `yaml:"uses"`
				With map[string]any `yaml:"with"`
				Run  string         `yaml:"run"`
			} `yaml:"steps"`
		} `yaml:"jobs"`
	}
	if err := yaml.Unmarshal(readRepoFile(t, ".github/workflows/release.yml"), &wf); err != nil {
		t.Fatal(err)
	}
	if len(wf.On.Push.Tags) != 1 || wf.On.Push.Tags[0] != "v*" {
		t.Errorf("the workflow runs on tags %q, want v*", wf.On.Push.Tags)
	}
	makefile := string(readRepoFile(t, "Makefile"))
	targets := map[string]bool{}
	for _, step := range wf.Jobs["release"].Steps {
		if step.Uses == "actions/checkout@v4" && step.With["fetch-depth"] != 0 {
			t.Errorf("checkout fetch-depth %v: scripts/version.sh needs the tags (0)", step.With["fetch-depth"])
		}
		for _, line := range strings.Split(step.Run, "\n") {
			f := strings.Fields(line)
			if len(f) < 2 || f[0] != "make" {
				continue
			}
			targets[f[1]] = true
			if !strings.Contains(makefile, "\n"+f[1]+":") {
				t.Errorf("the workflow runs make %s, which the Makefile does not have", f[1])
			}
		}
	}
	if !targets["release"] || !targets["image"] {
		t.Errorf("the workflow runs make %v, want release and image", targets)
	}
}

// TestDeployMakeImageWithoutEngine: make image on a machine without a
// working container engine fails, saying so, rather than doing nothing.
func TestDeployMakeImageWithoutEngine(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	out, err := exec.CommandContext(t.Context(), "make", "-s", "-C", repoRoot, "image", "ENGINE=", "VERSION=v0.0.0-test").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "make image: no working container engine") {
		t.Errorf("make image ENGINE= : %v\n%s", err, out)
	}
}
