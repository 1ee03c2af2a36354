package rules

import (
	"bufio"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"net/textproto"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"cel.dev/cel-go/common/types"
)

// The time budgets of the fuzz targets. Each is a minimum over two runs, so
// that one slow run on a busy machine does not fail a target.
const (
	// compileBudget bounds compiling one expression. Compile takes tens of
	// microseconds on the expressions of the tests; the fuzzer's are as
	// small.
	compileBudget = time.Second

	// evalBudget bounds one rule's evaluation of one request, the largest
	// request the cost estimate assumes included (fuzzBigRequest). The
	// costliest rules of the tests take under a millisecond on it; a rule
	// that Compile accepts must not take fifty.
	evalBudget = 50 * time.Millisecond
)

// FuzzCompile checks that compiling any expression neither panics nor
// takes long, and either fails with errors that name the rule and a place
// inside the expression, or yields a Set whose rule, run on an empty, a
// typical and the largest request the cost estimate assumes, never panics,
// gives a bool or an error, gives the same answer twice, agrees with
// Bypass, and stays within evalBudget. Compiling is deterministic, and a
// disabled rule is compiled exactly as an enabled one. The seeds, in
// testdata/fuzz/FuzzCompile, are every expression of the tests and docs
// and hostile ones.
func FuzzCompile(f *testing.F) {
	mixed := fuzzBigRequest("Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0 ÄÖÜ-_.~%20")
	letters := fuzzBigRequest("a")
	f.Fuzz(func(t *testing.T, expr string) {
		rule := Rule{Description: "fuzz", Expression: expr, Enabled: true}
		s, err, took := timedCompile([]Rule{rule}, testLists)
		s2, err2, took2 := timedCompile([]Rule{rule}, testLists)
		if d := min(took, took2); d > compileBudget {
			t.Fatalf("Compile(%.200q) took %v, budget %v", expr, d, compileBudget)
		}
		if (s == nil) == (err == nil) {
			t.Fatalf("Compile(%.200q) = %v, %v: want a Set or an error", expr, s, err)
		}
		if errText(err) != errText(err2) || (s == nil) != (s2 == nil) {
			t.Fatalf("Compile(%.200q) not deterministic: %q, then %q", expr, errText(err), errText(err2))
		}
		rule.Enabled = false
		off, errOff := Compile([]Rule{rule}, testLists)
		if errText(errOff) != errText(err) {
			t.Fatalf("Compile(%.200q) disabled: %q, enabled: %q", expr, errText(errOff), errText(err))
		}
		if err != nil {
			checkCompileError(t, expr, err)
			return
		}
		if s.Len() != 1 || off.Len() != 0 {
			t.Fatalf("Compile(%.200q): Len %d enabled, %d disabled; want 1 and 0", expr, s.Len(), off.Len())
		}
		what := fmt.Sprintf("%.200q", expr)
		checkEval(t, what, s, &Request{})
		checkEval(t, what, s, testRequest())
		checkEval(t, what, s, mixed)
		checkEval(t, what, s, letters)
	})
}

// FuzzEval checks rules against any request. Every expression of the seeds
// of FuzzCompile that compiles, and the input's expression if it does, is
// run as in FuzzCompile (no panic, a bool or an error, deterministic,
// within evalBudget, Bypass agrees). Oracle rules, whose answer is known
// from the request, must give that answer: in_cidr and in_ip_list against
// net/netip, with a CIDR that is a constant, a run-time value or a list;
// header and parameter look-ups against the map the rule iterates and
// against net/http and net/url. The first line of path is the request's
// Path, the others its OtherPaths (a rule bypasses only when it is true on
// every reading). The headers come from header, parsed as net/http parses
// a request's header block.
func FuzzEval(f *testing.F) {
	seeds := compilingSeeds(f)
	fixed, err := Compile(seeds, testLists)
	if err != nil {
		f.Fatal(err)
	}
	oracles := compileOracles(f)
	f.Fuzz(func(t *testing.T, expr, ip, cidr, host, path, query, method, userAgent, country, header string) {
		paths := strings.Split(path, "\n")
		r := &Request{Host: host, Path: paths[0], OtherPaths: paths[1:], Query: query, Method: method, UserAgent: userAgent, Country: country, Headers: parseHeader(header)}
		if a, err := netip.ParseAddr(ip); err == nil {
			r.IP = a
		}
		checkEval(t, "the seeds", fixed, r)
		if s, err := Compile([]Rule{{Description: "fuzz", Expression: expr, Enabled: true}}, testLists); err == nil {
			checkEval(t, fmt.Sprintf("%.200q", expr), s, r)
		}
		for _, o := range oracles {
			want, wantErr := o.want(r)
			checkOracle(t, o.prg, o.expr, r, want, wantErr)
		}
		checkCIDROracles(t, r, cidr)
	})
}

