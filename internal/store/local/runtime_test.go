package local

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
)

// TestRuntimeIsDurableBeforeItReturns: the runtime document and the audit
// log are in the file when SwapRuntime returns (a kill -9 right after
// loses neither), and the log keeps the newest AuditKeep records.
func TestRuntimeIsDurableBeforeItReturns(t *testing.T) {
	ctx := context.Background()
	s, err := Open(Options{Path: filepath.Join(t.TempDir(), "usher.db"), AuditKeep: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	v := int64(0)
	for i := range 5 {
		if v, err = s.SwapRuntime(ctx, v, fmt.Appendf(nil, "doc %d", i), fmt.Appendf(nil, "change %d", i)); err != nil {
			t.Fatal(err)
		}
	}
	c, err := Open(Options{Path: crashImage(t, s), AuditKeep: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	gotV, doc, err := c.LoadRuntime(ctx)
	if err != nil || gotV != 5 || string(doc) != "doc 4" {
		t.Fatalf("after a crash: version %d, doc %q, %v; want 5, \"doc 4\"", gotV, doc, err)
	}
	recs, err := c.ReadAudit(ctx, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 || recs[0].Version != 5 || recs[2].Version != 3 || string(recs[2].Data) != "change 2" {
		t.Fatalf("audit after a crash: %v; want versions 5, 4, 3 (the newest 3)", recs)
	}
	if _, err := c.SwapRuntime(ctx, 5, []byte("doc 5"), []byte("change 5")); err != nil {
		t.Fatal(err)
	}
	if recs, _ := c.ReadAudit(ctx, 0, 10); len(recs) != 3 || recs[2].Version != 4 {
		t.Fatalf("audit after one more change: %v; want versions 6, 5, 4", recs)
	}
}

// TestRuntimeAuditBoundInMemory: the memory store keeps AuditKeep records
// too.
func TestRuntimeAuditBoundInMemory(t *testing.T) {
	ctx := context.Background()
	s, err := Open(Options{AuditKeep: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	v := int64(0)
	for i := range 4 {
		if v, err = s.SwapRuntime(ctx, v, nil, fmt.Appendf(nil, "change %d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if recs, _ := s.ReadAudit(ctx, 0, 10); len(recs) != 2 || recs[0].Version != 4 || recs[1].Version != 3 {
		t.Fatalf("audit: %v; want versions 4 and 3", recs)
	}
}
