package redis_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/usherhq/usher/internal/store/redis"
	"github.com/usherhq/usher/internal/store/redis/redistest"
)

// TestRuntimeAuditBound: the log keeps the newest AuditKeep records, and
// a second node sees the document the first one swapped in.
func TestRuntimeAuditBound(t *testing.T) {
	ctx := context.Background()
	srv := redistest.StartServer(t)
	a := mustOpen(t, redis.Options{Addrs: []string{srv.Addr()}, KeyPrefix: prefix(t), AuditKeep: 3})
	b := mustOpen(t, redis.Options{Addrs: []string{srv.Addr()}, KeyPrefix: prefix(t), AuditKeep: 3})
	v := int64(0)
	var err error
	for i := range 5 {
		s := a
		if i%2 == 1 {
			s = b
		}
		if v, err = s.SwapRuntime(ctx, v, fmt.Appendf(nil, "doc %d", i), fmt.Appendf(nil, "change %d", i)); err != nil {
			t.Fatal(err)
		}
	}
	gotV, doc, err := b.LoadRuntime(ctx)
	if err != nil || gotV != v || string(doc) != "doc 4" {
		t.Fatalf("LoadRuntime on the other node: %d %q %v; want %d \"doc 4\"", gotV, doc, err, v)
	}
	recs, err := a.ReadAudit(ctx, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 || recs[0].Version != v || recs[2].Version != v-2 || string(recs[2].Data) != "change 2" {
		t.Fatalf("audit: %v; want the newest 3 records", recs)
	}
}
