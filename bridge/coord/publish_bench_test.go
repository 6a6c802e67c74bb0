package coord_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/crosscode/crosscode-mcp/bridge/coord"
	"github.com/crosscode/crosscode-mcp/internal/cputime"
	"github.com/crosscode/crosscode-mcp/store"
)

// BenchmarkPublishIntentCall is the work of one publish_intent tool call
// in local mode, without the MCP transport: the durable intent, the
// overlap check beside it (with Beside) and the news digest after it (as
// tools/coord.PublishIntent runs them). CROSSCODE_BENCH_DB keeps the
// database at that path, to look at afterwards.
func BenchmarkPublishIntentCall(b *testing.B) {
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "ws.db")
	if p := os.Getenv("CROSSCODE_BENCH_DB"); p != "" {
		os.Remove(p)
		os.Remove(p + "-wal")
		os.Remove(p + "-shm")
		path = p
	}
	s, err := store.Open(ctx, path, &store.Options{Projections: true})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	c, err := coord.New(coord.Config{Workspace: ws, Store: s, Actor: "ada@example.com", Replica: "rep_a", Session: "ses_a"})
	if err != nil {
		b.Fatal(err)
	}
	if err := c.Start(ctx); err != nil {
		b.Fatal(err)
	}
	defer c.Close(ctx)
	paths := []string{"src/game/boss.gd"}
	var check, publish, news time.Duration // wall time of each part
	call := func() {
		var cerr error
		start := time.Now()
		wait := coord.Beside(func() {
			_, cerr = c.CheckConflicts(ctx, paths)
			check += time.Since(start)
		})
		pub, err := c.PublishIntent(ctx, "rebalance the boss", paths, "", 0)
		publish += time.Since(start)
		wait()
		if err != nil || cerr != nil || !pub.Acknowledged {
			b.Fatal(err, cerr)
		}
		start = time.Now()
		if _, err := c.News(ctx); err != nil {
			b.Fatal(err)
		}
		news += time.Since(start)
	}
	call()
	check, publish, news = 0, 0, 0
	b.ResetTimer()
	cpu0 := cputime.Self()
	for range b.N {
		call()
	}
	b.ReportMetric(float64((cputime.Self()-cpu0).Microseconds())/float64(b.N), "cpu-µs/call")
	b.ReportMetric(float64(check.Microseconds())/float64(b.N), "check-µs")
	b.ReportMetric(float64(publish.Microseconds())/float64(b.N), "publish-µs")
	b.ReportMetric(float64(news.Microseconds())/float64(b.N), "news-µs")
}
