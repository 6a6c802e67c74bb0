package demogame_test

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/crosscode/crosscode-mcp/adapters/go/cappy"
	"github.com/crosscode/crosscode-mcp/adapters/go/cappy/cappytest"
	"github.com/crosscode/crosscode-mcp/internal/demogame"
	"github.com/crosscode/crosscode-mcp/protocol"
)

// connect runs the demo game through cappy.Run against an cappytest
// controller, past the handshake.
func connect(t testing.TB, g *demogame.Game) *cappytest.Harness {
	t.Helper()
	h := cappytest.Start(t, g)
	hello, sc := h.Handshake()
	if hello.Game.ID != demogame.GameID || len(sc.Scenarios) != 3 {
		t.Fatalf("hello %+v, %d scenarios", hello.Game, len(sc.Scenarios))
	}
	return h
}

// The demo game through the real adapter and a WebSocket: a scenario, a
// recording, its replay at half speed, and the failures the game adds at
// prepare time.
func TestOverTheWire(t *testing.T) {
	w := connect(t, &demogame.Game{RecordTick: 2 * time.Millisecond})

	w.Send(&protocol.PrepareScenario{Type: "prepare_scenario", Op: "op_1", Scenario: "boss_intro",
		Parameters: map[string]any{"hero": "mage"}, Presentation: protocol.Presentation{"camera": "overview", "timeScale": 0.5}})
	w.Expect("ready", "op_1")
	w.Send(&protocol.OpMessage{Type: "start", Op: "op_1"})
	w.Expect("started", "op_1")
	evs, end := w.Collect("op_1")
	if end.Completed == nil || !strings.Contains(string(end.Completed.Summary), `"outcome"`) {
		t.Fatalf("boss_intro ended with %s %+v", end.Type, end.Failed)
	}
	local, _ := mustRun(t, demogame.New(), "boss_intro", map[string]any{"hero": "mage"}, nil)
	sameEvents(t, local, evs, 2)

	w.Send(&protocol.RecordStart{Type: "record_start", Op: "op_r"})
	w.Expect("started", "op_r")
	time.Sleep(200 * time.Millisecond)
	w.Send(&protocol.OpMessage{Type: "stop", Op: "op_r"})
	recorded, end := w.Collect("op_r")
	if end.Completed == nil || end.Completed.Replay == nil {
		t.Fatalf("recording ended with %s %+v", end.Type, end.Failed)
	}
	if len(recorded) == 0 {
		t.Fatal("no events recorded")
	}
	w.Send(&protocol.PrepareReplay{Type: "prepare_replay", Op: "op_p", Replay: end.Completed.Replay, Presentation: protocol.Presentation{"timeScale": 0.5}})
	w.Expect("ready", "op_p")
	w.Send(&protocol.OpMessage{Type: "start", Op: "op_p"})
	w.Expect("started", "op_p")
	played, end := w.Collect("op_p")
	if end.Completed == nil {
		t.Fatalf("replay ended with %s %+v", end.Type, end.Failed)
	}
	sameEvents(t, recorded, played, 2)

	// Refused at prepare, before ready.
	w.Send(&protocol.PrepareScenario{Type: "prepare_scenario", Op: "op_cam", Scenario: "boss_intro", Parameters: map[string]any{}, Presentation: protocol.Presentation{"camera": "drone"}})
	if m := w.Expect("failed", "op_cam"); m.Failed.Code != protocol.CappyUnknownCamera {
		t.Fatalf("unknown camera: %+v", m.Failed)
	}
	w.Send(&protocol.PrepareReplay{Type: "prepare_replay", Op: "op_fmt", Replay: cappy.InlineReplay([]byte(`{"format":"tetris/v9"}`), "tetris/v9")})
	if m := w.Expect("failed", "op_fmt"); m.Failed.Code != protocol.CappyReplayUnsupported {
		t.Fatalf("foreign replay: %+v", m.Failed)
	}
	w.Send(&protocol.PrepareScenario{Type: "prepare_scenario", Op: "op_route", Scenario: "speedrun", Parameters: map[string]any{}})
	if m := w.Expect("failed", "op_route"); m.Failed.Code != protocol.CappyInvalidParameters {
		t.Fatalf("speedrun without route: %+v", m.Failed)
	}
}

