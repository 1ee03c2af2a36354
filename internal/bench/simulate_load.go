package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/usherhq/usher"
)

// The Redis load a simulated run implies.
//
// A simulated run decides its visitors with the embedded store; LoadModel
// counts, second by second of simulated time, the calls the same
// decisions would make on Redis with the far-back check-ins of the Redis
// store (docs/scaling.md): a check-in whose live waiters ahead are at
// least the far-back margin (total_active_users, and
// new_users_per_minute for every minute, rounded up, of twice its interval
// and two seconds; the interval from the decision to its waiting cell's
// expiry) is answered from the node's view and its move is batched; every
// other decision that reaches the store (new visitors, admissions,
// near-front check-ins, renewals, reads) is one script call. The batches
// are flushed every Flush or at MaxBatch moves, per node and per shard;
// every node reads the view of every shard once a second while far-back
// check-ins come.
//
// With Shards S >= 2 the room is spread as the design in docs/scaling.md
// ("A room beyond one shard") spreads it: shard 0, the front, takes every
// script call; the far-back moves go to shard 1 + hash(bucket) mod (S-1),
// a bucket being an arrival second; each shard is read once a second by
// each node. With S = 1 everything is on the one shard.
//
// What the model does not see: the view's age (a check-in is far back by
// its exact place, not the place a view up to a second old gave; a second
// of a line's movement is small against the margin), the batches' refusals
// (a copied ticket's move), and a node's back-pressure when its batches
// fall behind. Requests are spread over the nodes evenly (a round-robin
// balancer).

// LoadModel configures the Redis load model of a simulated run
// (SimConfig.Load).
type LoadModel struct {
	// Nodes is how many usher nodes share the requests (at least 1).
	Nodes int
	// Shards is how many Redis shards hold the room (at least 1).
	Shards int
	// ScriptCost is a script call's time on a Redis core (zero:
	// DefaultScriptCost); MoveCost is the time a batched move adds to its
	// batch's call (zero: DefaultMoveCost).
	ScriptCost, MoveCost time.Duration
	// Flush and MaxBatch bound a node's batch of a shard's moves (zero:
	// 100 ms and 512).
	Flush    time.Duration
	MaxBatch int
}

// The load model's default per-core figures: an admission script takes
// about 63 us on one Redis core (docs/scaling.md); a batched move about a
// tenth of that: BenchmarkCheckInFarBack (internal/store/redis) measured
// Redis's own CPU at 11.5 us a batched move against 110.8 us a call in
// one run on a loaded machine (0.104x), which is 6.5 us at 63 us a call.
const (
	DefaultScriptCost = 63 * time.Microsecond
	DefaultMoveCost   = 6500 * time.Nanosecond
)

// MaxLoadShards is the most shards the load model takes: it counts the
// moves of every 100 ms of the horizon for each back shard (3.5 MB a
// shard for a day).
const MaxLoadShards = 64

// Validate reports the first problem of m, naming its field.
func (m *LoadModel) Validate() error {
	switch {
	case m.Nodes < 1 || m.Nodes > 10_000:
		return fmt.Errorf("load model: nodes %d: want 1 to 10000", m.Nodes)
	case m.Shards < 1 || m.Shards > MaxLoadShards:
		return fmt.Errorf("load model: shards %d: want 1 to %d", m.Shards, MaxLoadShards)
	case m.ScriptCost < 0 || m.MoveCost < 0:
		return fmt.Errorf("load model: negative script cost %v or move cost %v", m.ScriptCost, m.MoveCost)
	case m.Flush < 0 || m.MaxBatch < 0:
		return fmt.Errorf("load model: negative flush %v or batch size %d", m.Flush, m.MaxBatch)
	}
	return nil
}

func (m LoadModel) withDefaults() LoadModel {
	if m.ScriptCost == 0 {
		m.ScriptCost = DefaultScriptCost
	}
	if m.MoveCost == 0 {
		m.MoveCost = DefaultMoveCost
	}
	if m.Flush == 0 {
		m.Flush = 100 * time.Millisecond
	}
	if m.MaxBatch == 0 {
		m.MaxBatch = 512
	}
	return m
}

