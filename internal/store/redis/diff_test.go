package redis_test

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/store/local"
	"github.com/usherhq/usher/internal/store/redis"
	"github.com/usherhq/usher/internal/store/redis/redistest"
	"github.com/usherhq/usher/internal/store/storetest"
)

// TestSameAsLocal drives the embedded store (the reference) and the Redis
// store with the same random visitors and requires the same answers:
// arrivals, check-ins, abandonment, renewals in batches, queue_all and
// passthrough, fifo and random, places in line far before and after the
// anchor, idle spells long enough to forget it, answers lost after the
// store applied them and the takeovers that follow.
func TestSameAsLocal(t *testing.T) {
	srv := redistest.StartServer(t)
	for seed := range uint64(4) {
		t.Run("", func(t *testing.T) {
			ref, err := local.Open(local.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer ref.Close()
			rs := mustOpen(t, redis.Options{Addrs: []string{srv.Addr()}, KeyPrefix: prefix(t)})
			t.Cleanup(func() {
				if t.Failed() {
					tag := "{" + prefix(t) + ":r}:"
					t.Logf("meta %q", srv.Do("HGETALL", tag+"m"))
					t.Logf("waiting %q", srv.Do("HKEYS", tag+"w"))
				}
			})
			compare(t, rand.New(rand.NewPCG(seed, 7)), ref, rs, seed%2 == 1)
		})
	}
}

type visitor struct {
	id       [8]byte
	bucket   int64
	admitted bool
	cell     usher.Cell   // the latest ticket: its cell and counted-at
	old      []usher.Cell // earlier tickets, for replays
	gone     bool
	join     int64 // the joining bucket its latest ticket is counted in (0: none)
}

func compare(t *testing.T, rng *rand.Rand, ref, rs usher.Store, random bool) {
	ctx := context.Background()
	const room = "r"
	total, perMinute := 8+rng.IntN(20), 10+rng.IntN(40)
	session := time.Duration(20+rng.IntN(40)) * time.Second
	now := storetest.T0
	var vs []*visitor
	var next uint64
	tookOver := 0
	counted := func(v *visitor) time.Time {
		c := now.Truncate(time.Millisecond)
		if !c.After(v.cell.At) && !v.cell.At.IsZero() {
			c = v.cell.At.Add(time.Millisecond)
		}
		return c
	}
	for step := range 3000 {
		switch r := rng.IntN(1000); {
		case r < 3:
			now = now.Add(time.Duration(5+rng.IntN(600)) * time.Second) // idle spell
		case r < 300:
			now = now.Add(time.Duration(rng.IntN(1500)) * time.Millisecond)
		}
		o := usher.AdmitOp{
			Now: now, TotalActiveUsers: total, NewUsersPerMinute: perMinute,
			SessionDuration: session,
			WaitExp:         usher.CeilSecond(now.Add(time.Duration(3+rng.IntN(8)) * time.Second)).Unix(),
			ActiveExp:       usher.CeilSecond(now.Add(session)).Unix(),
			NoAdmit:         rng.IntN(50) == 0,
			Force:           rng.IntN(80) == 0,
			Random:          random,
			Draw:            rng.Float64(),
			Keep:            now.Unix() + 600,
		}
		var v *visitor
		if len(vs) > 0 && rng.IntN(3) > 0 {
			v = vs[rng.IntN(len(vs))]
		}
		switch {
		case v == nil || v.gone && rng.IntN(2) == 0:
			next++
			v = &visitor{bucket: now.Unix()}
			for i := range v.id {
				v.id[i] = byte(next >> (8 * (7 - i)))
			}
			switch rng.IntN(80) {
			case 0, 1:
				v.bucket -= int64(rng.IntN(3000)) // an old place in line
			case 2:
				v.bucket += int64(rng.IntN(600_000) - 300_000) // a pre-queue place, far away
			}
			if rng.IntN(4) == 0 {
				o.Client = usher.ClientOp{Key: uint64(1 + rng.IntN(3)), PerMinute: 2 + rng.IntN(3), Refuse: rng.IntN(2) == 0, Back: now.Unix() + 86400}
			}
			o.Joining = random && rng.IntN(2) == 0
			if o.Joining && rng.IntN(2) == 0 {
				v.join = v.bucket + 2*86400 // counted in a joining bucket
			}
			vs = append(vs, v)
		case v.gone:
			continue
		case rng.IntN(10) == 0:
			v.gone = true // closes the tab
			continue
		case v.admitted:
			if v.cell.Exp <= now.Unix() {
				v.gone = true
				continue
			}
			r := usher.RenewOp{Now: now, Visitor: v.id, From: v.cell, Counted: counted(v), Keep: now.Unix() + 600}
			if rng.IntN(5) > 0 {
				r.To = usher.CeilSecond(now.Add(session)).Unix()
			}
			if len(v.old) > 0 && rng.IntN(4) == 0 {
				r.From = v.old[rng.IntN(len(v.old))] // a stale copy
			}
			want, err := ref.Renew(ctx, room, r)
			if err != nil {
				t.Fatal(err)
			}
			got, err := rs.Renew(ctx, room, r)
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Fatalf("step %d: Renew redis %+v, local %+v (op %+v)", step, got, want, r)
			}
			if !got.Replay {
				v.old = append(v.old, v.cell)
				v.cell = usher.Cell{Exp: r.To, At: r.Counted}
				if r.To == 0 {
					v.gone = true
				}
			}
			if rng.IntN(4) == 0 {
				want, _ := ref.Stats(ctx, room, now)
				got, _ := rs.Stats(ctx, room, now)
				if got != want {
					t.Fatalf("step %d: after Renew, Stats redis %+v, local %+v", step, got, want)
				}
			}
			continue
		}
		o.Visitor = v.id
		o.Bucket = v.bucket
		switch {
		case v.cell.At.IsZero() && v.join != 0:
			o.Bucket = v.join
		case v.join != 0:
			o.FromBucket = v.join
		}
		if random && rng.IntN(2) == 0 {
			o.DrawBefore = now.Unix() + 43200 // joiners and the back draw nothing
		}
		o.From = v.cell
		if len(v.old) > 0 && rng.IntN(5) == 0 {
			o.From = v.old[rng.IntN(len(v.old))] // a replayed copy
		}
		o.Counted = counted(v)
		if rng.IntN(3) == 0 {
			// A record counted at least a millisecond before the op may be
			// taken over (so that the takeover's ticket is always newer).
			o.TakeOver = now.Add(-time.Millisecond - time.Duration(rng.IntN(4000))*time.Millisecond)
		}
		want := mustAdmit(t, ref, room, o)
		got := mustAdmit(t, rs, room, o)
		if got != want {
			t.Fatalf("step %d at +%v: redis %+v, local %+v (op %+v)", step, now.Sub(storetest.T0), got, want, o)
		}
		if got.TookOver {
			tookOver++
		}
		if got.Replay || (got.OverClient && o.Client.Refuse) {
			continue
		}
		if !v.cell.At.IsZero() && rng.IntN(12) == 0 {
			// The answer is lost: the visitor keeps the ticket it had.
			v.old = append(v.old, usher.Cell{Exp: o.WaitExp, At: o.Counted})
			continue
		}
		if got.OverClient {
			v.bucket = o.Client.Back
		}
		if got.OverClient || !v.cell.At.IsZero() {
			v.join = 0 // counted in its own bucket from now on
		}
		if !v.cell.At.IsZero() {
			v.old = append(v.old, v.cell)
		}
		v.admitted = got.Admitted
		v.cell = usher.Cell{Exp: o.WaitExp, At: o.Counted}
		if got.Admitted {
			v.cell.Exp = o.ActiveExp
		}
		if step%50 == 0 {
			// (Stats on the embedded store expires what is due, so it is
			// asked at now only.)
			want, _ := ref.Stats(ctx, room, now)
			got, err := rs.Stats(ctx, room, now)
			if err != nil || got != want {
				t.Fatalf("step %d: Stats redis %+v, %v; local %+v", step, got, err, want)
			}
			wa, wst, _ := ref.Peek(ctx, room, now, v.bucket)
			ga, gst, err := rs.Peek(ctx, room, now, v.bucket)
			if err != nil || ga != wa || gst != wst {
				t.Fatalf("step %d: Peek redis %d %+v, %v; local %d %+v", step, ga, gst, err, wa, wst)
			}
		}
	}
	t.Logf("%d takeovers", tookOver)
	if tookOver == 0 {
		t.Fatal("no op took a record over: the test must exercise takeovers")
	}
}
