package cappy_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/crosscode/crosscode-mcp/adapters/go/cappy"
	"github.com/crosscode/crosscode-mcp/adapters/go/cappy/cappytest"
	"github.com/crosscode/crosscode-mcp/protocol"
)

func ptr[T any](v T) *T { return &v }

// testGame is a scripted game.
type testGame struct {
	caps []string
	// block scenario: emits BLOCKING, then waits for cancel and reports
	// what Emit returned afterwards.
	blocked   chan struct{}
	afterCanc chan error
	runs      atomic.Int32
}

func newTestGame() *testGame {
	return &testGame{
		caps:      []string{protocol.CapScenarios, protocol.CapFreeformRecording, protocol.CapReplay, protocol.CapTimeScale},
		blocked:   make(chan struct{}, 4),
		afterCanc: make(chan error, 4),
	}
}

func (g *testGame) Info() cappy.Info {
	return cappy.Info{
		Adapter:      protocol.NameVersion{Name: "test-adapter", Version: "1.2.3"},
		Game:         protocol.GameInfo{ID: "test-game", Name: "Test Game"},
		Build:        "b42",
		Capabilities: g.caps,
	}
}

func (g *testGame) Scenarios() []protocol.Scenario {
	return []protocol.Scenario{
		{ID: "count", Name: "Count", Parameters: map[string]protocol.Parameter{
			"n":    {Type: "integer", Minimum: ptr(1.0), Maximum: ptr(100.0), Default: 3.0},
			"mode": {Type: "string", Enum: []any{"plain", "fancy"}},
		}},
		{ID: "block"},
		{ID: "fail"},
		{ID: "panic"},
		{ID: "route", Parameters: map[string]protocol.Parameter{"route": {Type: "string", Required: true, Enum: []any{"short", "long"}}}},
	}
}

func (g *testGame) RunScenario(ctx context.Context, op *cappy.Op, scenario string, params map[string]any, p protocol.Presentation) error {
	g.runs.Add(1)
	switch scenario {
	case "count", "route":
		n := 1
		if v, ok := params["n"].(float64); ok {
			n = int(v)
		}
		for i := range n {
			payload := map[string]any{"i": i, "scenario": scenario}
			if err := op.Emit(float64(i*10)/p.TimeScale(), "TICK", ptr(5.0), payload); err != nil {
				return err
			}
		}
		return op.SetSummary(map[string]any{"ticks": n})
	case "block":
		if err := op.Emit(0, "BLOCKING", nil, nil); err != nil {
			return err
		}
		g.blocked <- struct{}{}
		<-ctx.Done()
		<-op.Stopped() // closed on cancel too
		g.afterCanc <- op.Emit(1, "AFTER_CANCEL", nil, nil)
		return ctx.Err()
	case "fail":
		return cappy.Failf("BOOM", "scenario %s failed on purpose", scenario)
	case "panic":
		panic("kaboom")
	}
	return fmt.Errorf("unexpected scenario %q", scenario)
}

type recording struct {
	Format string `json:"format"`
	Ticks  int    `json:"ticks"`
}

func (g *testGame) Record(ctx context.Context, op *cappy.Op) (*protocol.ReplayPayload, error) {
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	n := 0
	for {
		select {
		case <-op.Stopped():
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			b, _ := json.Marshal(recording{Format: "test/v1", Ticks: n})
			return cappy.InlineReplay(b, "test/v1"), nil
		case <-tick.C:
			if err := op.Emit(float64(n*50), "INPUT", nil, json.RawMessage(`{"tick":`+strconv.Itoa(n)+`}`)); err != nil {
				return nil, err
			}
			n++
		}
	}
}

func (g *testGame) Replay(ctx context.Context, op *cappy.Op, r *protocol.ReplayPayload, p protocol.Presentation) error {
	data, err := cappy.DecodeInline(r)
	if err != nil {
		return err
	}
	var rec recording
	if err := json.Unmarshal(data, &rec); err != nil || rec.Format != "test/v1" {
		return cappy.Failf(protocol.CappyReplayUnsupported, "not a test/v1 replay")
	}
	for n := range rec.Ticks {
		if err := op.Emit(float64(n*50)/p.TimeScale(), "INPUT", nil, json.RawMessage(`{"tick":`+strconv.Itoa(n)+`}`)); err != nil {
			return err
		}
	}
	return nil
}

