package redis

import (
	"context"
	"crypto/tls"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/limit"
	"github.com/valkey-io/valkey-go"
)

var _ usher.Store = (*Store)(nil)

// Options configure a Store. Only Addrs (or Sentinel) is required.
type Options struct {
	// Addrs are the server addresses (host:port), unless Sentinel finds
	// the server. Without Cluster, exactly one; with Cluster, any of the
	// cluster's nodes (more than one is better: the client learns the
	// others from the first that answers).
	Addrs []string
	// Username and Password authenticate (AUTH); empty: none.
	Username, Password string
	// DB is the database number (SELECT); zero without Cluster, must be
	// zero with it.
	DB int
	// TLS connects with TLS, verifying the server against the system's
	// roots.
	TLS bool
	// TLSConfig, when set, connects with TLS as it says (a private CA, a
	// client certificate, a server name), to the servers and the
	// sentinels alike; TLS is then unused.
	TLSConfig *tls.Config
	// Sentinel, when set, finds the primary through Redis Sentinel and
	// follows its failovers; Addrs and Cluster must then be unset.
	Sentinel *Sentinel
	// WaitReplicas, when above zero, has each admission and renewal wait
	// (WAIT) until that many replicas have it, for at most half of
	// Timeout, and fail as unavailable when fewer did: a failover then
	// cannot lose a count a visitor was told of. Zero: no wait. Not with
	// Cluster.
	WaitReplicas int
	// Cluster talks to a Redis Cluster; false talks to one server.
	Cluster bool
	// KeyPrefix starts every key (zero: "usher"). It must not contain '{'
	// or '}'.
	KeyPrefix string
	// Timeout bounds every call (zero: 500ms).
	Timeout time.Duration
	// Horizon is how long a room's keys outlive its last write and its
	// latest cell (zero: 24h).
	Horizon time.Duration
	// RecoveryMargin is added to the session duration for which a room is
	// held full after its counters were lost; set it to at least the
	// admission engine's FlushInterval (zero: 1s).
	RecoveryMargin time.Duration
	// ClockSkew is the clock difference between usher nodes tolerated when
	// telling counts made just before a room's counters were created from
	// counts that were lost (zero: 1s).
	ClockSkew time.Duration
	// Logger receives notices of lost counters (nil: slog.Default()).
	Logger *slog.Logger
	// AuditKeep is how many audit records are kept (zero:
	// usher.AuditKeep).
	AuditKeep int
	// FarBack configures check-ins far back in a line: answered from the
	// node's view of the room and applied in batches (see farback.go).
	FarBack FarBack
}

// Store is the shared store. It is safe for concurrent use.
type Store struct {
	opts    Options
	client  valkey.Client
	scripts scripts
	closed  sync.Once
	calls   atomic.Int64 // commands sent (see Calls)

	mu    sync.Mutex
	rooms map[string]seen

	far *farBack
	// node is this Store's id as a holder of horizon leases (shards.go).
	node int64
}

// seen is what a Store remembers of a room: its keys, and what it takes to
// notice lost counters.
type seen struct {
	keys     []string // the room's five keys, then the client sketch's slices
	visitors string   // the prefix of its visitors' record keys
	born     int64    // the room's born (ms) as last seen
	at       int64    // the latest op time (ms) that saw it
	rec      int64    // the recovery last logged
}

