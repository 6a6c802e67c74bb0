package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
)

// TestCaptureWithDemoGame runs the real binary over stdio with the demo
// game as its game command: scenarios, a recording and its replay with the
// divergence check, progress notifications, and cancellation.
func TestCaptureWithDemoGame(t *testing.T) {
	t.Parallel() // mostly waiting on its processes: overlaps the package's other tests
	repo := gitRepo(t)
	a := startAgent(t, "ada", agentOpts{clientName: "claude-code", dir: repo,
		args: []string{"--actor", "ada@example.com", "--game-cmd", os.Args[0] + " demo-game"}})

	st := a.call("capture_status", nil)
	if st["adapter"] != nil || !strings.HasPrefix(st["endpoint"].(string), "ws://127.0.0.1:") {
		t.Fatalf("before launch: %v", st)
	}
	sc := a.call("list_scenarios", nil)
	if sc["game"] != "demo-arena" || len(sc["scenarios"].([]any)) < 3 {
		t.Fatalf("list_scenarios: %v", sc)
	}
	st = a.call("capture_status", nil)
	if field(st, "game", "running") != true || field(st, "adapter", "game") != "demo-arena" {
		t.Fatalf("after launch: %v", st)
	}

	// A scenario, with progress notifications per event.
	var progress atomic.Int64
	a.c.OnNotification(func(n mcpgo.JSONRPCNotification) {
		if n.Method == "notifications/progress" {
			progress.Add(1)
		}
	})
	req := mcpgo.CallToolRequest{}
	req.Params.Name = "run_scenario"
	req.Params.Arguments = map[string]any{"scenario": "boss_intro", "parameters": map[string]any{"difficulty": 3}, "publishValidation": true}
	req.Params.Meta = &mcpgo.Meta{ProgressToken: "p1"}
	res, err := a.callChecked(context.Background(), req)
	if err != nil || res.IsError {
		t.Fatalf("run_scenario: %v %+v", err, res)
	}
	run := decodeResult(t, res)
	if run["status"] != "completed" || run["events"].(float64) < 5 || len(run["timeline"].([]any)) == 0 {
		t.Fatalf("scenario outcome: %v", run)
	}
	if progress.Load() == 0 {
		t.Fatalf("no progress notifications\n%s", a.stderr.String())
	}
	if feed := a.call("read_feed", map[string]any{"kind": "validation"}); len(feed["items"].([]any)) != 1 {
		t.Fatalf("the scenario's validation was not published: %v", feed)
	}
	// Bad parameters never reach the game.
	if out, isErr := a.callRaw("run_scenario", map[string]any{"scenario": "boss_intro", "parameters": map[string]any{"difficulty": 9}}); !isErr || !strings.Contains(out["error"].(string), "INVALID_PARAMETERS") {
		t.Fatalf("bad parameters: %v", out)
	}
	if out, isErr := a.callRaw("run_scenario", map[string]any{"scenario": "nope"}); !isErr || !strings.Contains(out["error"].(string), "SCENARIO_NOT_FOUND") {
		t.Fatalf("unknown scenario: %v", out)
	}
	// Paged, filtered event reads.
	op := run["op"].(string)
	page := a.call("get_capture", map[string]any{"op": op, "limit": 3})
	if len(page["page"].([]any)) != 3 || page["nextSeq"] == nil {
		t.Fatalf("get_capture page: %v", page)
	}
	first := field(page["page"].([]any)[0].(map[string]any), "event").(string)
	only := a.call("get_capture", map[string]any{"op": op, "events": []string{first}, "limit": 200})
	for _, e := range only["page"].([]any) {
		if field(e.(map[string]any), "event") != first {
			t.Fatalf("filter by event name returned %v", e)
		}
	}

	// Record, stop, replay: the same events, also at half speed.
	rec := a.call("start_recording", nil)
	if rec["status"] != "running" {
		t.Fatalf("start_recording: %v", rec)
	}
	a.recorded(rec["op"].(string), 10, 0)
	stopped := a.call("stop_recording", map[string]any{"op": rec["op"]})
	if stopped["status"] != "completed" || field(stopped, "replay", "sha256") == nil || stopped["events"].(float64) == 0 {
		t.Fatalf("stop_recording: %v", stopped)
	}
	rp := a.call("replay", map[string]any{"op": rec["op"]})
	if rp["status"] != "completed" || field(rp, "divergence", "identical") != true || field(rp, "divergence", "compared") != stopped["events"] {
		t.Fatalf("replay: %v", rp)
	}
	slow := a.call("replay", map[string]any{"op": rec["op"], "presentation": map[string]any{"timeScale": 0.5, "camera": "overview"}})
	if field(slow, "divergence", "identical") != true || slow["lastT"].(float64) <= stopped["lastT"].(float64) {
		t.Fatalf("replay at half speed: %v", slow)
	}
	// A failed operation is a tool error that carries its whole result.
	if out, isErr := a.callRaw("replay", map[string]any{"op": rec["op"], "presentation": map[string]any{"camera": "drone"}}); !isErr || out["status"] != "failed" || out["code"] != "UNKNOWN_CAMERA" || out["op"] == nil {
		t.Fatalf("unknown camera: want isError with status failed and code UNKNOWN_CAMERA, got %v", out)
	}

	// A long run answers running after waitSeconds; cancel_capture ends it.
	long := a.call("run_scenario", map[string]any{"scenario": "stress", "parameters": map[string]any{"events": 1000000}, "waitSeconds": 1})
	if long["status"] != "running" || !strings.Contains(long["next"].(string), "get_capture") {
		t.Fatalf("long run: %v", long)
	}
	if c := a.call("cancel_capture", nil); c["status"] != "cancelled" {
		t.Fatalf("cancel_capture: %v", c)
	}
	// A cancelled tool call cancels its operation.
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	req = mcpgo.CallToolRequest{}
	req.Params.Name = "run_scenario"
	req.Params.Arguments = map[string]any{"scenario": "stress", "parameters": map[string]any{"events": 1000000}, "waitSeconds": 30}
	a.c.CallTool(ctx, req)
	cancel()
	waitFor(t, "the cancelled call's operation to end", func() bool {
		st, _ := a.callRaw("capture_status", nil)
		return st["active"] == nil
	})
	caps := a.call("list_captures", map[string]any{"kind": "scenario"})
	var cancelled int
	for _, c := range caps["captures"].([]any) {
		if field(c.(map[string]any), "status") == "cancelled" {
			cancelled++
		}
	}
	if cancelled != 2 {
		t.Fatalf("want 2 cancelled scenarios, got %v", caps)
	}
}