// timedCompile compiles rules and says how long it took.
func timedCompile(rs []Rule, lists map[string][]netip.Prefix) (*Set, error, time.Duration) {
	start := time.Now()
	s, err := Compile(rs, lists)
	return s, err, time.Since(start)
}

// errText returns err's message, "" for nil.
func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// errPosition matches the position that starts a problem with an
// expression: "1:16: ".
var errPosition = regexp.MustCompile(`^(-?\d+):(-?\d+): `)

// checkCompileError checks that each error of compiling the one rule
// "fuzz" names the rule and says something, and that a position, when
// there is one, is inside the expression (lines and columns from 1).
func checkCompileError(t *testing.T, expr string, err error) {
	t.Helper()
	errs := []error{err}
	var joined interface{ Unwrap() []error }
	if errors.As(err, &joined) {
		errs = joined.Unwrap()
	}
	const label = `rules[0] ("fuzz"): expression: `
	lines := strings.Split(expr, "\n")
	for _, e := range errs {
		msg, ok := strings.CutPrefix(e.Error(), label)
		if !ok || strings.TrimSpace(msg) == "" {
			t.Fatalf("Compile(%.200q): error %.300q does not start with %q and a message", expr, e, label)
		}
		m := errPosition.FindStringSubmatch(msg)
		if m == nil {
			continue
		}
		line, _ := strconv.Atoi(m[1])
		col, _ := strconv.Atoi(m[2])
		if line < 1 || line > len(lines) || col < 1 || col > utf8.RuneCountInString(lines[line-1])+1 {
			t.Fatalf("Compile(%.200q): error %.300q: position %d:%d is not in the expression", expr, e, line, col)
		}
	}
}

// result is what one rule gave for one request.
type result struct {
	err, value bool
}

func (r result) String() string {
	if r.err {
		return "error"
	}
	return strconv.FormatBool(r.value)
}

// evalProgram runs one compiled rule on r with a fresh activation, as
// Bypass does but without its recover, so that a panic fails the fuzz
// target instead of making the rule silently false. A result that is
// neither a bool nor an error fails t.
func evalProgram(t *testing.T, p *program, r *Request) (result, time.Duration) {
	t.Helper()
	a := new(activation)
	a.reset(r)
	start := time.Now()
	out, _, err := p.prg.Eval(a)
	took := time.Since(start)
	if err != nil || types.IsError(out) {
		return result{err: true}, took
	}
	b, ok := out.(types.Bool)
	if !ok {
		t.Fatalf("rule %s gave %v (%T), neither a bool nor an error", p.name, out, out)
	}
	return result{value: bool(b)}, took
}

// checkEval runs every rule of s (what, in messages) on each reading of r
// (its Path, then each of its OtherPaths) twice: each must give the same
// result both times, within evalBudget. Bypass must report the first rule
// that is true on every reading.
func checkEval(t *testing.T, what string, s *Set, r *Request) {
	t.Helper()
	readings := []*Request{r}
	for _, p := range r.OtherPaths {
		other := *r
		other.Path, other.OtherPaths = p, nil
		readings = append(readings, &other)
	}
	first := ""
	for i := range s.progs {
		p := &s.progs[i]
		holds := true
		for _, rd := range readings {
			got, took := evalProgram(t, p, rd)
			again, took2 := evalProgram(t, p, rd)
			if got != again {
				t.Fatalf("rule %s of %s on %s: %v, then %v", p.name, what, describeRequest(rd), got, again)
			}
			if d := min(took, took2); d > evalBudget {
				t.Fatalf("rule %s of %s on %s took %v, budget %v", p.name, what, describeRequest(rd), d, evalBudget)
			}
			holds = holds && got.value
		}
		if holds && first == "" {
			first = p.name
		}
	}
	if ok, name := s.Bypass(r); ok != (first != "") || name != first {
		t.Fatalf("Bypass(%s) of %s = %v, %q; the first rule true on every reading is %q", describeRequest(r), what, ok, name, first)
	}
}

// describeRequest shows a request in a failure, its long strings cut.
func describeRequest(r *Request) string {
	cut := func(s string) string {
		if len(s) > 64 {
			return fmt.Sprintf("%q... (%d bytes)", s[:64], len(s))
		}
		return strconv.Quote(s)
	}
	var hs []string
	for k, vs := range r.Headers {
		if len(hs) == 8 {
			hs = append(hs, fmt.Sprintf("... (%d names)", len(r.Headers)))
			break
		}
		hs = append(hs, fmt.Sprintf("%s: %s", cut(k), cut(strings.Join(vs, ", "))))
	}
	var others []string
	for _, p := range r.OtherPaths {
		others = append(others, cut(p))
	}
	return fmt.Sprintf("{ip %v host %s path %s other paths [%s] query %s method %s user_agent %s country %s headers [%s]}",
		r.IP, cut(r.Host), cut(r.Path), strings.Join(others, " "), cut(r.Query), cut(r.Method), cut(r.UserAgent), cut(r.Country), strings.Join(hs, "; "))
}

