package gate

import (
	"net/http"
	"slices"
	"strings"
	"testing"
)

// TestCookieValues: cookieValues yields what net/http's CookiesNamed
// gives, value for value, whatever the Cookie headers hold.
func TestCookieValues(t *testing.T) {
	const name = "__usher_wr"
	many := strings.Repeat("a=b; ", 70) + name + "=last"
	for _, lines := range [][]string{
		nil,
		{""},
		{name + "=abc"},
		{"x=1; " + name + "=abc; y=2"},
		{name + "=abc; " + name + "=def"},
		{"x=1", name + "=second-line"},
		{name + `="quoted"`},
		{name + `="`},
		{name + `=""`},
		{name + "= leading"},
		{name + "=trailing  "},
		{"  " + name + "  =abc"},
		{name},
		{name + "="},
		{name + "=a\"b"},
		{name + "=a\\b"},
		{name + "=a b"},
		{name + "=\x7f"},
		{name + "=é"},
		{name + "x=abc; x" + name + "=abc"},
		{";;; " + name + "=abc;;"},
		{"\t" + name + "=tab\t"},
		{name + "=a=b=c"},
		{many},
		{strings.Repeat(name+"=v; ", 4000)},
	} {
		h := http.Header{}
		if lines != nil {
			h["Cookie"] = lines
		}
		var want []string
		for _, c := range (&http.Request{Header: h}).CookiesNamed(name) {
			want = append(want, c.Value)
		}
		got := slices.Collect(cookieValues(h, name))
		if !slices.Equal(got, want) {
			t.Errorf("Cookie %q: got %q, want %q", lines, got, want)
		}
	}
}