// The kinds of script calls, by what asked.
const (
	loadNew   = iota // a new visitor (waiting or admitted)
	loadAdmit        // a waiter's check-in that admitted it
	loadNear         // a waiter's check-in near the front
	loadRenew        // an admitted visitor's renewal (or end)
	loadRead         // a read: an early check-in, the room's counters
	loadKinds
)

// loadSec is one simulated second's counts.
type loadSec struct {
	calls [loadKinds]int32
	// checkIns counts the check-ins (near and far), moves the far-back
	// ones.
	checkIns, moves int32
	// newMoves counts the moves of new visitors far back (in moves).
	newMoves int32
	// waiting is the waiters at the second's last decision.
	waiting int32
}

// loadCounter counts a run's store calls by second; the sim's store
// calls go through it (loadStore) and parked check-ins are added to it.
type loadCounter struct {
	m     LoadModel
	start time.Time
	secs  []loadSec
	// slots counts the far-back moves per flush slot and back shard:
	// slots[slot*backs+shard].
	slots []int32
	backs int
	// margin is the far-back margin of the latest far-back check-in (for
	// early check-ins: the store's farPeek).
	margin int64
}

func newLoadCounter(m LoadModel, start time.Time, horizon time.Duration) *loadCounter {
	m = m.withDefaults()
	c := &loadCounter{m: m, start: start, backs: max(m.Shards-1, 1)}
	c.secs = make([]loadSec, int(horizon/time.Second)+2)
	c.slots = make([]int32, (int(horizon/m.Flush)+2)*c.backs)
	return c
}

func (c *loadCounter) sec(t time.Time) *loadSec {
	return &c.secs[min(max(int(t.Sub(c.start)/time.Second), 0), len(c.secs)-1)]
}

// call counts a script call of kind at t.
func (c *loadCounter) call(t time.Time, kind int) { c.sec(t).calls[kind]++ }

// newMove counts a new visitor far back of bucket at t: a move, not a
// check-in.
func (c *loadCounter) newMove(t time.Time, bucket int64) {
	s := c.sec(t)
	s.moves++
	s.newMoves++
	n := len(c.slots) / c.backs
	slot := min(max(int(t.Sub(c.start)/c.m.Flush), 0), n-1)
	c.slots[slot*c.backs+c.shardOf(bucket)]++
}

// move counts a far-back check-in of bucket at t.
func (c *loadCounter) move(t time.Time, bucket int64) {
	s := c.sec(t)
	s.checkIns++
	s.moves++
	n := len(c.slots) / c.backs
	slot := min(max(int(t.Sub(c.start)/c.m.Flush), 0), n-1)
	c.slots[slot*c.backs+c.shardOf(bucket)]++
}

// shardOf returns the back shard (0-based among the backs) of bucket.
func (c *loadCounter) shardOf(bucket int64) int {
	if c.backs == 1 {
		return 0
	}
	// A mix of the bucket's bits (splitmix64's finaliser): consecutive
	// seconds land on unrelated shards.
	x := uint64(bucket)
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return int(x % uint64(c.backs))
}

// farMargin is the fewest live waiters ahead of a check-in for it to be
// far back: the Redis store's rule (total_active_users, and
// new_users_per_minute for every minute of twice the check-in's interval
// and two seconds, rounded up; the interval in whole seconds from the
// decision to its waiting cell's expiry).
func farMargin(op *usher.AdmitOp) int64 {
	return farMarginOf(op.WaitExp-op.Now.Unix(), op.TotalActiveUsers, op.NewUsersPerMinute)
}

func farMarginOf(ivSeconds int64, total, perMinute int) int64 {
	minutes := (2*ivSeconds + 2 + 59) / 60
	return int64(total) + int64(perMinute)*max(minutes, 1)
}

// farEligible reports whether op is one the view may answer (the Redis
// store's rule, redis.FarEligible; TestFarRulesAgree keeps the two
// alike): a waiting ticket's check-in, or a new visitor, in a FIFO line,
// that its kind cannot admit, a check-in's count live for two seconds yet.
func farEligible(op *usher.AdmitOp) bool {
	now := op.Now.Unix()
	if op.WaitExp <= now || op.NoAdmit || op.Random || op.Joining || op.FromBucket != 0 || op.Force || op.Unproven || op.Client.Key != 0 {
		return false
	}
	if op.From.At.IsZero() {
		return op.From.Exp == 0 && op.TakeOver.IsZero()
	}
	return op.From.Exp >= now+2 && op.Counted.After(op.From.At)
}

