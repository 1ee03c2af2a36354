package guard

import (
	"context"
	"encoding/json"
	"errors"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/usherhq/usher"
)

func TestIssueVerify(t *testing.T) {
	p := MustPoW(t, "k1")
	for _, d := range []int{1, 4, 8, 12} {
		c := MustIssue(t, p, d)
		if len(c.Value) != 73 || strings.Count(c.Value, ".") != 1 {
			t.Errorf("challenge %q: %d characters", c.Value, len(c.Value))
		}
		if c.Difficulty != d || !c.IssuedAt.Equal(t0) || !c.Expires.Equal(t0.Add(DefaultLifetime)) {
			t.Errorf("challenge = %+v", c)
		}
		n := MustSolve(t, c.Value, d)
		s, err := p.Verify(c.Value, n, testRoom, testClient, d, t0.Add(time.Minute))
		if err != nil {
			t.Fatalf("difficulty %d: %v", d, err)
		}
		if s.Difficulty != d || s.ID == ([16]byte{}) || !s.Until.Equal(t0.Add(DefaultLifetime+DefaultSkew)) {
			t.Errorf("solved = %+v", s)
		}
		if why := independentCheck([]usher.Key{testKey("k1")}, c.Value, n, testRoom, testClient, d, t0, DefaultLifetime, DefaultSkew); why != "" {
			t.Errorf("independent check: %s", why)
		}
		if LeadingZeros(c.Value, n) < d {
			t.Errorf("LeadingZeros = %d", LeadingZeros(c.Value, n))
		}
	}
	// Two challenges never share an id.
	a, b := MustIssue(t, p, 1), MustIssue(t, p, 1)
	sa, err1 := p.Verify(a.Value, MustSolve(t, a.Value, 1), testRoom, testClient, 1, t0)
	sb, err2 := p.Verify(b.Value, MustSolve(t, b.Value, 1), testRoom, testClient, 1, t0)
	if err1 != nil || err2 != nil || sa.ID == sb.ID {
		t.Errorf("ids %x %x (%v, %v)", sa.ID, sb.ID, err1, err2)
	}
}

func TestChallengeLength(t *testing.T) {
	p := MustPoW(t, strings.Repeat("k", 16))
	c, err := p.Issue(strings.Repeat("r", 255), netip.MustParsePrefix("2001:db8::/64"), MaxDifficulty, t0)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Value) != maxChallengeLen || maxChallengeLen > 150 {
		t.Errorf("longest challenge is %d characters, want %d, under 150", len(c.Value), maxChallengeLen)
	}
	// The worker hashes one 64-byte block per attempt for any counter a
	// browser reaches: the tail after the whole blocks, the counter and
	// the padding fit in one block.
	if tail := (maxChallengeLen+1)%64 + maxCounterLen + 9; tail > 64 {
		t.Errorf("tail of the longest challenge needs %d bytes", tail)
	}
}

// alter decodes a challenge, lets f change its payload or MAC, and encodes
// it again.
func alter(t *testing.T, challenge string, f func(payload, mac []byte) ([]byte, []byte)) string {
	t.Helper()
	ep, em, _ := strings.Cut(challenge, ".")
	payload, err1 := b64.DecodeString(ep)
	mac, err2 := b64.DecodeString(em)
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	payload, mac = f(payload, mac)
	return b64.EncodeToString(payload) + "." + b64.EncodeToString(mac)
}

