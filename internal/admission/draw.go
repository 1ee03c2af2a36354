package admission

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/draw"
)

// DrawKeep is how long a draw's seed and entries are kept after the draw:
// long enough for anyone to check it.
const DrawKeep = 30 * 24 * time.Hour

// maxDrawCache bounds the draws an engine keeps in memory; past it, it
// forgets them all and reads them from the store again.
const maxDrawCache = 4096

// draws is what the engine read of verifiable draws from the store. A
// draw's secret never changes once kept (the first writer wins), so each
// node reads it once.
type draws struct {
	mu      sync.Mutex
	secrets map[drawName][]byte
	chains  map[chainName]*draw.Chain
	// shuffles are revealed shuffles whose entries can no longer change
	// (a minute after the start): a large order is computed once.
	shuffles map[drawName]draw.Record
}

// settled is how long after a shuffle's start its published order is
// taken as final: no node adds an entry after the start, and a minute
// covers a node whose clock is behind.
const settled = time.Minute

type drawName struct{ room, id string }

// chainName names a lottery epoch's chain without formatting its id (a
// lookup on every draw).
type chainName struct {
	room      string
	ms, epoch int64
}

// kept returns the value kept as draw id of room, saving value when none
// is kept yet.
func (e *Engine) kept(ctx context.Context, room, id string, value []byte, keep time.Time) ([]byte, error) {
	n := drawName{room, id}
	e.draws.mu.Lock()
	v, ok := e.draws.secrets[n]
	e.draws.mu.Unlock()
	if ok {
		return v, nil
	}
	v, err := e.store.SaveDrawSeed(ctx, room, id, value, keep)
	if err != nil {
		return nil, err
	}
	e.draws.mu.Lock()
	if e.draws.secrets == nil || len(e.draws.secrets) >= maxDrawCache {
		e.draws.secrets = map[drawName][]byte{}
	}
	e.draws.secrets[n] = v
	e.draws.mu.Unlock()
	return v, nil
}

// secret returns the secret of draw id of room: the first node to need it
// makes it from crypto/rand (from Options.Rand when a test set it) and
// keeps it in the store.
func (e *Engine) secret(ctx context.Context, room, id string, keep time.Time) ([32]byte, error) {
	var fresh [32]byte
	if e.opts.Rand != nil {
		for i := 0; i < len(fresh); i += 8 {
			binary.LittleEndian.PutUint64(fresh[i:], e.rng())
		}
	} else {
		_, _ = crand.Read(fresh[:])
	}
	v, err := e.kept(ctx, room, id, fresh[:], keep)
	if err != nil {
		return [32]byte{}, err
	}
	if len(v) != 32 {
		return [32]byte{}, usher.Errorf(usher.EInternal, "draw %s of room %s: a secret of %d bytes in the store", id, room, len(v))
	}
	return [32]byte(v), nil
}

// beacon returns the beacon value of a shuffle: ev's, as it was at the
// first node that needed it (a later change would move places given).
func (e *Engine) beacon(ctx context.Context, room string, ev *usher.Event) (string, error) {
	v, err := e.kept(ctx, room, draw.ShuffleID(ev.Start)+"-beacon", []byte("b"+ev.DrawBeacon), ev.End.Add(DrawKeep))
	if err != nil {
		return "", err
	}
	if len(v) == 0 || v[0] != 'b' {
		return "", usher.Errorf(usher.EInternal, "shuffle of room %s: a malformed beacon in the store", room)
	}
	return string(v[1:]), nil
}

// shuffleSeed returns ev's shuffle's secret and seed.
func (e *Engine) shuffleSeed(ctx context.Context, room string, ev *usher.Event) (secret, seed [32]byte, beacon string, err error) {
	secret, err = e.secret(ctx, room, draw.ShuffleID(ev.Start), ev.End.Add(DrawKeep))
	if err != nil {
		return secret, seed, "", err
	}
	beacon, err = e.beacon(ctx, room, ev)
	if err != nil {
		return secret, seed, "", err
	}
	return secret, draw.Seed(secret, beacon), beacon, nil
}

// storeFailing reports whether the store's breaker is open (or probing),
// without taking its probe (breaker.allow would): the probe belongs to
// the decision's own store call, whose result closes the breaker.
func (e *Engine) storeFailing() bool {
	e.brk.mu.Lock()
	defer e.brk.mu.Unlock()
	return e.brk.failures >= BreakerFailures
}

// drawPlace gives a new visitor who arrives while a shuffled pre-queue is
// open its place in the verifiable shuffle, and adds its entry to the
// draw. When the store cannot be reached, the place is drawn at random
// as before (and cannot be verified).
func (e *Engine) drawPlace(ctx context.Context, room string, tk *usher.Ticket, sched *usher.Schedule, now time.Time) {
	ev := sched.Event
	if sched.Phase != usher.Prequeue || ev == nil || !ev.ShuffleAtStart || e.storeFailing() {
		return
	}
	_, seed, _, err := e.shuffleSeed(ctx, room, ev)
	entry := draw.Entry(room, tk.VisitorID)
	if err == nil {
		err = e.store.AddDrawEntry(ctx, room, draw.ShuffleID(ev.Start), entry[:], ev.End.Add(DrawKeep))
	}
	if err != nil {
		e.opts.Logger.Warn("draw.unverifiable", "room", room, "draw", draw.ShuffleID(ev.Start), "err", err)
		return // the unverifiable place waiter gave
	}
	tk.Place = draw.Place(seed, entry, ev.Start.Unix(), draw.ShuffleSpan(ev.PrequeueStart, ev.Start))
}

