package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/crosscode/crosscode-mcp/bridge/coord"
)

func taskWake(i int) coord.Wake {
	id := fmt.Sprintf("tsk_01m972hv5fvd8w53ryrttvg%03d", i)
	return coord.Wake{Kind: coord.WakeTask, Seq: int64(i),
		Text: fmt.Sprintf("grace@example.com assigned you task %s \"balance wave %d\" [open]. Next: update_task taskId %s status in_progress when you start it (list_tasks shows it)", id, i, id),
		Meta: map[string]string{"kind": coord.WakeTask, "taskId": id}}
}

// TestWakePolicy: nothing while a tool call runs, the first message at
// once, at most one every 10 s after it, the news of the meanwhile
// gathered (each piece once) into the next.
func TestWakePolicy(t *testing.T) {
	p := newWakePolicy(wakeEvery)
	t0 := time.Now()
	if ws, wait := p.due(t0); ws != nil || wait != 0 {
		t.Fatalf("nothing pending: %v %v", ws, wait)
	}
	p.call(+1)
	p.add([]coord.Wake{taskWake(1)})
	if ws, wait := p.due(t0); ws != nil || wait != 0 {
		t.Fatalf("during a tool call: %v, wait %v; want nothing until it ends", ws, wait)
	}
	p.call(-1)
	select {
	case <-p.kick:
	default:
		t.Fatal("the end of a tool call does not say so")
	}
	ws, _ := p.due(t0)
	if len(ws) != 1 {
		t.Fatalf("idle: %v, want the task", ws)
	}
	p.sent(t0)
	p.add([]coord.Wake{taskWake(2), taskWake(3)})
	p.add([]coord.Wake{taskWake(3), taskWake(4)})
	if ws, wait := p.due(t0.Add(4 * time.Second)); ws != nil || wait != 6*time.Second {
		t.Fatalf("4 s after a message: %v, wait %v; want nothing for 6 s more", ws, wait)
	}
	ws, _ = p.due(t0.Add(wakeEvery))
	var ids []string
	for _, w := range ws {
		ids = append(ids, w.Meta["taskId"])
	}
	if want := []string{taskWake(2).Meta["taskId"], taskWake(3).Meta["taskId"], taskWake(4).Meta["taskId"]}; !slices.Equal(ids, want) {
		t.Fatalf("10 s after: %v, want %v (each once, in order)", ids, want)
	}
}

// TestChannelMessage: one message is plain text of at most 1 KiB that
// names every piece of news it carries (whole lines while they fit, then
// by id), with the first one's kind and ids in meta.
func TestChannelMessage(t *testing.T) {
	content, meta := channelMessage([]coord.Wake{taskWake(1)})
	if !strings.Contains(content, taskWake(1).Text) || meta["kind"] != coord.WakeTask || meta["taskId"] != taskWake(1).Meta["taskId"] || meta["count"] != "" {
		t.Errorf("one: %q %v", content, meta)
	}
	for _, n := range []int{2, 10, 30} {
		var ws []coord.Wake
		for i := range n {
			ws = append(ws, taskWake(i))
		}
		content, meta := channelMessage(ws)
		if len(content) > channelMax || meta["count"] != fmt.Sprint(n) || meta["taskId"] != ws[0].Meta["taskId"] {
			t.Errorf("%d: %d bytes, meta %v", n, len(content), meta)
		}
		if !strings.Contains(content, ws[0].Text) {
			t.Errorf("%d: the first not whole: %q", n, content)
		}
		namedAll := true
		for _, w := range ws {
			namedAll = namedAll && strings.Contains(content, w.Meta["taskId"])
		}
		if n <= 10 && !namedAll {
			t.Errorf("%d: not every task named: %q", n, content)
		}
		if n == 30 && (namedAll || !strings.Contains(content, "not named") || !strings.Contains(content, "and 29 more")) {
			t.Errorf("30: want the ones that fit named and the rest counted: %q", content)
		}
	}
	// A piece of news too long for any room left is cut, the rest named.
	long := taskWake(0)
	long.Text = strings.Repeat("x", 2000)
	content, _ = channelMessage([]coord.Wake{long, taskWake(1)})
	if len(content) > channelMax || !strings.Contains(content, taskWake(1).Meta["taskId"]) {
		t.Errorf("a long one: %d bytes: %q", len(content), content)
	}
}

