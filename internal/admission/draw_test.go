package admission

import (
	"context"
	"encoding/hex"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/draw"
	"github.com/usherhq/usher/internal/store/local"
)

// clockStore returns an embedded store whose clock reads *now, so that a
// draw kept until a test's time is not taken as expired by the wall clock.
func clockStore(t *testing.T, now *atomic.Int64) *local.Store {
	t.Helper()
	st, err := local.Open(local.Options{Now: func() time.Time { return time.Unix(0, now.Load()) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// TestShuffleIsVerifiable: 60 visitors join a shuffled pre-queue on two
// engines sharing one store; before the start the draw is committed, not
// revealed; after it the published order verifies, every visitor's place
// is its entry's published place, and both engines publish alike. A
// reload keeps its place and adds no entry.
func TestShuffleIsVerifiable(t *testing.T) {
	var clock atomic.Int64
	clock.Store(t0.UnixNano())
	st := clockStore(t, &clock)
	a := New(st, Options{Rand: rand.New(rand.NewPCG(1, 2)).Uint64})
	b := New(st, Options{Rand: rand.New(rand.NewPCG(3, 4)).Uint64})
	room := eventRoom(true)
	room.Events[0].DrawBeacon = "drand round 1234"
	ctx := context.Background()
	before, err := a.Draws(ctx, &room, t0)
	if err != nil || len(before.Draws) != 1 || before.Draws[0].Revealed || before.Draws[0].Secret != "" {
		t.Fatalf("before the pre-queue: %+v, %v; want one committed shuffle, not revealed", before, err)
	}
	places := map[string]int64{}
	for i := range 60 {
		e := a
		if i%2 == 1 {
			e = b
		}
		now := t0.Add(time.Duration(i) * 100 * time.Millisecond)
		clock.Store(now.UnixNano())
		d := decide(t, e, &room, nil, now)
		if d.Phase != usher.Prequeue {
			t.Fatalf("visitor %d: phase %v", i, d.Phase)
		}
		en := draw.Entry(room.ID, d.Ticket.VisitorID)
		places[hex.EncodeToString(en[:])] = d.Ticket.Place
		if i == 0 {
			// A reload keeps the place and adds no entry.
			again := decide(t, b, &room, &d.Ticket, now.Add(2*time.Second))
			if again.Ticket.Place != d.Ticket.Place {
				t.Fatalf("a reload moved the place: %d, was %d", again.Ticket.Place, d.Ticket.Place)
			}
		}
	}
	after := room.Events[0].Start.Add(time.Second)
	clock.Store(after.UnixNano())
	pub, err := a.Draws(ctx, &room, after)
	if err != nil || len(pub.Draws) != 1 {
		t.Fatalf("after the start: %+v, %v", pub, err)
	}
	rec := pub.Draws[0]
	if !rec.Revealed || rec.Commitment != before.Draws[0].Commitment || rec.Beacon != "drand round 1234" {
		t.Fatalf("revealed %v, commitment %s (was %s), beacon %q", rec.Revealed, rec.Commitment, before.Draws[0].Commitment, rec.Beacon)
	}
	if p := draw.Verify(room.ID, rec); len(p) != 0 {
		t.Fatalf("the published shuffle does not verify: %v", p)
	}
	if len(rec.Order) != 60 {
		t.Fatalf("%d entries published, want the 60 visitors once each", len(rec.Order))
	}
	for i, p := range rec.Order {
		if places[p.Entry] != p.Place {
			t.Fatalf("entry %s: ticket place %d, published %d", p.Entry, places[p.Entry], p.Place)
		}
		if i > 0 && p.Place < rec.Order[i-1].Place {
			t.Fatalf("published order not by place at %d", i)
		}
	}
	other, err := b.Draws(ctx, &room, after)
	if err != nil || other.Draws[0].Seed != rec.Seed || len(other.Draws[0].Order) != 60 {
		t.Fatalf("the other engine publishes seed %s, want %s (%v)", other.Draws[0].Seed, rec.Seed, err)
	}
	// A beacon changed after the first join changes nothing.
	room.Events[0].DrawBeacon = "another round"
	c := New(st, Options{})
	late, err := c.Draws(ctx, &room, after)
	if err != nil || late.Draws[0].Beacon != "drand round 1234" || late.Draws[0].Seed != rec.Seed {
		t.Fatalf("after the beacon changed: beacon %q seed %s, want the first join's (%v)", late.Draws[0].Beacon, late.Draws[0].Seed, err)
	}
}

// TestLotteryIsVerifiable: a random room with one slot a window; waiters
// on two engines over one store draw from the committed chain (both
// engines draw alike), each admission is recorded with its draw, and the
// published epoch verifies.
func TestLotteryIsVerifiable(t *testing.T) {
	var clock atomic.Int64
	clock.Store(t0.UnixNano())
	st := clockStore(t, &clock)
	a := New(st, Options{Rand: rand.New(rand.NewPCG(1, 2)).Uint64})
	b := New(st, Options{Rand: rand.New(rand.NewPCG(3, 4)).Uint64})
	room := simRoom()
	room.QueueingMethod = usher.Random
	room.TotalActiveUsers = 2
	room.SessionDuration = 4 * time.Second
	room.DisableSessionRenewal = true
	ctx := context.Background()
	now := t0
	for range 2 { // fill the room
		decide(t, a, &room, nil, now)
	}
	var tks []*usher.Ticket
	for i := range 20 {
		d := decide(t, a, &room, nil, now.Add(time.Duration(i)*time.Millisecond))
		tks = append(tks, &d.Ticket)
	}
	admitted := 0
	for now = t0.Add(time.Second); now.Before(t0.Add(2 * time.Minute)); now = now.Add(250 * time.Millisecond) {
		clock.Store(now.UnixNano())
		for i, tk := range tks {
			if tk == nil || tk.NextCheckIn.After(now) {
				continue
			}
			e := a
			if i%2 == 1 {
				e = b
			}
			d := decide(t, e, &room, tk, now)
			if d.Outcome == usher.Admit {
				admitted++
				tks[i] = nil
				continue
			}
			tks[i] = &d.Ticket
		}
	}
	if admitted < 10 {
		t.Fatalf("%d of 20 admitted in two minutes", admitted)
	}
	wa, _ := a.lotteryDraw(ctx, room.ID, [8]byte{1}, now, room.RefreshInterval)
	wb, _ := b.lotteryDraw(ctx, room.ID, [8]byte{1}, now, room.RefreshInterval)
	if wa != wb {
		t.Fatalf("two engines draw %v and %v for one visitor and window", wa, wb)
	}
	clock.Store(now.UnixNano())
	pub, err := b.Draws(ctx, &room, now)
	if err != nil {
		t.Fatal(err)
	}
	recorded := 0
	for _, r := range pub.Draws {
		if p := draw.Verify(room.ID, r); len(p) != 0 {
			t.Fatalf("draw %s does not verify: %v", r.ID, p)
		}
		for _, w := range r.Windows {
			recorded += len(w.Admitted)
		}
	}
	if recorded < admitted-2 || recorded > admitted {
		t.Fatalf("%d admissions published, %d admitted (at most the last two windows unrevealed)", recorded, admitted)
	}
	if len(pub.Draws) < 2 || pub.Draws[len(pub.Draws)-1].Revealed {
		t.Fatalf("the next epoch is not committed unrevealed: %+v", pub.Draws)
	}
	// Nothing of a window that may still draw is out: no link of the
	// current window or the one before (nodes' clocks differ), no secret
	// of an epoch still drawing.
	cur := draw.Window(now, room.RefreshInterval)
	for _, r := range pub.Draws {
		if r.Secret != "" && r.Epoch >= draw.Epoch(cur) {
			t.Fatalf("the secret of epoch %d is out at window %d", r.Epoch, cur)
		}
		for _, w := range r.Windows {
			if w.Window > cur-2 {
				t.Fatalf("the link of window %d is out at window %d", w.Window, cur)
			}
		}
	}
	// A reload in the same window draws the same; another window, anew.
	v := tks[0]
	if v == nil {
		v = &usher.Ticket{VisitorID: [8]byte{42}}
	}
	d1, _ := a.lotteryDraw(ctx, room.ID, v.VisitorID, now, room.RefreshInterval)
	d2, _ := b.lotteryDraw(ctx, room.ID, v.VisitorID, now.Add(time.Millisecond), room.RefreshInterval)
	d3, _ := a.lotteryDraw(ctx, room.ID, v.VisitorID, now.Add(room.RefreshInterval), room.RefreshInterval)
	if d1 != d2 || d1 == d3 {
		t.Fatalf("draws %v, %v in one window (want equal), %v in the next (want another)", d1, d2, d3)
	}
}

// BenchmarkPublishShuffle: revealing a pre-queue of 100,000 entries (the
// order computed from the store's entries), and the JSON it makes.
func BenchmarkPublishShuffle(b *testing.B) {
	st, err := local.Open(local.Options{Now: func() time.Time { return t0 }})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	room := eventRoom(true)
	ev := &room.Events[0]
	for i := range 100_000 {
		en := draw.Entry(room.ID, [8]byte{byte(i), byte(i >> 8), byte(i >> 16)})
		if err := st.AddDrawEntry(context.Background(), room.ID, draw.ShuffleID(ev.Start), en[:], t0.Add(time.Hour)); err != nil {
			b.Fatal(err)
		}
	}
	e := New(st, Options{})
	at := ev.Start.Add(time.Second) // before it settles: computed every time
	b.ReportAllocs()
	for b.Loop() {
		pub, err := e.Draws(context.Background(), &room, at)
		if err != nil || len(pub.Draws[0].Order) != 100_000 {
			b.Fatal(err)
		}
	}
}

// TestShuffleRejoinIsANewEntry: a visitor who drops its cookie in a
// shuffled pre-queue and comes again is a new visitor with a new entry
// and a new place (a second lottery ticket, priced like any new visit);
// its first entry stays in the order, and neither moves anyone else.
func TestShuffleRejoinIsANewEntry(t *testing.T) {
	var clock atomic.Int64
	clock.Store(t0.UnixNano())
	e := New(clockStore(t, &clock), Options{Rand: rand.New(rand.NewPCG(5, 6)).Uint64})
	room := eventRoom(true)
	first := decide(t, e, &room, nil, t0.Add(time.Second))
	other := decide(t, e, &room, nil, t0.Add(2*time.Second))
	again := decide(t, e, &room, nil, t0.Add(3*time.Second)) // the first visitor, without its cookie
	if again.Ticket.VisitorID == first.Ticket.VisitorID || draw.Entry(room.ID, again.Ticket.VisitorID) == draw.Entry(room.ID, first.Ticket.VisitorID) {
		t.Fatal("a visit without the cookie kept the entry")
	}
	after := room.Events[0].Start.Add(time.Second)
	clock.Store(after.UnixNano())
	pub, err := e.Draws(context.Background(), &room, after)
	if err != nil || len(pub.Draws[0].Order) != 3 {
		t.Fatalf("published %+v, %v; want the three entries", pub, err)
	}
	for _, d := range []usher.Decision{first, other, again} {
		en := draw.Entry(room.ID, d.Ticket.VisitorID)
		i := slices.IndexFunc(pub.Draws[0].Order, func(p draw.Placed) bool { return p.Entry == hex.EncodeToString(en[:]) })
		if i < 0 || pub.Draws[0].Order[i].Place != d.Ticket.Place {
			t.Fatalf("entry of place %d not published at its place", d.Ticket.Place)
		}
	}
}

// TestDrawsLeaveTheBreakersProbe: once the store is back, the breaker's
// probe goes to the decision's own store call, not to a draw's check, so
// the breaker closes in a random room and in a shuffled pre-queue.
func TestDrawsLeaveTheBreakersProbe(t *testing.T) {
	for _, tc := range []struct {
		name string
		room func() usher.Room
		at   time.Time
	}{
		{"lottery", func() usher.Room {
			r := simRoom()
			r.QueueingMethod = usher.Random
			r.TotalActiveUsers = 1
			return r
		}, t0},
		{"shuffle", func() usher.Room { return eventRoom(true) }, t0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, f := newFlaky(t, false)
			room := tc.room()
			decide(t, e, &room, nil, tc.at)
			w := decide(t, e, &room, nil, tc.at.Add(100*time.Millisecond)).Ticket
			w = decide(t, e, &room, &w, tc.at.Add(3*time.Second)).Ticket // a draw, chain read
			f.down = true
			now := tc.at.Add(4 * time.Second)
			for range BreakerFailures {
				decide(t, e, &room, nil, now)
			}
			if !e.StoreDown() {
				t.Fatal("the breaker did not open")
			}
			f.down = false
			for range 5 {
				now = now.Add(BreakerCooldown + time.Second)
				if tc.name == "shuffle" {
					decide(t, e, &room, nil, now) // a newcomer: its place is drawn
				} else {
					w = decide(t, e, &room, &w, now).Ticket // a waiter: it draws
				}
				if !e.StoreDown() {
					return
				}
			}
			t.Fatal("the store is back, and the breaker stays open five cooldowns later")
		})
	}
}

// BenchmarkLotteryDraw is a waiter's verifiable draw (the epoch's chain
// read once, then kept), against BenchmarkLotteryDrawSplitmix, the draw it
// replaces, in the same run.
func BenchmarkLotteryDraw(b *testing.B) {
	e := New(memStore(b), Options{})
	ctx := context.Background()
	now := time.Now()
	e.lotteryDraw(ctx, "sale", [8]byte{1}, now, 2*time.Second)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, ok := e.lotteryDraw(ctx, "sale", [8]byte{byte(i), byte(i >> 8)}, now, 2*time.Second); !ok {
			b.Fatal("not verifiable")
		}
	}
}

func BenchmarkLotteryDrawSplitmix(b *testing.B) {
	b.ReportAllocs()
	var sink float64
	for i := 0; b.Loop(); i++ {
		sink += Draw([8]byte{byte(i), byte(i >> 8)}, int64(i))
	}
	_ = sink
}