// chain returns a lottery epoch's hash chain, and on first use makes the
// next epoch's too, so that its head is published a whole epoch before
// its first draw.
func (e *Engine) chain(ctx context.Context, room string, refresh time.Duration, epoch int64) (*draw.Chain, error) {
	n := chainName{room, refresh.Milliseconds(), epoch}
	e.draws.mu.Lock()
	c := e.draws.chains[n]
	e.draws.mu.Unlock()
	if c != nil {
		return c, nil
	}
	id := draw.LotteryID(refresh, epoch)
	secret, err := e.secret(ctx, room, id, epochEnd(refresh, epoch).Add(DrawKeep))
	if err != nil {
		return nil, err
	}
	if _, err := e.secret(ctx, room, draw.LotteryID(refresh, epoch+1), epochEnd(refresh, epoch+1).Add(DrawKeep)); err != nil {
		return nil, err
	}
	c = draw.NewChain(secret)
	e.draws.mu.Lock()
	if e.draws.chains == nil || len(e.draws.chains) >= maxDrawCache/64 {
		e.draws.chains = map[chainName]*draw.Chain{}
	}
	e.draws.chains[n] = c
	e.draws.mu.Unlock()
	return c, nil
}

// epochEnd is when a lottery epoch's last window ends.
func epochEnd(refresh time.Duration, epoch int64) time.Time {
	ms := max(refresh.Milliseconds(), 1)
	return time.UnixMilli((epoch + 1) * draw.EpochWindows * ms)
}

// lotteryDraw returns a waiter's draw for now's window: from the epoch's
// committed chain, or, when the store cannot be reached, the visitor's
// unverifiable draw (verifiable false).
func (e *Engine) lotteryDraw(ctx context.Context, room string, visitor [8]byte, now time.Time, refresh time.Duration) (d float64, verifiable bool) {
	w := draw.Window(now, refresh)
	if e.storeFailing() { // no call that would wait for a failing store
		return Draw(visitor, w), false
	}
	c, err := e.chain(ctx, room, refresh, draw.Epoch(w))
	if err != nil {
		e.opts.Logger.Warn("draw.unverifiable", "room", room, "draw", draw.LotteryID(refresh, draw.Epoch(w)), "err", err)
		return Draw(visitor, w), false
	}
	return draw.Value(c.Link(w), draw.Entry(room, visitor)), true
}

// recordLottery adds an admission by the lottery to its epoch's record:
// the window, the entry and its draw.
func (e *Engine) recordLottery(ctx context.Context, room string, visitor [8]byte, now time.Time, refresh time.Duration, d float64) {
	w := draw.Window(now, refresh)
	entry := draw.Entry(room, visitor)
	rec := binary.BigEndian.AppendUint64(nil, uint64(w))
	rec = append(rec, entry[:]...)
	rec = binary.BigEndian.AppendUint64(rec, math.Float64bits(d))
	if err := e.store.AddDrawEntry(ctx, room, draw.LotteryID(refresh, draw.Epoch(w)), rec, epochEnd(refresh, draw.Epoch(w)).Add(DrawKeep)); err != nil {
		e.opts.Logger.Warn("draw.unrecorded", "room", room, "window", w, "err", err)
	}
}

// Draws returns what GET /__usher/draws/<room> publishes at now (see
// docs/fairness.md): the shuffles of the room's events that have not ended
// more than a day ago, and a random room's lottery epochs (the last one,
// when anyone was admitted in it; the current one; the next one). It
// makes the commitments it publishes when no node has made them yet.
func (e *Engine) Draws(ctx context.Context, room *usher.Room, now time.Time) (draw.Room, error) {
	out := draw.Room{Room: room.ID, Draws: []draw.Record{}}
	for i := range room.Events {
		ev := &room.Events[i]
		if !ev.ShuffleAtStart || now.After(ev.End.Add(24*time.Hour)) {
			continue
		}
		rec, err := e.publishShuffle(ctx, room.ID, ev, now)
		if err != nil {
			return out, err
		}
		out.Draws = append(out.Draws, rec)
	}
	s := room.At(now).Settings
	if s.QueueingMethod != usher.Random {
		return out, nil
	}
	ep := draw.Epoch(draw.Window(now, s.RefreshInterval))
	for epoch := ep - 1; epoch <= ep+1; epoch++ {
		rec, ok, err := e.publishLottery(ctx, room.ID, s.RefreshInterval, epoch, now, epoch < ep)
		if err != nil {
			return out, err
		}
		if ok {
			out.Draws = append(out.Draws, rec)
		}
	}
	return out, nil
}