// loadStore counts the calls the engine makes to Store.
type loadStore struct {
	usher.Store
	c *loadCounter
}

func (s loadStore) Admit(ctx context.Context, room string, op usher.AdmitOp) (usher.AdmitResult, error) {
	res, err := s.Store.Admit(ctx, room, op)
	c := s.c
	switch {
	case err != nil:
		c.call(op.Now, loadNear)
	case op.From.At.IsZero() && farEligible(&op) && !res.Admitted && res.Ahead >= farMargin(&op):
		// A new visitor joining the back of a long line: its count goes
		// in a batch.
		c.margin = farMargin(&op)
		c.newMove(op.Now, op.Bucket)
	case op.From.At.IsZero():
		c.call(op.Now, loadNew)
	case res.Admitted && !res.Replay:
		c.sec(op.Now).checkIns++
		c.call(op.Now, loadAdmit)
	case farEligible(&op) && !res.Replay && res.Ahead >= farMargin(&op):
		c.margin = farMargin(&op)
		c.move(op.Now, op.Bucket)
	default:
		c.sec(op.Now).checkIns++
		c.call(op.Now, loadNear)
	}
	return res, err
}

func (s loadStore) Renew(ctx context.Context, room string, op usher.RenewOp) (usher.RenewResult, error) {
	s.c.call(op.Now, loadRenew)
	return s.Store.Renew(ctx, room, op)
}

func (s loadStore) Peek(ctx context.Context, room string, now time.Time, bucket int64) (int64, usher.RoomStats, error) {
	ahead, st, err := s.Store.Peek(ctx, room, now, bucket)
	if err != nil || s.c.margin <= 0 || ahead < s.c.margin {
		s.c.call(now, loadRead) // answered from the view otherwise
	}
	return ahead, st, err
}

func (s loadStore) Stats(ctx context.Context, room string, now time.Time) (usher.RoomStats, error) {
	s.c.call(now, loadRead)
	return s.Store.Stats(ctx, room, now)
}

func (s loadStore) Lapsed(ctx context.Context, room string, now time.Time) (int64, error) {
	s.c.call(now, loadRead)
	return s.Store.Lapsed(ctx, room, now)
}

// LoadStats is the Redis load a simulated run implies (SimConfig.Load).
// Rates are per second of simulated time, over the seconds from the first
// call to the last (Seconds of them); Peak is the busiest second's.
type LoadStats struct {
	Nodes  int `json:"nodes"`
	Shards int `json:"shards"`
	// ScriptCostUS and MoveCostUS are the per-core figures the CPU shares
	// are worked out with, in microseconds.
	ScriptCostUS float64 `json:"script_cost_us"`
	MoveCostUS   float64 `json:"move_cost_us"`
	Seconds      int     `json:"seconds"`
	// CheckIns counts the waiters' check-ins (those applied in bulk
	// included); FarBack the check-ins and new visitors answered from a
	// view, their moves batched, FarBackNew the new visitors of them.
	CheckIns   int64 `json:"check_ins"`
	FarBack    int64 `json:"far_back"`
	FarBackNew int64 `json:"far_back_new_visitors"`
	// The script calls by what asked: new visitors, admissions at a
	// check-in, near-front check-ins, renewals and reads (early
	// check-ins near the front, the room's counters).
	NewVisitors  int64 `json:"new_visitors"`
	Admissions   int64 `json:"admissions"`
	NearCheckIns int64 `json:"near_check_ins"`
	Renewals     int64 `json:"renewals"`
	Reads        int64 `json:"reads"`
	// Flushes are the batch calls, Views the view reads (a node reads
	// every shard once a second in which far-back check-ins come).
	Flushes int64 `json:"flushes"`
	Views   int64 `json:"views"`
	// Calls is every call; CallsPerCheckIn is Calls over CheckIns, and
	// CheckInCallsPerCheckIn the calls check-ins make (admissions,
	// near-front check-ins, flushes, views) over CheckIns.
	Calls                  int64   `json:"calls"`
	CallsPerCheckIn        float64 `json:"calls_per_check_in"`
	CheckInCallsPerCheckIn float64 `json:"check_in_calls_per_check_in"`
	// CallsPerSecond are every shard's calls together.
	CallsPerSecond LoadRate `json:"calls_per_s"`
	// CheckInsPerSecond are the check-ins.
	CheckInsPerSecond LoadRate `json:"check_ins_per_s"`
	// ByShard is each shard's load: shard 0 is the front (with one shard,
	// everything).
	ByShard []ShardLoad `json:"by_shard"`
	// Minutes are the load minute by minute of simulated time.
	Minutes []LoadMinute `json:"minutes"`
}

