package local_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/store/local"
	"github.com/usherhq/usher/internal/store/storetest"
)

func TestConformanceMemory(t *testing.T) {
	storetest.Run(t, func(t *testing.T) usher.Store {
		s, err := local.Open(local.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func TestConformanceFile(t *testing.T) {
	storetest.Run(t, func(t *testing.T) usher.Store {
		s, err := local.Open(local.Options{Path: filepath.Join(t.TempDir(), "usher.db")})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// TestRecordsFollowLiveVisitors: newcomers that never check in cost no
// record; records of visitors that stop coming are forgotten when their
// keep comes, so memory follows the visitors who are still live.
func TestRecordsFollowLiveVisitors(t *testing.T) {
	s, err := local.Open(local.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	t0 := storetest.T0
	op := func(v int, now time.Time) usher.AdmitOp {
		var id [8]byte
		id[0], id[1], id[2] = byte(v), byte(v>>8), byte(v>>16)
		return usher.AdmitOp{Now: now, Visitor: id, Counted: now, Keep: now.Unix() + 600, NoAdmit: true,
			TotalActiveUsers: 1, NewUsersPerMinute: 1, Bucket: now.Unix(), WaitExp: now.Unix() + 30}
	}
	for v := range 50_000 {
		if _, err := s.Admit(ctx, "r", op(v, t0)); err != nil {
			t.Fatal(err)
		}
	}
	if n := s.Records("r"); n != 0 {
		t.Fatalf("%d records for 50,000 newcomers that never checked in, want 0", n)
	}
	for v := range 1000 {
		o := op(v, t0.Add(10*time.Second))
		o.From = usher.Cell{Exp: t0.Unix() + 30, At: t0}
		if _, err := s.Admit(ctx, "r", o); err != nil {
			t.Fatal(err)
		}
	}
	if n := s.Records("r"); n != 1000 {
		t.Fatalf("%d records for 1,000 visitors who checked in, want 1000", n)
	}
	s.Stats(ctx, "r", t0.Add(611*time.Second))
	if n := s.Records("r"); n != 0 {
		t.Fatalf("%d records after every keep has passed, want 0", n)
	}
}
