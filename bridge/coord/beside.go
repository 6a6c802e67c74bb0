package coord

import "sync/atomic"

// Beside runs f on another goroutine and returns a function that waits for
// it to return: for a read that runs beside a write (publish_intent's
// overlap check beside its ingest).
//
// f runs on one of a few goroutines that live as long as the process: the
// transpiled SQLite needs a deep stack, and a new goroutine grows its own
// to that depth by copying it several times, which cost about 100,000
// instructions per call (7 % of a publish_intent) when every call started
// one. When they are all busy, f runs on a new goroutine.
func Beside(f func()) (wait func()) {
	done := make(chan struct{})
	g := func() {
		defer close(done)
		f()
	}
	select {
	case besideWork <- g: // an idle one took it
	default:
		if besideWorkers.Add(1) <= maxBesideWorkers {
			go func() {
				g()
				for g := range besideWork {
					g()
				}
			}()
		} else {
			besideWorkers.Add(-1)
			go g()
		}
	}
	return func() { <-done }
}

// The goroutines of Beside.
var (
	besideWork    = make(chan func())
	besideWorkers atomic.Int32
)

const maxBesideWorkers = 4