// startRun runs cappy.Run for g against an cappytest controller.
func startRun(t *testing.T, g cappy.Game) *cappytest.Harness { return cappytest.Start(t, g) }

func prepare(op, scenario string, params map[string]any, pres protocol.Presentation) *protocol.PrepareScenario {
	if params == nil {
		params = map[string]any{}
	}
	return &protocol.PrepareScenario{Type: "prepare_scenario", Op: op, Scenario: scenario, Parameters: params, Presentation: pres}
}

func opMsg(typ, op string) *protocol.OpMessage { return &protocol.OpMessage{Type: typ, Op: op} }

// runScenario prepares, starts and collects one scenario.
func runScenario(h *cappytest.Harness, op, scenario string, params map[string]any, pres protocol.Presentation) ([]protocol.Event, *protocol.AdapterMessage) {
	h.T.Helper()
	h.Send(prepare(op, scenario, params, pres))
	h.Expect("ready", op)
	h.Send(opMsg("start", op))
	h.Expect("started", op)
	return h.Collect(op)
}

func TestHandshakeAndRequestInTheSameBurst(t *testing.T) {
	h := startRun(t, newTestGame())
	hello := h.Expect("hello", "").Hello
	if hello.Token != h.Ctl.Token || hello.Game.ID != "test-game" || hello.Adapter.Name != "test-adapter" || hello.Build != "b42" {
		t.Fatalf("hello = %+v", hello)
	}
	if hello.Protocol.Min != 1 || hello.Protocol.Max != 1 || !hello.HasCapability(protocol.CapReplay) {
		t.Fatalf("hello protocol/capabilities = %+v %v", hello.Protocol, hello.Capabilities)
	}
	// welcome and the first request in one TCP write: the request must not
	// be lost behind the welcome.
	h.Send(cappytest.Welcome(), prepare("op_1", "count", map[string]any{"n": 5.0}, nil))
	sc := h.Expect("scenarios", "").Scenarios
	if len(sc.Scenarios) != 5 || sc.Scenarios[0].ID != "count" {
		t.Fatalf("registry = %+v", sc.Scenarios)
	}
	h.Expect("ready", "op_1")
	h.Send(opMsg("start", "op_1"))
	h.Expect("started", "op_1")
	evs, end, err := h.Peer.Collect(h.Ctx, "op_1")
	if err != nil {
		t.Fatal(err)
	}
	if end.Completed == nil {
		t.Fatalf("ended with %s %+v, want completed", end.Type, end.Failed)
	}
	if string(end.Completed.Summary) != `{"ticks":5}` {
		t.Errorf("summary = %s", end.Completed.Summary)
	}
	if len(evs) != 5 {
		t.Fatalf("%d events, want 5", len(evs))
	}
	for i, e := range evs {
		want := fmt.Sprintf(`{"i":%d,"scenario":"count"}`, i)
		if e.Event != "TICK" || e.T != float64(i*10) || string(e.Payload) != want || e.DurationMs == nil || *e.DurationMs != 5 {
			t.Errorf("event %d = %+v payload %s, want TICK t=%d %s", i, e, e.Payload, i*10, want)
		}
	}
}

func TestRequestsBeforeWelcomeAreKeptInOrder(t *testing.T) {
	h := startRun(t, newTestGame())
	h.Expect("hello", "")
	h.Send(cappytest.Welcome(), &protocol.ListScenarios{Type: "list_scenarios"},
		prepare("op_1", "count", map[string]any{"n": 1.0}, nil), opMsg("start", "op_1"))
	h.Expect("scenarios", "")
	h.Expect("scenarios", "")
	h.Expect("ready", "op_1")
	h.Expect("started", "op_1")
	h.Expect("event", "op_1")
	h.Expect("completed", "op_1")
}

func TestListScenarios(t *testing.T) {
	g := newTestGame()
	h := startRun(t, g)
	h.Handshake()
	h.Send(&protocol.ListScenarios{Type: "list_scenarios"})
	got := h.Expect("scenarios", "").Scenarios.Scenarios
	want, _ := json.Marshal(g.Scenarios())
	gotJSON, _ := json.Marshal(got)
	if string(gotJSON) != string(want) {
		t.Fatalf("list_scenarios = %s, want %s", gotJSON, want)
	}
}

