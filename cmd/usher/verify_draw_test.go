package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/usherhq/usher/internal/draw"
)

// publishedShuffle returns a revealed, honest shuffle of n entries of room
// and the lottery record of one window, as /__usher/draws/<room> would.
func publishedShuffle(room string, n int) draw.Room {
	secret := [32]byte{4, 5, 6}
	const start, span = 1_900_000_000, 86400
	id := "shuffle-1900000000"
	seed := draw.Seed(secret, "")
	type keyed struct {
		p draw.Placed
		k [32]byte
	}
	var ks []keyed
	for i := range n {
		e := draw.Entry(room, [8]byte{byte(i), 1})
		ks = append(ks, keyed{draw.Placed{Entry: draw.Hex(e[:]), Place: draw.Place(seed, e, start, span)}, draw.Key(seed, e)})
	}
	slices.SortFunc(ks, func(a, b keyed) int { return bytes.Compare(a.k[:], b.k[:]) })
	c := draw.Commit(room, id, secret)
	rec := draw.Record{ID: id, Kind: draw.KindShuffle, Commitment: draw.Hex(c[:]), Revealed: true, Start: start, Span: span,
		Secret: draw.Hex(secret[:]), Seed: draw.Hex(seed[:])}
	for _, k := range ks {
		rec.Order = append(rec.Order, k.p)
	}
	ch := draw.NewChain([32]byte{1})
	h := ch.Head()
	w := int64(3 * draw.EpochWindows)
	l := ch.Link(w)
	e := draw.Entry(room, [8]byte{9})
	lot := draw.Record{ID: "lottery-2000-3", Kind: draw.KindLottery, Commitment: draw.Hex(h[:]), Revealed: true, Epoch: 3,
		Windows: []draw.Revealed{{Window: w, Link: draw.Hex(l[:]), Admitted: []draw.Drawn{{Entry: draw.Hex(e[:]), Draw: draw.Value(l, e)}}}}}
	return draw.Room{Room: room, Draws: []draw.Record{rec, lot}}
}

func runVerifyDraw(t *testing.T, args ...string) (int, string) {
	t.Helper()
	var out bytes.Buffer
	m := &Main{Stdout: &out, Stderr: &out}
	code := m.Run(context.Background(), append([]string{"verify-draw"}, args...))
	return code, out.String()
}

// TestVerifyDraw: an honest file verifies (and finds an entry); one entry
// moved, a commitment not seen before, or another room's name each fail
// with the reason; a URL is read like a file.
func TestVerifyDraw(t *testing.T) {
	dir := t.TempDir()
	pub := publishedShuffle("shop", 100)
	write := func(name string, v draw.Room) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	honest := write("honest.json", pub)
	if code, out := runVerifyDraw(t, honest, "--entry", pub.Draws[0].Order[41].Entry, "--commitment", pub.Draws[0].Commitment); code != 0 ||
		!strings.Contains(out, "shuffle-1900000000: verified: 100 entries") || !strings.Contains(out, "number 42 of 100") ||
		!strings.Contains(out, "lottery-2000-3: verified") {
		t.Fatalf("an honest draw: exit %d\n%s", code, out)
	}
	moved := pub
	moved.Draws = slices.Clone(pub.Draws)
	moved.Draws[0].Order = slices.Clone(pub.Draws[0].Order)
	e := moved.Draws[0].Order[70]
	moved.Draws[0].Order = slices.Insert(slices.Delete(moved.Draws[0].Order, 70, 71), 0, e)
	if code, out := runVerifyDraw(t, write("moved.json", moved)); code != 1 || !strings.Contains(out, "MISMATCH") ||
		!strings.Contains(out, "out of place") || !strings.Contains(out, "1 of 2 draws") {
		t.Fatalf("one entry moved: exit %d\n%s", code, out)
	}
	if code, out := runVerifyDraw(t, "--commitment", strings.Repeat("ab", 32), honest); code != 1 || !strings.Contains(out, "has the commitment") {
		t.Fatalf("a commitment not published: exit %d\n%s", code, out)
	}
	if code, out := runVerifyDraw(t, "--room", "other", honest); code != 1 || !strings.Contains(out, `not of --room "other"`) {
		t.Fatalf("another room: exit %d\n%s", code, out)
	}
	renamed := pub
	renamed.Room = "other"
	if code, out := runVerifyDraw(t, write("renamed.json", renamed)); code != 1 || !strings.Contains(out, "does not open the commitment") {
		t.Fatalf("draws passed off as another room's: exit %d\n%s", code, out)
	}
	if code, _ := runVerifyDraw(t); code != 2 {
		t.Fatalf("no source: exit %d, want 2", code)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := os.ReadFile(honest)
		w.Write(b)
	}))
	defer srv.Close()
	if code, out := runVerifyDraw(t, srv.URL+"/__usher/draws/shop"); code != 0 {
		t.Fatalf("from a URL: exit %d\n%s", code, out)
	}
}
