package storetest

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/usherhq/usher"
)

// testRuntimeDocument: an empty store has no document; a swap from the
// version read stores the document and its audit record; a swap from a
// stale version changes nothing and says conflict.
func testRuntimeDocument(t *testing.T, s usher.Store) {
	ctx := context.Background()
	v, doc, err := s.LoadRuntime(ctx)
	if err != nil || v != 0 || doc != nil {
		t.Fatalf("LoadRuntime on an empty store = %d, %q, %v; want 0, nil, nil", v, doc, err)
	}
	if v, err := s.RuntimeVersion(ctx); err != nil || v != 0 {
		t.Fatalf("RuntimeVersion on an empty store = %d, %v; want 0", v, err)
	}
	if recs, err := s.ReadAudit(ctx, 0, 10); err != nil || len(recs) != 0 {
		t.Fatalf("ReadAudit on an empty store = %v, %v; want none", recs, err)
	}
	v1, err := s.SwapRuntime(ctx, 0, []byte(`{"rooms":{"a":1}}`), []byte(`{"change":1}`))
	if err != nil || v1 <= 0 {
		t.Fatalf("first SwapRuntime = %d, %v; want a version above 0", v1, err)
	}
	mustRuntime(t, s, v1, `{"rooms":{"a":1}}`)
	// A writer that read nothing, or an older version, loses.
	if _, err := s.SwapRuntime(ctx, 0, []byte(`{"lost":true}`), []byte(`{"change":"lost"}`)); usher.ErrorCode(err) != usher.EConflict {
		t.Fatalf("SwapRuntime from 0 after a swap: err %v, want code %s", err, usher.EConflict)
	}
	if _, err := s.SwapRuntime(ctx, v1+1, []byte(`{"lost":true}`), []byte(`{"change":"lost"}`)); usher.ErrorCode(err) != usher.EConflict {
		t.Fatalf("SwapRuntime from a version ahead: err %v, want code %s", err, usher.EConflict)
	}
	mustRuntime(t, s, v1, `{"rooms":{"a":1}}`)
	v2, err := s.SwapRuntime(ctx, v1, []byte(`{}`), []byte(`{"change":2}`))
	if err != nil || v2 != v1+1 {
		t.Fatalf("SwapRuntime from %d = %d, %v; want %d", v1, v2, err, v1+1)
	}
	mustRuntime(t, s, v2, `{}`)
	recs, err := s.ReadAudit(ctx, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	want := []usher.AuditRecord{{Version: v2, Data: []byte(`{"change":2}`)}, {Version: v1, Data: []byte(`{"change":1}`)}}
	if !sameRecords(recs, want) {
		t.Fatalf("ReadAudit = %s, want %s (the conflicts left no record)", showRecords(recs), showRecords(want))
	}
}

func mustRuntime(t *testing.T, s usher.Store, wantV int64, wantDoc string) {
	t.Helper()
	v, doc, err := s.LoadRuntime(context.Background())
	if err != nil || v != wantV || string(doc) != wantDoc {
		t.Fatalf("LoadRuntime = %d, %q, %v; want %d, %q", v, doc, err, wantV, wantDoc)
	}
	if v, err := s.RuntimeVersion(context.Background()); err != nil || v != wantV {
		t.Fatalf("RuntimeVersion = %d, %v; want %d", v, err, wantV)
	}
}

// testRuntimeSwapsOnce: of many writers swapping from the same version,
// exactly one wins.
func testRuntimeSwapsOnce(t *testing.T, s usher.Store) {
	ctx := context.Background()
	v1, err := s.SwapRuntime(ctx, 0, []byte(`{}`), []byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	const writers = 16
	var wg sync.WaitGroup
	wins := make(chan int, writers)
	for i := range writers {
		wg.Go(func() {
			_, err := s.SwapRuntime(ctx, v1, fmt.Appendf(nil, `{"writer":%d}`, i), fmt.Appendf(nil, `{"writer":%d}`, i))
			switch usher.ErrorCode(err) {
			case "":
				wins <- i
			case usher.EConflict:
			default:
				t.Errorf("writer %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	close(wins)
	var won []int
	for i := range wins {
		won = append(won, i)
	}
	if len(won) != 1 {
		t.Fatalf("%d writers won the swap from version %d, want exactly 1", len(won), v1)
	}
	mustRuntime(t, s, v1+1, fmt.Sprintf(`{"writer":%d}`, won[0]))
	recs, err := s.ReadAudit(ctx, 0, 100)
	if err != nil || len(recs) != 2 {
		t.Fatalf("ReadAudit = %s, %v; want 2 records", showRecords(recs), err)
	}
}

// testAuditLog: records come newest first, below before, at most limit.
func testAuditLog(t *testing.T, s usher.Store) {
	ctx := context.Background()
	var versions []int64
	v := int64(0)
	for i := range 7 {
		next, err := s.SwapRuntime(ctx, v, fmt.Appendf(nil, `{"n":%d}`, i), fmt.Appendf(nil, `record %d: with "quotes", colons: and bytes \x00`, i))
		if err != nil {
			t.Fatal(err)
		}
		versions, v = append(versions, next), next
	}
	all, err := s.ReadAudit(ctx, 0, 100)
	if err != nil || len(all) != 7 {
		t.Fatalf("ReadAudit(0, 100) = %d records, %v; want 7", len(all), err)
	}
	for i, r := range all {
		n := 6 - i
		if r.Version != versions[n] || string(r.Data) != fmt.Sprintf(`record %d: with "quotes", colons: and bytes \x00`, n) {
			t.Fatalf("record %d = %d %q, want %d and record %d", i, r.Version, r.Data, versions[n], n)
		}
	}
	page, err := s.ReadAudit(ctx, versions[4], 3)
	if err != nil {
		t.Fatal(err)
	}
	want := []usher.AuditRecord{all[3], all[4], all[5]} // versions[3], [2], [1]
	if !sameRecords(page, want) {
		t.Fatalf("ReadAudit(before %d, 3) = %s, want %s", versions[4], showRecords(page), showRecords(want))
	}
	if recs, err := s.ReadAudit(ctx, versions[0], 10); err != nil || len(recs) != 0 {
		t.Fatalf("ReadAudit(before the first) = %s, %v; want none", showRecords(recs), err)
	}
	if recs, err := s.ReadAudit(ctx, versions[6]+100, 2); err != nil || !sameRecords(recs, all[:2]) {
		t.Fatalf("ReadAudit(before beyond the newest, 2) = %s, %v; want the newest two", showRecords(recs), err)
	}
}

func sameRecords(a, b []usher.AuditRecord) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Version != b[i].Version || string(a[i].Data) != string(b[i].Data) {
			return false
		}
	}
	return true
}

func showRecords(rs []usher.AuditRecord) string {
	out := "["
	for i, r := range rs {
		if i > 0 {
			out += ", "
		}
		out += fmt.Sprintf("%d:%q", r.Version, r.Data)
	}
	return out + "]"
}

// testAuditAppend: a record appended alone leaves the document and its
// version alone, is numbered between the versions around it, and pages
// with the document's records.
func testAuditAppend(t *testing.T, s usher.Store) {
	ctx := context.Background()
	a0, err := s.AppendAudit(ctx, []byte(`{"alone":0}`))
	if err != nil || a0 <= 0 {
		t.Fatalf("AppendAudit on an empty log = %d, %v; want a number above 0", a0, err)
	}
	if v, err := s.RuntimeVersion(ctx); err != nil || v != 0 {
		t.Fatalf("RuntimeVersion after AppendAudit = %d, %v; want 0 (no document)", v, err)
	}
	v1, err := s.SwapRuntime(ctx, 0, []byte(`{"doc":1}`), []byte(`{"change":1}`))
	if err != nil || v1 <= a0 {
		t.Fatalf("SwapRuntime(0) = %d, %v; want a version above the appended record %d", v1, err, a0)
	}
	a1, err := s.AppendAudit(ctx, []byte(`{"alone":1}`))
	if err != nil || a1 <= v1 {
		t.Fatalf("AppendAudit = %d, %v; want a number above version %d", a1, err, v1)
	}
	a2, err := s.AppendAudit(ctx, []byte(`{"alone":2}`))
	if err != nil || a2 <= a1 {
		t.Fatalf("AppendAudit = %d, %v; want a number above %d", a2, err, a1)
	}
	// The document and its version are untouched: a node polling the
	// version has nothing to re-apply, and a change from v1 still swaps.
	mustRuntime(t, s, v1, `{"doc":1}`)
	v2, err := s.SwapRuntime(ctx, v1, []byte(`{"doc":2}`), []byte(`{"change":2}`))
	if err != nil || v2 <= a2 {
		t.Fatalf("SwapRuntime(%d) = %d, %v; want a version above the appended record %d", v1, v2, err, a2)
	}
	mustRuntime(t, s, v2, `{"doc":2}`)
	all, err := s.ReadAudit(ctx, 0, 10)
	want := []usher.AuditRecord{
		{Version: v2, Data: []byte(`{"change":2}`)},
		{Version: a2, Data: []byte(`{"alone":2}`)},
		{Version: a1, Data: []byte(`{"alone":1}`)},
		{Version: v1, Data: []byte(`{"change":1}`)},
		{Version: a0, Data: []byte(`{"alone":0}`)},
	}
	if err != nil || !sameRecords(all, want) {
		t.Fatalf("ReadAudit = %s, %v; want %s", showRecords(all), err, showRecords(want))
	}
	page, err := s.ReadAudit(ctx, a2, 2)
	if err != nil || !sameRecords(page, want[2:4]) {
		t.Fatalf("ReadAudit(before %d, 2) = %s, %v; want %s", a2, showRecords(page), err, showRecords(want[2:4]))
	}
}