// LoadRate is a rate's mean and its busiest second (PeakAtS seconds from
// the run's start).
type LoadRate struct {
	Mean    float64 `json:"mean"`
	Peak    float64 `json:"peak"`
	PeakAtS int     `json:"peak_at_s"`
}

// ShardLoad is one shard's load: its calls a second and the share of one
// core they take (ScriptCost a call, MoveCost more a batched move).
type ShardLoad struct {
	Shard int      `json:"shard"`
	Role  string   `json:"role"` // front, back, or all (one shard)
	Calls LoadRate `json:"calls_per_s"`
	CPU   LoadRate `json:"cpu_cores"`
}

// LoadMinute is one minute's load, per second on average.
type LoadMinute struct {
	Minute int `json:"minute"`
	// Waiting is the waiters at the minute's end.
	Waiting  int64   `json:"waiting"`
	CheckIns float64 `json:"check_ins_per_s"`
	FarBack  float64 `json:"far_back_per_s"`
	Calls    float64 `json:"calls_per_s"`
	// Front is shard 0's calls a second and CPU; BackMax the busiest back
	// shard's (zero with one shard).
	FrontCalls   float64 `json:"front_calls_per_s"`
	FrontCPU     float64 `json:"front_cpu_cores"`
	BackMaxCalls float64 `json:"back_max_calls_per_s"`
	BackMaxCPU   float64 `json:"back_max_cpu_cores"`
}

// rate accumulates a LoadRate.
type rate struct {
	sum  float64
	peak float64
	at   int
}

func (r *rate) add(x float64, sec int) {
	r.sum += x
	if x > r.peak {
		r.peak, r.at = x, sec
	}
}

func (r *rate) of(n int) LoadRate {
	if n == 0 {
		return LoadRate{}
	}
	return LoadRate{Mean: r.sum / float64(n), Peak: r.peak, PeakAtS: r.at}
}

// flushes returns the batch calls of moves spread evenly over nodes, each
// node's batch cut at maxBatch.
func flushes(moves int64, nodes, maxBatch int) int64 {
	if moves <= 0 {
		return 0
	}
	n, k := int64(nodes), int64(maxBatch)
	per, extra := moves/n, moves%n
	calls := extra * ((per + 1 + k - 1) / k) // nodes with one more
	if per > 0 {
		calls += (n - extra) * ((per + k - 1) / k)
	}
	return calls
}

