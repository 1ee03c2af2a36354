package redis_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/store/redis"
	"github.com/usherhq/usher/internal/store/redis/redistest"
	"github.com/usherhq/usher/internal/store/storetest"
)

// TestRoomKeysExpire: every key of a room has a TTL, so an idle room goes
// away by itself; the key ring has none.
func TestRoomKeysExpire(t *testing.T) {
	srv := redistest.StartServer(t)
	s := mustOpen(t, redis.Options{Addrs: []string{srv.Addr()}})
	ctx := context.Background()
	t0 := storetest.T0
	in := op(t0, 1, 100, time.Minute)
	mustAdmit(t, s, "r", in)
	w := op(t0.Add(time.Second), 1, 100, time.Minute)
	w.Client = usher.ClientOp{Key: 9, PerMinute: 5, Back: t0.Unix() + 86400}
	mustAdmit(t, s, "r", w) // waits
	r := usher.RenewOp{Now: t0.Add(10 * time.Second), Visitor: in.Visitor, From: usher.Cell{Exp: t0.Unix() + 60, At: t0},
		To: t0.Unix() + 70, Counted: t0.Add(10 * time.Second), Keep: t0.Unix() + 600}
	if _, err := s.Renew(ctx, "r", r); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SaveKeys(ctx, []usher.Key{{ID: "k", Secret: make([]byte, 32)}}); err != nil {
		t.Fatal(err)
	}
	keys := strings.Fields(srv.Do("KEYS", "*"))
	if len(keys) != 8 {
		t.Fatalf("keys = %q, want the room's five, a client sketch, a visitor record and the ring", keys)
	}
	for _, k := range keys {
		ttl, err := strconv.ParseInt(srv.Do("PTTL", k), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case k == "usher:keys":
			if ttl != -1 {
				t.Errorf("the key ring has a TTL (%d ms)", ttl)
			}
		case strings.Contains(k, "}:v:"):
			// A visitor's record lives as long as its tickets can be shown.
			if ttl <= 0 || ttl > 600_000 {
				t.Errorf("%s: TTL %d ms, want up to the op's keep", k, ttl)
			}
		case strings.Contains(k, "}:c"):
			if ttl <= 0 || ttl > 130_000 {
				t.Errorf("%s: TTL %d ms, want about two minutes", k, ttl)
			}
		case ttl <= 0 || ttl > (24*time.Hour+time.Minute).Milliseconds():
			t.Errorf("%s: TTL %d ms, want about a day", k, ttl)
		}
	}
}

// TestUnavailable: with the server down, calls fail with EUnavailable
// within about the timeout; when it is back, they work again.
func TestUnavailable(t *testing.T) {
	srv := redistest.StartServer(t)
	const timeout = 300 * time.Millisecond
	s := mustOpen(t, redis.Options{Addrs: []string{srv.Addr()}, Timeout: timeout})
	ctx := context.Background()
	mustAdmit(t, s, "r", op(storetest.T0, 10, 100, time.Minute))
	srv.Stop()
	for _, call := range []struct {
		name string
		fn   func() error
	}{
		{"Admit", func() error { _, err := s.Admit(ctx, "r", op(storetest.T0, 10, 100, time.Minute)); return err }},
		{"Renew", func() error {
			_, err := s.Renew(ctx, "r", usher.RenewOp{Now: storetest.T0, To: storetest.T0.Unix() + 9})
			return err
		}},
		{"Peek", func() error { _, _, err := s.Peek(ctx, "r", storetest.T0, 0); return err }},
		{"Stats", func() error { _, err := s.Stats(ctx, "r", storetest.T0); return err }},
		{"LoadKeys", func() error { _, err := s.LoadKeys(ctx); return err }},
	} {
		start := time.Now()
		err := call.fn()
		took := time.Since(start)
		if usher.ErrorCode(err) != usher.EUnavailable {
			t.Errorf("%s with the server down: %v, want an %s error", call.name, err, usher.EUnavailable)
		}
		if took > timeout+time.Second {
			t.Errorf("%s took %v to fail, want about %v", call.name, took, timeout)
		}
		if err != nil && !strings.Contains(usher.ErrorMessage(err), "redis: ") {
			t.Errorf("%s: message %q does not name redis", call.name, usher.ErrorMessage(err))
		}
	}
	srv.Start()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := s.Admit(ctx, "r", op(storetest.T0.Add(time.Second), 10, 100, time.Minute))
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Admit after the server came back: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestOpenErrors(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		opts redis.Options
		code string
	}{
		{"no address", redis.Options{}, usher.EInvalid},
		{"two addresses without cluster", redis.Options{Addrs: []string{"a:1", "b:1"}}, usher.EInvalid},
		{"db with cluster", redis.Options{Addrs: []string{"a:1"}, Cluster: true, DB: 1}, usher.EInvalid},
		{"brace in prefix", redis.Options{Addrs: []string{"a:1"}, KeyPrefix: "a{b"}, usher.EInvalid},
		{"nobody there", redis.Options{Addrs: []string{"127.0.0.1:1"}, Timeout: 200 * time.Millisecond}, usher.EUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := redis.Open(ctx, tc.opts)
			if err == nil {
				s.Close()
			}
			if got := usher.ErrorCode(err); got != tc.code {
				t.Fatalf("Open: %v (code %q), want code %q", err, got, tc.code)
			}
		})
	}
}

