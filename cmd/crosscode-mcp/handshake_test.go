package main

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/crosscode/crosscode-mcp/internal/testing/storetest"
	"github.com/crosscode/crosscode-mcp/protocol"
)

// TestHandshakes: a client that negotiates the 2026-07-28 revision
// (server/discover, its identity on every request) and one held to the
// 2025-11-25 handshake (initialize) get the same server: the provider
// from clientInfo and Claude Code's session id on every envelope,
// progress notifications during a scenario, and a cancelled call that
// cancels its operation. Claude Code 2.1.328 does either, by
// MCP_PROTOCOL_NEGOTIATION.
func TestHandshakes(t *testing.T) {
	for _, tc := range []struct {
		name    string
		legacy  bool
		version string
	}{
		{"2026-07-28", false, mcpgo.ProtocolVersion20260728},
		{"2025-11-25", true, mcpgo.ProtocolVersion20251125},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo, data := gitRepo(t), t.TempDir() // the data dir given: under Wine there is no git dir
			session := "claude-session-" + tc.name
			a := startAgent(t, "ada", agentOpts{legacy: tc.legacy, clientName: "claude-code", dir: repo,
				args: []string{"--actor", "ada@example.com", "--data", data, "--game-cmd", os.Args[0] + " demo-game"},
				env:  []string{"CLAUDE_CODE_SESSION_ID=" + session}})
			if got := a.c.ProtocolVersion(); got != tc.version {
				t.Fatalf("negotiated %q, want %q", got, tc.version)
			}
			// Identity.
			a.call("publish_intent", map[string]any{"summary": "tune the boss", "paths": []string{"src/game/boss.gd"}})
			log := storetest.ReadLog(t, filepath.Join(data, "workspace.db"), "mygame")
			if len(log) == 0 {
				t.Fatal("no envelope in the log")
			}
			for _, e := range log {
				if e.Agent.Provider != protocol.ProviderClaude || e.Agent.SessionReference != session {
					t.Errorf("envelope %s: agent %+v, want provider claude-code and session reference %s", e.ID, e.Agent, session)
				}
			}
			// Progress.
			var progress atomic.Int64
			a.c.OnNotification(func(n mcpgo.JSONRPCNotification) {
				if n.Method == "notifications/progress" {
					progress.Add(1)
				}
			})
			req := mcpgo.CallToolRequest{}
			req.Params.Name = "run_scenario"
			req.Params.Arguments = map[string]any{"scenario": "boss_intro", "parameters": map[string]any{"difficulty": 1}, "frames": 0}
			req.Params.Meta = &mcpgo.Meta{ProgressToken: "p-" + tc.name}
			res, err := a.callChecked(context.Background(), req)
			if err != nil || res.IsError {
				t.Fatalf("run_scenario: %v %+v", err, res)
			}
			if progress.Load() == 0 {
				t.Errorf("no progress notifications\n%s", a.stderr.String())
			}
			// Cancellation: the call is given up; its operation ends cancelled.
			ctx, cancel := context.WithCancel(context.Background())
			req = mcpgo.CallToolRequest{}
			req.Params.Name = "run_scenario"
			req.Params.Arguments = map[string]any{"scenario": "stress", "parameters": map[string]any{"events": 1000000}, "waitSeconds": 30}
			done := make(chan struct{})
			go func() { a.c.CallTool(ctx, req); close(done) }()
			waitFor(t, "the long scenario to start", func() bool {
				st, _ := a.callRaw("capture_status", nil)
				return st["active"] != nil
			})
			cancel()
			<-done
			waitFor(t, "the cancelled call's operation to end", func() bool {
				st, _ := a.callRaw("capture_status", nil)
				return st["active"] == nil
			})
			caps := a.call("list_captures", map[string]any{"kind": "scenario"})
			statuses := map[string]int{}
			for _, c := range caps["captures"].([]any) {
				statuses[str(c.(map[string]any), "status")]++
			}
			if statuses["cancelled"] != 1 || statuses["completed"] != 1 {
				t.Fatalf("want one completed and one cancelled scenario, got %v", caps)
			}
		})
	}
}
