package coord

import (
	"sync"
	"testing"
	"time"
)

// Beside runs each function to its end before its wait returns, and as
// many at once as callers ask for, past its few long-lived goroutines.
func TestBeside(t *testing.T) {
	for round := range 3 { // the goroutines of one round serve the next
		const n = 3 * maxBesideWorkers
		var started sync.WaitGroup
		started.Add(n)
		release := make(chan struct{})
		ran := make([]bool, n)
		waits := make([]func(), n)
		for i := range n {
			waits[i] = Beside(func() {
				started.Done()
				<-release // every one waits until all n run at once
				ran[i] = true
			})
		}
		all := make(chan struct{})
		go func() { started.Wait(); close(all) }()
		select {
		case <-all:
		case <-time.After(30 * time.Second):
			t.Fatalf("round %d: %d functions did not all run at once", round, n)
		}
		close(release)
		for i, wait := range waits {
			wait()
			if !ran[i] {
				t.Fatalf("round %d: wait %d returned before its function ended", round, i)
			}
		}
	}
	if w := besideWorkers.Load(); w > maxBesideWorkers {
		t.Errorf("%d long-lived goroutines, want at most %d", w, maxBesideWorkers)
	}
}
