//go:build !unix

package local

// newSlots returns n zeroed key, value and from slots.
func newSlots(n int) (keys []uint64, vals []packed, froms []fromDelta, free func()) {
	return make([]uint64, n), make([]packed, n), make([]fromDelta, n), func() {}
}