// TestServerErrorsAreNotUnavailable: a bad ring or keys of the wrong type
// under the room's names are server errors (EInternal), not an outage.
func TestServerErrorsAreNotUnavailable(t *testing.T) {
	srv := redistest.StartServer(t)
	s := mustOpen(t, redis.Options{Addrs: []string{srv.Addr()}})
	srv.Do("SET", "usher:keys", "not json")
	_, err := s.LoadKeys(context.Background())
	var e *usher.Error
	if !errors.As(err, &e) || e.Code != usher.EInternal {
		t.Fatalf("LoadKeys of a bad ring: %v, want %s", err, usher.EInternal)
	}
	for _, k := range []string{"m", "l", "w", "a", "r"} {
		srv.Do("SET", "{usher:r}:"+k, "x")
	}
	if _, err := s.Admit(context.Background(), "r", op(storetest.T0, 1, 1, time.Minute)); usher.ErrorCode(err) != usher.EInternal {
		t.Fatalf("Admit over a string key: %v, want %s", err, usher.EInternal)
	}
}

// TestRenewTakesOutOnlyWhatItMay: renewals of visitors the room has no
// record of, counted before its counters existed, add without taking out;
// those it knows are moved once.
func TestRenewTakesOutOnlyWhatItMay(t *testing.T) {
	srv := redistest.StartServer(t)
	s := mustOpen(t, redis.Options{Addrs: []string{srv.Addr()}})
	ctx := context.Background()
	t0 := storetest.T0
	const n = 300
	var ops []usher.AdmitOp
	for i := range n {
		o := op(t0.Add(time.Duration(i)*time.Millisecond), 1000, 1000, time.Minute)
		o.ActiveExp = t0.Unix() + 60 + int64(i%7)
		mustAdmit(t, s, "r", o)
		ops = append(ops, o)
	}
	now := t0.Add(30 * time.Second)
	renew := func(v [8]byte, from usher.Cell, to int64) {
		t.Helper()
		if _, err := s.Renew(ctx, "r", usher.RenewOp{Now: now, Visitor: v, From: from, To: to, Counted: now, Keep: now.Unix() + 600}); err != nil {
			t.Fatal(err)
		}
	}
	for i, o := range ops {
		renew(o.Visitor, usher.Cell{Exp: o.ActiveExp, At: o.Now}, t0.Unix()+90+int64(i%3))
	}
	// Ten visitors counted just before the room was born (within the
	// clock skew, so no recovery): added, not taken out.
	for range 10 {
		renew(newVisitor(), usher.Cell{Exp: t0.Unix() + 61, At: t0.Add(-500 * time.Millisecond)}, t0.Unix()+90)
	}
	st, err := s.Stats(ctx, "r", now)
	if err != nil {
		t.Fatal(err)
	}
	if st.Active != n+10 {
		t.Fatalf("active after the moves = %d, want %d", st.Active, n+10)
	}
	if st, _ := s.Stats(ctx, "r", t0.Add(67*time.Second)); st.Active != n+10 {
		t.Fatalf("active after the old cells expired = %d, want %d", st.Active, n+10)
	}
	if st, _ := s.Stats(ctx, "r", t0.Add(92*time.Second)); st.Active != 0 {
		t.Fatalf("active after every cell expired = %d, want 0", st.Active)
	}
}

// TestAuth: a server that requires a password takes the store's, and
// refuses a store without it.
func TestAuth(t *testing.T) {
	srv := redistest.StartServer(t)
	srv.Do("CONFIG", "SET", "requirepass", "s3cret")
	s := mustOpen(t, redis.Options{Addrs: []string{srv.Addr()}, Password: "s3cret"})
	mustAdmit(t, s, "r", op(storetest.T0, 1, 1, time.Minute))
	if s, err := redis.Open(context.Background(), redis.Options{Addrs: []string{srv.Addr()}}); err == nil {
		s.Close()
		t.Fatal("Open without the password succeeded")
	}
}
