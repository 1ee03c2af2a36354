//go:build !unix

package local

// newSlots returns n zeroed key and value slots.
func newSlots(n int) (keys []uint64, vals []packed, free func()) {
	return make([]uint64, n), make([]packed, n), func() {}
}