// Open connects to the server (a cluster, or the primary the sentinels
// name) and checks that it answers.
func Open(ctx context.Context, opts Options) (*Store, error) {
	if opts.KeyPrefix == "" {
		opts.KeyPrefix = "usher"
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 500 * time.Millisecond
	}
	if opts.Horizon <= 0 {
		opts.Horizon = 24 * time.Hour
	}
	if opts.RecoveryMargin <= 0 {
		opts.RecoveryMargin = time.Second
	}
	if opts.ClockSkew <= 0 {
		opts.ClockSkew = time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	co, err := clientOption(opts)
	if err != nil {
		return nil, err
	}
	vc, err := valkey.NewClient(co)
	if err != nil {
		return nil, fail("open", err)
	}
	s := &Store{opts: opts, scripts: newScripts(), rooms: map[string]seen{}, far: newFarBack(opts.FarBack),
		node: 1 + rand.Int64N(1<<52)}
	client := counting{vc, &s.calls}
	s.client = client
	pctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	if err := client.Do(pctx, client.B().Ping().Build()).Error(); err != nil {
		client.Close()
		return nil, fail("open", err)
	}
	if !s.far.opts.Off && !s.far.opts.Manual {
		go s.flushLoop()
		go s.horizonLoop()
	} else {
		close(s.far.done)
		close(s.far.hdone)
	}
	return s, nil
}

// Close closes the connections. Close after Close does nothing.
func (s *Store) Close() error {
	s.closed.Do(func() {
		close(s.far.stop)
		<-s.far.done
		<-s.far.hdone
		s.client.Close()
	})
	return nil
}

// Admit implements usher.Store with one script call, except for a
// check-in far back in the line, which is answered from the node's view of
// the room and applied in a batch (see farback.go).
func (s *Store) Admit(ctx context.Context, room string, op usher.AdmitOp) (usher.AdmitResult, error) {
	if res, ok := s.farAdmit(ctx, room, &op); ok {
		return res, nil
	}
	rk, vp, known := s.room(room, op.Now)
	keys := append(append(append(make([]string, 0, len(rk)+1), rk[:5]...), visitorKey(vp, op.Visitor)), rk[5:]...)
	args := writeArgs(make([]string, 0, 40), op.Now, known, &s.opts)
	args = append(args,
		itoa(op.Bucket), itoa(op.From.Exp), itoa(atMilli(op.From.At)),
		itoa(op.WaitExp), itoa(op.ActiveExp),
		itoa(int64(op.TotalActiveUsers)), itoa(int64(op.NewUsersPerMinute)),
		itoa((op.SessionDuration + s.opts.RecoveryMargin).Milliseconds()),
		flag(op.NoAdmit), flag(op.Force),
		flag(op.Random), strconv.FormatFloat(op.Draw, 'g', -1, 64),
		flag(op.Joining), itoa(atMilli(op.Counted)), itoa(op.Keep),
		itoa(op.FromBucket), itoa(op.DrawBefore),
		// The admission's time rounded up to the millisecond: it leaves
		// the rate window when that is 60 s old (scripts/common.lua).
		itoa(op.Now.Add(time.Millisecond-1).UnixMilli()))
	if c := op.Client; c.PerMinute > 0 && c.Key != 0 {
		network := c.NetworkPerMinute > 0 && c.NetworkKey != 0
		args = append(args, itoa(int64(c.PerMinute)), flag(c.Refuse), itoa(c.Back), itoa(atMilli(op.TakeOver)), itoa(op.TakeOverCell))
		if network {
			args = append(args, itoa(int64(c.NetworkPerMinute)))
		} else {
			args = append(args, "0")
		}
		args = append(args, flag(op.Unproven))
		for _, cell := range limit.Cells(c.Key) {
			args = append(args, strconv.FormatUint(uint64(cell), 10))
		}
		if network {
			for _, cell := range limit.Cells(c.NetworkKey) {
				args = append(args, strconv.FormatUint(uint64(cell), 10))
			}
		}
	} else {
		args = append(args, "0", "0", "0", itoa(atMilli(op.TakeOver)), itoa(op.TakeOverCell), "0", flag(op.Unproven))
	}
	var v [16]int64
	if err := ints("admit", s.run(ctx, s.scripts.admit, keys, args), v[:]); err != nil {
		return usher.AdmitResult{}, err
	}
	s.remember(room, op.Now, v[6], v[7])
	s.learn(room, v[3])
	// A room spread over shards: the waiters behind the horizon too.
	v[3] += s.backWaiting(room)
	return usher.AdmitResult{
		Admitted:   v[0] == 1,
		Ahead:      v[1],
		Replay:     v[8] == 1,
		TookOver:   v[14] == 1,
		Record:     record(v[9], v[10], v[11], v[13]),
		OverClient: v[12] == 1,
		Unproven:   v[15] == 1,
		RoomStats: usher.RoomStats{
			Active:             v[2],
			Waiting:            v[3],
			AdmittedLastMinute: v[4],
			Slots:              v[5],
		},
	}, nil
}

// record makes a usher.Record of a script's answer (zero at: none; zero
// from: none).
func record(at, cell, admitted, from int64) usher.Record {
	if at == 0 {
		return usher.Record{}
	}
	r := usher.Record{At: time.UnixMilli(at).UTC(), Cell: cell, Admitted: admitted == 1}
	if from != 0 {
		r.From = time.UnixMilli(from).UTC()
	}
	return r
}

// Renew implements usher.Store with one script call.
func (s *Store) Renew(ctx context.Context, room string, op usher.RenewOp) (usher.RenewResult, error) {
	rk, vp, known := s.room(room, op.Now)
	keys := append(append(make([]string, 0, 6), rk[:5]...), visitorKey(vp, op.Visitor))
	args := writeArgs(make([]string, 0, 12), op.Now, known, &s.opts)
	args = append(args, itoa(op.From.Exp), itoa(atMilli(op.From.At)), itoa(op.To), itoa(atMilli(op.Counted)), itoa(op.Keep), flag(op.End), flag(op.Lapsed))
	if !op.By.IsZero() {
		// Waiting past By is no use: the answer would be thrown away.
		var cancelBy context.CancelFunc
		ctx, cancelBy = context.WithDeadline(ctx, op.By)
		defer cancelBy()
	}
	var v [7]int64
	err := ints("renew", s.run(ctx, s.scripts.renew, keys, args), v[:])
	if !op.By.IsZero() && !time.Now().Before(op.By) {
		// Answered (or given up on) at or after By: applied when, is not
		// known.
		return usher.RenewResult{}, usher.ErrRenewLate
	}
	if err != nil {
		return usher.RenewResult{}, err
	}
	s.remember(room, op.Now, v[0], v[1])
	return usher.RenewResult{Replay: v[2] == 1, Record: record(v[3], v[4], v[5], v[6])}, nil
}

// Peek implements usher.Store with one script call; a room Redis does not
// hold is not created.
func (s *Store) Peek(ctx context.Context, room string, now time.Time, bucket int64) (int64, usher.RoomStats, error) {
	if ahead, st, ok := s.farPeek(ctx, room, now, bucket); ok {
		return ahead, st, nil
	}
	rk, _, known := s.room(room, now)
	args := writeArgs(make([]string, 0, 6), now, known, &s.opts)
	args = append(args, itoa(bucket))
	var v [4]int64
	if err := ints("peek", s.run(ctx, s.scripts.peek, rk[:5], args), v[:]); err != nil {
		return 0, usher.RoomStats{}, err
	}
	s.learn(room, v[2])
	return v[0], usher.RoomStats{Active: v[1], Waiting: v[2] + s.backWaiting(room), AdmittedLastMinute: v[3]}, nil
}

// Stats implements usher.Store with one read-only script call. Like the
// embedded store's, its Slots are zero: the caller knows the limits.
func (s *Store) Stats(ctx context.Context, room string, now time.Time) (usher.RoomStats, error) {
	var v [4]int64
	rk, _, _ := s.room(room, now)
	if err := ints("stats", s.run(ctx, s.scripts.stats, rk[:5], []string{itoa(now.Unix()), itoa(now.UnixMilli())}), v[:]); err != nil {
		return usher.RoomStats{}, err
	}
	return usher.RoomStats{Active: v[0], Waiting: v[1] + s.backWaiting(room), AdmittedLastMinute: v[2]}, nil
}

// Lapsed implements usher.Store with the same read-only script as Stats:
// the meta field lp, plus the waiting counts due by now.
func (s *Store) Lapsed(ctx context.Context, room string, now time.Time) (int64, error) {
	var v [4]int64
	rk, _, _ := s.room(room, now)
	if err := ints("lapsed", s.run(ctx, s.scripts.stats, rk[:5], []string{itoa(now.Unix()), itoa(now.UnixMilli())}), v[:]); err != nil {
		return 0, err
	}
	return v[3], nil
}

// writeArgs appends the arguments every write script starts with (see
// scripts/room.lua).
func writeArgs(args []string, now time.Time, known int64, o *Options) []string {
	return append(args,
		itoa(now.Unix()), itoa(now.UnixMilli()), itoa(known),
		itoa(o.Horizon.Milliseconds()), itoa(o.ClockSkew.Milliseconds()))
}

// room returns the room's keys and visitor key prefix, and the born this
// Store saw last for it (0 when it saw none within the horizon: the keys may
// have expired since).
func (s *Store) room(room string, now time.Time) (keys []string, visitors string, known int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.rooms[room]
	if !ok {
		r.keys, r.visitors = roomKeys(s.opts.KeyPrefix, room)
		s.rooms[room] = r
	}
	if r.born != 0 && now.UnixMilli()-r.at <= s.opts.Horizon.Milliseconds() {
		known = r.born
	}
	return r.keys, r.visitors, known
}

// remember records the room's born and recovery as a script returned
// them, and logs a recovery the first time it is seen.
func (s *Store) remember(room string, now time.Time, born, rec int64) {
	s.mu.Lock()
	r := s.rooms[room]
	logRec := rec != 0 && rec != r.rec
	r.born, r.at, r.rec = born, max(r.at, now.UnixMilli()), rec
	s.rooms[room] = r
	s.mu.Unlock()
	if logRec {
		s.opts.Logger.Warn("redis: room counters were lost; holding the room full while running sessions are counted again",
			"room", room, "recover_at", time.UnixMilli(rec).UTC())
	}
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// atMilli returns t in unix ms, 0 for the zero time (unknown).
func atMilli(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}
