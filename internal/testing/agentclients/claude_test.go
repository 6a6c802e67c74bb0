package agentclients

import (
	"slices"
	"testing"
)

// TestClaudeCodeHandshakes plays the standard play in Claude Code under
// both MCP handshakes it has (issue 17, item 3): by default it probes
// with server/discover and, as crosscode-mcp offers it, connects on
// 2026-07-28 (no initialize: its clientInfo and protocol version ride in
// every request's _meta); MCP_PROTOCOL_NEGOTIATION=legacy forces the
// initialize handshake of 2025-11-25. Each run checks the revision it
// negotiated (Claude Code's debug log says it) and everything the play
// checks, identity included: every envelope stamped with provider
// claude-code and Claude Code's own session id as the session reference.
func TestClaudeCodeHandshakes(t *testing.T) {
	i := slices.IndexFunc(clients, func(c *Client) bool { return c.Name == "claude-code" })
	if i < 0 {
		t.Fatal("claude-code is not registered")
	}
	c := clients[i]
	for _, tc := range []struct {
		name string
		env  []string
	}{
		{"2026-07-28", nil},
		{"2025-11-25", []string{"MCP_PROTOCOL_NEGOTIATION=legacy"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := NewWorld(t)
			other := w.Agent(t, OtherActor, "codex")
			CallTool(t, other, "claim", map[string]any{"patterns": []string{"src/boss.go"}, "reason": "rework the boss fight"})
			p := &Play{}
			w.Model = NewModel(t, c.Mount, p.Script)
			c.Configure(t, w)
			run := runClaude(t, w, Prompt, tc.env...)
			if run.Negotiated != tc.name {
				t.Errorf("Claude Code negotiated MCP protocol %q with crosscode-mcp, want %s", run.Negotiated, tc.name)
			}
			if run.SessionID == "" {
				t.Errorf("no session id in Claude Code's init event: the session reference goes unchecked")
			}
			p.Check(t, c, w, w.Model, run.RunResult)
		})
	}
}