// fuzzBigRequest is the largest request the compile-time cost estimate
// assumes: path, query, user agent and MaxEntries header values of
// MaxStringSize bytes, a host of 253; the query holds as many parameters
// as fit. The long strings repeat unit: text that mixes letters, digits
// and punctuation keeps some regular expressions busy, one letter others.
func fuzzBigRequest(unit string) *Request {
	long := strings.Repeat(unit, MaxStringSize/len(unit)+1)[:MaxStringSize]
	h := http.Header{}
	for i := range MaxEntries {
		h.Set(fmt.Sprintf("X-Fuzz-%d", i), long)
	}
	var q strings.Builder
	for i := 0; ; i++ {
		pair := fmt.Sprintf("p%d=%s&", i, strings.Repeat("v", 40+i%40))
		if q.Len()+len(pair) > MaxStringSize+1 { // the last "&" goes
			break
		}
		q.WriteString(pair)
	}
	return &Request{
		IP:        netip.MustParseAddr("2001:db8::1"),
		Host:      strings.Repeat("h", 63) + "." + strings.Repeat("o", 63) + "." + strings.Repeat("s", 63) + "." + strings.Repeat("t", 61),
		Path:      "/" + long[1:],
		Query:     strings.TrimSuffix(q.String(), "&"),
		Method:    "PROPFIND",
		UserAgent: long,
		Country:   "NZ",
		Headers:   h,
	}
}

// parseHeader parses a header block as net/http reads a request's: names
// canonical. What parses before a malformed line is kept; a name that is
// not a token is dropped (net/http's server answers 400 to it, so rules
// never see it).
func parseHeader(block string) http.Header {
	h, _ := textproto.NewReader(bufio.NewReader(strings.NewReader(block + "\r\n\r\n"))).ReadMIMEHeader()
	for k := range h {
		if k == "" || strings.ContainsFunc(k, func(c rune) bool { return !strings.ContainsRune(tchars, c) }) {
			delete(h, k)
		}
	}
	return http.Header(h)
}

// tchars are the characters of a token, such as a header name (RFC 9110,
// 5.6.2).
const tchars = "!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// compilingSeeds returns the seeds of FuzzCompile that compile, one rule
// each, named after their file.
func compilingSeeds(tb testing.TB) []Rule {
	tb.Helper()
	dir := filepath.Join("testdata", "fuzz", "FuzzCompile")
	files, err := os.ReadDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	var out []Rule
	for _, fi := range files {
		expr := readStringSeed(tb, filepath.Join(dir, fi.Name()))
		r := Rule{Description: fi.Name(), Expression: expr, Enabled: true}
		if _, err := Compile([]Rule{r}, testLists); err == nil {
			out = append(out, r)
		}
	}
	if len(out) < 50 {
		tb.Fatalf("only %d seeds of %s compile", len(out), dir)
	}
	return out
}

// readStringSeed reads a seed file of a fuzz target that takes one string.
func readStringSeed(tb testing.TB, name string) string {
	tb.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		tb.Fatal(err)
	}
	head, rest, _ := strings.Cut(string(b), "\n")
	quoted, ok := strings.CutPrefix(strings.TrimSpace(rest), "string(")
	quoted, ok2 := strings.CutSuffix(quoted, ")")
	s, err := strconv.Unquote(quoted)
	if head != "go test fuzz v1" || !ok || !ok2 || err != nil {
		tb.Fatalf("%s: not a seed of one string", name)
	}
	return s
}

// An oracle is a rule whose result Go knows from the request alone.
type oracle struct {
	expr string
	want func(r *Request) (value, err bool)
	prg  *program
}

// ipText is the ip variable: the address unmapped and without zone, or ""
// when unknown.
func ipText(r *Request) string {
	if !r.IP.IsValid() {
		return ""
	}
	return r.IP.Unmap().WithZone("").String()
}

// joined is the headers variable's value for a name, and whether it is
// there, computed from the canonical names net/http gives.
func joined(h http.Header, name string) (string, bool) {
	for k, vs := range h {
		if strings.ToLower(k) == name && textproto.CanonicalMIMEHeaderKey(name) == k {
			return strings.Join(vs, ", "), true
		}
	}
	return "", false
}

// inPrefix is what in_cidr gives for the request's address and a CIDR
// written s: an error when either does not parse.
func inPrefix(r *Request, s string) (value, err bool) {
	a, errA := netip.ParseAddr(ipText(r))
	p, errP := netip.ParsePrefix(s)
	if errA != nil || errP != nil {
		return false, true
	}
	return p.Masked().Contains(a), false
}

