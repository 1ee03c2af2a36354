package local

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/usherhq/usher"
	bolt "go.etcd.io/bbolt"
)

// admitN admits visitors first..first+n-1 at now into room "r", whose
// limits (total 100, 100 a minute) leave room for them.
func admitN(t *testing.T, s *Store, first, n int, now time.Time) {
	t.Helper()
	for i := first; i < first+n; i++ {
		res, err := s.Admit(context.Background(), "r", usher.AdmitOp{
			Now: now, Visitor: visitor(byte(i)), Counted: now, Keep: now.Unix() + 600,
			TotalActiveUsers: 100, NewUsersPerMinute: 100,
			Bucket: now.Unix(), WaitExp: now.Unix() + 5, ActiveExp: now.Unix() + 300,
		})
		if err != nil || !res.Admitted {
			t.Fatalf("visitor %d: %+v, %v", i, res, err)
		}
	}
}

// admittedRecords returns which of visitors 1..n the store holds as
// admitted, and the room's active count.
func admittedRecords(t *testing.T, s *Store, n int, now time.Time) (map[int]bool, int64) {
	t.Helper()
	got := map[int]bool{}
	if r := s.rooms["r"]; r != nil {
		for i := 1; i <= n; i++ {
			if rc, ok := r.records.get(visitor(byte(i))); ok && rc.admitted {
				got[i] = true
			}
		}
	}
	st, err := s.Stats(context.Background(), "r", now)
	if err != nil {
		t.Fatal(err)
	}
	return got, st.Active
}

// logOf returns the path of the only log generation of the store at base.
func logOf(t *testing.T, base string) string {
	t.Helper()
	gens, err := walGens(base)
	if err != nil || len(gens) != 1 {
		t.Fatalf("log generations of %s: %v, %v; want one", base, gens, err)
	}
	return walPath(base, gens[0])
}