// TestVerifyAttacks is the attack corpus: each case is refused with the
// error that names its check.
func TestVerifyAttacks(t *testing.T) {
	p := MustPoW(t, "k1")
	const d = 8
	c := MustIssue(t, p, d)
	n := MustSolve(t, c.Value, d)
	wrong := "0"
	for i := 0; LeadingZeros(c.Value, wrong) >= d; i++ {
		wrong = strconv.Itoa(i + 1)
	}
	other := MustPoW(t, "k9")
	foreign := MustIssue(t, other, d)
	sameID := MustPoW(t, "k1x")
	sameID.keys[0].id = "k1" // same id, another secret: a forger's guess
	forged := MustIssue(t, sameID, d)
	future, _ := p.Issue(testRoom, testClient, d, t0.Add(DefaultSkew+time.Second))
	nearFuture, _ := p.Issue(testRoom, testClient, d, t0.Add(DefaultSkew))
	hard := MustIssue(t, p, 10)
	hardN := MustSolve(t, hard.Value, 10)
	flipPayload := alter(t, c.Value, func(pl, m []byte) ([]byte, []byte) { pl[len(pl)-12] ^= 1; return pl, m })
	flipMAC := alter(t, c.Value, func(pl, m []byte) ([]byte, []byte) { m[0] ^= 0x80; return pl, m })
	lowered := alter(t, c.Value, func(pl, m []byte) ([]byte, []byte) { pl[2+2+8] = 1; return pl, m })
	laterIssue := alter(t, c.Value, func(pl, m []byte) ([]byte, []byte) { pl[2+2+7]++; return pl, m })
	shortMAC := alter(t, c.Value, func(pl, m []byte) ([]byte, []byte) { return pl, m[:15] })
	longPayload := alter(t, c.Value, func(pl, m []byte) ([]byte, []byte) { return append(pl, 0), m })
	version2 := alter(t, c.Value, func(pl, m []byte) ([]byte, []byte) { pl[0] = 2; return pl, m })
	keyLen0 := alter(t, c.Value, func(pl, m []byte) ([]byte, []byte) { pl[1] = 0; return pl, m })
	ep, em, _ := strings.Cut(c.Value, ".")
	type attack struct {
		name               string
		challenge, n, room string
		client             netip.Prefix
		minDifficulty      int
		now                time.Time
		want               error
	}
	base := attack{challenge: c.Value, n: n, room: testRoom, client: testClient, minDifficulty: d, now: t0.Add(time.Minute)}
	with := func(name string, f func(a *attack), want error) attack {
		a := base
		a.name, a.want = name, want
		f(&a)
		return a
	}
	tests := []attack{
		with("valid", func(a *attack) {}, nil),
		with("valid at issue", func(a *attack) { a.now = t0 }, nil),
		with("valid unmasked prefix", func(a *attack) { a.client = netip.MustParsePrefix("203.0.113.77/24") }, nil),
		with("valid IPv4-mapped prefix", func(a *attack) { a.client = netip.MustParsePrefix("::ffff:203.0.113.0/120") }, nil),
		with("valid clock behind by the skew", func(a *attack) { a.challenge, a.n = nearFuture.Value, MustSolve(t, nearFuture.Value, d); a.now = t0 }, nil),
		with("valid harder than the room asks", func(a *attack) { a.challenge, a.n = hard.Value, hardN }, nil),
		with("other room", func(a *attack) { a.room = "sale2" }, ErrOtherRoom),
		with("empty room", func(a *attack) { a.room = "" }, ErrOtherRoom),
		with("room too long", func(a *attack) { a.room = strings.Repeat("r", 300) }, ErrOtherRoom),
		with("other prefix", func(a *attack) { a.client = netip.MustParsePrefix("198.51.100.0/24") }, ErrOtherClient),
		with("longer prefix", func(a *attack) { a.client = netip.MustParsePrefix("203.0.113.0/32") }, ErrOtherClient),
		with("shorter prefix", func(a *attack) { a.client = netip.MustParsePrefix("203.0.0.0/16") }, ErrOtherClient),
		with("IPv6 prefix", func(a *attack) { a.client = netip.MustParsePrefix("2001:db8::/64") }, ErrOtherClient),
		with("no prefix", func(a *attack) { a.client = netip.Prefix{} }, ErrOtherClient),
		with("expired", func(a *attack) { a.now = t0.Add(DefaultLifetime) }, ErrExpired),
		with("expired long ago", func(a *attack) { a.now = t0.Add(24 * time.Hour) }, ErrExpired),
		with("future-dated", func(a *attack) { a.challenge, a.n = future.Value, MustSolve(t, future.Value, d); a.now = t0 }, ErrNotYetValid),
		with("before issue", func(a *attack) { a.now = t0.Add(-DefaultSkew - time.Second) }, ErrNotYetValid),
		with("room raised its difficulty", func(a *attack) { a.minDifficulty = d + 1 }, ErrTooEasy),
		with("lowered difficulty", func(a *attack) { a.challenge = lowered }, ErrBadMAC),
		with("later issue time", func(a *attack) { a.challenge = laterIssue }, ErrBadMAC),
		with("altered payload", func(a *attack) { a.challenge = flipPayload }, ErrBadMAC),
		with("altered MAC", func(a *attack) { a.challenge = flipMAC }, ErrBadMAC),
		with("forged with a guessed key", func(a *attack) { a.challenge, a.n = forged.Value, MustSolve(t, forged.Value, d) }, ErrBadMAC),
		with("unknown key", func(a *attack) { a.challenge, a.n = foreign.Value, MustSolve(t, foreign.Value, d) }, ErrUnknownKey),
		with("swapped MAC", func(a *attack) { a.challenge = ep + "." + strings.SplitN(hard.Value, ".", 2)[1] }, ErrBadMAC),
		with("short MAC", func(a *attack) { a.challenge = shortMAC }, ErrMalformed),
		with("long payload", func(a *attack) { a.challenge = longPayload }, ErrMalformed),
		with("version 2", func(a *attack) { a.challenge = version2 }, ErrMalformed),
		with("no key id", func(a *attack) { a.challenge = keyLen0 }, ErrMalformed),
		with("no MAC", func(a *attack) { a.challenge = ep }, ErrMalformed),
		with("two dots", func(a *attack) { a.challenge = ep + "." + em + "." }, ErrMalformed),
		with("dot first", func(a *attack) { a.challenge = "." + ep + em }, ErrMalformed),
		with("padded base64", func(a *attack) { a.challenge = ep + "=." + em }, ErrMalformed),
		with("standard base64", func(a *attack) { a.challenge = strings.NewReplacer("-", "+", "_", "/").Replace(c.Value) + "+" }, ErrMalformed),
		with("non-canonical last character", func(a *attack) { a.challenge = ep + "." + em[:len(em)-1] + "B" }, ErrMalformed),
		with("line break", func(a *attack) { a.challenge = ep[:10] + "\n" + ep[10:] + "." + em }, ErrMalformed),
		with("huge challenge", func(a *attack) { a.challenge = strings.Repeat(c.Value, 1000) }, ErrMalformed),
		with("empty challenge", func(a *attack) { a.challenge = "" }, ErrMalformed),
		with("garbage challenge", func(a *attack) { a.challenge = "\x00\xff<script>..%%" }, ErrMalformed),
		with("unicode challenge", func(a *attack) { a.challenge = "チャレンジ.挑战" }, ErrMalformed),
		with("unicode lookalike", func(a *attack) { a.challenge = c.Value[:5] + "Α" + c.Value[6:] }, ErrMalformed),
		with("wrong n", func(a *attack) { a.n = wrong }, ErrNotSolved),
		with("other challenge's n", func(a *attack) { a.challenge = hard.Value; a.n = n }, ErrNotSolved),
		with("huge n", func(a *attack) { a.n = strings.Repeat("9", 100000) }, ErrBadCounter),
		with("17 digits", func(a *attack) { a.n = "12345678901234567" }, ErrBadCounter),
		with("leading zero", func(a *attack) { a.n = "0" + n }, ErrBadCounter),
		with("negative n", func(a *attack) { a.n = "-" + n }, ErrBadCounter),
		with("plus sign", func(a *attack) { a.n = "+" + n }, ErrBadCounter),
		with("hex n", func(a *attack) { a.n = "0x1f" }, ErrBadCounter),
		with("n with space", func(a *attack) { a.n = n + " " }, ErrBadCounter),
		with("empty n", func(a *attack) { a.n = "" }, ErrBadCounter),
		with("unicode digits", func(a *attack) { a.n = "١٢٣" }, ErrBadCounter),
		with("fullwidth digits", func(a *attack) { a.n = "１２" }, ErrBadCounter),
		with("everything empty", func(a *attack) { a.challenge, a.n, a.room, a.client = "", "", "", netip.Prefix{} }, ErrBadCounter),
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := p.Verify(tt.challenge, tt.n, tt.room, tt.client, tt.minDifficulty, tt.now)
			if !errors.Is(err, tt.want) || (tt.want != nil && !errors.Is(err, ErrInvalid)) {
				t.Fatalf("Verify = %v, want %v", err, tt.want)
			}
			if err != nil && s != (Solved{}) {
				t.Errorf("Verify returned %+v with its error", s)
			}
			why := independentCheck([]usher.Key{testKey("k1")}, tt.challenge, tt.n, tt.room, tt.client, tt.minDifficulty, tt.now, DefaultLifetime, DefaultSkew)
			if (why == "") != (err == nil) {
				t.Errorf("independent check says %q, Verify %v", why, err)
			}
		})
	}
}

