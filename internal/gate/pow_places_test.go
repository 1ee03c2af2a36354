package gate_test

import (
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// TestProofOfWorkRacedSolution: one solution sent by 20 requests at once
// into a full room earns one place; the others are challenged again.
func TestProofOfWorkRacedSolution(t *testing.T) {
	h := powGate(t, powRoom(false))
	if a := h.ask(t, ""); !a.origin {
		t.Fatalf("into an empty room: %+v, want admitted at once", a)
	}
	a := h.ask(t, "")
	if a.challenge == nil {
		t.Fatalf("into the full room at once (no status cache to wait for): %+v, want a challenge", a)
	}
	sol := solve(t, a.challenge)
	var wg sync.WaitGroup
	var places, asked atomic.Int64
	for range 20 {
		wg.Go(func() {
			b := h.ask(t, sol)
			switch {
			case b.waiting && ticketSet(b.cookies):
				places.Add(1)
			case b.challenge != nil:
				asked.Add(1)
			}
		})
	}
	wg.Wait()
	if places.Load() != 1 || asked.Load() != 19 {
		t.Fatalf("one solution raced by 20 requests: %d places, %d challenged; want 1 and 19", places.Load(), asked.Load())
	}
}

// TestProofOfWorkAnyNewVisitor: a ticket that does not open (altered, of
// another room) makes a new visitor, which pays as one without a ticket
// does; a solution brought with a waiter's own ticket is not spent (the
// waiter keeps its place, and the solution is still good for one new
// visitor).
func TestProofOfWorkAnyNewVisitor(t *testing.T) {
	h := powGate(t, powRoom(true))
	a := h.ask(t, "")
	in := h.ask(t, solve(t, a.challenge))
	if !in.origin {
		t.Fatalf("with a solution: %+v, want admitted", in)
	}
	var tk *http.Cookie
	for _, c := range in.cookies {
		if strings.HasPrefix(c.Name, "__usher_wr") {
			tk = c
		}
	}
	if tk == nil {
		t.Fatal("no ticket cookie")
	}
	altered := &http.Cookie{Name: tk.Name, Value: tk.Value[:len(tk.Value)-2] + "AA"}
	other := &http.Cookie{Name: tk.Name, Value: "not-a-ticket"}
	for name, c := range map[string]*http.Cookie{"altered": altered, "garbage": other} {
		if b := h.ask(t, "", c); b.challenge == nil || b.origin {
			t.Errorf("a %s ticket: %+v, want a challenge", name, b)
		}
	}
	// The admitted ticket with a fresh solution: in, the solution unspent.
	sol := solve(t, h.ask(t, "").challenge)
	if b := h.ask(t, sol, tk); !b.origin {
		t.Fatalf("the admitted ticket with a solution: %+v, want in", b)
	}
	if b := h.ask(t, sol); !b.waiting && !b.origin {
		t.Fatalf("the solution a ticket holder did not need, for a new visitor: %+v, want a place", b)
	}
	if b := h.ask(t, sol); b.challenge == nil {
		t.Fatalf("the same solution a second time: %+v, want a challenge", b)
	}
}

// ticketSet reports whether cookies set a ticket.
func ticketSet(cookies []*http.Cookie) bool {
	for _, c := range cookies {
		if strings.HasPrefix(c.Name, "__usher_wr") && c.Value != "" {
			return true
		}
	}
	return false
}