// roomInFile reports whether the bbolt file (not the log) holds room "r".
func roomInFile(t *testing.T, s *Store) bool {
	t.Helper()
	var in bool
	if err := s.db.View(func(tx *bolt.Tx) error {
		in = tx.Bucket(bucketRooms).Bucket([]byte("r")) != nil
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return in
}

// TestCrashBeforeCompactionReplaysTheLog: admissions on the log only (the
// bbolt file has not seen them) are all back after a crash.
func TestCrashBeforeCompactionReplaysTheLog(t *testing.T) {
	a := openAt(t, filepath.Join(t.TempDir(), "u.db"), t0)
	admitN(t, a, 1, 5, t0)
	if roomInFile(t, a) {
		t.Fatal("the admissions reached the bbolt file before any compaction: the log is not used")
	}
	b := openAt(t, crashImage(t, a), t0.Add(time.Second))
	got, active := admittedRecords(t, b, 5, t0.Add(time.Second))
	if len(got) != 5 || active != 5 {
		t.Fatalf("after the crash: records %v, active %d; want all 5", got, active)
	}
	if !roomInFile(t, b) {
		t.Fatal("the start did not move the replayed log into the file")
	}
}

// TestTornLastFrameIsDropped: a kill -9 in the middle of a frame's write
// leaves it cut short (or followed by garbage); the frames before it are
// replayed, the torn one is not, and the store goes on.
func TestTornLastFrameIsDropped(t *testing.T) {
	for _, tc := range []struct {
		name string
		tear func(data []byte, lastStart int) []byte
	}{
		{"cut short", func(d []byte, last int) []byte { return d[:len(d)-3] }},
		{"header only", func(d []byte, last int) []byte { return d[:last+frameHeader] }},
		{"bit flipped", func(d []byte, last int) []byte { d[len(d)-1] ^= 0x40; return d }},
		{"garbage after", func(d []byte, last int) []byte {
			return append(d[:last], 0xff, 0xff, 0xff, 0x00, 1, 2, 3, 4, 5, 6)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := openAt(t, filepath.Join(t.TempDir(), "u.db"), t0)
			admitN(t, a, 1, 3, t0)
			a.flushMu.Lock()
			lastStart := int(a.wal.size)
			a.flushMu.Unlock()
			admitN(t, a, 4, 1, t0) // the frame to tear
			img := crashImage(t, a)
			log := logOf(t, img)
			data, err := os.ReadFile(log)
			if err != nil {
				t.Fatal(err)
			}
			a.flushMu.Lock()
			size := int(a.wal.size)
			a.flushMu.Unlock()
			if err := os.WriteFile(log, tc.tear(data[:size], lastStart), 0o600); err != nil {
				t.Fatal(err)
			}
			b := openAt(t, img, t0.Add(time.Second))
			got, active := admittedRecords(t, b, 4, t0.Add(time.Second))
			if len(got) != 3 || got[4] || active != 3 {
				t.Fatalf("records %v, active %d; want visitors 1-3 and not the torn 4th", got, active)
			}
			admitN(t, b, 5, 1, t0.Add(time.Second))
			c := openAt(t, crashImage(t, b), t0.Add(2*time.Second))
			if got, active := admittedRecords(t, c, 5, t0.Add(2*time.Second)); len(got) != 4 || !got[5] || active != 4 {
				t.Fatalf("after a second crash: records %v, active %d; want 1-3 and 5", got, active)
			}
		})
	}
}

// TestCrashInTheMiddleOfCompaction: a crash after a compaction started a
// new generation but before its transaction committed, and one after the
// commit but before the old generation was removed: either way every
// admission is back, each counted once (replaying a frame twice changes
// nothing).
func TestCrashInTheMiddleOfCompaction(t *testing.T) {
	for _, committed := range []bool{false, true} {
		name := "before the commit"
		if committed {
			name = "after the commit"
		}
		t.Run(name, func(t *testing.T) {
			a := openAt(t, filepath.Join(t.TempDir(), "u.db"), t0)
			admitN(t, a, 1, 4, t0)
			oldGen := a.wal.gen
			oldLog, err := os.ReadFile(walPath(a.opts.Path, oldGen))
			if err != nil {
				t.Fatal(err)
			}
			fileBefore := filepath.Join(t.TempDir(), "before.db")
			if err := a.db.View(func(tx *bolt.Tx) error { return tx.CopyFile(fileBefore, 0o600) }); err != nil {
				t.Fatal(err)
			}
			if err := a.compact(); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(walPath(a.opts.Path, oldGen)); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("the compacted generation is still there: %v", err)
			}
			admitN(t, a, 5, 2, t0) // into the new generation
			img := crashImage(t, a)
			if !committed {
				if err := os.Rename(fileBefore, img); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.WriteFile(walPath(img, oldGen), oldLog, 0o600); err != nil {
				t.Fatal(err)
			}
			b := openAt(t, img, t0.Add(time.Second))
			got, active := admittedRecords(t, b, 6, t0.Add(time.Second))
			st, _ := b.Stats(context.Background(), "r", t0.Add(time.Second))
			if len(got) != 6 || active != 6 || st.AdmittedLastMinute != 6 {
				t.Fatalf("records %v, active %d, admitted %d; want 6 each", got, active, st.AdmittedLastMinute)
			}
			if gens, _ := walGens(img); len(gens) != 1 || gens[0] <= oldGen+1 {
				t.Fatalf("log generations after the start: %v; want one, newer than %d", gens, oldGen+1)
			}
		})
	}
}

// TestCleanCloseLeavesNoLog: Close moves the whole log into the file.
func TestCleanCloseLeavesNoLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "u.db")
	a := openAt(t, path, t0)
	admitN(t, a, 1, 3, t0)
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if gens, _ := walGens(path); len(gens) != 0 {
		t.Fatalf("log generations left after Close: %v", gens)
	}
	b := openAt(t, path, t0.Add(time.Second))
	if got, active := admittedRecords(t, b, 3, t0.Add(time.Second)); len(got) != 3 || active != 3 {
		t.Fatalf("after a clean restart: records %v, active %d", got, active)
	}
}

