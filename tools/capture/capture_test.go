package capture

import (
	"context"
	"encoding/json"
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
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	svc, err := cappy.NewService(ctx, cappy.ServiceConfig{Data: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	game := &slowGame{Game: demogame.New(), release: make(chan struct{})}
	ran := make(chan struct{})
	go func() {
		defer close(ran)
		adapter.Run(ctx, game, &adapter.Options{Endpoint: svc.Controller.Endpoint(), Token: svc.Controller.Token()})
	}()
	defer func() { cancel(); <-ran }()
	for deadline := time.Now().Add(10 * time.Second); svc.Controller.Connected() == nil; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the game did not connect")
		}
	}

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
