package bench

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/coder/websocket"

	adapter "github.com/crosscode/crosscode-mcp/adapters/go/cappy"
	"github.com/crosscode/crosscode-mcp/adapters/go/cappy/cappytest"
	"github.com/crosscode/crosscode-mcp/bridge/cappy"
	"github.com/crosscode/crosscode-mcp/internal/demogame"
	"github.com/crosscode/crosscode-mcp/protocol"
	"github.com/crosscode/crosscode-mcp/store"
)

// BenchmarkCaptureStream: the demo game's stress scenario streams b.N small
// events through the real controller into the capture store (SQLite, every
// event stored); "bare" is the same adapter streaming to a bare
// coder/websocket read loop that only reads frames, for the ratio.
func BenchmarkCaptureStream(b *testing.B) {
	// Each sub-benchmark streams its own b.N events (at least 1,000, at most
	// 1,000,000): the parent runs once with b.N = 1, so a count taken from
	// it would stream 1,000 events whatever -benchtime says.
	events := func(b *testing.B) int { return min(max(b.N, 1000), 1_000_000) }
	b.Run("bare", func(b *testing.B) {
		n := events(b)
		ctrl, err := cappytest.NewController()
		if err != nil {
			b.Fatal(err)
		}
		defer ctrl.Close()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go adapter.Run(ctx, demogame.New(), ctrl.Options())
		peer, err := ctrl.Accept(ctx)
		if err != nil {
			b.Fatal(err)
		}
		defer peer.Close()
		if _, _, err := peer.Handshake(ctx, ctrl.Token); err != nil {
			b.Fatal(err)
		}
		if err := peer.Send(ctx, protocol.PrepareScenario{Type: "prepare_scenario", Op: "op1", Scenario: "stress", Parameters: map[string]any{"events": float64(n)}}); err != nil {
			b.Fatal(err)
		}
		if _, err := peer.Expect(ctx, "ready", "op1"); err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		start := time.Now()
		peer.Send(ctx, protocol.OpMessage{Type: "start", Op: "op1"})
		// The bare loop: read frames until the last one (completed), nothing else.
		frames := 0
		for frames < n+2 {
			if _, _, err := peer.Conn.Read(ctx); err != nil {
				b.Fatal(err)
			}
			frames++
		}
		b.ReportMetric(float64(n)/time.Since(start).Seconds(), "events/s")
	})
	b.Run("controller+store", func(b *testing.B) {
		n := events(b)
		ctx, ctrl, st := demoController(b)
		b.ResetTimer()
		start := time.Now()
		op, err := ctrl.Start(ctx, cappy.Request{Kind: cappy.KindScenario, Scenario: "stress", Parameters: map[string]any{"events": float64(n)}})
		if err != nil {
			b.Fatal(err)
		}
		out := op.Wait(ctx)
		elapsed := time.Since(start)
		if out.Status != cappy.StatusCompleted || out.Events != int64(n) {
			b.Fatalf("%+v", out)
		}
		c, err := st.Capture(ctx, op.ID)
		if err != nil || c.Events != int64(n) {
			b.Fatalf("stored %d of %d events: %v", c.Events, n, err)
		}
		b.ReportMetric(float64(n)/elapsed.Seconds(), "events/s")
	})
}

// BenchmarkCaptureMillionEventsRSS: the stdio server (a separate process)
// captures a 1,000,000-event run of the demo game (another process);
// reports the server's peak RSS.
func BenchmarkCaptureMillionEventsRSS(b *testing.B) {
	for i := 0; i < b.N; i++ {
		a := startStdio(b, benchRepo(b), "--toolsets", "capture", "--game-cmd", binary(b)+" demo-game")
		start := time.Now()
		out := a.call(b, "run_scenario", map[string]any{"scenario": "stress", "parameters": map[string]any{"events": 1_000_000}, "waitSeconds": 55, "timeoutSeconds": 600})
		for out["status"] != "completed" {
			if time.Since(start) > 5*time.Minute {
				b.Fatalf("not done: %v", out)
			}
			out = a.call(b, "get_capture", map[string]any{"op": out["op"], "waitSeconds": 55, "limit": 1})
		}
		elapsed := time.Since(start)
		if out["events"].(float64) != 1_000_000 {
			b.Fatalf("%v", out)
		}
		_, hwm := procMem(b, a.cmd.Process.Pid)
		b.ReportMetric(hwm/1024, "peak-RSS-MiB")
		b.ReportMetric(1_000_000/elapsed.Seconds(), "events/s")
		a.c.Close()
	}
}

var _ = websocket.MessageText

// demoController runs the Cappy controller over a capture store in a temp
// dir, with the demo game in-process connected to it, until the benchmark
// ends; ctx ends with it.
func demoController(b *testing.B) (context.Context, *cappy.Controller, *store.Store) {
	b.Helper()
	dir := b.TempDir()
	st, err := store.Open(context.Background(), filepath.Join(dir, "captures.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	ctrl, err := cappy.New(cappy.Config{Store: st, ReplayDir: filepath.Join(dir, "replays")})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ctrl.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	go adapter.Run(ctx, demogame.New(), &adapter.Options{Endpoint: ctrl.Endpoint(), Token: ctrl.Token()})
	if _, err := ctrl.WaitAdapter(ctx); err != nil {
		b.Fatal(err)
	}
	return ctx, ctrl, st
}
