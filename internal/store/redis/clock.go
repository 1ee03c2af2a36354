package redis

import (
	"context"
	_ "embed"
	"strconv"
	"strings"
	"time"

	"github.com/valkey-io/valkey-go"
)

//go:embed scripts/clocks.lua
var clocksSrc string

var clocksLua = valkey.NewLuaScript(clocksSrc)

// ClockKeep is how long a node's published clock reading counts.
const ClockKeep = time.Minute

// ClockReading is a node's clock against the server's: the server's time
// less the node's is Offset, within Error either way.
type ClockReading struct {
	Node   string
	Offset time.Duration
	Error  time.Duration
}

// Lo and Hi bound the offset.
func (r ClockReading) Lo() time.Duration { return r.Offset - r.Error }
func (r ClockReading) Hi() time.Duration { return r.Offset + r.Error }

// clocksKey is the hash of the nodes' readings.
func (s *Store) clocksKey() string { return s.opts.KeyPrefix + ":clocks" }

// Clock reads this node's clock against the server's (TIME, in one script
// call; within half its round trip, plus TIME's microsecond) and returns
// that reading with every node's published in the last ClockKeep,
// including publish, this node's previous reading (nil: none), which the
// same call publishes. On a cluster every node asks the shard of one key,
// so all readings are against one clock.
func (s *Store) Clock(ctx context.Context, publish *ClockReading) (ClockReading, []ClockReading, error) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	args := []string{"", "", strconv.FormatInt(int64(ClockKeep/time.Second), 10)}
	if publish != nil {
		args[0] = publish.Node
		args[1] = strconv.FormatInt(publish.Offset.Microseconds(), 10) + "," + strconv.FormatInt(publish.Error.Microseconds(), 10)
	}
	s.calls.Add(1)
	t0 := time.Now()
	res := clocksLua.Exec(ctx, s.client, []string{s.clocksKey()}, args)
	t1 := time.Now()
	if err := res.Error(); err != nil {
		return ClockReading{}, nil, fail("clock", err)
	}
	arr, err := res.AsStrSlice()
	if err != nil || len(arr) < 2 || len(arr)%2 != 0 {
		return ClockReading{}, nil, malformed("clock", "reply of %d values: %v", len(arr), err)
	}
	sec, err1 := strconv.ParseInt(arr[0], 10, 64)
	usec, err2 := strconv.ParseInt(arr[1], 10, 64)
	if err1 != nil || err2 != nil {
		return ClockReading{}, nil, malformed("clock", "TIME %q %q", arr[0], arr[1])
	}
	rtt := t1.Sub(t0)
	mid := t0.Add(rtt / 2)
	own := ClockReading{
		Offset: time.Unix(sec, usec*1000).Sub(mid.Round(0)),
		Error:  rtt/2 + time.Microsecond,
	}
	if publish != nil {
		own.Node = publish.Node
	}
	var all []ClockReading
	for i := 2; i < len(arr); i += 2 {
		f := strings.Split(arr[i+1], ",")
		if len(f) != 3 {
			continue
		}
		off, err1 := strconv.ParseInt(f[0], 10, 64)
		e, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil || e < 0 {
			continue
		}
		all = append(all, ClockReading{Node: arr[i], Offset: time.Duration(off) * time.Microsecond, Error: time.Duration(e) * time.Microsecond})
	}
	return own, all, nil
}

// ClockApart returns the most and the least the two furthest apart of
// readings' clocks can be, given the readings' errors: the least is what
// the readings prove (zero when their bounds overlap), the most what they
// allow. Zero for fewer than two nodes. A node's own latest reading
// replaces its published one.
func ClockApart(own ClockReading, published []ClockReading) (most, least time.Duration) {
	lo, hi := own.Lo(), own.Hi()     // the widest bounds
	loHi, hiLo := own.Hi(), own.Lo() // the least upper bound, the greatest lower one
	n := 1
	for _, r := range published {
		if r.Node == own.Node && own.Node != "" {
			continue
		}
		lo, hi = min(lo, r.Lo()), max(hi, r.Hi())
		loHi, hiLo = min(loHi, r.Hi()), max(hiLo, r.Lo())
		n++
	}
	if n < 2 {
		return 0, 0
	}
	return hi - lo, max(hiLo-loHi, 0)
}
