package unitytest

import (
	"context"
	"testing"
	"time"

	adapter "github.com/crosscode/crosscode-mcp/adapters/go/cappy"
	"github.com/crosscode/crosscode-mcp/bridge/cappy"
	"github.com/crosscode/crosscode-mcp/internal/demogame"
	"github.com/crosscode/crosscode-mcp/internal/testing/capturebench"
	"github.com/crosscode/crosscode-mcp/tools/capture"
)

// The figures of the Unity package's core (BENCHMARKS.md), each beside its
// floor in the same run:
//
//	go test ./adapters/unitytest -run '^$' -bench 'CSharpStep' -benchtime 200x -count 3
//	go test ./adapters/unitytest -run '^$' -bench 'CSharpLiveness' -benchtime 1x -count 3
//
// step_game with ms 0 (apply and look: the step's round trip, the paused
// frame rendered, encoded and checked, the agent's JPEG, the result's
// JSON) on the C# arena under Mono, beside the same call on the Go demo
// game (in-process, through the Go adapter library), alternating; and the
// longest pong while the arena's main thread is busy for 5 s, beside a
// ping's round trip with it idle.

func service(b *testing.B) *cappy.Service {
	s, err := cappy.NewService(context.Background(), cappy.ServiceConfig{Data: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

func waitAdapter(b *testing.B, s *cappy.Service) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := s.Controller.WaitAdapter(ctx); err != nil {
		b.Fatal(err)
	}
}

var (
	call   = capturebench.Call
	ms     = capturebench.Ms
	median = capturebench.Median
)

func BenchmarkCSharpStep(b *testing.B) {
	mono := service(b)
	startArena(b, buildArena(b), mono.Controller.Endpoint(), mono.Controller.Token())
	waitAdapter(b, mono)
	demo := service(b)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		adapter.Run(ctx, demogame.New(), &adapter.Options{Endpoint: demo.Controller.Endpoint(), Token: demo.Controller.Token()})
	}()
	b.Cleanup(func() { cancel(); <-done })
	waitAdapter(b, demo)
	for _, s := range []*cappy.Service{mono, demo} {
		call(b, capture.StartRecording(s).Handler, map[string]any{"control": "agent"})
	}
	monoStep, demoStep := capture.StepGame(mono).Handler, capture.StepGame(demo).Handler
	var cs, gos []time.Duration
	for b.Loop() {
		t0 := time.Now()
		if res := call(b, monoStep, map[string]any{"ms": 0}); len(res.Content) != 2 {
			b.Fatalf("no picture: %+v", res.Content)
		}
		t1 := time.Now()
		if res := call(b, demoStep, map[string]any{"ms": 0}); len(res.Content) != 2 {
			b.Fatalf("no picture: %+v", res.Content)
		}
		cs, gos = append(cs, t1.Sub(t0)), append(gos, time.Since(t1))
	}
	c, g := median(cs), median(gos)
	b.ReportMetric(ms(c), "csharp-p50-ms")
	b.ReportMetric(ms(g), "go-demo-p50-ms")
	b.ReportMetric(float64(c)/float64(g), "x-go-demo")
}

func BenchmarkCSharpLiveness(b *testing.B) {
	dir := buildArena(b)
	for b.Loop() {
		worst, idle := pongsWhileBusy(b, dir, 5000)
		b.ReportMetric(ms(worst), "busy-worst-pong-ms")
		b.ReportMetric(ms(idle), "idle-ping-ms")
	}
}
