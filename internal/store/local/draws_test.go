package local

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestDrawEntriesSurviveRestart: a draw's entries are written behind with
// the waiting check-ins: after a crash the store has those of the last
// flush (the one after is lost, at most a flush interval's), after a clean
// close all of them, and once the draw's keep time is past none.
func TestDrawEntriesSurviveRestart(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	keep := t0.Add(time.Hour)
	a := openAt(t, filepath.Join(t.TempDir(), "usher.db"), t0)
	if _, err := a.SaveDrawSeed(ctx, "sale", "shuffle-1", []byte("seed"), keep); err != nil {
		t.Fatal(err)
	}
	entry := func(n byte) []byte { return []byte{n, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15} }
	add := func(s *Store, n byte) {
		t.Helper()
		if err := s.AddDrawEntry(ctx, "sale", "shuffle-1", entry(n), keep); err != nil {
			t.Fatal(err)
		}
	}
	have := func(s *Store, want ...byte) {
		t.Helper()
		got, err := s.DrawEntries(ctx, "sale", "shuffle-1")
		if err != nil {
			t.Fatal(err)
		}
		var firsts []byte
		for _, e := range got {
			firsts = append(firsts, e[0])
		}
		slices.Sort(firsts)
		if !slices.Equal(firsts, want) {
			t.Fatalf("entries %v, want %v", firsts, want)
		}
	}
	for n := range byte(3) {
		add(a, n)
	}
	add(a, 1) // a set: once
	if err := a.saveDraws(); err != nil {
		t.Fatal(err)
	}
	add(a, 3) // after the last flush
	b := openAt(t, crashImage(t, a), t0.Add(time.Second))
	have(b, 0, 1, 2)
	add(b, 4)
	path := b.opts.Path
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	c := openAt(t, path, t0.Add(2*time.Second))
	have(c, 0, 1, 2, 4)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	have(openAt(t, path, keep.Add(time.Second)))
}