func TestPingWhileOperationRunsAndCancel(t *testing.T) {
	g := newTestGame()
	h := startRun(t, g)
	h.Handshake()
	h.Send(prepare("op_1", "block", nil, nil))
	h.Expect("ready", "op_1")
	h.Send(opMsg("start", "op_1"))
	h.Expect("started", "op_1")
	h.Expect("event", "op_1")
	<-g.blocked
	for i := range 3 {
		nonce := "n" + strconv.Itoa(i)
		h.Send(&protocol.Ping{Type: "ping", Nonce: nonce})
		if m := h.Expect("pong", ""); m.Pong.Nonce != nonce {
			t.Fatalf("pong nonce %q, want %q", m.Pong.Nonce, nonce)
		}
	}
	h.Send(opMsg("cancel", "op_1"))
	select {
	case err := <-g.afterCanc:
		if !errors.Is(err, cappy.ErrCancelled) {
			t.Fatalf("Emit after cancel = %v, want ErrCancelled", err)
		}
	case <-h.Ctx.Done():
		t.Fatal("the game's ctx was not cancelled")
	}
	// The cancelled op is silent and frees the slot: the next message is
	// the new operation's ready, not a completed or failed for op_1.
	h.Send(prepare("op_2", "count", nil, nil))
	h.Expect("ready", "op_2")
}

func TestCancelBeforeStart(t *testing.T) {
	g := newTestGame()
	h := startRun(t, g)
	h.Handshake()
	h.Send(prepare("op_1", "count", nil, nil))
	h.Expect("ready", "op_1")
	h.Send(opMsg("cancel", "op_1"), opMsg("start", "op_1"), prepare("op_2", "count", map[string]any{"n": 1.0}, nil))
	// start of the cancelled op is out of state; op_2 is admitted.
	if m := h.Expect("failed", "op_1"); m.Failed.Code != protocol.CappyOutOfState {
		t.Fatalf("start after cancel: %+v", m.Failed)
	}
	h.Expect("ready", "op_2")
	if g.runs.Load() != 0 {
		t.Fatal("the cancelled operation ran")
	}
}

func TestStopRecordingThenReplay(t *testing.T) {
	h := startRun(t, newTestGame())
	h.Handshake()
	h.Send(&protocol.RecordStart{Type: "record_start", Op: "op_r"})
	h.Expect("started", "op_r")
	var recorded []protocol.Event
	for range 5 {
		recorded = append(recorded, *h.Expect("event", "op_r").Event)
	}
	h.Send(opMsg("stop", "op_r"))
	rest, end, err := h.Peer.Collect(h.Ctx, "op_r")
	if err != nil {
		t.Fatal(err)
	}
	recorded = append(recorded, rest...)
	if end.Completed == nil || end.Completed.Replay == nil {
		t.Fatalf("recording ended with %s %+v, want completed with a replay", end.Type, end.Failed)
	}
	replay := end.Completed.Replay
	data, err := cappy.DecodeInline(replay)
	if err != nil {
		t.Fatal(err)
	}
	var rec recording
	if err := json.Unmarshal(data, &rec); err != nil || rec.Ticks != len(recorded) || replay.Format != "test/v1" {
		t.Fatalf("replay %s (format %q) for %d recorded events", data, replay.Format, len(recorded))
	}

	h.Send(&protocol.PrepareReplay{Type: "prepare_replay", Op: "op_p", Replay: replay, Presentation: protocol.Presentation{"timeScale": 0.5}})
	h.Expect("ready", "op_p")
	h.Send(opMsg("start", "op_p"))
	h.Expect("started", "op_p")
	played, end, err := h.Peer.Collect(h.Ctx, "op_p")
	if err != nil || end.Completed == nil {
		t.Fatalf("replay ended with %v %v", end, err)
	}
	if len(played) != len(recorded) {
		t.Fatalf("replay has %d events, the recording %d", len(played), len(recorded))
	}
	for i := range played {
		if played[i].Event != recorded[i].Event || string(played[i].Payload) != string(recorded[i].Payload) || played[i].T != 2*recorded[i].T {
			t.Fatalf("event %d: replayed %+v, recorded %+v", i, played[i], recorded[i])
		}
	}

	// A corrupted replay is refused before ready.
	bad := *replay
	bad.SHA256 = strings.Repeat("0", 64)
	h.Send(&protocol.PrepareReplay{Type: "prepare_replay", Op: "op_bad", Replay: &bad}, opMsg("start", "op_bad"))
	h.Expect("ready", "op_bad") // the adapter checks shape; the game checks content
	h.Expect("started", "op_bad")
	if m := h.Expect("failed", "op_bad"); m.Failed.Code != protocol.CappyReplayInvalid {
		t.Fatalf("corrupted replay: %+v", m.Failed)
	}
}

