package local

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/usherhq/usher"
	bolt "go.etcd.io/bbolt"
)

var t0 = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

// crashImage copies the file as a kill -9 would leave it: everything
// committed, nothing pending in memory, and no clean close.
func crashImage(t *testing.T, s *Store) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "crashed.db")
	if err := copyImage(s, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// copyImage copies the store's file and its log to path (and path's log
// names) as a kill -9 would leave them: the file as last committed, the
// log as written.
func copyImage(s *Store, path string) error {
	s.compactMu.Lock() // no compaction between the file's copy and the log's
	defer s.compactMu.Unlock()
	if err := s.db.View(func(tx *bolt.Tx) error { return tx.CopyFile(path, 0o600) }); err != nil {
		return err
	}
	gens, err := walGens(s.opts.Path)
	if err != nil {
		return err
	}
	for _, g := range gens {
		b, err := os.ReadFile(walPath(s.opts.Path, g))
		if err != nil {
			return err
		}
		if err := os.WriteFile(walPath(path, g), b, 0o600); err != nil {
			return err
		}
	}
	return nil
}

func openAt(t *testing.T, path string, now time.Time) *Store {
	t.Helper()
	s, err := Open(Options{Path: path, Now: func() time.Time { return now }, FlushInterval: time.Hour,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// visitor returns a visitor id from n.
func visitor(n byte) [8]byte { return [8]byte{7: n} }

func admitOne(t *testing.T, s *Store, now time.Time, activeExp int64) usher.AdmitResult {
	t.Helper()
	res, err := s.Admit(context.Background(), "r", usher.AdmitOp{
		Now: now, Visitor: visitor(byte(now.Unix())), Counted: now, Keep: now.Unix() + 600,
		TotalActiveUsers: 1, NewUsersPerMinute: 100,
		Bucket: now.Unix(), WaitExp: now.Unix() + 5, ActiveExp: activeExp,
	})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestAdmissionIsDurableBeforeItReturns(t *testing.T) {
	a := openAt(t, filepath.Join(t.TempDir(), "u.db"), t0)
	if res := admitOne(t, a, t0, t0.Unix()+30); !res.Admitted {
		t.Fatal("not admitted")
	}
	b := openAt(t, crashImage(t, a), t0.Add(time.Second))
	st, _ := b.Stats(context.Background(), "r", t0.Add(2*time.Second))
	if st.Active != 1 || st.AdmittedLastMinute != 1 {
		t.Fatalf("after a crash right after the admission: %+v, want it counted", st)
	}
	if res := admitOne(t, b, t0.Add(2*time.Second), t0.Unix()+32); res.Admitted {
		t.Fatal("the room's only slot was given twice across a crash")
	}
}

// TestRenewalIsDurableBeforeItReturns: a renewed session is counted after
// a crash right after the renewal, so its ticket never outlives its count.
func TestRenewalIsDurableBeforeItReturns(t *testing.T) {
	ctx := context.Background()
	a := openAt(t, filepath.Join(t.TempDir(), "u.db"), t0)
	admitOne(t, a, t0, t0.Unix()+30)
	v := visitor(byte(t0.Unix()))
	if _, err := a.Renew(ctx, "r", usher.RenewOp{Now: t0.Add(5 * time.Second), Visitor: v,
		From: usher.Cell{Exp: t0.Unix() + 30, At: t0}, To: t0.Unix() + 35, Counted: t0.Add(5 * time.Second), Keep: t0.Unix() + 600}); err != nil {
		t.Fatal(err)
	}
	b := openAt(t, crashImage(t, a), t0.Add(6*time.Second))
	for sec := int64(6); sec < 35; sec++ {
		st, _ := b.Stats(ctx, "r", t0.Add(time.Duration(sec)*time.Second))
		if st.Active != 1 {
			t.Fatalf("at +%ds active = %d while the renewed session runs, want 1", sec, st.Active)
		}
	}
	// The record came back too: a copy of the ticket from before the
	// renewal renews nothing.
	res, err := b.Renew(ctx, "r", usher.RenewOp{Now: t0.Add(7 * time.Second), Visitor: v,
		From: usher.Cell{Exp: t0.Unix() + 30, At: t0}, To: t0.Unix() + 37, Counted: t0.Add(7 * time.Second), Keep: t0.Unix() + 600})
	if err != nil || !res.Replay {
		t.Fatalf("renewing a stale copy after the crash: %+v, %v; want a replay", res, err)
	}
}

// TestAdmittedRecordSurvivesCrash: a copy of an admitted visitor's waiting
// ticket is not admitted again after a crash.
func TestAdmittedRecordSurvivesCrash(t *testing.T) {
	ctx := context.Background()
	a := openAt(t, filepath.Join(t.TempDir(), "u.db"), t0)
	v := visitor(9)
	w := usher.AdmitOp{Now: t0, Visitor: v, Counted: t0, Keep: t0.Unix() + 600, TotalActiveUsers: 5, NewUsersPerMinute: 100,
		Bucket: t0.Unix(), WaitExp: t0.Unix() + 20, ActiveExp: t0.Unix() + 300, NoAdmit: true}
	if _, err := a.Admit(ctx, "r", w); err != nil {
		t.Fatal(err)
	}
	in := w
	in.Now, in.Counted, in.NoAdmit = t0.Add(2*time.Second), t0.Add(2*time.Second), false
	in.From = usher.Cell{Exp: w.WaitExp, At: t0}
	if res, err := a.Admit(ctx, "r", in); err != nil || !res.Admitted {
		t.Fatalf("check-in: %+v, %v", res, err)
	}
	b := openAt(t, crashImage(t, a), t0.Add(3*time.Second))
	again := in
	again.Now, again.Counted = t0.Add(4*time.Second), t0.Add(4*time.Second)
	res, err := b.Admit(ctx, "r", again)
	if err != nil || !res.Replay || !res.Admitted {
		t.Fatalf("the same waiting ticket after a crash: %+v, %v; want a replay of an admitted visitor", res, err)
	}
	if st, _ := b.Stats(ctx, "r", t0.Add(5*time.Second)); st.Active != 1 || st.AdmittedLastMinute != 1 {
		t.Fatalf("after the replay: %+v, want one admission", st)
	}
}

func TestCleanCloseTrustsEveryCell(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "u.db")
	a, err := Open(Options{Path: path, Now: func() time.Time { return t0 }})
	if err != nil {
		t.Fatal(err)
	}
	admitOne(t, a, t0, t0.Unix()+30)
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	b := openAt(t, path, t0.Add(6*time.Second))
	if len(b.lossy) != 0 {
		t.Fatalf("lossy spans after a clean close: %v", b.lossy)
	}
	if _, err := b.Renew(ctx, "r", usher.RenewOp{Now: t0.Add(10 * time.Second), Visitor: visitor(byte(t0.Unix())),
		From: usher.Cell{Exp: t0.Unix() + 30, At: t0}, To: t0.Unix() + 40, Counted: t0.Add(10 * time.Second), Keep: t0.Unix() + 600}); err != nil {
		t.Fatal(err)
	}
	if st, _ := b.Stats(ctx, "r", t0.Add(11*time.Second)); st.Active != 1 {
		t.Fatalf("active after a move on a cleanly reopened store = %d, want exactly 1", st.Active)
	}
}

func TestWaitersKeepTheirCountAcrossRestart(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "u.db")
	a, err := Open(Options{Path: path, Now: func() time.Time { return t0 }})
	if err != nil {
		t.Fatal(err)
	}
	admitOne(t, a, t0, t0.Unix()+300)
	for i := 1; i <= 3; i++ {
		now := t0.Add(time.Duration(i) * time.Second)
		if _, err := a.Admit(ctx, "r", usher.AdmitOp{Now: now, Visitor: visitor(byte(10 + i)), Counted: now, Keep: now.Unix() + 600,
			TotalActiveUsers: 1, NewUsersPerMinute: 100,
			Bucket: now.Unix(), WaitExp: now.Unix() + 60, ActiveExp: now.Unix() + 300}); err != nil {
			t.Fatal(err)
		}
	}
	// Time passes and the check-ins are flushed; then the process dies.
	a.mu.Lock()
	a.noteOp(t0.Add(4500 * time.Millisecond))
	a.mu.Unlock()
	if err := a.flush(false); err != nil {
		t.Fatal(err)
	}
	b := openAt(t, crashImage(t, a), t0.Add(5*time.Second))
	now := t0.Add(6 * time.Second)
	res, err := b.Admit(ctx, "r", usher.AdmitOp{Now: now, Visitor: visitor(13), Counted: now, Keep: now.Unix() + 600,
		TotalActiveUsers: 1, NewUsersPerMinute: 100,
		Bucket: t0.Unix() + 3, From: usher.Cell{Exp: t0.Unix() + 63, At: t0.Add(3 * time.Second)},
		WaitExp: now.Unix() + 60, ActiveExp: now.Unix() + 300})
	if err != nil {
		t.Fatal(err)
	}
	if res.Admitted || res.Ahead != 2 || res.Waiting != 3 {
		t.Fatalf("third waiter after a crash: %+v, want 2 ahead of it and 3 waiting", res)
	}
}

func TestSecondProcessCannotOpenTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "u.db")
	openAt(t, path, t0)
	start := time.Now()
	_, err := Open(Options{Path: path})
	if err == nil {
		t.Fatal("a second store opened the same file")
	}
	if time.Since(start) > 10*time.Second {
		t.Fatalf("the lock took %v to refuse", time.Since(start))
	}
}

// TestInviteUsesSurviveCrash: an invite's uses are on disk before
// UseInvite returns: after a crash it gets no extra use.
func TestInviteUsesSurviveCrash(t *testing.T) {
	ctx := context.Background()
	a := openAt(t, filepath.Join(t.TempDir(), "u.db"), t0)
	id := [16]byte{5}
	exp := time.Now().Add(time.Hour)
	for range 2 {
		if ok, err := a.UseInvite(ctx, "r", id, 2, exp); err != nil || !ok {
			t.Fatalf("UseInvite = %v, %v", ok, err)
		}
	}
	b := openAt(t, crashImage(t, a), time.Now())
	if ok, err := b.UseInvite(ctx, "r", id, 2, exp); err != nil || ok {
		t.Fatalf("a third use after a crash: %v, %v; want refused", ok, err)
	}
	if ok, _ := b.UseInvite(ctx, "r", [16]byte{6}, 2, exp); !ok {
		t.Fatal("another invite was refused")
	}
}

// TestConcurrentAdmissionsAreDurableWhenTheyReturn: admissions made at
// once share commits (one leads a flush, the others wait for it), and
// each is on disk when its Admit returns: a crash image taken by each
// caller right after its call holds its admission.
func TestConcurrentAdmissionsAreDurableWhenTheyReturn(t *testing.T) {
	a := openAt(t, filepath.Join(t.TempDir(), "u.db"), t0)
	const n = 48
	images := make([]string, n)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			res, err := a.Admit(context.Background(), "r", usher.AdmitOp{
				Now: t0, Visitor: visitor(byte(i + 1)), Counted: t0, Keep: t0.Unix() + 600,
				TotalActiveUsers: 1000, NewUsersPerMinute: 1000,
				Bucket: t0.Unix(), WaitExp: t0.Unix() + 5, ActiveExp: t0.Unix() + 30,
			})
			if err == nil && !res.Admitted {
				err = fmt.Errorf("visitor %d not admitted", i+1)
			}
			if err != nil {
				errs <- err
				return
			}
			path := filepath.Join(t.TempDir(), fmt.Sprintf("crashed-%d.db", i))
			if err := copyImage(a, path); err != nil {
				errs <- err
				return
			}
			images[i] = path
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if c := a.commits.Load(); c >= n {
		t.Errorf("%d commits for %d admissions made at once: none shared", c, n)
	}
	for i, path := range images {
		b := openAt(t, path, t0.Add(time.Second))
		r := b.rooms["r"]
		if r == nil {
			t.Fatalf("the crash image taken after visitor %d's Admit returned has no room", i+1)
		}
		rc, ok := r.records.get(visitor(byte(i + 1)))
		if !ok || !rc.admitted {
			t.Fatalf("the crash image taken after visitor %d's Admit returned lacks its admission", i+1)
		}
		b.Close()
	}
}