// stats sums the counts up.
func (c *loadCounter) stats() *LoadStats {
	m := c.m
	st := &LoadStats{Nodes: m.Nodes, Shards: m.Shards,
		ScriptCostUS: float64(m.ScriptCost) / float64(time.Microsecond), MoveCostUS: float64(m.MoveCost) / float64(time.Microsecond)}
	first, last := -1, -1
	for i := range c.secs {
		if c.secs[i].checkIns > 0 || c.secs[i].calls != ([loadKinds]int32{}) {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	if first < 0 {
		return st
	}
	st.Seconds = last - first + 1
	slotsPerSec := int(time.Second / m.Flush)
	shards := m.Shards
	calls := make([]int64, shards)
	moves := make([]int64, shards)
	var all, checkIns rate
	byShard := make([]struct{ calls, cpu rate }, shards)
	var minute LoadMinute
	var minuteBack []float64
	script, move := m.ScriptCost.Seconds(), m.MoveCost.Seconds()
	for sec := first; sec <= last; sec++ {
		s := &c.secs[sec]
		clear(calls)
		clear(moves)
		var sync int64
		for k, n := range s.calls {
			sync += int64(n)
			switch k {
			case loadNew:
				st.NewVisitors += int64(n)
			case loadAdmit:
				st.Admissions += int64(n)
			case loadNear:
				st.NearCheckIns += int64(n)
			case loadRenew:
				st.Renewals += int64(n)
			case loadRead:
				st.Reads += int64(n)
			}
		}
		calls[0] += sync
		var fl int64
		for slot := sec * slotsPerSec; slot < (sec+1)*slotsPerSec && slot*c.backs < len(c.slots); slot++ {
			for b := range c.backs {
				n := int64(c.slots[slot*c.backs+b])
				f := flushes(n, m.Nodes, m.MaxBatch)
				fl += f
				shard := min(1+b, shards-1)
				calls[shard] += f
				moves[shard] += n
			}
		}
		var views int64
		if s.moves > 0 {
			views = int64(m.Nodes) * int64(shards)
			for k := range calls {
				calls[k] += int64(m.Nodes)
			}
		}
		st.Flushes += fl
		st.Views += views
		st.CheckIns += int64(s.checkIns)
		st.FarBack += int64(s.moves)
		st.FarBackNew += int64(s.newMoves)
		total := sync + fl + views
		all.add(float64(total), sec)
		checkIns.add(float64(s.checkIns), sec)
		for k := range shards {
			byShard[k].calls.add(float64(calls[k]), sec)
			byShard[k].cpu.add(float64(calls[k])*script+float64(moves[k])*move, sec)
		}
		// The minute's figures.
		if mi := sec / 60; mi != minute.Minute || sec == first {
			if sec != first {
				st.Minutes = append(st.Minutes, minute.mean(minuteBack))
			}
			minute = LoadMinute{Minute: mi}
			minuteBack = make([]float64, 2*shards)
		}
		minute.Waiting = int64(s.waiting)
		minute.CheckIns += float64(s.checkIns)
		minute.FarBack += float64(s.moves)
		minute.Calls += float64(total)
		minute.FrontCalls += float64(calls[0])
		minute.FrontCPU += float64(calls[0])*script + float64(moves[0])*move
		for k := 1; k < shards; k++ {
			minuteBack[2*k] += float64(calls[k])
			minuteBack[2*k+1] += float64(calls[k])*script + float64(moves[k])*move
		}
	}
	st.Minutes = append(st.Minutes, minute.mean(minuteBack))
	st.Calls = st.NewVisitors + st.Admissions + st.NearCheckIns + st.Renewals + st.Reads + st.Flushes + st.Views
	if st.CheckIns > 0 {
		st.CallsPerCheckIn = float64(st.Calls) / float64(st.CheckIns)
		st.CheckInCallsPerCheckIn = float64(st.Admissions+st.NearCheckIns+st.Flushes+st.Views) / float64(st.CheckIns)
	}
	st.CallsPerSecond = all.of(st.Seconds)
	st.CheckInsPerSecond = checkIns.of(st.Seconds)
	for k := range shards {
		role := "back"
		switch {
		case shards == 1:
			role = "all"
		case k == 0:
			role = "front"
		}
		st.ByShard = append(st.ByShard, ShardLoad{Shard: k, Role: role, Calls: byShard[k].calls.of(st.Seconds), CPU: byShard[k].cpu.of(st.Seconds)})
	}
	return st
}

// mean turns a minute's sums into rates a second; back holds each back
// shard's calls and CPU.
func (m LoadMinute) mean(back []float64) LoadMinute {
	const n = 60.0 // a partial first or last minute is averaged over 60 s too
	m.CheckIns /= n
	m.FarBack /= n
	m.Calls /= n
	m.FrontCalls /= n
	m.FrontCPU /= n
	for k := 1; 2*k < len(back); k++ {
		m.BackMaxCalls = max(m.BackMaxCalls, back[2*k]/n)
		m.BackMaxCPU = max(m.BackMaxCPU, back[2*k+1]/n)
	}
	return m
}