func TestReplayShapeIsCheckedBeforeReady(t *testing.T) {
	h := startRun(t, newTestGame())
	h.Handshake()
	h.Send(&protocol.PrepareReplay{Type: "prepare_replay", Op: "op_1", Replay: &protocol.ReplayPayload{Kind: "tape", SHA256: "x"}})
	if m := h.Expect("failed", "op_1"); m.Failed.Code != protocol.CappyReplayInvalid {
		t.Fatalf("got %+v", m.Failed)
	}
}

func TestRejectIsAnErrorNamingTheCode(t *testing.T) {
	h := startRun(t, newTestGame())
	h.Expect("hello", "")
	h.Send(&protocol.Reject{Type: "reject", Code: protocol.CappyUnauthenticated, Message: "wrong token"})
	h.Peer.Close()
	select {
	case err := <-h.RunErr:
		var rej *cappy.RejectError
		if !errors.As(err, &rej) || rej.Code != protocol.CappyUnauthenticated || !strings.Contains(err.Error(), protocol.CappyUnauthenticated) {
			t.Fatalf("Run = %v, want a RejectError naming %s", err, protocol.CappyUnauthenticated)
		}
		h.RunErr <- err // for the cleanup
	case <-h.Ctx.Done():
		t.Fatal("Run did not return after reject")
	}
}

func TestPrepareFailures(t *testing.T) {
	for _, tc := range []struct {
		name     string
		scenario string
		params   map[string]any
		pres     protocol.Presentation
		code     string
	}{
		{"unknown scenario", "nope", nil, nil, protocol.CappyScenarioNotFound},
		{"above maximum", "count", map[string]any{"n": 1000.0}, nil, protocol.CappyInvalidParameters},
		{"not an integer", "count", map[string]any{"n": 1.5}, nil, protocol.CappyInvalidParameters},
		{"wrong type", "count", map[string]any{"n": "five"}, nil, protocol.CappyInvalidParameters},
		{"not in enum", "count", map[string]any{"mode": "ugly"}, nil, protocol.CappyInvalidParameters},
		{"unknown parameter", "count", map[string]any{"speed": 2.0}, nil, protocol.CappyInvalidParameters},
		{"missing required", "route", nil, nil, protocol.CappyInvalidParameters},
		{"timeScale out of range", "count", nil, protocol.Presentation{"timeScale": 8.0}, protocol.CappyPresentationRejected},
		// As the controller refuses them (protocol's Presentation.Check).
		{"camera without capability", "count", nil, protocol.Presentation{"camera": "overview"}, protocol.CappyCapabilityMissing},
		{"empty camera", "count", nil, protocol.Presentation{"camera": ""}, protocol.CappyPresentationRejected},
		{"numeric camera", "count", nil, protocol.Presentation{"camera": 2.0}, protocol.CappyPresentationRejected},
		{"timeScale not a number", "count", nil, protocol.Presentation{"timeScale": "fast"}, protocol.CappyPresentationRejected},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newTestGame()
			h := startRun(t, g)
			h.Handshake()
			h.Send(prepare("op_1", tc.scenario, tc.params, tc.pres))
			m := h.Expect("failed", "op_1")
			if m.Failed.Code != tc.code || m.Failed.Message == "" {
				t.Fatalf("failed = %+v, want code %s", m.Failed, tc.code)
			}
			// The failed prepare leaves no operation behind.
			h.Send(prepare("op_2", "count", map[string]any{"n": 1.0}, nil))
			h.Expect("ready", "op_2")
			if g.runs.Load() != 0 {
				t.Fatal("the game ran")
			}
		})
	}
}

