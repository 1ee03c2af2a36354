package bench

import (
	"testing"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/store/redis"
)

// TestFarRulesAgree: the load model counts as far back exactly what the
// Redis store answers from its view: the same eligibility and the same
// margin, over ops of every kind.
func TestFarRulesAgree(t *testing.T) {
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	base := usher.AdmitOp{Now: now, Counted: now, TotalActiveUsers: 100, NewUsersPerMinute: 300,
		Bucket: now.Unix() - 60, WaitExp: now.Unix() + 150}
	checkIn := base
	checkIn.From = usher.Cell{Exp: now.Unix() + 20, At: now.Add(-2 * time.Minute)}
	variants := map[string]func(*usher.AdmitOp){
		"as is":           func(*usher.AdmitOp) {},
		"random":          func(o *usher.AdmitOp) { o.Random = true },
		"joining":         func(o *usher.AdmitOp) { o.Joining = true },
		"from bucket":     func(o *usher.AdmitOp) { o.FromBucket = o.Bucket - 1 },
		"forced":          func(o *usher.AdmitOp) { o.Force = true },
		"unproven":        func(o *usher.AdmitOp) { o.Unproven = true },
		"client limited":  func(o *usher.AdmitOp) { o.Client.Key = 7 },
		"no wait":         func(o *usher.AdmitOp) { o.WaitExp = now.Unix() },
		"count ends soon": func(o *usher.AdmitOp) { o.From.Exp = now.Unix() + 1 },
		"take over":       func(o *usher.AdmitOp) { o.TakeOver = now },
		"not after from":  func(o *usher.AdmitOp) { o.Counted = o.From.At },
		"no admit":        func(o *usher.AdmitOp) { o.NoAdmit = true },
	}
	for _, start := range []usher.AdmitOp{base, checkIn} {
		for name, change := range variants {
			op := start
			change(&op)
			if got, want := farEligible(&op), redis.FarEligible(&op); got != want {
				t.Errorf("%s (new visitor %v): the model says far-back eligible %v, the store %v", name, start.From.At.IsZero(), got, want)
			}
		}
	}
	for _, wait := range []int64{1, 5, 29, 30, 31, 59, 60, 61, 150, 400} {
		op := base
		op.WaitExp = now.Unix() + wait
		if got, want := farMargin(&op), redis.FarMargin(op.TotalActiveUsers, op.NewUsersPerMinute, time.Duration(wait)*time.Second); got != want {
			t.Errorf("count running %d s: the model's margin %d, the store's %d", wait, got, want)
		}
	}
}
