package config

import (
	"bytes"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime/metrics"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/rules"
)

// The budgets of FuzzParse for one input. The time is a minimum over two
// runs, so that one slow run on a busy machine does not fail the target.
// Parse takes well under a millisecond on the configs of testdata and
// allocates a few megabytes (most of it building the rule compiler).
const (
	parseBudget = time.Second

	// parseAllocBase plus parseAllocPerByte for each input byte bounds the
	// bytes Parse allocates: a config that is ten times as long may cost
	// ten times as much, not a hundred.
	parseAllocBase    = 64 << 20
	parseAllocPerByte = 16 << 10
)

// FuzzParse checks that Parse, on any input, neither panics nor takes more
// than its budgets of time and memory, and gives the same answer twice. A
// rejected input gets one *ValidationError, a bad input to usher.ErrorCode,
// whose problems each say something on one line and name a line of the
// input (or none); a problem with a field path is on a line. An accepted
// config validates again, explains itself in one line per room and one
// indented line per event and rule, can replace itself by a reload, has
// its events sorted by start, and hands the gate proxies, IP lists, key
// ring and rules that it can use.
//
// The seeds are every testdata/*.yaml, the YAML examples of README.md and
// docs/, and the hostile inputs in testdata/fuzz/FuzzParse.
func FuzzParse(f *testing.F) {
	for _, data := range configSeeds(f) {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err, took, alloc := measuredParse(data)
		c2, err2, took2, _ := measuredParse(data)
		if d := min(took, took2); d > parseBudget {
			t.Fatalf("Parse of %d bytes took %v, budget %v", len(data), d, parseBudget)
		}
		if limit := uint64(parseAllocBase + parseAllocPerByte*len(data)); alloc > limit {
			t.Fatalf("Parse of %d bytes allocated %d MB, budget %d MB", len(data), alloc>>20, limit>>20)
		}
		if (c == nil) == (err == nil) {
			t.Fatalf("Parse = %v, %v: want a config or an error", c, err)
		}
		if errText(err) != errText(err2) {
			t.Fatalf("Parse not deterministic: error %.500q, then %.500q", errText(err), errText(err2))
		}
		if err != nil {
			checkParseError(t, data, err)
			return
		}
		if !reflect.DeepEqual(c, c2) {
			t.Fatalf("Parse not deterministic: %+v, then %+v", c, c2)
		}
		checkAccepted(t, data, c, c2)
	})
}

// measuredParse parses data and says how long it took and how many bytes
// it allocated.
func measuredParse(data []byte) (*Config, error, time.Duration, uint64) {
	before := allocatedBytes()
	start := time.Now()
	c, err := Parse(bytes.NewReader(data))
	took := time.Since(start)
	return c, err, took, allocatedBytes() - before
}

// allocatedBytes returns the bytes allocated on the heap since the program
// started. (The fuzzing engine runs one input at a time in each process.)
func allocatedBytes() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// errText returns err's message, "" for nil.
func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// checkParseError checks the error of Parse on data.
func checkParseError(t *testing.T, data []byte, err error) {
	t.Helper()
	v, ok := err.(*ValidationError)
	if !ok {
		t.Fatalf("Parse error is %T, want *ValidationError: %.500v", err, err)
	}
	if usher.ErrorCode(err) != usher.EInvalid {
		t.Fatalf("Parse error has code %q, want %q", usher.ErrorCode(err), usher.EInvalid)
	}
	if len(v.Problems) == 0 {
		t.Fatal("Parse error has no problems")
	}
	lines := 1 // at most: YAML breaks lines at LF, CR, CRLF, NEL, LS and PS
	for _, br := range []string{"\n", "\r", "\u0085", "\u2028", "\u2029"} {
		lines += bytes.Count(data, []byte(br))
	}
	for _, p := range v.Problems {
		switch {
		case strings.TrimSpace(p.Message) == "":
			t.Fatalf("problem without a message: %+v", p)
		case strings.ContainsAny(p.String(), "\r\n"):
			t.Fatalf("problem on more than one line: %.500q", p.String())
		case p.Line < 0 || p.Line > lines:
			t.Fatalf("problem on line %d of a %d-line input: %.500q", p.Line, lines, p.String())
		case p.Path != "" && p.Line == 0:
			t.Fatalf("problem at %q without a line: %.500q", p.Path, p.String())
		}
	}
}