// BenchmarkStressLoopback: the stress scenario's events per second through
// the adapter and a loopback WebSocket to a reader that discards them.
func BenchmarkStressLoopback(b *testing.B) {
	h := connect(b, demogame.New())
	peer, ctx := h.Peer, h.Ctx
	buf := make([]byte, 512)
	b.ReportAllocs()
	b.ResetTimer()
	total := 0
	start := time.Now()
	for i := 0; i < b.N; i += 100_000 {
		n := min(100_000, b.N-i)
		op := "op_" + strconv.Itoa(i)
		peer.Send(ctx, &protocol.PrepareScenario{Type: "prepare_scenario", Op: op, Scenario: "stress", Parameters: map[string]any{"events": float64(n)}},
			&protocol.OpMessage{Type: "start", Op: op})
		for {
			_, r, err := peer.Conn.Reader(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			k, _ := io.ReadFull(r, buf)
			s := string(buf[:k])
			if strings.Contains(s, `"type":"event"`) {
				total++
				continue
			}
			if strings.Contains(s, `"failed"`) {
				b.Fatal(s)
			}
			if strings.Contains(s, `"completed"`) {
				break
			}
		}
	}
	elapsed := time.Since(start)
	b.StopTimer()
	if total != b.N {
		b.Fatalf("%d events, want %d", total, b.N)
	}
	b.ReportMetric(float64(total)/elapsed.Seconds(), "events/s")
	peer.Conn.Close(websocket.StatusNormalClosure, "")
}

// BenchmarkStressFrames: the stress scenario's events per second through
// the adapter and a loopback WebSocket to the cappytest controller,
// without frames and with 10 fps of 640x360 JPEG frames (which the
// adapter drops when its encoder is busy, so events do not wait). The two
// alternate in runs of 100,000 events, b.N events each, so that both see
// the same machine; ratio is the second's throughput over the first's.
// Each message is read whole and told by its first bytes.
func BenchmarkStressFrames(b *testing.B) {
	peer, ctx := longPeer(b)
	buf := make([]byte, 64<<10)
	withFrames := &protocol.FramesRequest{FPS: 10, MaxWidth: 640, Formats: []string{protocol.MimeJPEG}}
	var elapsed, cpu [2]time.Duration
	var frames int
	run := func(op string, n int, req *protocol.FramesRequest) (events int) {
		if err := peer.Send(ctx, &protocol.PrepareScenario{Type: "prepare_scenario", Op: op, Scenario: "stress", Parameters: map[string]any{"events": float64(n)}, Frames: req},
			&protocol.OpMessage{Type: "start", Op: op}); err != nil {
			b.Fatal(err)
		}
		for {
			_, r, err := peer.Conn.Reader(ctx)
			if err != nil {
				b.Fatal(err)
			}
			k, _ := io.ReadFull(r, buf[:32])
			head := string(buf[:k])
			if _, err := io.CopyBuffer(io.Discard, r, buf); err != nil {
				b.Fatal(err)
			}
			switch {
			case strings.HasPrefix(head, `{"type":"event"`):
				events++
			case strings.HasPrefix(head, `{"type":"frame"`):
				frames++
			case strings.Contains(head, `"failed"`):
				b.Fatal(head)
			case strings.Contains(head, `"completed"`):
				return events
			}
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i += 100_000 {
		n := min(100_000, b.N-i)
		for mode, req := range []*protocol.FramesRequest{nil, withFrames} {
			start, cpu0 := time.Now(), demogame.ProcessCPU()
			if got := run(fmt.Sprintf("op_%d_%d", i, mode), n, req); got != n {
				b.Fatalf("%d events, want %d", got, n)
			}
			elapsed[mode] += time.Since(start)
			cpu[mode] += demogame.ProcessCPU() - cpu0
		}
	}
	b.StopTimer()
	none, with := float64(b.N)/elapsed[0].Seconds(), float64(b.N)/elapsed[1].Seconds()
	b.ReportMetric(none, "events/s-none")
	b.ReportMetric(with, "events/s-10fps")
	b.ReportMetric(with/none, "ratio")
	b.ReportMetric(float64(frames)/elapsed[1].Seconds(), "frames/s")
	b.ReportMetric(float64(cpu[0].Nanoseconds())/float64(b.N), "cpu-ns/event-none")
	b.ReportMetric(float64(cpu[1].Nanoseconds())/float64(b.N), "cpu-ns/event-10fps")
}

// BenchmarkBossIntroFrames: one boss_intro (knight, difficulty 2: 68.5 s
// of simulated time) over the wire, without frames and with 2 fps of
// 640x360 JPEG frames (the waiting path: all 138 due frames, plus extras).
func BenchmarkBossIntroFrames(b *testing.B) {
	for _, tc := range []struct {
		name   string
		frames *protocol.FramesRequest
	}{
		{"none", nil},
		{"2fps", &protocol.FramesRequest{FPS: 2, MaxWidth: 640, Formats: []string{protocol.MimeJPEG}}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			peer, ctx := longPeer(b)
			frames := 0
			cpu0 := demogame.ProcessCPU()
			for i := 0; b.Loop(); i++ {
				op := "op_" + strconv.Itoa(i)
				peer.Send(ctx, &protocol.PrepareScenario{Type: "prepare_scenario", Op: op, Scenario: "boss_intro", Parameters: map[string]any{}, Frames: tc.frames},
					&protocol.OpMessage{Type: "start", Op: op})
				for _, typ := range []string{"ready", "started"} {
					if _, err := peer.Expect(ctx, typ, op); err != nil {
						b.Fatal(err)
					}
				}
				c, err := peer.CollectCapture(ctx, op, tc.frames)
				if err != nil || c.End.Completed == nil {
					b.Fatalf("ended with %v %v", c.End, err)
				}
				frames = len(c.Frames)
			}
			b.ReportMetric(float64(frames), "frames/op")
			b.ReportMetric(float64((demogame.ProcessCPU()-cpu0).Microseconds())/1000/float64(b.N), "cpu-ms/op")
		})
	}
}

// longPeer runs the demo game against an cappytest controller for a
// benchmark, past the handshake; not through the Harness, whose context
// ends after 30 s.
func longPeer(b *testing.B) (*cappytest.Peer, context.Context) {
	ctx, cancel := context.WithCancel(context.Background())
	ctl, err := cappytest.NewController()
	if err != nil {
		b.Fatal(err)
	}
	runErr := make(chan error, 1)
	go func() { runErr <- cappy.Run(ctx, demogame.New(), ctl.Options()) }()
	peer, err := ctl.Accept(ctx)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		peer.Conn.Close(websocket.StatusNormalClosure, "")
		cancel()
		<-runErr
		ctl.Close()
	})
	if _, _, err := peer.Handshake(ctx, ctl.Token); err != nil {
		b.Fatal(err)
	}
	return peer, ctx
}
