package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckReportsEveryProblem: usher check on a file with a misspelt
// key, a negative limit and a bad duration reports all three in one run,
// by line (it reported two, the third only once they were fixed), and an
// explicit 0 as out of range rather than "required".
func TestCheckReportsEveryProblem(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "usher.yaml")
	body := `listen: 127.0.0.1:8080
rooms:
  - id: sale
    origin: http://127.0.0.1:3000
    total_active_user: 100
    new_users_per_minute: -5
    session_duration: 5 minutes
    refresh_interval: 20s
  - id: other
    origin: http://127.0.0.1:3000
    routes: [{path: /other}]
    cookie_suffix: other
    total_active_users: 0
    new_users_per_minute: 10
`
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runMain(t, "check", "--config", path)
	want := []string{
		`line 5: rooms[0] (sale): unknown field "total_active_user" (did you mean "total_active_users"?)`,
		"line 6: rooms[0] (sale): new_users_per_minute: must be at least 1, got -5",
		`line 7: rooms[0] (sale): session_duration: must be a duration like "90s" or "5m", got "5 minutes"`,
		"line 13: rooms[1] (other): total_active_users: must be at least 1, got 0",
	}
	if code == 0 {
		t.Fatalf("usher check accepted the file:\n%s", out)
	}
	var lines []string
	for _, l := range strings.Split(errs, "\n") {
		if strings.HasPrefix(l, "line ") {
			lines = append(lines, l)
		}
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("usher check printed\n%s\nwant exactly these problems\n%s", errs, strings.Join(want, "\n"))
	}
}
