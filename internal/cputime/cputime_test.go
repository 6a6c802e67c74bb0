package cputime

import (
	"testing"
	"time"
)

// TestSelfCounts: spinning for a while shows in Self, and WithChildren is
// never less than Self.
func TestSelfCounts(t *testing.T) {
	before := Self()
	x := 0
	for start := time.Now(); time.Since(start) < 50*time.Millisecond; {
		x++
	}
	after := Self()
	if after <= before {
		t.Fatalf("CPU time did not grow while spinning (%d rounds): %v then %v", x, before, after)
	}
	if w := WithChildren(); w < after {
		t.Fatalf("WithChildren %v < Self %v", w, after)
	}
}
