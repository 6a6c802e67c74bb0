package store

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/crosscode/crosscode-mcp/internal/testing/fixture"
	"github.com/crosscode/crosscode-mcp/protocol"
)

// BenchmarkIngesterConcurrent: 16 goroutines ingest through one group-commit
// Ingester, each commit durable (WAL, synchronous=FULL).
func BenchmarkIngesterConcurrent(b *testing.B) {
	s := openTemp(b)
	in := s.NewIngester(nil)
	defer in.Close()
	const clients = 16
	envs := make([][]*protocol.Envelope, clients)
	per := b.N/clients + 1
	for c := range clients {
		r := fixture.NewReplica("mygame", fmt.Sprintf("rep_%d", c), "ada")
		for i := range per {
			envs[c] = append(envs[c], r.Any(fmt.Sprintf("c%d", c), i))
		}
	}
	var n atomic.Int64
	b.ResetTimer()
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, e := range envs[c] {
				if n.Add(1) > int64(b.N) {
					return
				}
				if _, err := in.Ingest(context.Background(), "mygame", e); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "envelopes/s")
}