// TestReplay: Verify accepts a solution again (it keeps no state); the
// spent set refuses the second use.
func TestReplay(t *testing.T) {
	p := MustPoW(t, "k1")
	c := MustIssue(t, p, 4)
	n := MustSolve(t, c.Value, 4)
	spent := NewMemorySpent(10)
	spent.Now = func() time.Time { return t0 }
	for i, want := range []bool{true, false, false} {
		s, err := p.Verify(c.Value, n, testRoom, testClient, 4, t0)
		if err != nil {
			t.Fatal(err)
		}
		fresh, err := spent.Spend(t.Context(), testRoom, s.ID, s.Until)
		if err != nil || fresh != want {
			t.Errorf("use %d: fresh %v, %v; want %v", i+1, fresh, err, want)
		}
	}
}

func TestKeyRotation(t *testing.T) {
	old := MustPoW(t, "k1")
	c := MustIssue(t, old, 4)
	n := MustSolve(t, c.Value, 4)
	rotated := MustPoW(t, "k2", "k1")
	if _, err := rotated.Verify(c.Value, n, testRoom, testClient, 4, t0); err != nil {
		t.Errorf("rotated ring refuses the old key's challenge: %v", err)
	}
	if nc := MustIssue(t, rotated, 4); !strings.HasPrefix(nc.Value, b64.EncodeToString([]byte{1, 2, 'k', '2'})[:5]) {
		t.Errorf("rotated ring does not sign with its first key: %q", nc.Value)
	}
	dropped := MustPoW(t, "k2")
	if _, err := dropped.Verify(c.Value, n, testRoom, testClient, 4, t0); !errors.Is(err, ErrUnknownKey) {
		t.Errorf("dropped key: %v", err)
	}
}

