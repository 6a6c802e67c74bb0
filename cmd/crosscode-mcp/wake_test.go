package main

// End-to-end tests of waking an idle agent (spec section 21): real stdio
// servers whose client is named claude-code and started them with
// CLAUDE_CODE_ENTRYPOINT=cli (what Claude Code gives the servers of an
// interactive session), in local mode and against `serve`. The real
// Claude Code runs these in internal/testing/agentclients.

import (
	"strings"
	"sync"
	"testing"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/crosscode/crosscode-mcp/internal/testing/sysdeps"
)

// channelInbox records the channel messages an agent's server sent it.
type channelInbox struct {
	mu   sync.Mutex
	msgs []channelMsg
}

type channelMsg struct {
	at      time.Time
	content string
	meta    map[string]any
}

func (a *agent) channel() *channelInbox {
	in := &channelInbox{}
	a.c.OnNotification(func(n mcpgo.JSONRPCNotification) {
		if n.Method != "notifications/claude/channel" {
			return
		}
		content, _ := n.Params.AdditionalFields["content"].(string)
		meta, _ := n.Params.AdditionalFields["meta"].(map[string]any)
		in.mu.Lock()
		in.msgs = append(in.msgs, channelMsg{time.Now(), content, meta})
		in.mu.Unlock()
	})
	return in
}

func (in *channelInbox) list() []channelMsg {
	in.mu.Lock()
	defer in.mu.Unlock()
	return append([]channelMsg(nil), in.msgs...)
}

// TestWakeIdleAgent: ada (Claude Code, interactive) gave up on her claim's
// call, so it waits while her session idles; bo's release grants it and
// her server sends her one channel message with the grant, within a
// second, which her next tool result still carries, once. Bo (another
// client) and cy (Claude Code in print mode) get no message for what
// needs them. Every server declares the capability.
func TestWakeIdleAgent(t *testing.T) {
	t.Parallel() // mostly waiting on its processes: overlaps the package's other tests
	for _, mode := range []string{"local", "remote"} {
		t.Run(mode, func(t *testing.T) {
			sysdeps.Need(t, "git")
			repo := gitRepo(t)
			args := func(actor string) []string { return []string{"--actor", actor} }
			if mode == "remote" {
				hubData := t.TempDir()
				token := createToken(t, hubData, "mygame")
				svc := startServe(t, hubData)
				args = func(actor string) []string {
					return []string{"--actor", actor, "--service", svc.URL, "--token", token, "--workspace", "mygame"}
				}
			}
			cli := []string{"CLAUDE_CODE_ENTRYPOINT=cli"}
			ada := startAgent(t, "ada", agentOpts{clientName: "claude-code", dir: repo, args: args("ada@example.com"), env: cli})
			bo := startAgent(t, "bo", agentOpts{clientName: "codex", dir: repo, args: args("bo@example.com"), env: cli})
			cy := startAgent(t, "cy", agentOpts{clientName: "claude-code", dir: repo, args: args("cy@example.com"), env: []string{"CLAUDE_CODE_ENTRYPOINT=sdk-cli"}})
			adaIn, boIn, cyIn := ada.channel(), bo.channel(), cy.channel()
			for _, a := range []*agent{ada, bo, cy} {
				if _, ok := a.init.Capabilities.Experimental["claude/channel"]; !ok {
					t.Errorf("%s: the server does not declare claude/channel: %+v", a.name, a.init.Capabilities)
				}
			}
			// (mcp-go's client takes 2026-07-28 whatever server/discover
			// offers; Claude Code does not: TestWhoCanBeWoken in mcp, and
			// the tests in the real Claude Code.)
			if v := cy.init.ProtocolVersion; v != mcpgo.ProtocolVersion20260728 {
				t.Errorf("cy's server (print mode) negotiated %s, want 2026-07-28", v)
			}
			if st := ada.call("workspace_status", nil); field(st, "wake", "can") != true || !strings.Contains(jsonText(st["wake"]), "--dangerously-load-development-channels") {
				t.Errorf("ada's workspace_status wake: %v", st["wake"])
			}
			if st := cy.call("workspace_status", nil); field(st, "wake", "can") != false || !strings.Contains(jsonText(st["wake"]), "print mode") {
				t.Errorf("cy's workspace_status wake: %v", st["wake"])
			}

			held := bo.call("claim", map[string]any{"patterns": []string{"src/game/boss.gd"}, "reason": "rework"})
			mine := ada.queueClaim("src/game/boss.gd", "tune the boss", 600)
			time.Sleep(time.Second)
			if got := adaIn.list(); len(got) != 0 {
				t.Fatalf("ada was woken before the grant: %+v", got)
			}
			released := time.Now()
			bo.call("release_claim", map[string]any{"claimIds": []string{held["claimId"].(string)}})
			waitFor(t, "ada's channel message", func() bool { return len(adaIn.list()) > 0 })
			msg := adaIn.list()[0]
			t.Logf("%s: the grant reached ada %v after the release", mode, msg.at.Sub(released).Round(time.Millisecond))
			if msg.at.Sub(released) > 2*time.Second {
				t.Errorf("the grant took %v", msg.at.Sub(released))
			}
			if msg.meta["kind"] != "claim_granted" || msg.meta["claimId"] != mine || !strings.Contains(msg.content, "src/game/boss.gd") || !strings.Contains(msg.content, "release_claim") || len(msg.content) > 1024 {
				t.Errorf("the message: %q %v", msg.content, msg.meta)
			}
			// The message consumed nothing: ada's next result has the
			// grant, once; the one after, not again.
			if n := newsOf(ada.call("list_tasks", nil), "claim.granted"); len(n) != 1 || n[0]["id"] != mine {
				t.Errorf("ada's next news: grants %v, want hers once", n)
			}
			if n := newsOf(ada.call("list_tasks", nil), "claim.granted"); len(n) != 0 {
				t.Errorf("ada's news after that: grants %v again", n)
			}
			// News that needs bo or cy: no message to either.
			ada.call("create_task", map[string]any{"title": "review the boss", "assignee": "bo@example.com"})
			ada.call("create_task", map[string]any{"title": "play the boss", "assignee": "cy@example.com"})
			time.Sleep(1500 * time.Millisecond)
			if got := adaIn.list(); len(got) != 1 {
				t.Errorf("ada got %d messages, want the grant's alone", len(got))
			}
			if b, c := boIn.list(), cyIn.list(); len(b)+len(c) != 0 {
				t.Errorf("messages to clients that cannot be woken: bo %+v, cy %+v", b, c)
			}
		})
	}
}
