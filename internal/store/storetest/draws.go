package storetest

import (
	"bytes"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/usherhq/usher"
)

// testDrawSeedFirstWriterWins: 20 parallel saves of different seeds of one
// draw all return the same seed, one of theirs; another draw or another
// room keeps its own.
func testDrawSeedFirstWriterWins(t *testing.T, s usher.Store) {
	keep := time.Now().Add(time.Hour)
	got := make([][]byte, 20)
	var wg sync.WaitGroup
	for i := range got {
		wg.Go(func() {
			seed := bytes.Repeat([]byte{byte(i + 1)}, 32)
			v, err := s.SaveDrawSeed(t.Context(), "r", "shuffle-1", seed, keep)
			if err != nil {
				t.Errorf("save draw seed: %v", err)
			}
			got[i] = v
		})
	}
	wg.Wait()
	if len(got[0]) != 32 || got[0][0] == 0 {
		t.Fatalf("the kept seed is %x, not one of the seeds saved", got[0])
	}
	for i, v := range got {
		if !bytes.Equal(v, got[0]) {
			t.Fatalf("save %d got seed %x, save 0 got %x: nodes would draw apart", i, v, got[0])
		}
	}
	again, err := s.SaveDrawSeed(t.Context(), "r", "shuffle-1", bytes.Repeat([]byte{99}, 32), keep)
	if err != nil || !bytes.Equal(again, got[0]) {
		t.Fatalf("a later save: %x, %v; want the first seed %x", again, err, got[0])
	}
	other, err := s.SaveDrawSeed(t.Context(), "r", "lottery-2000-1", []byte{7, 7}, keep)
	if err != nil || !bytes.Equal(other, []byte{7, 7}) {
		t.Fatalf("another draw of the room: %x, %v; want its own seed", other, err)
	}
	room2, err := s.SaveDrawSeed(t.Context(), "r2", "shuffle-1", []byte{8}, keep)
	if err != nil || !bytes.Equal(room2, []byte{8}) {
		t.Fatalf("the same draw id in another room: %x, %v; want its own seed", room2, err)
	}
}

// testDrawEntriesAreASet: entries added (twice, in parallel) are read back
// once each, with any bytes; another draw's are apart.
func testDrawEntriesAreASet(t *testing.T, s usher.Store) {
	keep := time.Now().Add(time.Hour)
	if es, err := s.DrawEntries(t.Context(), "r", "shuffle-1"); err != nil || len(es) != 0 {
		t.Fatalf("entries of an unknown draw: %x, %v", es, err)
	}
	var want [][]byte
	for i := range 50 {
		want = append(want, []byte{byte(i), 0, 255, '\n', byte(i * 7)})
	}
	var wg sync.WaitGroup
	for range 2 {
		for _, e := range want {
			wg.Go(func() {
				if err := s.AddDrawEntry(t.Context(), "r", "shuffle-1", e, keep); err != nil {
					t.Errorf("add draw entry: %v", err)
				}
			})
		}
	}
	wg.Wait()
	if err := s.AddDrawEntry(t.Context(), "r", "shuffle-2", []byte("other"), keep); err != nil {
		t.Fatal(err)
	}
	got, err := s.DrawEntries(t.Context(), "r", "shuffle-1")
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(got, bytes.Compare)
	slices.SortFunc(want, bytes.Compare)
	if !slices.EqualFunc(got, want, bytes.Equal) {
		t.Fatalf("entries read back: %d, want the %d added once each", len(got), len(want))
	}
}