// checkAccepted checks a config that Parse accepted from data, and c2, the
// same input parsed again.
func checkAccepted(t *testing.T, data []byte, c, c2 *Config) {
	t.Helper()
	if err := c.Validate(); err != nil {
		t.Fatalf("Parse accepted a config that Validate rejects: %v", err)
	}
	if err := c.Reloadable(c2); err != nil {
		t.Fatalf("a config cannot replace itself by a reload: %v", err)
	}
	var b, b2 strings.Builder
	if err := c.Explain(&b); err != nil {
		t.Fatalf("Explain: %v", err)
	}
	if err := c2.Explain(&b2); err != nil || b.String() != b2.String() {
		t.Fatalf("Explain not deterministic: %q, then %q (%v)", b.String(), b2.String(), err)
	}
	rooms, items := explainLines(c)
	gotRooms, gotItems := 0, 0
	for line := range strings.Lines(b.String()) {
		switch {
		case strings.HasPrefix(line, "Room "):
			gotRooms++
		case strings.HasPrefix(line, "  "):
			gotItems++
		}
	}
	if gotRooms != rooms || gotItems != items || !strings.HasSuffix(b.String(), "\n") {
		t.Fatalf("Explain wrote %d room lines and %d indented lines, want %d and %d (one per room, and one per event, rule and webhook):\n%s",
			gotRooms, gotItems, rooms, items, b.String())
	}
	if _, err := c.TrustedProxyPrefixes(); err != nil {
		t.Fatalf("TrustedProxyPrefixes: %v", err)
	}
	lists := c.IPLists()
	for name, entries := range c.IPListEntries {
		if len(lists[name]) != len(entries) {
			t.Fatalf("IPLists()[%q] has %d prefixes, the config %d entries", name, len(lists[name]), len(entries))
		}
	}
	ring, err := c.KeyRing()
	fromFiles := slices.ContainsFunc(c.Keys, func(k Key) bool { return k.SecretFile != "" })
	if (err != nil) != fromFiles || (err == nil && len(ring) != len(c.Keys)) {
		t.Fatalf("KeyRing() = %d keys, %v; the config has %d keys, secret files %v", len(ring), err, len(c.Keys), fromFiles)
	}
	for i := range c.Rooms {
		checkAcceptedRoom(t, &c.Rooms[i], lists)
	}
}

// explainLines returns how many lines Explain starts with "Room " (one per
// room) and how many it indents (one per event and rule).
func explainLines(c *Config) (rooms, items int) {
	for _, rm := range c.Rooms {
		rooms++
		items += len(rm.Events) + len(rm.Rules)
	}
	return rooms, items + len(c.Webhooks)
}

// checkAcceptedRoom checks one room of an accepted config: filled in, events in
// order, rules that compile as the gate compiles them.
func checkAcceptedRoom(t *testing.T, rm *usher.Room, lists map[string][]netip.Prefix) {
	t.Helper()
	if rm.Name == "" || rm.Origin == "" || len(rm.Routes) == 0 {
		t.Fatalf("room %q: name %q, origin %q, %d routes: want all set", rm.ID, rm.Name, rm.Origin, len(rm.Routes))
	}
	if !slices.IsSortedFunc(rm.Events, func(a, b usher.Event) int { return a.Start.Compare(b.Start) }) {
		t.Fatalf("room %q: events not sorted by start", rm.ID)
	}
	rs := make([]rules.Rule, len(rm.Rules))
	for i, r := range rm.Rules {
		rs[i] = rules.Rule{Description: r.Description, Expression: r.Expression, Action: r.Action, Enabled: r.Enabled}
	}
	if _, err := rules.Compile(rs, lists); err != nil {
		t.Fatalf("room %q: the gate cannot compile the rules Parse accepted: %v", rm.ID, err)
	}
}

// configSeeds returns every testdata/*.yaml and the YAML blocks of the
// README and docs.
func configSeeds(tb testing.TB) [][]byte {
	tb.Helper()
	var out [][]byte
	files, err := filepath.Glob(filepath.Join("testdata", "*.yaml"))
	if err != nil {
		tb.Fatal(err)
	}
	docs, err := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	if err != nil {
		tb.Fatal(err)
	}
	for _, name := range append(files, append(docs, filepath.Join("..", "..", "README.md"))...) {
		b, err := os.ReadFile(name)
		if err != nil {
			tb.Fatal(err)
		}
		if filepath.Ext(name) == ".yaml" {
			out = append(out, b)
			continue
		}
		for _, m := range yamlBlock.FindAllSubmatch(b, -1) {
			out = append(out, m[1])
		}
	}
	if len(out) < len(files)+3 {
		tb.Fatalf("only %d seeds: the README's and docs' YAML blocks are missing", len(out))
	}
	return out
}

// yamlBlock matches a fenced YAML block of Markdown.
var yamlBlock = regexp.MustCompile("(?ms)^```yaml\n(.*?)^```")
