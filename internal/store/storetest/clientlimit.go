package storetest

import (
	"testing"
	"time"

	"github.com/usherhq/usher"
)

// testClientLimitNetwork: the clients of one network get the network's
// limit together, each within its own; a ticket over the network's limit
// is counted in neither tier, so a refused client keeps its own budget; a
// client key equal to a network key is counted apart from it.
func testClientLimitNetwork(t *testing.T, s usher.Store) {
	back := T0.Unix() + 86400
	take := func(at time.Time, client, network uint64) bool {
		o := op(at, 1000, 1000)
		o.Client = usher.ClientOp{Key: client, PerMinute: 2, NetworkKey: network, NetworkPerMinute: 8, Back: back}
		return !mustAdmit(t, s, "r", o).OverClient
	}
	granted := 0
	for c := range uint64(10) {
		for range 3 {
			if take(T0, 100+c, 77) {
				granted++
			}
		}
	}
	if granted != 8 {
		t.Fatalf("ten clients of one network, three asks each, limits 2 and 8: %d tickets, want 8", granted)
	}
	// Client 109 was refused for the network only: in another network it
	// still has its own two.
	if !take(T0.Add(time.Second), 109, 78) || !take(T0.Add(time.Second), 109, 78) {
		t.Fatal("a client refused for its network's count spent its own budget")
	}
	// Key 77 as a client is not network 77.
	if !take(T0.Add(time.Second), 77, 79) {
		t.Fatal("a client key equal to a full network's key is refused")
	}
	// Seventy seconds on, the network has its budget again.
	if !take(T0.Add(71*time.Second), 200, 77) {
		t.Fatal("the network is still refused 71 s on")
	}
}
