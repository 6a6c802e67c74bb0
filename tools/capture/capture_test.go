package capture

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	adapter "github.com/crosscode/crosscode-mcp/adapters/go/cappy"
	"github.com/crosscode/crosscode-mcp/bridge/cappy"
	"github.com/crosscode/crosscode-mcp/internal/demogame"
	"github.com/crosscode/crosscode-mcp/protocol"
)

// slowGame is the demo game whose scenarios emit one event, wait for
// release, then emit five more.
type slowGame struct {
	*demogame.Game
	release chan struct{}
}

func (g *slowGame) RunScenario(ctx context.Context, op *adapter.Op, _ string, _ map[string]any, _ protocol.Presentation) error {
	if err := op.Emit(0, "START", nil, map[string]any{}); err != nil {
		return err
	}
	select {
	case <-g.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	for i := 1; i <= 5; i++ {
		if err := op.Emit(float64(i), "MORE", nil, map[string]any{"i": i}); err != nil {
			return err
		}
	}
	return nil
}

// serveGame starts a capture service and game on its controller (the Go
// adapter, over the controller's WebSocket), connected; both end with the
// test, which ctx also tells.
func serveGame(t *testing.T, game adapter.Game) (context.Context, *cappy.Service) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	svc, err := cappy.NewService(ctx, cappy.ServiceConfig{Data: t.TempDir()})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	ran := make(chan struct{})
	go func() {
		defer close(ran)
		adapter.Run(ctx, game, &adapter.Options{Endpoint: svc.Controller.Endpoint(), Token: svc.Controller.Token()})
	}()
	t.Cleanup(func() { cancel(); <-ran; svc.Close() })
	for deadline := time.Now().Add(10 * time.Second); svc.Controller.Connected() == nil; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the game did not connect")
		}
	}
	return ctx, svc
}

// session is an MCP client session that keeps its notifications.
type session struct {
	ch chan mcpgo.JSONRPCNotification
}

func (s *session) Initialize()                                           {}
func (s *session) Initialized() bool                                     { return true }
func (s *session) NotificationChannel() chan<- mcpgo.JSONRPCNotification { return s.ch }
func (s *session) SessionID() string                                     { return "ses_test" }

// TestNoProgressAfterTheAnswer: a run_scenario call that answered
// "running" sends no more progress notifications for its progressToken,
// though the scenario runs on.
func TestNoProgressAfterTheAnswer(t *testing.T) {
	game := &slowGame{Game: demogame.New(), release: make(chan struct{})}
	ctx, svc := serveGame(t, game)

	srv := server.NewMCPServer("test", "1", server.WithToolCapabilities(false))
	tl := RunScenario(svc, nil)
	srv.AddTool(tl.Def, tl.Handler)
	sess := &session{ch: make(chan mcpgo.JSONRPCNotification, 100)}
	resp := srv.HandleMessage(srv.WithContext(ctx, sess), json.RawMessage(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{
		"name":"run_scenario","arguments":{"scenario":"boss_intro","waitSeconds":1},"_meta":{"progressToken":"p1"}}}`))
	b, _ := json.Marshal(resp)
	var answer struct {
		Result struct {
			IsError           bool           `json:"isError"`
			StructuredContent map[string]any `json:"structuredContent"`
		} `json:"result"`
	}
	if err := json.Unmarshal(b, &answer); err != nil || answer.Result.IsError || answer.Result.StructuredContent["status"] != cappy.StatusRunning {
		t.Fatalf("run_scenario: %s", b)
	}
	if n := len(sess.ch); n == 0 {
		t.Fatal("no progress while the call ran")
	}
	for len(sess.ch) > 0 {
		<-sess.ch
	}
	op := svc.Controller.Active()
	if op == nil {
		t.Fatal("the scenario is not running")
	}
	close(game.release)
	<-op.Done()
	if o := op.Status(); o.Status != cappy.StatusCompleted || o.Events != 6 {
		t.Fatalf("outcome: %+v", o)
	}
	if n := len(sess.ch); n != 0 {
		t.Fatalf("%d progress notifications after the call answered: %+v", n, <-sess.ch)
	}
}

// TestStopRecordingDefaultsToTheRunningOne: stop_recording without op
// stops the running recording, as step_game steps it; with none running
// it says what to do instead (start one; cancel_capture for a scenario).
func TestStopRecordingDefaultsToTheRunningOne(t *testing.T) {
	game := &slowGame{Game: demogame.New(), release: make(chan struct{})}
	_, svc := serveGame(t, game)
	stop := StopRecording(svc).Handler
	errText := func(res *mcpgo.CallToolResult) string {
		if !res.IsError {
			return ""
		}
		return res.Content[0].(mcpgo.TextContent).Text
	}
	if res, _ := callTool(t, stop, map[string]any{}); !strings.Contains(errText(res), "no recording is running; start one with start_recording") {
		t.Fatalf("nothing running: %+v", res.Content)
	}
	if res, out := callTool(t, RunScenario(svc, nil).Handler, map[string]any{"scenario": "boss_intro", "waitSeconds": 1}); res.IsError || out["status"] != cappy.StatusRunning {
		t.Fatalf("run_scenario: %+v", out)
	}
	scenario := svc.Controller.Active()
	if res, _ := callTool(t, stop, map[string]any{}); !strings.Contains(errText(res), "is a scenario; cancel_capture") {
		t.Fatalf("a scenario running: %+v", res.Content)
	}
	close(game.release)
	<-scenario.Done()

	res, started := callTool(t, StartRecording(svc).Handler, map[string]any{"frames": 0})
	if res.IsError || started["status"] != cappy.StatusRunning {
		t.Fatalf("start_recording: %+v", started)
	}
	res, out := callTool(t, stop, map[string]any{"contactSheet": false})
	if res.IsError || out["op"] != started["op"] || out["status"] != cappy.StatusCompleted || out["replay"] == nil {
		t.Fatalf("stop_recording without op: isError %v, %+v", res.IsError, out)
	}
}
