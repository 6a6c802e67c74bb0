package bench

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/crosscode/crosscode-mcp/hub"
	"github.com/crosscode/crosscode-mcp/internal/testing/fixture"
	"github.com/crosscode/crosscode-mcp/store"
)

const bigOps = 1_000_000

// bigStore returns a directory holding hub.db with a workspace "mygame" of
// 1,000,000 operations of every kind. It is built once per machine (it
// takes a minute) and copied for each use, so benchmarks that delete from
// it leave the original alone.
func bigStore(b *testing.B) string {
	b.Helper()
	cache := filepath.Join(os.TempDir(), "crosscode-bench-1m-v2")
	if _, err := os.Stat(filepath.Join(cache, "done")); err != nil {
		os.RemoveAll(cache)
		b.Logf("building the 1,000,000-operation workspace in %s (once)", cache)
		ctx := context.Background()
		st, err := store.Open(ctx, filepath.Join(cache, "hub.db"), nil)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := st.EnsureWorkspace(ctx, "mygame", ""); err != nil {
			b.Fatal(err)
		}
		if err := fillBigWorkspace(ctx, st.IngestBatch); err != nil {
			b.Fatal(err)
		}
		if err := st.Close(); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(cache, "done"), nil, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	dir := b.TempDir()
	copyFile(b, filepath.Join(cache, "hub.db"), filepath.Join(dir, "hub.db"))
	return dir
}

// fillBigWorkspace ingests the 1,000,000 operations of every kind of the
// big workspace "mygame" (which must exist) in batches of 2,000.
func fillBigWorkspace(ctx context.Context, ingest store.BatchFunc) error {
	const replicas, batch = 50, 2000
	reps := make([]*fixture.Replica, replicas)
	for i := range reps {
		reps[i] = fixture.NewReplica("mygame", fmt.Sprintf("rep_%d", i), fmt.Sprintf("actor%d@example.com", i))
	}
	for done := 0; done < bigOps; done += batch {
		items := make([]store.Item, batch)
		for i := range items {
			n := done + i
			items[i] = store.Item{Workspace: "mygame", Envelope: reps[n%replicas].Any("big", n)}
		}
		if _, err := ingest(ctx, items); err != nil {
			return err
		}
	}
	return nil
}

func copyFile(b *testing.B, from, to string) {
	in, err := os.Open(from)
	if err != nil {
		b.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		b.Fatal(err)
	}
	// On disk before the service opens it, as a real database is: otherwise
	// the first fsync of the file (a checkpoint's) writes out the whole
	// copy, and the benchmark measures the copy.
	if err := out.Sync(); err != nil {
		b.Fatal(err)
	}
	if err := out.Close(); err != nil {
		b.Fatal(err)
	}
}

func get(c *http.Client, url, token string) (int, []byte, error) {
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}

// BenchmarkPage1000From1M: one 1,000-item page at a random cursor of a
// 1,000,000-operation workspace, over HTTP, whole envelopes, protocolVersion=2.
func BenchmarkPage1000From1M(b *testing.B) {
	s := startService(b, bigStore(b), hub.Config{})
	benchPages(b, s.url, s.token)
}

// benchPages reads random 1,000-item pages of every kind and of claims.
func benchPages(b *testing.B, base, token string) {
	c := newClient()
	for _, tc := range []struct{ name, path string }{
		{"events", "/v1/events"},
		{"claims", "/v1/claims"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var bytes int
			for i := 0; i < b.N; i++ {
				after := rand.IntN(bigOps - 10*1000)
				status, body, err := get(c, fmt.Sprintf("%s%s?afterSequence=%d&limit=1000&protocolVersion=2", base, tc.path, after), token)
				if err != nil || status != http.StatusOK {
					b.Fatalf("page: %v %d %.200s", err, status, body)
				}
				bytes += len(body)
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/page")
			b.ReportMetric(float64(bytes)/float64(b.N)/1024, "KiB/page")
		})
	}
}

// BenchmarkRetentionSweep1M: retention deletes all 1,000,000 operations
// while a client keeps ingesting over HTTP; reports how long the sweep took
// and the slowest ingest during it (the stall).
func BenchmarkRetentionSweep1M(b *testing.B) {
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		s := startService(b, bigStore(b), hub.Config{})
		tok, err := s.st.CreateToken(context.Background(), "live", "enterprise")
		if err != nil {
			b.Fatal(err)
		}
		sweepUnderIngest(b, s.url, tok, "live", s.st.Sweep)
	}
}

// sweepUnderIngest runs sweep over everything of plan team (all of it past
// retention) while a client ingests into workspace (plan enterprise, kept)
// over HTTP, and reports the sweep's time and the ingest latencies.
func sweepUnderIngest(b *testing.B, base, token, workspace string, sweep func(context.Context, time.Time, func(string) time.Duration, *store.SweepOptions) (*store.SweepResult, error)) map[string]float64 {
	c := newClient()
	// Warm up first (connections, prepared statements, the workspace's
	// state): the figure is what the sweep does to ingest.
	warm := fixture.NewReplica(workspace, "rep_warm", "ada@example.com")
	for n := range 20 {
		body := mustIngestBody(warm, n)
		if status, resp, err := post(c, base+"/v1/"+collection(body), token, body); err != nil || status != http.StatusOK {
			b.Fatalf("warm-up ingest: %v %d %s", err, status, resp)
		}
	}
	stop := make(chan struct{})
	var lat []time.Duration
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		r := fixture.NewReplica(workspace, "rep_live", "ada@example.com")
		for n := 0; ; n++ {
			select {
			case <-stop:
				return
			default:
			}
			body := mustIngestBody(r, n)
			start := time.Now()
			status, resp, err := post(c, base+"/v1/"+collection(body), token, body)
			if err != nil || status != http.StatusOK {
				b.Errorf("ingest during sweep: %v %d %s", err, status, resp)
				return
			}
			lat = append(lat, time.Since(start))
		}
	}()
	b.StartTimer()
	start := time.Now()
	keep := func(plan string) time.Duration {
		if plan == "enterprise" {
			return 0
		}
		return time.Hour
	}
	res, err := sweep(context.Background(), time.Now().Add(48*time.Hour), keep, nil)
	took := time.Since(start)
	b.StopTimer()
	close(stop)
	wg.Wait()
	if err != nil || res.Deleted != bigOps {
		b.Fatalf("sweep: %v %+v", err, res)
	}
	order := make([]int, len(lat))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(i, j int) bool { return lat[order[i]] > lat[order[j]] })
	var slowest []string
	for _, i := range order[:min(8, len(order))] {
		slowest = append(slowest, fmt.Sprintf("#%d %v", i, lat[i].Round(100*time.Microsecond)))
	}
	b.Logf("slowest ingests (#n: the nth of %d): %v", len(lat), slowest)
	m := map[string]float64{
		"s/sweep":        took.Seconds(),
		"ingests-during": float64(len(lat)),
		"p99-ingest-ms":  ms(percentile(lat, 0.99)),
		"max-ingest-ms":  ms(percentile(lat, 1)),
	}
	for unit, v := range m {
		b.ReportMetric(v, unit)
	}
	return m
}

func mustIngestBody(r *fixture.Replica, n int) []byte {
	b, err := jsonMarshalIngest(r.Any("live", n))
	if err != nil {
		panic(err)
	}
	return b
}
