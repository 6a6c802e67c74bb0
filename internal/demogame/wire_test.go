package demogame_test

import (
	"context"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/crosscode/crosscode-mcp/bridge/cappy/adapter"
	"github.com/crosscode/crosscode-mcp/bridge/cappy/adapter/adaptertest"
	"github.com/crosscode/crosscode-mcp/internal/demogame"
	"github.com/crosscode/crosscode-mcp/protocol"
)

type wire struct {
	t    *testing.T
	ctx  context.Context
	peer *adaptertest.Peer
}

func connect(t testing.TB, g *demogame.Game) (*adaptertest.Peer, context.Context) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	ctl, err := adaptertest.NewController()
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- adapter.Run(runCtx, g, ctl.Options()) }()
	peer, err := ctl.Accept(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		peer.Conn.CloseNow()
		stop()
		<-done
		ctl.Close()
		cancel()
	})
	hello, sc, err := peer.Handshake(ctx, ctl.Token)
	if err != nil {
		t.Fatal(err)
	}
	if hello.Game.ID != demogame.GameID || len(sc.Scenarios) != 3 {
		t.Fatalf("hello %+v, %d scenarios", hello.Game, len(sc.Scenarios))
	}
	return peer, ctx
}

func (w *wire) send(msgs ...any) {
	w.t.Helper()
	if err := w.peer.Send(w.ctx, msgs...); err != nil {
		w.t.Fatal(err)
	}
}

func (w *wire) expect(typ, op string) *protocol.AdapterMessage {
	w.t.Helper()
	m, err := w.peer.Expect(w.ctx, typ, op)
	if err != nil {
		w.t.Fatal(err)
	}
	return m
}

func (w *wire) collect(op string) ([]protocol.Event, *protocol.AdapterMessage) {
	w.t.Helper()
	evs, end, err := w.peer.Collect(w.ctx, op)
	if err != nil {
		w.t.Fatal(err)
	}
	return evs, end
}

// The demo game through the real adapter and a WebSocket: a scenario, a
// recording, its replay at half speed, and the failures the game adds at
// prepare time.
func TestOverTheWire(t *testing.T) {
	peer, ctx := connect(t, &demogame.Game{RecordTick: 2 * time.Millisecond})
	w := &wire{t, ctx, peer}

	w.send(&protocol.PrepareScenario{Type: "prepare_scenario", Op: "op_1", Scenario: "boss_intro",
		Parameters: map[string]any{"hero": "mage"}, Presentation: protocol.Presentation{"camera": "overview", "timeScale": 0.5}})
	w.expect("ready", "op_1")
	w.send(&protocol.OpMessage{Type: "start", Op: "op_1"})
	w.expect("started", "op_1")
	evs, end := w.collect("op_1")
	if end.Completed == nil || !strings.Contains(string(end.Completed.Summary), `"outcome"`) {
		t.Fatalf("boss_intro ended with %s %+v", end.Type, end.Failed)
	}
	local, _ := mustRun(t, demogame.New(), "boss_intro", map[string]any{"hero": "mage"}, nil)
	sameEvents(t, local, evs, 2)

	w.send(&protocol.RecordStart{Type: "record_start", Op: "op_r"})
	w.expect("started", "op_r")
	time.Sleep(200 * time.Millisecond)
	w.send(&protocol.OpMessage{Type: "stop", Op: "op_r"})
	recorded, end := w.collect("op_r")
	if end.Completed == nil || end.Completed.Replay == nil {
		t.Fatalf("recording ended with %s %+v", end.Type, end.Failed)
	}
	if len(recorded) == 0 {
		t.Fatal("no events recorded")
	}
	w.send(&protocol.PrepareReplay{Type: "prepare_replay", Op: "op_p", Replay: end.Completed.Replay, Presentation: protocol.Presentation{"timeScale": 0.5}})
	w.expect("ready", "op_p")
	w.send(&protocol.OpMessage{Type: "start", Op: "op_p"})
	w.expect("started", "op_p")
	played, end := w.collect("op_p")
	if end.Completed == nil {
		t.Fatalf("replay ended with %s %+v", end.Type, end.Failed)
	}
	sameEvents(t, recorded, played, 2)

	// Refused at prepare, before ready.
	w.send(&protocol.PrepareScenario{Type: "prepare_scenario", Op: "op_cam", Scenario: "boss_intro", Parameters: map[string]any{}, Presentation: protocol.Presentation{"camera": "drone"}})
	if m := w.expect("failed", "op_cam"); m.Failed.Code != protocol.CappyUnknownCamera {
		t.Fatalf("unknown camera: %+v", m.Failed)
	}
	w.send(&protocol.PrepareReplay{Type: "prepare_replay", Op: "op_fmt", Replay: adapter.InlineReplay([]byte(`{"format":"tetris/v9"}`), "tetris/v9")})
	if m := w.expect("failed", "op_fmt"); m.Failed.Code != protocol.CappyReplayUnsupported {
		t.Fatalf("foreign replay: %+v", m.Failed)
	}
	w.send(&protocol.PrepareScenario{Type: "prepare_scenario", Op: "op_route", Scenario: "speedrun", Parameters: map[string]any{}})
	if m := w.expect("failed", "op_route"); m.Failed.Code != protocol.CappyInvalidParameters {
		t.Fatalf("speedrun without route: %+v", m.Failed)
	}
}

// BenchmarkStressLoopback: the stress scenario's events per second through
// the adapter and a loopback WebSocket to a reader that discards them.
func BenchmarkStressLoopback(b *testing.B) {
	peer, ctx := connect(b, demogame.New())
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
