package main

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/config"
	"github.com/usherhq/usher/internal/store/local"
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
