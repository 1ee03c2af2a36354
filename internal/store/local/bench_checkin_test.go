package local

import (
	"context"
	"testing"
	"time"

	"github.com/usherhq/usher"
)

// BenchmarkCheckInMillion is a waiter's check-in (Store.Admit with its
// ticket) in a room where a million waiters checked in before: the
// store's work for one check-in of a long line, records included.
func BenchmarkCheckInMillion(b *testing.B) {
	st, err := Open(Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	const n = 1_000_000
	t0 := time.Unix(1_800_000_000, 0)
	last := make([]usher.AdmitOp, n)
	mk := func(i int, now time.Time, from usher.Cell) usher.AdmitOp {
		var v [8]byte
		v[0], v[1], v[2], v[3] = byte(i), byte(i>>8), byte(i>>16), 1
		return usher.AdmitOp{Now: now, Visitor: v, Counted: now.Truncate(time.Millisecond), Keep: now.Unix() + 600,
			TotalActiveUsers: 1, NewUsersPerMinute: 1, SessionDuration: time.Minute, Bucket: t0.Unix() + int64(i/5000),
			From: from, WaitExp: now.Unix() + 150, NoAdmit: true}
	}
	// Everyone arrives over 200 s, then checks in once over the next 100 s.
	for i := range n {
		now := t0.Add(time.Duration(i) * 200 * time.Microsecond)
		last[i] = mk(i, now, usher.Cell{})
		if _, err := st.Admit(ctx, "r", last[i]); err != nil {
			b.Fatal(err)
		}
	}
	for i := range n {
		now := t0.Add(200*time.Second + time.Duration(i)*100*time.Microsecond)
		o := mk(i, now, usher.Cell{Exp: last[i].WaitExp, At: last[i].Counted})
		if _, err := st.Admit(ctx, "r", o); err != nil {
			b.Fatal(err)
		}
		last[i] = o
	}
	b.ReportAllocs()
	start := t0.Add(300 * time.Second)
	for k := 0; b.Loop(); k++ {
		i := (k * 7919) % n // spread over the line
		now := start.Add(time.Duration(k) * 100 * time.Microsecond)
		o := mk(i, now, usher.Cell{Exp: last[i].WaitExp, At: last[i].Counted})
		if _, err := st.Admit(ctx, "r", o); err != nil {
			b.Fatal(err)
		}
		last[i] = o
	}
}
