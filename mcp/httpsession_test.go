package mcp

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// TestSessionIDs: a session id opens with the token that opened it and no
// other, and any change to it makes it unknown.
func TestSessionIDs(t *testing.T) {
	id, s := newSessionID("ccm_token_a", "Claude-Code\x1b[31m")
	if !strings.HasPrefix(id, sessionIDPrefix) || strings.ContainsFunc(id, func(r rune) bool { return r < 0x21 || r > 0x7e }) {
		t.Fatalf("session id %q: want visible ASCII after %q", id, sessionIDPrefix)
	}
	got, err := openSessionID(id, "ccm_token_a")
	if err != nil || got.Nonce != s.Nonce || got.Client != s.Client || strings.Contains(got.Client, "\x1b") {
		t.Fatalf("open: %+v %v (made %+v)", got, err, s)
	}
	if _, err := openSessionID(id, "ccm_token_b"); err == nil {
		t.Fatal("another token opened the session")
	}
	for _, bad := range []string{"", "ccs1.", "ccs1.x.y", id[:len(id)-2], strings.Replace(id, ".", ".A", 1), "x" + id, id + "A"} {
		if _, err := openSessionID(bad, "ccm_token_a"); err == nil {
			t.Fatalf("%q opened", bad)
		}
	}
	other, _ := newSessionID("ccm_token_a", "codex")
	if other == id {
		t.Fatal("two sessions got one id")
	}
}

// TestLimiter: a token gets its burst at once, then waits; another token
// is not slowed.
func TestLimiter(t *testing.T) {
	l := newLimiter(1, 3)
	for i := range 3 {
		if _, ok := l.allow("a"); !ok {
			t.Fatalf("request %d of the burst refused", i)
		}
	}
	if wait, ok := l.allow("a"); ok || wait <= 0 {
		t.Fatalf("past the burst: ok %v, wait %v", ok, wait)
	}
	if _, ok := l.allow("b"); !ok {
		t.Fatal("another token was limited")
	}
}

// TestCallerOf: the identity of a call, per spec section 15.
func TestCallerOf(t *testing.T) {
	id := json.RawMessage(`7`)
	_, sess := newSessionID("tok", "claude-code")
	legacy := withCall(context.Background(), &httpCall{workspace: "w", token: "tok", id: id, actor: "ada@example.com", session: sess})
	c := callerOf(legacy, nil)
	if c.Actor != "ada@example.com" || c.Agent.Provider != "claude-code" || c.Replica != "rep_mcp_"+sess.Nonce || c.Session != "ses_mcp_"+sess.Nonce ||
		c.Agent.SessionReference != c.Session || c.Key != "s:"+sess.Nonce+"/7" {
		t.Fatalf("a legacy session's caller: %+v", c)
	}
	if c := callerOf(legacy, map[string]any{"sessionId": "thread-1"}); c.Agent.SessionReference != "thread-1" || c.Replica != "rep_mcp_"+sess.Nonce {
		t.Fatalf("_meta's session id is the reference, the replica stays the session's: %+v", c)
	}
	// Without a protocol session (2026-07-28): no actor header, no client
	// name here, no _meta session: one session per actor, no dedupe key.
	bare := withCall(context.Background(), &httpCall{workspace: "w", token: "tok", id: id})
	c1, c2 := callerOf(bare, nil), callerOf(bare, nil)
	if c1.Actor != "mcp-client" || c1.Agent.Provider != "unknown" || c1.Key != "" || c1.Replica != c2.Replica {
		t.Fatalf("a sessionless caller: %+v", c1)
	}
	// A session named in _meta is the session, but its request ids may
	// start over (a client resuming it in a new process): no key.
	named := callerOf(bare, map[string]any{"sessionId": "s-9"})
	if named.Replica == c1.Replica || named.Key != "" || named.Agent.SessionReference != "s-9" {
		t.Fatalf("a sessionless caller naming its session: %+v", named)
	}
	// A tool call's own id (Claude Code's) names the call for ever.
	claude := callerOf(bare, map[string]any{"claudecode/toolUseId": "toolu_01"})
	if claude.Replica != c1.Replica || claude.Key != "t:"+strings.TrimPrefix(c1.Replica, "rep_mcp_")+"/toolu_01" {
		t.Fatalf("a sessionless call with its tool use id: %+v", claude)
	}
	other := withCall(context.Background(), &httpCall{workspace: "v", token: "tok", id: id})
	if callerOf(other, nil).Replica == c1.Replica {
		t.Fatal("two workspaces' sessionless callers share a replica")
	}
}

// TestCheckActor: the X-Crosscode-Actor header is an actor id or refused.
func TestCheckActor(t *testing.T) {
	if a, err := checkActor("  ada@example.com "); err != nil || a != "ada@example.com" {
		t.Fatalf("%q %v", a, err)
	}
	for _, bad := range []string{"a\x00b", "a\u202eb", strings.Repeat("x", 300), "two\nlines"} {
		if _, err := checkActor(bad); err == nil {
			t.Fatalf("%q accepted", bad)
		}
	}
}