var oracleRules = []oracle{
	{expr: `ip == host`, want: func(r *Request) (bool, bool) { return ipText(r) == r.Host, false }},
	{expr: `ip.in_cidr(country)`, want: func(r *Request) (bool, bool) { return inPrefix(r, r.Country) }},
	{expr: `user_agent in headers`, want: func(r *Request) (bool, bool) {
		_, ok := joined(r.Headers, r.UserAgent)
		return ok, false
	}},
	{expr: `headers.exists(k, k == user_agent)`, want: func(r *Request) (bool, bool) {
		_, ok := joined(r.Headers, r.UserAgent)
		return ok, false
	}},
	{expr: `headers[user_agent] == country`, want: func(r *Request) (bool, bool) {
		v, ok := joined(r.Headers, r.UserAgent)
		return v == r.Country, !ok
	}},
	{expr: `headers.exists(k, k == user_agent && headers[k] == country)`, want: func(r *Request) (bool, bool) {
		v, ok := joined(r.Headers, r.UserAgent)
		return ok && v == r.Country, false
	}},
	{expr: `headers.size() == params.size()`, want: func(r *Request) (bool, bool) {
		vals, _ := url.ParseQuery(r.Query)
		return len(r.Headers) == len(vals), false
	}},
	{expr: `user_agent in params`, want: func(r *Request) (bool, bool) {
		vals, _ := url.ParseQuery(r.Query)
		_, ok := vals[r.UserAgent]
		return ok, false
	}},
	{expr: `params.exists(k, k == user_agent && params[k] == [country])`, want: func(r *Request) (bool, bool) {
		vals, _ := url.ParseQuery(r.Query)
		vs, ok := vals[r.UserAgent]
		return ok && len(vs) == 1 && vs[0] == r.Country, false
	}},
	{expr: `path.startsWith(query) && user_agent.contains(country)`, want: func(r *Request) (bool, bool) {
		return strings.HasPrefix(r.Path, r.Query) && strings.Contains(r.UserAgent, r.Country), false
	}},
	{expr: `method in ["GET", "HEAD"] || user_agent.matches("(?i)(pingdom|uptimerobot)")`, want: func(r *Request) (bool, bool) {
		return r.Method == "GET" || r.Method == "HEAD" || regexp.MustCompile("(?i)(pingdom|uptimerobot)").MatchString(r.UserAgent), false
	}},
}

// compileOracles compiles oracleRules.
func compileOracles(tb testing.TB) []oracle {
	tb.Helper()
	out := make([]oracle, len(oracleRules))
	for i, o := range oracleRules {
		s, err := Compile([]Rule{{Description: o.expr, Expression: o.expr, Enabled: true}}, nil)
		if err != nil {
			tb.Fatal(err)
		}
		o.prg = &s.progs[0]
		out[i] = o
	}
	return out
}

// checkOracle checks that the rule prg (written expr) gives want on r, an
// error if wantErr.
func checkOracle(t *testing.T, prg *program, expr string, r *Request, want, wantErr bool) {
	t.Helper()
	got, _ := evalProgram(t, prg, r)
	if got != (result{err: wantErr, value: want && !wantErr}) {
		t.Fatalf("%s on %s = %v, want %v", expr, describeRequest(r), got, result{err: wantErr, value: want})
	}
}

// checkCIDROracles checks in_cidr with cidr as a constant, and in_ip_list
// with a list of that one prefix: Compile must accept cidr exactly when
// net/netip parses it, and both rules must then answer as net/netip does.
func checkCIDROracles(t *testing.T, r *Request, cidr string) {
	t.Helper()
	if !utf8.ValidString(cidr) {
		return // a CEL string literal holds code points, not bytes
	}
	p, perr := netip.ParsePrefix(cidr)
	expr := "ip.in_cidr(" + strconv.Quote(cidr) + ")"
	s, err := Compile([]Rule{{Description: expr, Expression: expr, Enabled: true}}, nil)
	if (err == nil) != (perr == nil) {
		t.Fatalf("Compile(%s) = %v, but netip.ParsePrefix says %v", expr, err, perr)
	}
	if err != nil {
		return
	}
	want, wantErr := inPrefix(r, cidr)
	checkOracle(t, &s.progs[0], expr, r, want, wantErr)
	const inList = `ip.in_ip_list("fuzz")`
	s, err = Compile([]Rule{{Description: inList, Expression: inList, Enabled: true}}, map[string][]netip.Prefix{"fuzz": {p}})
	if err != nil {
		t.Fatalf("Compile(%s) with list [%v]: %v", inList, p, err)
	}
	checkOracle(t, &s.progs[0], inList+" with list ["+p.String()+"]", r, want, wantErr)
}
