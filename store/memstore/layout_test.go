package memstore

import (
	"testing"
	"unsafe"
)

// A token bucket is meant to fill one 64-byte allocation, which the
// allocator aligns to a cache line: the key a lookup compares and the
// arrival time a decision swaps are then on one line (see bucket).
func TestTokenBucketFillsOneCacheLine(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("the layout is planned for 64-bit platforms")
	}
	if n := unsafe.Sizeof(bucket{}); n != 64 {
		t.Fatalf("bucket is %d bytes, want 64: a lookup and a decision would touch two cache lines", n)
	}
}