func (e *Engine) publishShuffle(ctx context.Context, room string, ev *usher.Event, now time.Time) (draw.Record, error) {
	id := draw.ShuffleID(ev.Start)
	final := !now.Before(ev.Start.Add(settled))
	if final {
		e.draws.mu.Lock()
		rec, ok := e.draws.shuffles[drawName{room, id}]
		e.draws.mu.Unlock()
		if ok {
			return rec, nil
		}
	}
	secret, err := e.secret(ctx, room, id, ev.End.Add(DrawKeep))
	if err != nil {
		return draw.Record{}, err
	}
	c := draw.Commit(room, id, secret)
	rec := draw.Record{ID: id, Kind: draw.KindShuffle, Commitment: draw.Hex(c[:]), Start: ev.Start.Unix(),
		Span: draw.ShuffleSpan(ev.PrequeueStart, ev.Start), Order: []draw.Placed{}}
	if now.Before(ev.Start) {
		return rec, nil
	}
	_, seed, beacon, err := e.shuffleSeed(ctx, room, ev)
	if err != nil {
		return draw.Record{}, err
	}
	entries, err := e.store.DrawEntries(ctx, room, id)
	if err != nil {
		return draw.Record{}, err
	}
	type keyed struct {
		k [32]byte
		i int
	}
	ks := make([]keyed, len(entries))
	kr := draw.NewKeyer(seed)
	for i, b := range entries {
		if len(b) != 16 {
			return draw.Record{}, usher.Errorf(usher.EInternal, "draw %s of room %s: an entry of %d bytes in the store", id, room, len(b))
		}
		ks[i] = keyed{kr.Key([16]byte(b)), i}
	}
	slices.SortFunc(ks, func(a, b keyed) int { return bytes.Compare(a.k[:], b.k[:]) })
	rec.Order = make([]draw.Placed, len(ks))
	for j, k := range ks {
		rec.Order[j] = draw.Placed{Entry: draw.Hex(entries[k.i]), Place: draw.PlaceOf(k.k, rec.Start, rec.Span)}
	}
	rec.Revealed, rec.Secret, rec.Beacon, rec.Seed = true, draw.Hex(secret[:]), beacon, draw.Hex(seed[:])
	if final {
		e.draws.mu.Lock()
		if e.draws.shuffles == nil || len(e.draws.shuffles) >= 16 {
			e.draws.shuffles = map[drawName]draw.Record{}
		}
		e.draws.shuffles[drawName{room, id}] = rec
		e.draws.mu.Unlock()
	}
	return rec, nil
}

// publishLottery returns a lottery epoch's record: its head, and the
// windows that ended at least one window ago, each with its link and the
// entries it admitted (the last of them always, so that every earlier
// link can be found by hashing). A past epoch (past true) is published
// only when someone was admitted in it, and with its secret.
func (e *Engine) publishLottery(ctx context.Context, room string, refresh time.Duration, epoch int64, now time.Time, past bool) (draw.Record, bool, error) {
	id := draw.LotteryID(refresh, epoch)
	entries, err := e.store.DrawEntries(ctx, room, id)
	if err != nil {
		return draw.Record{}, false, err
	}
	if past && len(entries) == 0 {
		return draw.Record{}, false, nil
	}
	secret, err := e.secret(ctx, room, id, epochEnd(refresh, epoch).Add(DrawKeep))
	if err != nil {
		return draw.Record{}, false, err
	}
	c := draw.NewChain(secret)
	h := c.Head()
	rec := draw.Record{ID: id, Kind: draw.KindLottery, Commitment: draw.Hex(h[:]), Epoch: epoch}
	last := min(draw.Window(now, refresh)-2, (epoch+1)*draw.EpochWindows-1) // the last window revealed
	if last < epoch*draw.EpochWindows {
		return rec, true, nil
	}
	byWindow := map[int64][]draw.Drawn{}
	for _, b := range entries {
		if len(b) != 32 {
			return draw.Record{}, false, usher.Errorf(usher.EInternal, "draw %s of room %s: a record of %d bytes in the store", id, room, len(b))
		}
		w := int64(binary.BigEndian.Uint64(b))
		if w > last {
			continue
		}
		byWindow[w] = append(byWindow[w], draw.Drawn{Entry: draw.Hex(b[8:24]), Draw: math.Float64frombits(binary.BigEndian.Uint64(b[24:]))})
	}
	byWindow[last] = append(byWindow[last], nil...)
	ws := make([]int64, 0, len(byWindow))
	for w := range byWindow {
		ws = append(ws, w)
	}
	slices.Sort(ws)
	for _, w := range ws {
		l := c.Link(w)
		ad := byWindow[w]
		slices.SortFunc(ad, func(a, b draw.Drawn) int { return compareFloat(a.Draw, b.Draw) })
		rec.Windows = append(rec.Windows, draw.Revealed{Window: w, Link: draw.Hex(l[:]), Admitted: ad})
	}
	rec.Revealed = true
	if past {
		rec.Secret = draw.Hex(secret[:])
	}
	return rec, true, nil
}

func compareFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
