package store_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/crosscode/crosscode-mcp/internal/testing/queuemodel"
	"github.com/crosscode/crosscode-mcp/store"
)

// TestQueueModel holds the projections of waiting claims against an
// independent model (internal/testing/queuemodel) on random logs: after
// each random slice of the log reaches the store (through Mirror, as a
// remote replica's does), every claim's state at random moments from
// then on (grants at lease ends, waits running out, leases from the
// grant), queued claims' places in line, the queues of claims and the
// denials (conflict, limit, deadlock) must be the model's.
func TestQueueModel(t *testing.T) {
	seeds := 12
	if testing.Short() {
		seeds = 3
	}
	totals := map[string]int{}
	for seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			start := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
			g := queuemodel.NewGen(uint64(seed), "mygame", 3+seed%3, start)
			log := g.Log(260)
			ctx := context.Background()
			s, err := store.Open(ctx, filepath.Join(t.TempDir(), "ws.db"), &store.Options{Projections: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			m := queuemodel.New()
			for lo := 0; lo < len(log); {
				hi := min(len(log), lo+1+g.Rng.IntN(12))
				if err := s.Mirror(ctx, "mygame", log[lo:hi], "q", int64(hi)); err != nil {
					t.Fatal(err)
				}
				for _, e := range log[lo:hi] {
					m.Apply(e)
				}
				last := *log[hi-1].IngestedAt
				for range 3 {
					at := last.Add([]time.Duration{0, time.Millisecond, time.Second, time.Minute, 10 * time.Minute, time.Hour, 3 * time.Hour}[g.Rng.IntN(7)])
					queuemodel.Compare(t, s, "mygame", m.Clone(), hi, at, totals)
				}
				lo = hi
			}
		})
	}
	t.Logf("states compared: %v", totals)
	if !testing.Short() && (totals["queued"] < 50 || totals["late grant"] < 50 || totals["wait_expired"] < 50 || totals["deadlock"] < 5 || totals["queue"] < 20) {
		t.Errorf("the logs were too tame to show much: %v", totals)
	}
}
