//go:build unix

package local

import (
	"syscall"
	"unsafe"
)

// offHeapMin is the least table size (slots) kept outside the Go heap.
const offHeapMin = 4096

// newSlots returns n zeroed key, value and from slots. Large tables are mapped
// outside the Go heap: they hold no pointers, and a heap that held them
// would let the garbage collector grow the heap by as much again before
// collecting (its goal is a multiple of the live heap), doubling their
// cost in resident memory. free releases them.
func newSlots(n int) (keys []uint64, vals []packed, froms []fromDelta, free func()) {
	if n < offHeapMin {
		return make([]uint64, n), make([]packed, n), make([]fromDelta, n), func() {}
	}
	b, err := syscall.Mmap(-1, 0, 20*n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return make([]uint64, n), make([]packed, n), make([]fromDelta, n), func() {}
	}
	p := unsafe.Pointer(unsafe.SliceData(b))
	keys = unsafe.Slice((*uint64)(p), n)
	vals = unsafe.Slice((*packed)(unsafe.Add(p, 8*n)), n)
	froms = unsafe.Slice((*fromDelta)(unsafe.Add(p, 16*n)), n)
	return keys, vals, froms, func() { _ = syscall.Munmap(b) }
}
