package redis

import (
	"time"

	"github.com/usherhq/usher"
)

// outCell groups the moves out of one active cell by the second they were
// counted at, so that a group is either all counted in the current
// counters or treated as lost (see the package doc).
type outCell struct{ exp, at int64 }

// touchArgs appends the touch script's arguments for moves at now to args
// (see scripts/touch.lua): moves out of live cells aggregated per cell and
// counted-at second with their earliest counted-at time, moves into later
// cells aggregated per cell. ok is false when there is nothing to change.
func touchArgs(args []string, now time.Time, moves []usher.Move) (_ []string, ok bool) {
	sec := now.Unix()
	type group struct{ n, minAt int64 }
	out := map[outCell]group{}
	in := map[int64]int64{}
	for _, m := range moves {
		if m.From.Exp > sec && !m.From.At.IsZero() {
			k := outCell{m.From.Exp, m.From.At.Unix()}
			at := m.From.At.UnixMilli()
			g, seen := out[k]
			if !seen || at < g.minAt {
				g.minAt = at
			}
			g.n++
			out[k] = g
		}
		if m.To > sec {
			in[m.To]++
		}
	}
	if len(out) == 0 && len(in) == 0 {
		return args, false
	}
	args = append(args, itoa(int64(len(out))))
	for k, g := range out {
		args = append(args, itoa(k.exp), itoa(g.n), itoa(g.minAt))
	}
	for exp, n := range in {
		args = append(args, itoa(exp), itoa(n))
	}
	return args, true
}
