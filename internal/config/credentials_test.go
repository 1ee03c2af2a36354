package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestExpandCredentials(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, in, dir, want, err string
	}{
		{"plain", "admin.token", "/run/x", "admin.token", ""},
		{"absolute", "/etc/usher/admin.token", "/run/x", "/etc/usher/admin.token", ""},
		{"dollar", "$CREDENTIALS_DIRECTORY/admin.token", "/run/credentials/usher.service", "/run/credentials/usher.service/admin.token", ""},
		{"braces", "${CREDENTIALS_DIRECTORY}/admin.token", "/etc/usher", "/etc/usher/admin.token", ""},
		{"unset", "$CREDENTIALS_DIRECTORY/admin.token", "", "", "which is not set"},
		{"another variable is a name", "$HOME/admin.token", "/etc/usher", "$HOME/admin.token", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := expandCredentials(tc.in, tc.dir)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("expandCredentials(%q, %q) = %q, %v; want an error containing %q", tc.in, tc.dir, got, err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("expandCredentials(%q, %q) = %q, %v; want %q", tc.in, tc.dir, got, err, tc.want)
			}
		})
	}
}

// TestLoadCredentialsDirectory: Load reads a token_file under
// $CREDENTIALS_DIRECTORY from the directory the variable names, and names
// the variable when it is not set.
func TestLoadCredentialsDirectory(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "usher.yaml")
	body := "admin:\n  listen: 127.0.0.1:9090\n  token_file: $CREDENTIALS_DIRECTORY/admin.token\n"
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	creds := t.TempDir()
	if err := os.WriteFile(filepath.Join(creds, "admin.token"), []byte("secret-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(credentialsEnv, "")
	if _, err := Load(cfg); err == nil || !strings.Contains(err.Error(), "line 3: admin.token_file: $CREDENTIALS_DIRECTORY/admin.token names $CREDENTIALS_DIRECTORY, which is not set") {
		t.Errorf("Load without %s: %v", credentialsEnv, err)
	}
	t.Setenv(credentialsEnv, creds)
	c, err := Load(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Admin.BearerToken(); got != "secret-token" {
		t.Errorf("BearerToken() = %q, want the credential's content", got)
	}
}