func TestGameFailures(t *testing.T) {
	h := startRun(t, newTestGame())
	h.Handshake()
	if _, end := runScenario(h, "op_1", "fail", nil, nil); end.Failed == nil || end.Failed.Code != "BOOM" || !strings.Contains(end.Failed.Message, "on purpose") {
		t.Fatalf("fail scenario ended with %s %+v", end.Type, end.Failed)
	}
	if _, end := runScenario(h, "op_2", "panic", nil, nil); end.Failed == nil || end.Failed.Code != cappy.CodeAdapterError || !strings.Contains(end.Failed.Message, "kaboom") {
		t.Fatalf("panic scenario ended with %s %+v", end.Type, end.Failed)
	}
	// The adapter survives both.
	if evs, end := runScenario(h, "op_3", "count", map[string]any{"n": 2.0}, protocol.Presentation{"timeScale": 2.0}); end.Completed == nil || len(evs) != 2 || evs[1].T != 5 {
		t.Fatalf("count after failures: %d events, %s", len(evs), end.Type)
	}
}

func TestOneOperationAtATime(t *testing.T) {
	g := newTestGame()
	h := startRun(t, g)
	h.Handshake()
	h.Send(prepare("op_1", "count", nil, nil))
	h.Expect("ready", "op_1")
	h.Send(prepare("op_2", "count", nil, nil))
	if m := h.Expect("failed", "op_2"); m.Failed.Code != protocol.CappyOperationBusy {
		t.Fatalf("second prepare: %+v", m.Failed)
	}
	h.Send(opMsg("start", "op_9"))
	if m := h.Expect("failed", "op_9"); m.Failed.Code != protocol.CappyOutOfState {
		t.Fatalf("start of an unknown op: %+v", m.Failed)
	}
	// op_1 still runs normally, and once done the slot is free.
	h.Send(opMsg("start", "op_1"))
	h.Expect("started", "op_1")
	if _, end, err := h.Peer.Collect(h.Ctx, "op_1"); err != nil || end.Completed == nil {
		t.Fatalf("op_1: %v %v", end, err)
	}
	if evs, end := runScenario(h, "op_3", "count", map[string]any{"n": 1.0}, nil); end.Completed == nil || len(evs) != 1 {
		t.Fatal("op_3 did not run")
	}
}

func TestRecordingWithoutCapability(t *testing.T) {
	g := newTestGame()
	g.caps = []string{protocol.CapScenarios}
	h := startRun(t, g)
	h.Handshake()
	h.Send(&protocol.RecordStart{Type: "record_start", Op: "op_1"})
	if m := h.Expect("failed", "op_1"); m.Failed.Code != protocol.CappyCapabilityMissing {
		t.Fatalf("got %+v", m.Failed)
	}
	h.Send(&protocol.PrepareReplay{Type: "prepare_replay", Op: "op_2", Replay: cappy.InlineReplay([]byte("x"), "test/v1")})
	if m := h.Expect("failed", "op_2"); m.Failed.Code != protocol.CappyReplayUnsupported {
		t.Fatalf("got %+v", m.Failed)
	}
}

func TestRunEndsWhenTheControllerCloses(t *testing.T) {
	g := newTestGame()
	h := startRun(t, g)
	h.Handshake()
	h.Send(prepare("op_1", "block", nil, nil), opMsg("start", "op_1"))
	h.Expect("ready", "op_1")
	h.Expect("started", "op_1")
	<-g.blocked
	h.Peer.Close()
	select {
	case err := <-h.RunErr:
		if err != nil {
			t.Fatalf("Run after a normal close = %v, want nil", err)
		}
		h.RunErr <- err
	case <-h.Ctx.Done():
		t.Fatal("Run did not return after the controller closed")
	}
	if err := <-g.afterCanc; !errors.Is(err, cappy.ErrDisconnected) {
		t.Fatalf("Emit after the connection closed = %v, want ErrDisconnected", err)
	}
}

func TestRunErrorOnAbruptDisconnect(t *testing.T) {
	h := startRun(t, newTestGame())
	h.Handshake()
	h.Peer.Conn.CloseNow()
	select {
	case err := <-h.RunErr:
		if err == nil || !strings.Contains(err.Error(), "lost") {
			t.Fatalf("Run after an abrupt disconnect = %v, want a connection-lost error", err)
		}
		h.RunErr <- err
	case <-h.Ctx.Done():
		t.Fatal("Run did not return")
	}
}

