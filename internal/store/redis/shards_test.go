package redis

import "testing"

// TestKeySlot: Redis Cluster's slots of known keys (CLUSTER KEYSLOT).
func TestKeySlot(t *testing.T) {
	for key, want := range map[string]uint16{"foo": 12182, "bar": 5061, "hello": 866, "123456789": 12739} {
		if got := keySlot(key); got != want {
			t.Errorf("keySlot(%q) = %d, want %d", key, got, want)
		}
	}
}

// TestBackKeysSpread: a room's back shards' hash tags fall in the equal
// ranges of the slot space after the room's own slot's, so a cluster whose masters
// serve equal ranges holds a front and two back shards on three masters;
// every node finds the same tags.
func TestBackKeysSpread(t *testing.T) {
	for _, room := range []string{"sale", "tickets", "a", "drop-2026"} {
		front := int(keySlot("usher:" + room))
		for _, n := range []int{2, 3, 5} {
			backs := backKeys("usher", room, n)
			if len(backs) != n-1 {
				t.Fatalf("%d shards: %d back shards", n, len(backs))
			}
			seen := map[int]bool{front * n / slots: true}
			for i, b := range backs {
				tag := b.keys[0][1 : len(b.keys[0])-len("}:m")]
				slot := int(keySlot(tag))
				if got, want := slot*n/slots, (front*n/slots+i+1)%n; got != want {
					t.Errorf("room %s, %d shards: back shard %d in slot %d, range %d; want range %d", room, n, i+1, slot, got, want)
				}
				if b.visitors != b.keys[0][:len(b.keys[0])-1]+"v:" {
					t.Errorf("back shard %d: visitors %q beside keys %v", i+1, b.visitors, b.keys)
				}
				seen[slot*n/slots] = true
			}
			if n == 3 && len(seen) != 3 {
				t.Errorf("room %s: a front and two back shards over %d of three equal ranges of slots", room, len(seen))
			}
			again := backKeys("usher", room, n)
			for i := range backs {
				if again[i].keys[0] != backs[i].keys[0] {
					t.Errorf("back shard %d: %s, then %s", i+1, backs[i].keys[0], again[i].keys[0])
				}
			}
		}
	}
}

// TestBackOf: consecutive buckets go to consecutive back shards.
func TestBackOf(t *testing.T) {
	for b, want := range map[int64]int{100: 1, 101: 2, 102: 1, -3: 2} {
		if got := backOf(b, 3); got != want {
			t.Errorf("backOf(%d, 3) = %d, want %d", b, got, want)
		}
	}
}
