package capture

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	adapter "github.com/crosscode/crosscode-mcp/adapters/go/cappy"
	"github.com/crosscode/crosscode-mcp/internal/demogame"
	"github.com/crosscode/crosscode-mcp/protocol"
)

// crashGame is the demo game whose agent-controlled recording answers
// its first step and fails during the second.
type crashGame struct{ *demogame.Game }

func (g crashGame) Record(ctx context.Context, op *adapter.Op) (*protocol.ReplayPayload, error) {
	st, err := op.NextStep(ctx)
	if err != nil || st == nil {
		return nil, err
	}
	if err := st.Done(0, 0, nil); err != nil {
		return nil, err
	}
	if _, err := op.NextStep(ctx); err != nil {
		return nil, err
	}
	op.Emit(0, "FALL", nil, nil)
	return nil, adapter.Failf("GAME_CRASHED", "the boss fell through the floor\u202e")
}

func callTool(t *testing.T, tl func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error), args map[string]any) (*mcpgo.CallToolResult, map[string]any) {
	t.Helper()
	req := mcpgo.CallToolRequest{}
	req.Params.Arguments = args
	res, err := tl(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	// The result's JSON is its text (a failed operation's only there).
	var out map[string]any
	if tc, ok := res.Content[0].(mcpgo.TextContent); ok {
		json.Unmarshal([]byte(tc.Text), &out)
	}
	return res, out
}

// TestStepGameFailedRecording: a recording that fails during a step is a
// tool error that carries its whole structured result.
func TestStepGameFailedRecording(t *testing.T) {
	_, svc := serveGame(t, crashGame{demogame.New()})
	res, out := callTool(t, StartRecording(svc).Handler, map[string]any{"control": "agent", "frames": 0})
	if res.IsError || out["status"] != "running" || len(out["actions"].([]any)) != 5 || !strings.Contains(out["picturesLeftOut"].([]any)[0].(string), "the game sent no frame of the paused state") {
		t.Fatalf("start_recording: %+v", out)
	}
	res, out = callTool(t, StepGame(svc).Handler, map[string]any{"ms": 100})
	if !res.IsError || out["status"] != "failed" || out["code"] != "GAME_CRASHED" || strings.ContainsRune(out["message"].(string), '\u202e') {
		t.Fatalf("step_game: isError %v, %+v", res.IsError, out)
	}
	// Nothing to step any more.
	res, _ = callTool(t, StepGame(svc).Handler, map[string]any{"ms": 100})
	if !res.IsError || !strings.Contains(res.Content[0].(mcpgo.TextContent).Text, "start_recording") {
		t.Fatalf("step_game after the failure: %+v", res.Content)
	}
}