// recorded waits until the running recording op holds at least events
// events and frames frames: free play takes the time it takes.
func (a *agent) recorded(op string, events, frames float64) {
	a.t.Helper()
	waitFor(a.t, fmt.Sprintf("the recording to hold %g events and %g frames", events, frames), func() bool {
		got := a.call("get_capture", map[string]any{"op": op, "limit": 1})
		f, _ := field(got, "frames", "stored").(float64)
		return got["events"].(float64) >= events && f >= frames
	})
}

func decodeResult(t *testing.T, res *mcpgo.CallToolResult) map[string]any {
	t.Helper()
	out, ok := res.StructuredContent.(map[string]any)
	if !ok {
		t.Fatalf("no structured content: %+v", res)
	}
	return out
}

// A game that cannot connect is answered at once (not at the launch
// timeout) with the reason and the end of its log, by every tool that
// launches it.
func TestCaptureGameRefusedOrExited(t *testing.T) {
	cases := []struct {
		name   string
		config map[string]any
		code   string
		says   string
	}{
		{"required capability missing", map[string]any{"game": map[string]any{"command": []string{os.Args[0], "demo-game"}}, "requiredCapabilities": []string{"teleport"}},
			"CAPABILITY_MISSING", `requires capability "teleport"`},
		{"exits before its hello", map[string]any{"game": map[string]any{"command": []string{os.Args[0]}, "env": map[string]string{failingGameEnv: "cannot load level 1"}}},
			"ADAPTER_DISCONNECTED", "cannot load level 1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			repo := gitRepo(t)
			cfg := filepath.Join(t.TempDir(), "capture.json")
			b, _ := json.Marshal(tc.config)
			if err := os.WriteFile(cfg, b, 0o644); err != nil {
				t.Fatal(err)
			}
			a := startAgent(t, "ada", agentOpts{clientName: "claude-code", dir: repo, args: []string{"--capture-config", cfg}})
			for tool, args := range map[string]map[string]any{"list_scenarios": nil, "run_scenario": {"scenario": "boss_intro"}} {
				out, isErr := a.callRaw(tool, args)
				msg, _ := out["error"].(string)
				if !isErr || !strings.Contains(msg, tc.code) || !strings.Contains(msg, tc.says) || strings.Contains(msg, "did not connect within") {
					t.Fatalf("%s: want an error with %s, %q and the log, at once; got %v", tool, tc.code, tc.says, out)
				}
			}
		})
	}
}
