package guard

import (
	"flag"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/usherhq/usher"
)

var writeSeeds = flag.Bool("seeds", false, "rewrite the fuzz seed corpus in testdata/fuzz/FuzzVerify")

// fuzzKeys is FuzzVerify's ring: k2 signs, k1 is rotated out but listed.
var fuzzKeys = []string{"k2", "k1"}

// FuzzVerify checks that Verify never panics, and that it accepts exactly
// what an independent check (crypto/hmac, the standard decoder, a byte-wise
// zero count) accepts: anything accepted really satisfies every check. The
// seeds in testdata/fuzz/FuzzVerify hold real solutions, issued under k1
// and k2 at t0 (go test -run TestSeeds -seeds writes them anew), and the
// attack corpus's shapes. The clock is t0 plus offset seconds.
func FuzzVerify(f *testing.F) {
	p := MustPoW(f, fuzzKeys...)
	keys := make([]usher.Key, len(fuzzKeys))
	for i, id := range fuzzKeys {
		keys[i] = testKey(id)
	}
	f.Fuzz(func(t *testing.T, challenge, n, room, client string, minDifficulty uint8, offset int64) {
		prefix, _ := netip.ParsePrefix(client)
		offset %= 10 * 365 * 24 * 3600
		now := t0.Add(time.Duration(offset) * time.Second)
		s, err := p.Verify(challenge, n, room, prefix, int(minDifficulty), now)
		why := independentCheck(keys, challenge, n, room, prefix, int(minDifficulty), now, DefaultLifetime, DefaultSkew)
		switch {
		case err == nil && why != "":
			t.Fatalf("Verify accepted %q %q for %q %v at %v; independent check: %s", challenge, n, room, prefix, now, why)
		case err != nil && why == "":
			t.Fatalf("Verify refused %q %q for %q %v at %v (%v); the independent check accepts", challenge, n, room, prefix, now, err)
		case err == nil && (s.ID == [16]byte{} || s.Difficulty < int(minDifficulty) || LeadingZeros(challenge, n) < s.Difficulty):
			t.Fatalf("accepted with %+v", s)
		}
	})
}

// TestSeeds writes the seed corpus with -seeds; otherwise it checks that
// the corpus still holds a solution Verify accepts.
// readSeed reads a corpus file of FuzzVerify's arguments.
func readSeed(t *testing.T, path string) []any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 7 || lines[0] != "go test fuzz v1" {
		t.Fatalf("%s: not a corpus file of six values", path)
	}
	var v []any
	for _, l := range lines[1:] {
		kind, arg, _ := strings.Cut(strings.TrimSuffix(l, ")"), "(")
		switch kind {
		case "string":
			s, err := strconv.Unquote(arg)
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			v = append(v, s)
		case "byte":
			r, _, _, err := strconv.UnquoteChar(strings.Trim(arg, "'"), '\'')
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			v = append(v, byte(r))
		case "int64":
			n, err := strconv.ParseInt(arg, 10, 64)
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			v = append(v, n)
		}
	}
	return v
}

func TestSeeds(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzVerify")
	if !*writeSeeds {
		files, err := filepath.Glob(filepath.Join(dir, "valid*"))
		if err != nil || len(files) < 3 {
			t.Fatalf("seed corpus has %d valid solutions (%v); go test ./internal/guard -run TestSeeds -args -seeds", len(files), err)
		}
		p := MustPoW(t, fuzzKeys...)
		for _, f := range files {
			v := readSeed(t, f)
			prefix := netip.MustParsePrefix(v[3].(string))
			now := t0.Add(time.Duration(v[5].(int64)) * time.Second)
			if _, err := p.Verify(v[0].(string), v[1].(string), v[2].(string), prefix, int(v[4].(byte)), now); err != nil {
				t.Errorf("%s: %v", f, err)
			}
		}
		return
	}
	type seed struct {
		challenge, n, room, client string
		minDifficulty              uint8
		offset                     int64
	}
	k1, k2 := MustPoW(t, "k1"), MustPoW(t, "k2")
	c1, c2 := MustIssue(t, k1, 8), MustIssue(t, k2, 10)
	n1, n2 := MustSolve(t, c1.Value, 8), MustSolve(t, c2.Value, 10)
	v6, err := k2.Issue(testRoom, netip.MustParsePrefix("2001:db8:1:2::/64"), 4, t0)
	if err != nil {
		t.Fatal(err)
	}
	n6 := MustSolve(t, v6.Value, 4)
	cl := testClient.String()
	seeds := map[string]seed{
		"valid_k1":          {c1.Value, n1, testRoom, cl, 8, 60},
		"valid_k2":          {c2.Value, n2, testRoom, cl, 10, 0},
		"valid_ipv6":        {v6.Value, n6, testRoom, "2001:db8:1:2::/64", 1, 299},
		"replay_other_room": {c1.Value, n1, "sale2", cl, 8, 60},
		"other_prefix":      {c1.Value, n1, testRoom, "198.51.100.0/24", 8, 60},
		"expired":           {c1.Value, n1, testRoom, cl, 8, 300},
		"future":            {c1.Value, n1, testRoom, cl, 8, -31},
		"too_easy":          {c1.Value, n1, testRoom, cl, 9, 60},
		"wrong_n":           {c1.Value, "1" + n1, testRoom, cl, 8, 60},
		"huge_n":            {c1.Value, strings.Repeat("9", 40), testRoom, cl, 8, 60},
		"hex_n":             {c1.Value, "0x10", testRoom, cl, 8, 60},
		"altered_mac":       {c1.Value[:len(c1.Value)-3] + "AAA", n1, testRoom, cl, 8, 60},
		"empty":             {"", "", "", "", 0, 0},
		"garbage":           {"\x00\xff..%", "\n", "\xff", "300.1.1.1/8", 255, -1 << 63},
		"unicode":           {"挑战.チャレンジ", "١٢٣", "комната", "::ffff:1.2.3.4/128", 1, 1 << 62},
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	old, _ := filepath.Glob(filepath.Join(dir, "*"))
	for _, f := range old {
		os.Remove(f)
	}
	for name, s := range seeds {
		body := fmt.Sprintf("go test fuzz v1\nstring(%q)\nstring(%q)\nstring(%q)\nstring(%q)\nbyte(%q)\nint64(%d)\n",
			s.challenge, s.n, s.room, s.client, s.minDifficulty, s.offset)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