// TestCompactionRunsInTheBackground: past CompactBytes the log is moved
// into the file without a caller waiting for it.
func TestCompactionRunsInTheBackground(t *testing.T) {
	s, err := Open(Options{Path: filepath.Join(t.TempDir(), "u.db"), FlushInterval: time.Hour,
		CompactBytes: 512, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	admitN(t, s, 1, 20, t0)
	deadline := time.Now().Add(10 * time.Second)
	for s.compactions.Load() == 0 || !roomInFile(t, s) {
		if time.Now().After(deadline) {
			t.Fatal("no compaction 10 s after the log passed CompactBytes")
		}
		time.Sleep(10 * time.Millisecond)
	}
	c := openAt(t, crashImage(t, s), t0.Add(time.Second))
	if got, active := admittedRecords(t, c, 20, t0.Add(time.Second)); len(got) != 20 || active != 20 {
		t.Fatalf("after compactions and a crash: %d records, active %d; want 20", len(got), active)
	}
}

// TestLogIsBoundedWhenCompactionFallsBehind: while compaction cannot run,
// admissions wait once the log reaches MaxLogBytes (back-pressure), and
// go on when it can.
func TestLogIsBoundedWhenCompactionFallsBehind(t *testing.T) {
	const maxLog = 2048
	s, err := Open(Options{Path: filepath.Join(t.TempDir(), "u.db"), FlushInterval: time.Hour,
		CompactBytes: 512, MaxLogBytes: maxLog, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.compactMu.Lock() // a compaction that takes forever
	var done sync.WaitGroup
	var n int64
	var mu sync.Mutex
	done.Go(func() {
		for i := 1; i <= 100; i++ {
			res, err := s.Admit(context.Background(), "r", usher.AdmitOp{
				Now: t0, Visitor: visitor(byte(i)), Counted: t0, Keep: t0.Unix() + 600,
				TotalActiveUsers: 100, NewUsersPerMinute: 100,
				Bucket: t0.Unix(), WaitExp: t0.Unix() + 5, ActiveExp: t0.Unix() + 300,
			})
			if err != nil || !res.Admitted {
				t.Errorf("visitor %d: %+v, %v", i, res, err)
				return
			}
			mu.Lock()
			n++
			mu.Unlock()
		}
	})
	time.Sleep(time.Second)
	mu.Lock()
	admitted := n
	mu.Unlock()
	s.flushMu.Lock()
	onDisk := s.wal.size + s.backlog
	s.flushMu.Unlock()
	s.compactMu.Unlock()
	done.Wait()
	if admitted == 100 {
		t.Fatal("all 100 admissions went through while compaction was stuck: no back-pressure")
	}
	if onDisk > maxLog+256 {
		t.Fatalf("the log holds %d bytes with compaction stuck, over the bound of %d", onDisk, maxLog)
	}
	if n != 100 {
		t.Fatalf("%d admissions once compaction ran again, want 100", n)
	}
	c := openAt(t, crashImage(t, s), t0.Add(time.Second))
	if got, active := admittedRecords(t, c, 100, t0.Add(time.Second)); len(got) != 100 || active != 100 {
		t.Fatalf("after the back-pressure and a crash: %d records, active %d; want 100", len(got), active)
	}
}

// fullDisk is a log file on a full disk: its next fails writes fail with
// ENOSPC after writing half their bytes, as a short write does.
type fullDisk struct {
	f     logFile
	fails int
}

func (d *fullDisk) WriteAt(b []byte, off int64) (int, error) {
	if d.fails == 0 {
		return d.f.WriteAt(b, off)
	}
	d.fails--
	n, _ := d.f.WriteAt(b[:len(b)/2], off)
	return n, syscall.ENOSPC
}
func (d *fullDisk) Sync() error  { return d.f.Sync() }
func (d *fullDisk) Close() error { return d.f.Close() }

// TestDiskFullFailsTheAdmissionCleanly: an admission whose frame cannot be
// written fails (no ticket leaves), the half-written frame does not hide
// the frames after it once the disk has room again, and a log that could
// not be cut back refuses every admission after.
func TestDiskFullFailsTheAdmissionCleanly(t *testing.T) {
	ctx := context.Background()
	a := openAt(t, filepath.Join(t.TempDir(), "u.db"), t0)
	admitN(t, a, 1, 2, t0)
	real := a.wal.f
	a.wal.f = &fullDisk{f: real, fails: 1}
	op := usher.AdmitOp{Now: t0, Visitor: visitor(3), Counted: t0, Keep: t0.Unix() + 600,
		TotalActiveUsers: 100, NewUsersPerMinute: 100, Bucket: t0.Unix(), WaitExp: t0.Unix() + 5, ActiveExp: t0.Unix() + 300}
	if _, err := a.Admit(ctx, "r", op); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("admission on a full disk: %v, want ENOSPC", err)
	}
	a.wal.f = real // room again
	admitN(t, a, 4, 1, t0)
	b := openAt(t, crashImage(t, a), t0.Add(time.Second))
	if got, _ := admittedRecords(t, b, 4, t0.Add(time.Second)); !got[1] || !got[2] || !got[4] {
		t.Fatalf("records after the disk filled and freed: %v; want 1, 2 and 4", got)
	}

	a.wal.f = &fullDisk{f: real, fails: 2} // the frame, and the zeros over it
	op.Visitor = visitor(5)
	if _, err := a.Admit(ctx, "r", op); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("admission on a full disk: %v, want ENOSPC", err)
	}
	a.wal.f = real
	op.Visitor = visitor(6)
	if _, err := a.Admit(ctx, "r", op); err == nil {
		t.Fatal("an admission went through after a frame could not be cut back")
	}
}

// TestThousandNewVisitorsGrowTheLogByTheLimits: a client sending a
// thousand new visitors a second into a room that admits ten a minute
// grows the log by the admissions and a waiting count, not by the
// visitors.
func TestThousandNewVisitorsGrowTheLogByTheLimits(t *testing.T) {
	ctx := context.Background()
	a := openAt(t, filepath.Join(t.TempDir(), "u.db"), t0)
	var sizes []int64
	admitted := 0
	for round := range 2 {
		now := t0.Add(time.Duration(round) * time.Second)
		for i := range 1000 {
			var v [8]byte
			v[0], v[1], v[2] = byte(round), byte(i>>8), byte(i)
			res, err := a.Admit(ctx, "r", usher.AdmitOp{Now: now, Visitor: v, Counted: now, Keep: now.Unix() + 600,
				TotalActiveUsers: 100, NewUsersPerMinute: 10, Bucket: now.Unix(), WaitExp: now.Unix() + 5, ActiveExp: now.Unix() + 300})
			if err != nil {
				t.Fatal(err)
			}
			if res.Admitted {
				admitted++
			}
		}
		if err := a.flush(false); err != nil {
			t.Fatal(err)
		}
		a.flushMu.Lock()
		sizes = append(sizes, a.wal.size)
		a.flushMu.Unlock()
	}
	if admitted != 10 {
		t.Fatalf("%d admitted, want the room's 10 a minute", admitted)
	}
	// An admission's frame is under 150 bytes (its record, its cells, the
	// watermark); the waiting count of a second one more write.
	if sizes[0] > 10*150+200 {
		t.Errorf("log of %d bytes after 1,000 new visitors and 10 admissions", sizes[0])
	}
	if grown := sizes[1] - sizes[0]; grown > 200 {
		t.Errorf("1,000 more new visitors, none admitted, grew the log by %d bytes", grown)
	}
}
