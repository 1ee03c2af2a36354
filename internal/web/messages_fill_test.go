package web

import (
	"strings"
	"testing"
)

// TestFillAsReplacer: fill gives what strings.NewReplacer gives for the
// placeholders the messages use, including repeated, adjacent and
// overlapping ones and values that look like placeholders.
func TestFillAsReplacer(t *testing.T) {
	for _, tc := range []struct {
		s     string
		pairs []string
	}{
		{"", []string{"{n}", "5"}},
		{"no placeholder", []string{"{n}", "5"}},
		{"{n}", []string{"{n}", "5"}},
		{"about {wait}", []string{"{wait}", "3 minutes"}},
		{"{h} {m}{h}", []string{"{h}", "2 hours", "{m}", "{h}"}},
		{"between {low} and {high}", []string{"{low}", "5", "{high}", "{low}"}},
		{"{{n}}", []string{"{n}", "x"}},
		{"{n", []string{"{n}", "x"}},
		{"{event} starts at {time}.", []string{"{event}", "Dröp {time}", "{time}", "12:00 UTC"}},
		{"ab", []string{"a", "1", "ab", "2"}},
		{"ab", []string{"ab", "2", "a", "1"}},
		{"{n}", []string{"{n}"}},
	} {
		want := strings.NewReplacer(tc.pairs[:len(tc.pairs)/2*2]...).Replace(tc.s)
		if got := fill(tc.s, tc.pairs...); got != want {
			t.Errorf("fill(%q, %q) = %q, want %q", tc.s, tc.pairs, got, want)
		}
	}
}

func FuzzFill(f *testing.F) {
	f.Add("between {low} and {high}", "{low}", "5", "{high}", "15")
	f.Fuzz(func(t *testing.T, s, o1, n1, o2, n2 string) {
		if o1 == "" || o2 == "" {
			return
		}
		if want, got := strings.NewReplacer(o1, n1, o2, n2).Replace(s), fill(s, o1, n1, o2, n2); got != want {
			t.Fatalf("fill(%q, %q, %q, %q, %q) = %q, want %q", s, o1, n1, o2, n2, got, want)
		}
	})
}
