package demogame_test

import (
	"context"
	"testing"
	"time"

	adapter "github.com/crosscode/crosscode-mcp/adapters/go/cappy"
	"github.com/crosscode/crosscode-mcp/adapters/go/cappy/cappytest"
	"github.com/crosscode/crosscode-mcp/bridge/cappy"
	"github.com/crosscode/crosscode-mcp/internal/demogame"
	"github.com/crosscode/crosscode-mcp/internal/testing/capturebench"
	"github.com/crosscode/crosscode-mcp/protocol"
	"github.com/crosscode/crosscode-mcp/tools/capture"
)

// Agent play's cost, each figure beside its floor in the same run:
//
//	go test ./internal/demogame -run '^$' -bench 'AgentStep' -benchtime 200x -count 3
//
// step_game with ms 0 (apply and look: the step's round trip, the paused
// frame rendered, encoded and checked, the agent's JPEG, the result's
// JSON) beside a bare WebSocket round trip to the same adapter (ping,
// pong) plus one frame's encode (the same picture); and a 500 ms step of
// the demo game (with frames at 2 fps: one due frame and the paused one;
// and without frames) beside 500 ms of its simulation run alone.

// playService is the capture service with the demo game connected
// in-process through the real adapter and a loopback WebSocket.
func playService(b *testing.B) *cappy.Service {
	ctx, cancel := context.WithCancel(context.Background())
	s, err := cappy.NewService(ctx, cappy.ServiceConfig{Data: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		adapter.Run(ctx, demogame.New(), &adapter.Options{Endpoint: s.Controller.Endpoint(), Token: s.Controller.Token()})
	}()
	b.Cleanup(func() { cancel(); <-done; s.Close() })
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	if _, err := s.Controller.WaitAdapter(wctx); err != nil {
		b.Fatal(err)
	}
	return s
}

var (
	call   = capturebench.Call
	ms     = capturebench.Ms
	median = capturebench.Median
)

// agentRecording starts an agent-controlled recording (frames at the
// default 2 fps, or none) and returns a func that stops it.
func agentRecording(b *testing.B, s *cappy.Service, frames bool) func() {
	args := map[string]any{"control": "agent"}
	if !frames {
		args["frames"] = 0
	}
	call(b, capture.StartRecording(s).Handler, args)
	return func() {
		op := s.Controller.Active()
		call(b, capture.StopRecording(s).Handler, map[string]any{"op": op.ID, "contactSheet": false})
	}
}

// bareAdapter is the demo game through the Go adapter library on a bare
// controller (cappytest), past its handshake.
func bareAdapter(b *testing.B) *cappytest.Peer {
	ctl, err := cappytest.NewController()
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); adapter.Run(ctx, demogame.New(), ctl.Options()) }()
	peer, err := ctl.Accept(ctx)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { peer.Conn.CloseNow(); cancel(); <-done; ctl.Close() })
	if _, _, err := peer.Handshake(ctx, ctl.Token); err != nil {
		b.Fatal(err)
	}
	return peer
}

// Each iteration measures the figure and its floor one after the other,
// so that both see the same machine.
func BenchmarkAgentStep(b *testing.B) {
	s := playService(b)
	step := capture.StepGame(s).Handler
	b.Run("ms0", func(b *testing.B) {
		defer agentRecording(b, s, true)()
		peer := bareAdapter(b)
		encode := demogame.EncodeFrame(0) // the picture step_game ms 0 shows here
		ctx := context.Background()
		var st, rtt, enc, floor []time.Duration
		for b.Loop() {
			t0 := time.Now()
			res := call(b, step, map[string]any{"ms": 0})
			t1 := time.Now()
			if len(res.Content) != 2 {
				b.Fatalf("no picture: %+v", res.Content)
			}
			if err := peer.Send(ctx, protocol.Ping{Type: "ping", Nonce: "n"}); err != nil {
				b.Fatal(err)
			}
			if _, err := peer.Expect(ctx, "pong", ""); err != nil {
				b.Fatal(err)
			}
			t2 := time.Now()
			encode()
			t3 := time.Now()
			st, rtt, enc, floor = append(st, t1.Sub(t0)), append(rtt, t2.Sub(t1)), append(enc, t3.Sub(t2)), append(floor, t3.Sub(t1))
		}
		p, f := median(st), median(floor)
		b.ReportMetric(ms(p), "step-p50-ms")
		b.ReportMetric(ms(f), "floor-p50-ms")
		b.ReportMetric(ms(median(rtt)), "rtt-p50-ms")
		b.ReportMetric(ms(median(enc)), "encode-p50-ms")
		b.ReportMetric(float64(p)/float64(f), "x-floor")
	})
	for _, frames := range []bool{true, false} {
		name := "ms500"
		if !frames {
			name += "-noframes"
		}
		b.Run(name, func(b *testing.B) {
			stop := agentRecording(b, s, frames)
			hold := map[string]any{"ms": 0, "actions": []any{map[string]any{"name": "attack", "pressed": true}}}
			call(b, step, hold)
			var st, sim []time.Duration
			n := 0
			for b.Loop() {
				if n%40 == 39 { // the fight may end: a fresh one
					b.StopTimer()
					stop()
					stop = agentRecording(b, s, frames)
					call(b, step, hold)
					b.StartTimer()
				}
				t0 := time.Now()
				call(b, step, map[string]any{"ms": 500})
				t1 := time.Now()
				demogame.SimulateAlone(10*(n%40), 500) // the same 500 ms of the fight
				st, sim = append(st, t1.Sub(t0)), append(sim, time.Since(t1))
				n++
			}
			stop()
			p, f := median(st), median(sim)
			b.ReportMetric(ms(p), "step-p50-ms")
			b.ReportMetric(ms(f), "sim-p50-ms")
		})
	}
}
