package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestBearerTokens(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ops.token"), []byte("  from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "usher.yaml")
	body := `admin:
  listen: 127.0.0.1:9090
  token: root-secret
  tokens:
    - {name: ops, token_file: ops.token, role: write}
    - {name: dashboard, token: read-secret, role: read}
rooms: []
`
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	want := []NamedToken{
		{Name: "admin", Secret: "root-secret", Write: true},
		{Name: "ops", Secret: "from-file", Write: true},
		{Name: "dashboard", Secret: "read-secret", Write: false},
	}
	if got := c.Admin.BearerTokens(); !reflect.DeepEqual(got, want) {
		t.Errorf("BearerTokens = %+v, want %+v", got, want)
	}
	// Only named tokens: valid, and no "admin" token.
	only := MustParse(t, "admin:\n  listen: 127.0.0.1:9090\n  tokens:\n    - {name: viewer, token: v, role: read}\n")
	if got := only.Admin.BearerTokens(); len(got) != 1 || got[0].Name != "viewer" || got[0].Write {
		t.Errorf("BearerTokens = %+v, want the read token alone", got)
	}
	// A change of the tokens needs a restart.
	next := MustParse(t, "admin:\n  listen: 127.0.0.1:9090\n  tokens:\n    - {name: viewer, token: v, role: write}\n")
	if err := only.Reloadable(next); err == nil || !strings.Contains(err.Error(), "admin.token: changed, which needs a restart") {
		t.Errorf("Reloadable with a token's role changed: %v, want a restart", err)
	}
	if err := only.Reloadable(MustParse(t, "admin:\n  listen: 127.0.0.1:9090\n  tokens:\n    - {name: viewer, token: v, role: read}\n")); err != nil {
		t.Errorf("Reloadable with the same tokens: %v", err)
	}
}
