package config

import (
	"fmt"
	"strings"
	"testing"
)

func TestEditDistance(t *testing.T) {
	t.Parallel()
	cases := []struct {
		a, b string
		want int
	}{
		{"total_active_users", "total_active_users", 0},
		{"total_active_user", "total_active_users", 1},
		{"totl_activ_users", "total_active_users", 2},
		{"lisen", "listen", 1},
		{"queue", "queue_all", 3},
		{"", "abc", 3},
	}
	for _, tc := range cases {
		if got := editDistance(tc.a, tc.b, 3); got != tc.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

// TestSuggestionsBounded: a document of thousands of unknown keys looks
// for a suggestion only for the problems that are shown.
func TestSuggestionsBounded(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("rooms:\n  - id: sale\n")
	for i := range 5000 {
		fmt.Fprintf(&b, "    total_active_user%d: 1\n", i)
	}
	root, err := readDocument([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	d := &decoder{lines: make(map[string]int)}
	d.config(root, Default())
	if len(d.problems) != 5000 || d.suggested != MaxProblems {
		t.Errorf("%d problems, %d looked up for a suggestion; want 5000 and %d", len(d.problems), d.suggested, MaxProblems)
	}
}