// TestWhoCanBeWoken: Claude Code (its clientInfo) in an interactive
// session, never print mode nor another client; only it is offered the
// older MCP revisions alone, on which Claude Code's channels work.
func TestWhoCanBeWoken(t *testing.T) {
	for _, c := range []struct {
		client, entrypoint string
		can                bool
	}{
		{"claude-code", "cli", true},
		{"claude-code", "sdk-cli", false},
		{"claude-code", "", false},
		{"claude-ai", "cli", false},
		{"codex", "cli", false},
		{"opencode", "cli", false},
	} {
		getenv := func(k string) string {
			if k == "CLAUDE_CODE_ENTRYPOINT" {
				return c.entrypoint
			}
			return ""
		}
		st := wakeState(c.client, getenv)
		if st.Can != c.can || st.How == "" {
			t.Errorf("%s %q: %+v, want can=%v", c.client, c.entrypoint, st, c.can)
		}
		if c.can && !strings.Contains(st.How, "--dangerously-load-development-channels plugin:crosscode@crosscode") {
			t.Errorf("%s: how does not give the launch line: %s", c.client, st.How)
		}
		s, err := assemble(Config{Getenv: getenv, Toolsets: []string{"coord"}})
		if err != nil {
			t.Fatal(err)
		}
		req := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{%q:%q,%q:{"name":%q,"version":"1"},%q:{}}}}`,
			mcpgo.MetaKeyProtocolVersion, mcpgo.ProtocolVersion20260728, mcpgo.MetaKeyClientInfo, c.client, mcpgo.MetaKeyClientCapabilities)
		b, _ := json.Marshal(s.MCP.HandleMessage(context.Background(), json.RawMessage(req)))
		var res struct {
			Result struct {
				SupportedVersions []string       `json:"supportedVersions"`
				Capabilities      map[string]any `json:"capabilities"`
			} `json:"result"`
		}
		json.Unmarshal(b, &res)
		modern := slices.Contains(res.Result.SupportedVersions, mcpgo.ProtocolVersion20260728)
		if len(res.Result.SupportedVersions) == 0 || modern == c.can {
			t.Errorf("%s %q: server/discover offers %v", c.client, c.entrypoint, res.Result.SupportedVersions)
		}
		if !strings.Contains(string(b), `"claude/channel"`) {
			t.Errorf("%s: the capability is not declared: %s", c.client, b)
		}
	}
	if !slices.Contains(mcpgo.ValidProtocolVersions, mcpgo.ProtocolVersion20260728) {
		t.Error("the SDK's own list of revisions was changed")
	}
}

// notifications records what a server sent its client.
type notifications struct {
	mu   sync.Mutex
	sent []map[string]any
}

func (n *notifications) notify(method string, params map[string]any) {
	if method != channelMethod {
		return
	}
	n.mu.Lock()
	n.sent = append(n.sent, params)
	n.mu.Unlock()
}

func (n *notifications) list() []map[string]any {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]map[string]any(nil), n.sent...)
}

// TestWakeNotDuringACall, with the real server and SQLite: news that
// comes while one of the session's tool calls runs is not sent (the
// call's result carries it, and once it did, it is sent no more); news
// that comes while it idles is, within a second.
func TestWakeNotDuringACall(t *testing.T) {
	ctx := context.Background()
	repo, data := t.TempDir(), t.TempDir()
	cli := func(k string) string {
		if k == "CLAUDE_CODE_ENTRYPOINT" {
			return "cli"
		}
		return ""
	}
	ada, err := New(ctx, Config{Repo: repo, Data: data, Actor: "ada", Toolsets: []string{"coord"}, Getenv: cli})
	if err != nil {
		t.Fatal(err)
	}
	defer ada.Close()
	sent := &notifications{}
	ada.notify = sent.notify
	ada.learnClient(ctx, "claude-code")
	bo, err := New(ctx, Config{Repo: repo, Data: data, Actor: "bo", Toolsets: []string{"coord"}, Getenv: noEnv})
	if err != nil {
		t.Fatal(err)
	}
	defer bo.Close()
	held, err := bo.Coord.Claim(ctx, []string{"src/boss.go"}, true, "rework", 0, "")
	if err != nil {
		t.Fatal(err)
	}
	// Ada's claim waits, in a call that runs until bo releases.
	called := make(chan json.RawMessage, 1)
	go func() {
		called <- json.RawMessage(mustJSON(ada.MCP.HandleMessage(ctx, json.RawMessage(
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"claim","arguments":{"patterns":["src/boss.go"],"reason":"tune","waitSeconds":600}}}`))))
	}()
	waitUntil(t, "ada's claim queued", func() bool {
		st, _ := bo.Coord.CheckConflicts(ctx, []string{"src/boss.go"})
		return st != nil && strings.Contains(mustJSON(st), `"queued"`)
	})
	_, task, err := bo.Coord.CreateTask(ctx, "balance wave 1", "", nil, "ada", "")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(4 * wakePoll)
	if got := sent.list(); len(got) != 0 {
		t.Fatalf("sent during a tool call: %v", got)
	}
	if _, err := bo.Coord.Release(ctx, []string{held.Claim.ID}, false, ""); err != nil {
		t.Fatal(err)
	}
	res := <-called
	if !strings.Contains(string(res), "granted") || !strings.Contains(string(res), task.ID) {
		t.Fatalf("the call's result: want granted, with the task in its news: %s", res)
	}
	time.Sleep(4 * wakePoll)
	if got := sent.list(); len(got) != 0 {
		t.Fatalf("sent what the call's result told: %v", got)
	}
	// Idle now: the next task wakes it.
	_, next, err := bo.Coord.CreateTask(ctx, "balance wave 2", "", nil, "ada", "")
	if err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "a channel message", func() bool { return len(sent.list()) == 1 })
	msg := sent.list()[0]
	meta, _ := msg["meta"].(map[string]string)
	if content, _ := msg["content"].(string); meta["kind"] != coord.WakeTask || meta["taskId"] != next.ID || !strings.Contains(content, "balance wave 2") {
		t.Errorf("the message: %v", msg)
	}
	if st := ada.Coord.Wake(); !st.Can {
		t.Errorf("workspace_status's wake: %+v", st)
	}
}

func mustJSON(v any) string { b, _ := json.Marshal(v); return string(b) }

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("%s: not within 10 s", what)
}

// TestYieldingServerDoesNotWake: a server started by the plugin beside
// one wired by hand in the same client offers no tools and leaves the
// waking to the other, so the agent is woken once.
func TestYieldingServerDoesNotWake(t *testing.T) {
	ctx := context.Background()
	cli := func(k string) string {
		if k == "CLAUDE_CODE_ENTRYPOINT" {
			return "cli"
		}
		return ""
	}
	for _, other := range []string{"", "crosscode (~/.claude.json)"} {
		s, err := New(ctx, Config{Repo: t.TempDir(), Data: t.TempDir(), Actor: "ada", Toolsets: []string{"coord"}, Getenv: cli,
			Yield: func(string) string { return other }})
		if err != nil {
			t.Fatal(err)
		}
		s.learnClient(ctx, "claude-code")
		s.mu.Lock()
		waking := s.stopWake != nil
		s.mu.Unlock()
		s.Close()
		if waking != (other == "") {
			t.Errorf("yielding to %q: waking %v", other, waking)
		}
	}
}
