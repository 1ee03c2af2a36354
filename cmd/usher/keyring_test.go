package main

import (
	"context"
	"log/slog"
	"net/netip"
	"testing"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/config"
	"github.com/usherhq/usher/internal/limit"
	"github.com/usherhq/usher/internal/store/local"
	"github.com/usherhq/usher/internal/ticket"
)

func TestKeyRingSurvivesAStoreThatLostIt(t *testing.T) {
	ctx := context.Background()
	quiet := slog.New(slog.DiscardHandler)
	cfg := config.Default()
	open := func() usher.Store {
		s, err := local.Open(local.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	shared := open()
	a, fromStore, err := loadKeyRing(ctx, cfg, shared, quiet)
	if err != nil || !fromStore {
		t.Fatalf("first node: %v, from store %v", err, fromStore)
	}
	tk := usher.Ticket{State: usher.Admitted, ArrivedAt: time.Now(), AdmittedAt: time.Now()}
	old, err := a.Seal(&tk, "sale", "__usher_wr")
	if err != nil {
		t.Fatal(err)
	}
	// The store loses its data, and a second node starts before the first
	// writes its ring back: it generates another.
	lost := open()
	b, _, err := loadKeyRing(ctx, cfg, lost, quiet)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Open(old, "sale", "__usher_wr"); err == nil {
		t.Fatal("test set-up: the second ring opens the first's tickets already")
	}
	// The first node syncs: it finds the second's ring, adopts it for
	// sealing and keeps opening its own tickets.
	a.sync(ctx, lost, quiet)
	if _, err := a.Open(old, "sale", "__usher_wr"); err != nil {
		t.Fatalf("the first node no longer opens its own tickets: %v", err)
	}
	fresh, _ := a.Seal(&tk, "sale", "__usher_wr")
	if _, err := b.Open(fresh, "sale", "__usher_wr"); err != nil {
		t.Fatalf("the second node cannot open what the first seals now: %v", err)
	}
	// With the store empty, a sync writes the ring back for nodes to come.
	empty := open()
	a.sync(ctx, empty, quiet)
	c, _, err := loadKeyRing(ctx, cfg, empty, quiet)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Open(old, "sale", "__usher_wr"); err != nil {
		t.Fatalf("a node started after the ring was written back cannot open old tickets: %v", err)
	}
}

// TestKeyRingClientKeys: two nodes with the same ring key a client's limit
// alike (so they count it in the same cells of a shared store); a new
// sealing key keys it afresh; a ring's bindings open under a rotated ring.
func TestKeyRingClientKeys(t *testing.T) {
	k1, err := ticket.GenerateKey("k1")
	if err != nil {
		t.Fatal(err)
	}
	k2, err := ticket.GenerateKey("k2")
	if err != nil {
		t.Fatal(err)
	}
	var a, b keyRing
	if err := a.set([]usher.Key{k1}); err != nil {
		t.Fatal(err)
	}
	if err := b.set([]usher.Key{k1}); err != nil {
		t.Fatal(err)
	}
	p := netip.MustParsePrefix("198.51.100.0/24")
	before := a.clientKeys().Key(limit.TierClient, p)
	if b.clientKeys().Key(limit.TierClient, p) != before {
		t.Fatal("two nodes with one ring key a client apart")
	}
	bound := a.Binding([]byte("data"))
	if err := a.set([]usher.Key{k2, k1}); err != nil {
		t.Fatal(err)
	}
	if a.clientKeys().Key(limit.TierClient, p) == before {
		t.Fatal("a new sealing key keys clients as the old one")
	}
	if !a.Bound(bound, []byte("data")) {
		t.Fatal("a binding under the key rotated behind no longer opens")
	}
}
