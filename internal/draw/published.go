package draw

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"slices"
)

// Kinds of draws.
const (
	KindShuffle = "shuffle"
	KindLottery = "lottery"
)

// Room is what GET /__usher/draws/<room> publishes: the room's draws.
type Room struct {
	Room  string   `json:"room"`
	Draws []Record `json:"draws"`
}

// Record is one published draw. Secret, Seed and Order (a shuffle) or
// Windows (a lottery) are set once it is revealed.
type Record struct {
	ID         string `json:"id"`
	Kind       string `json:"kind"`
	Commitment string `json:"commitment"`
	Revealed   bool   `json:"revealed"`
	// Shuffle: the event's start (unix seconds) and the places' span.
	Start  int64  `json:"start,omitempty"`
	Span   int64  `json:"span,omitempty"`
	Secret string `json:"secret,omitempty"`
	Beacon string `json:"beacon,omitempty"`
	Seed   string `json:"seed,omitempty"`
	// Order lists a revealed shuffle's entries, first place first.
	Order []Placed `json:"order,omitempty"`
	// Lottery: the epoch and, per revealed window, its link and the
	// entries it admitted.
	Epoch   int64      `json:"epoch,omitempty"`
	Windows []Revealed `json:"windows,omitempty"`
}

// Placed is one entry of a shuffle's order.
type Placed struct {
	Entry string `json:"entry"`
	Place int64  `json:"place"`
}

// Revealed is one revealed lottery window.
type Revealed struct {
	Window   int64   `json:"window"`
	Link     string  `json:"link"`
	Admitted []Drawn `json:"admitted,omitempty"`
}

// Drawn is an entry admitted in a lottery window, with its draw.
type Drawn struct {
	Entry string  `json:"entry"`
	Draw  float64 `json:"draw"`
}

// Hex encodes b as lower-case hex.
func Hex(b []byte) string { return hex.EncodeToString(b) }

func unhex[T [16]byte | [32]byte](field, s string) (T, error) {
	var out T
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != len(out) {
		return out, fmt.Errorf("%s: want %d bytes of hex, got %q", field, len(out), s)
	}
	return T(b), nil
}

// Verify recomputes a published draw of room from its own data and returns
// every way it does not match (none: it verifies). A draw not revealed yet
// verifies nothing and returns no problem.
func Verify(room string, r Record) []string {
	if !r.Revealed {
		return nil
	}
	switch r.Kind {
	case KindShuffle:
		return verifyShuffle(room, r)
	case KindLottery:
		return verifyLottery(r)
	}
	return []string{fmt.Sprintf("draw %s: unknown kind %q", r.ID, r.Kind)}
}

func verifyShuffle(room string, r Record) []string {
	var probs []string
	bad := func(f string, a ...any) { probs = append(probs, fmt.Sprintf("draw %s: ", r.ID)+fmt.Sprintf(f, a...)) }
	secret, err := unhex[[32]byte]("secret", r.Secret)
	if err != nil {
		bad("%v", err)
		return probs
	}
	commit, err := unhex[[32]byte]("commitment", r.Commitment)
	if err != nil {
		bad("%v", err)
		return probs
	}
	if c := Commit(room, r.ID, secret); c != commit {
		bad("the secret does not open the commitment (it hashes to %s)", Hex(c[:]))
	}
	seed := Seed(secret, r.Beacon)
	if r.Seed != Hex(seed[:]) {
		bad("seed %s is not the hash of the secret and the beacon (%s)", r.Seed, Hex(seed[:]))
	}
	type keyed struct {
		entry string
		key   [32]byte
	}
	var want []keyed
	kr := NewKeyer(seed)
	seen := map[string]bool{}
	for i, p := range r.Order {
		e, err := unhex[[16]byte]("order entry", p.Entry)
		if err != nil {
			bad("order[%d]: %v", i, err)
			continue
		}
		if seen[p.Entry] {
			bad("order[%d]: entry %s is listed twice", i, p.Entry)
		}
		seen[p.Entry] = true
		k := kr.Key(e)
		if pl := PlaceOf(k, r.Start, r.Span); pl != p.Place {
			bad("order[%d]: entry %s has place %d, the seed gives %d", i, p.Entry, p.Place, pl)
		}
		want = append(want, keyed{p.Entry, k})
	}
	sorted := slices.Clone(want)
	slices.SortStableFunc(sorted, func(a, b keyed) int { return bytes.Compare(a.key[:], b.key[:]) })
	for i := range want {
		if want[i].entry != sorted[i].entry {
			bad("order[%d]: entry %s is out of place: the seed puts %s there", i, want[i].entry, sorted[i].entry)
			break
		}
	}
	return probs
}

func verifyLottery(r Record) []string {
	var probs []string
	bad := func(f string, a ...any) { probs = append(probs, fmt.Sprintf("draw %s: ", r.ID)+fmt.Sprintf(f, a...)) }
	head, err := unhex[[32]byte]("commitment", r.Commitment)
	if err != nil {
		bad("%v", err)
		return probs
	}
	if r.Secret != "" {
		secret, err := unhex[[32]byte]("secret", r.Secret)
		if err != nil {
			bad("%v", err)
		} else if h := NewChain(secret).Head(); h != head {
			bad("the secret's chain has head %s, not the commitment", Hex(h[:]))
		}
	}
	for _, w := range r.Windows {
		if Epoch(w.Window) != r.Epoch {
			bad("window %d is not in epoch %d", w.Window, r.Epoch)
			continue
		}
		link, err := unhex[[32]byte]("link", w.Link)
		if err != nil {
			bad("window %d: %v", w.Window, err)
			continue
		}
		if !CheckLink(head, link, w.Window) {
			bad("window %d: link %s does not hash to the commitment", w.Window, w.Link)
			continue
		}
		for _, d := range w.Admitted {
			e, err := unhex[[16]byte]("entry", d.Entry)
			if err != nil {
				bad("window %d: %v", w.Window, err)
				continue
			}
			if v := Value(link, e); v != d.Draw {
				bad("window %d: entry %s drew %v, not %v", w.Window, d.Entry, v, d.Draw)
			}
		}
	}
	return probs
}