func TestRunReturnsWhenItsContextEnds(t *testing.T) {
	g := newTestGame()
	h := startRun(t, g)
	h.Handshake()
	h.Send(prepare("op_1", "block", nil, nil), opMsg("start", "op_1"))
	<-g.blocked
	closeErr := make(chan error, 1)
	go func() {
		for {
			if _, err := h.Peer.Recv(h.Ctx); err != nil {
				closeErr <- err
				return
			}
		}
	}()
	start := time.Now()
	h.Stop()
	select {
	case err := <-h.RunErr:
		if err != nil {
			t.Fatalf("Run = %v, want nil when its context ends", err)
		}
		h.RunErr <- err
	case <-h.Ctx.Done():
		t.Fatal("Run did not return")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Run took %s to return", d)
	}
	if err := <-g.afterCanc; err == nil {
		t.Fatal("Emit after Run ended succeeded")
	}
	// The controller sees a normal close.
	if err := <-closeErr; websocket.CloseStatus(err) != websocket.StatusNormalClosure {
		t.Fatalf("close = %v, want a normal closure", err)
	}
}

func TestRunNeedsEndpointAndToken(t *testing.T) {
	t.Setenv("CAPPY_ENDPOINT", "")
	t.Setenv("CAPPY_SESSION_TOKEN", "")
	err := cappy.Run(context.Background(), newTestGame(), nil)
	if err == nil || !strings.Contains(err.Error(), "CAPPY_ENDPOINT") {
		t.Fatalf("Run without endpoint = %v", err)
	}
	err = cappy.Run(context.Background(), newTestGame(), &cappy.Options{Endpoint: "ws://127.0.0.1:1"})
	if err == nil || !strings.Contains(err.Error(), "CAPPY_SESSION_TOKEN") {
		t.Fatalf("Run without token = %v", err)
	}
	err = cappy.Run(context.Background(), newTestGame(), &cappy.Options{Endpoint: "http://127.0.0.1:1", Token: "x"})
	if err == nil || !strings.Contains(err.Error(), "ws://") {
		t.Fatalf("Run with an http endpoint = %v", err)
	}
}

func TestRunReadsTheEnvironment(t *testing.T) {
	ctl, err := cappytest.NewController()
	if err != nil {
		t.Fatal(err)
	}
	defer ctl.Close()
	t.Setenv("CAPPY_ENDPOINT", ctl.Endpoint)
	t.Setenv("CAPPY_SESSION_TOKEN", "env-token")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- cappy.Run(ctx, newTestGame(), nil) }()
	peer, err := ctl.Accept(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := peer.Handshake(ctx, "env-token"); err != nil {
		t.Fatal(err)
	}
	peer.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestHelloHasNonNilCapabilities(t *testing.T) {
	g := newTestGame()
	g.caps = nil
	h := startRun(t, g)
	m := h.Expect("hello", "")
	if m.Hello.Capabilities == nil || len(m.Hello.Capabilities) != 0 {
		t.Fatalf("capabilities = %#v", m.Hello.Capabilities)
	}
	if !slices.Equal(m.Hello.Capabilities, []string{}) {
		t.Fatal("unexpected capabilities")
	}
}

// A presentation key needs its capability: the adapter refuses it with
// the controller's code, CAPABILITY_MISSING.
func TestPresentationNeedsCapability(t *testing.T) {
	g := newTestGame()
	g.caps = []string{protocol.CapScenarios, protocol.CapReplay}
	h := startRun(t, g)
	h.Handshake()
	h.Send(prepare("op_1", "count", nil, protocol.Presentation{"timeScale": 0.5}))
	if m := h.Expect("failed", "op_1"); m.Failed.Code != protocol.CappyCapabilityMissing || !strings.Contains(m.Failed.Message, protocol.CapTimeScale) {
		t.Fatalf("timeScale without %s: %+v", protocol.CapTimeScale, m.Failed)
	}
	h.Send(&protocol.PrepareReplay{Type: "prepare_replay", Op: "op_2", Replay: cappy.InlineReplay([]byte(`{}`), "test/v1"), Presentation: protocol.Presentation{"camera": "c"}})
	if m := h.Expect("failed", "op_2"); m.Failed.Code != protocol.CappyCapabilityMissing || !strings.Contains(m.Failed.Message, protocol.CapAlternateCameras) {
		t.Fatalf("camera without %s: %+v", protocol.CapAlternateCameras, m.Failed)
	}
	if g.runs.Load() != 0 {
		t.Fatal("the game ran")
	}
}