func TestNewPoWErrors(t *testing.T) {
	good := testKey("k1")
	tests := []struct {
		name string
		keys []usher.Key
		want []string
	}{
		{"none", nil, []string{"no keys"}},
		{"empty id", []usher.Key{{Secret: good.Secret}}, []string{"key 1 of 1"}},
		{"long id", []usher.Key{{ID: strings.Repeat("k", 17), Secret: good.Secret}}, []string{"is not 1-16"}},
		{"bad id", []usher.Key{{ID: "k.1", Secret: good.Secret}}, []string{`"k.1"`}},
		{"short secret", []usher.Key{{ID: "k1", Secret: make([]byte, 15)}}, []string{"at least 16 bytes, got 15"}},
		{"repeated id, every problem", []usher.Key{good, good, {ID: "k3"}}, []string{"more than one key", `"k3"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewPoW(tt.keys, Options{})
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestIssueErrors(t *testing.T) {
	p := MustPoW(t, "k1")
	tests := []struct {
		name       string
		room       string
		client     netip.Prefix
		difficulty int
	}{
		{"empty room", "", testClient, 8},
		{"long room", strings.Repeat("r", 256), testClient, 8},
		{"no client", testRoom, netip.Prefix{}, 8},
		{"difficulty 0", testRoom, testClient, 0},
		{"difficulty 33", testRoom, testClient, 33},
	}
	if _, err := p.Issue(testRoom, testClient, 8, time.Unix(-1, 0)); err == nil {
		t.Error("issued before 1970")
	}
	for _, tt := range tests {
		if _, err := p.Issue(tt.room, tt.client, tt.difficulty, t0); err == nil {
			t.Errorf("%s: no error", tt.name)
		}
	}
}

func TestOptions(t *testing.T) {
	p, err := NewPoW([]usher.Key{testKey("k1")}, Options{Lifetime: time.Minute, Skew: -1})
	if err != nil {
		t.Fatal(err)
	}
	if p.Lifetime() != time.Minute {
		t.Errorf("lifetime %v", p.Lifetime())
	}
	c := MustIssue(t, p, 4)
	n := MustSolve(t, c.Value, 4)
	if _, err := p.Verify(c.Value, n, testRoom, testClient, 4, t0.Add(time.Minute)); !errors.Is(err, ErrExpired) {
		t.Errorf("after a minute: %v", err)
	}
	if _, err := p.Verify(c.Value, n, testRoom, testClient, 4, t0.Add(-time.Second)); !errors.Is(err, ErrNotYetValid) {
		t.Errorf("no skew, a second early: %v", err)
	}
	s, err := p.Verify(c.Value, n, testRoom, testClient, 4, t0)
	if err != nil || !s.Until.Equal(t0.Add(time.Minute)) {
		t.Errorf("until %v, %v", s.Until, err)
	}
}

func TestSplitSolution(t *testing.T) {
	tests := []struct {
		in, c, n string
		ok       bool
	}{
		{"AAA.BBB.123", "AAA.BBB", "123", true},
		{"AAA.BBB.", "AAA.BBB", "", true},
		{"123", "", "", false},
		{"", "", "", false},
		{strings.Repeat("A", MaxSolutionLen) + ".1", "", "", false},
	}
	for _, tt := range tests {
		c, n, ok := SplitSolution(tt.in)
		if c != tt.c || n != tt.n || ok != tt.ok {
			t.Errorf("SplitSolution(%.20q) = %q, %q, %v", tt.in, c, n, ok)
		}
	}
}

func TestChallengeJSON(t *testing.T) {
	c := Challenge{Value: "AQJrMQ.mac", Difficulty: 18, IssuedAt: t0, Expires: t0.Add(5 * time.Minute)}
	b, err := json.Marshal(c.JSON())
	if err != nil {
		t.Fatal(err)
	}
	want := `{"usherChallenge":{"challenge":"AQJrMQ.mac","difficulty":18,"algorithm":"sha256-leading-zero-bits","header":"X-Usher-Pow","expiresAt":"2026-03-14T15:14:26Z"}}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
}

// TestSolveAgrees: the native solver's answer is the smallest counter.
func TestSolveAgrees(t *testing.T) {
	for _, c := range []string{"", "x", strings.Repeat("y", 63), strings.Repeat("z", 64), strings.Repeat("w", maxChallengeLen)} {
		n := MustSolve(t, c, 6)
		v, _ := strconv.Atoi(n)
		for i := range v {
			if LeadingZeros(c, strconv.Itoa(i)) >= 6 {
				t.Fatalf("%q: %d solves before %d", c, i, v)
			}
		}
		if LeadingZeros(c, n) < 6 {
			t.Fatalf("%q: %s does not solve", c, n)
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := Solve(ctx, "x", 32); err == nil {
		t.Error("Solve ignored a cancelled context")
	}
	if _, err := Solve(t.Context(), "x", 0); err == nil {
		t.Error("Solve took difficulty 0")
	}
}

func TestVerifyDoesNotAllocate(t *testing.T) {
	p := MustPoW(t, "k1")
	c := MustIssue(t, p, 8)
	n := MustSolve(t, c.Value, 8)
	for name, args := range map[string][2]string{"good": {c.Value, n}, "bad mac": {c.Value[:len(c.Value)-2] + "AA", n}} {
		allocs := testing.AllocsPerRun(100, func() {
			_, _ = p.Verify(args[0], args[1], testRoom, testClient, 8, t0)
		})
		if allocs != 0 {
			t.Errorf("%s: Verify allocates %v times", name, allocs)
		}
	}
}
