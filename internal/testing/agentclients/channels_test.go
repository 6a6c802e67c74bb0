package agentclients

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// Waking an idle agent (issue 38, spec section 21) inside the pinned
// Claude Code, in an interactive session under tmux (channels reach
// interactive sessions only), with every gate Claude Code checks open:
// crosscode-mcp declares the capability and makes Claude Code connect on
// a revision before 2026-07-28; the provider is first-party (a custom
// base URL counts); the remote flag is seeded (seedInteractive); no
// managed settings; the server is named by
// --dangerously-load-development-channels, whose dialog is accepted with
// Enter. Claude Code's debug log names the gate that refuses a server.

// seedInteractive makes the world's Claude Code ready for an interactive
// session with no one to answer its first screens: onboarding done, the
// repository trusted, the test's API key approved; and the remote flag
// that gates channels for API-key sessions on.
func seedInteractive(t *testing.T, w *World) {
	t.Helper()
	path := filepath.Join(w.Home, ".claude.json")
	cfg := map[string]any{}
	if b, err := os.ReadFile(path); err == nil {
		if err := json.Unmarshal(b, &cfg); err != nil {
			t.Fatal(err)
		}
	}
	key := "sk-ant-crosscode-test"
	cfg["hasCompletedOnboarding"] = true
	cfg["theme"] = "dark"
	cfg["customApiKeyResponses"] = map[string]any{"approved": []string{key[len(key)-20:]}, "rejected": []string{}}
	cfg["projects"] = map[string]any{w.Repo: map[string]any{"hasTrustDialogAccepted": true, "hasCompletedProjectOnboarding": true}}
	// A test-only override: Claude Code turns channels on for API-key
	// sessions by a remote flag (tengu_harbor) that it fetches, and
	// nothing of this test leaves loopback; the flag is seeded in the
	// cache Claude Code reads it from. Real sessions need a claude.ai login.
	cfg["cachedGrowthBookFeatures"] = map[string]any{"tengu_harbor": true}
	b, _ := json.MarshalIndent(cfg, "", "  ")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// claudeInteractiveEnv is claudeEnv for an interactive session.
// CLAUDE_CODE_GB_DISK_CACHE_WHEN_TELEMETRY_OFF=1 is a test-only override:
// it makes Claude Code read the seeded flag although telemetry is off.
// The official marketplace is not fetched (nothing leaves loopback), and
// a tool call is abandoned after 2 s (MCP_TOOL_TIMEOUT): the agent's
// claim that waits its turn then stays queued while its session idles,
// as after the 50 s a waiting call lasts at most.
func claudeInteractiveEnv(w *World) []string {
	return claudeEnv(w, "CLAUDE_CODE_GB_DISK_CACHE_WHEN_TELEMETRY_OFF=1",
		"CLAUDE_CODE_DISABLE_OFFICIAL_MARKETPLACE_AUTOINSTALL=1", "MCP_TOOL_TIMEOUT=2000")
}

// channelArgs name crosscode's server as a development channel.
var channelArgs = []string{"--dangerously-load-development-channels", "server:crosscode"}

// pluginChannelArgs name the crosscode plugin's server.
var pluginChannelArgs = []string{"--dangerously-load-development-channels", "plugin:crosscode@crosscode"}

// startInteractive starts Claude Code interactive in the world, accepts
// the development channels' dialog and waits for crosscode's channel to
// be registered; it returns the terminal and the debug log's path.
func startInteractive(t *testing.T, w *World, channel []string) (*Tmux, string) {
	t.Helper()
	debug := filepath.Join(w.Root, "claude-debug.log")
	// crosscode's tools are allowed, as in the print-mode tests: no
	// permission prompt, and no auto mode's classifier, whose requests
	// this endpoint does not serve.
	args := append(append([]string{}, channel...), "--debug-file", debug, "--permission-mode", "default", "--allowedTools", "mcp__crosscode,mcp__plugin_crosscode_crosscode")
	tm := StartTmux(t, w, claudeBin(t), args, claudeInteractiveEnv(w)...)
	if !tm.WaitScreen("I am using this for local development", 30*time.Second) {
		t.Fatalf("no development channels dialog; the terminal shows:\n%s", tm.Screen())
	}
	tm.Keys("Enter")
	waitFor(t, 30*time.Second, "crosscode's channel registered (Claude Code's debug log)", func() bool {
		b, _ := os.ReadFile(debug)
		return channelRegistered.Match(b)
	})
	return tm, debug
}

// prompt types text and Enter, as a person would.
func (tm *Tmux) prompt(text string) {
	tm.t.Helper()
	tm.Keys("-l", text)
	tm.Keys("Enter")
}

// wake is a turn a channel message started, as the model saw it.
type wake struct {
	at      time.Time
	content string            // the channel tag's text
	meta    map[string]string // its attributes: meta, and source
}

// channelTag is how Claude Code shows a channel message to its model.
var (
	channelTag  = regexp.MustCompile(`(?s)<channel source="(?:plugin:crosscode:)?crosscode"([^>]*)>(.*?)</channel>`)
	channelAttr = regexp.MustCompile(`(\w+)="([^"]*)"`)
)

// lastUserText is the text of the last user message of a Messages
// request.
func lastUserText(raw []byte) string {
	var mr messagesRequest
	if json.Unmarshal(raw, &mr) != nil {
		return ""
	}
	for i := len(mr.Messages) - 1; i >= 0; i-- {
		if mr.Messages[i].Role != "user" {
			continue
		}
		blocks, _ := claudeBlocks(mr.Messages[i].Content)
		var out []string
		for _, b := range blocks {
			if b.Type == "text" {
				out = append(out, b.Text)
			}
		}
		return strings.Join(out, "\n")
	}
	return ""
}

// wakeOf reads the channel message a request brings, if it brings one.
func wakeOf(r *Request) (wake, bool) {
	m := channelTag.FindStringSubmatch(lastUserText(r.Raw))
	if m == nil {
		return wake{}, false
	}
	w := wake{at: time.Now(), content: m[2], meta: map[string]string{}}
	for _, a := range channelAttr.FindAllStringSubmatch(m[1], -1) {
		w.meta[a[1]] = a[2]
	}
	return w, true
}

// wakePlay is the model's part in the idle agent's session:
//
//  1. it claims src/boss.go, willing to wait (Grace holds it); Claude Code
//     abandons the call after 2 s and the claim stays queued; it ends its
//     turn: the session idles (when the crosscode tools are not loaded yet
//     it says so, and the test types the prompt again);
//  2. the first channel message (the grant) gets a turn that calls
//     workspace_status, then list_tasks, then ends;
//  3. every later one gets a turn that ends at once: no tool call, so the
//     news stays unread.
type wakePlay struct {
	mu       sync.Mutex
	unloaded int  // first prompts that found no crosscode tool
	idle     bool // the first turn ended
	wakes    []wake
	results  map[string]string // by call id
	done     bool              // the first wake's turn ended
}

func (p *wakePlay) Script(r *Request) Reply {
	p.mu.Lock()
	defer p.mu.Unlock()
	if w, ok := wakeOf(r); ok {
		p.wakes = append(p.wakes, w)
		if len(p.wakes) == 1 {
			return Reply{Calls: []Call{{ID: "call_status", Name: r.Tool("workspace_status")}}}
		}
		return Reply{Text: "Noted."}
	}
	if p.results == nil {
		p.results = map[string]string{}
	}
	for _, res := range r.Results {
		p.results[res.CallID] = res.Text
	}
	switch {
	case !p.idle && p.results["call_claim"] != "":
		p.idle = true
		return Reply{Text: "Grace holds src/boss.go; I wait for it."}
	case !p.idle && r.Tool("claim") == "":
		p.unloaded++
		return Reply{Text: "The crosscode tools are not loaded yet."}
	case !p.idle:
		return Reply{Calls: []Call{{ID: "call_claim", Name: r.Tool("claim"), Args: map[string]any{
			"patterns": []string{"src/boss.go"}, "reason": "tune the boss", "waitSeconds": 600}}}}
	case p.results["call_status"] != "" && p.results["call_tasks"] == "":
		return Reply{Calls: []Call{{ID: "call_tasks", Name: r.Tool("list_tasks")}}}
	}
	p.done = p.results["call_tasks"] != ""
	return Reply{Text: "Done."}
}

// state is a consistent copy of what the play saw.
func (p *wakePlay) state() (unloaded int, idle, done bool, wakes []wake, results map[string]string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	rs := map[string]string{}
	for k, v := range p.results {
		rs[k] = v
	}
	return p.unloaded, p.idle, p.done, append([]wake(nil), p.wakes...), rs
}

// seen are the channel messages the model saw so far.
func (p *wakePlay) seen() []wake { _, _, _, ws, _ := p.state(); return ws }

// newsCount counts the items of a result's news with that event and id.
func newsCount(t *testing.T, text, event, id string) int {
	t.Helper()
	js, ok := resultJSON(text)
	var out struct {
		News struct {
			Items []struct{ Event, ID string }
		}
	}
	if !ok || json.Unmarshal([]byte(js), &out) != nil {
		t.Fatalf("not a JSON result: %s", tail(text, 500))
	}
	n := 0
	for _, it := range out.News.Items {
		if it.Event == event && it.ID == id {
			n++
		}
	}
	return n
}

// TestClaudeCodeChannels: an idle agent in an interactive Claude Code
// session is woken by channel messages (issue 38): its waiting claim
// granted by another agent's release gives one new turn carrying the
// grant, whose next tool result carries that news once; a handoff to it
// wakes it once; ten tasks assigned to it in a burst give at most three
// messages, 10 s apart.
func TestClaudeCodeChannels(t *testing.T) {
	t.Parallel()
	c := clientNamed(t, "claude-code")
	w := NewWorld(t)
	other := w.Agent(t, OtherActor, "codex")
	CallTool(t, other, "claim", map[string]any{"patterns": []string{"src/boss.go"}, "reason": "rework the boss fight"})
	p := &wakePlay{}
	w.Model = NewModel(t, c.Mount, p.Script)
	c.Configure(t, w)
	seedInteractive(t, w)
	start := time.Now()
	tm, debug := startInteractive(t, w, channelArgs)
	defer func() {
		b, _ := os.ReadFile(debug)
		w.Dump(t, &RunResult{Stdout: tm.Screen()}, map[string]string{"debug.log": string(b)})
		if t.Failed() {
			t.Logf("Claude Code's debug log, its channel lines:\n%s\nthe terminal:\n%s", grepLines(string(b), "channel"), tm.Screen())
		}
	}()
	for typed := 1; ; typed++ {
		tm.prompt("Claim src/boss.go, waiting your turn: Grace holds it.")
		waitFor(t, 60*time.Second, "the first turn's end", func() bool { u, idle, _, _, _ := p.state(); return idle || u >= typed })
		if _, idle, _, _, _ := p.state(); idle {
			break
		}
		if typed == 10 {
			t.Fatal("Claude Code never offered crosscode's tools")
		}
		time.Sleep(500 * time.Millisecond)
	}
	// Ada's claim waits in line behind Grace's.
	var mine string
	out := CallTool(t, other, "check_conflicts", map[string]any{"paths": []string{"src/boss.go"}})
	b, _ := json.Marshal(out["claims"])
	if m := regexp.MustCompile(`"id":"(clm_[^"]+)"[^}]*"status":"queued"`).FindStringSubmatch(string(b)); m != nil {
		mine = m[1]
	} else if m := regexp.MustCompile(`"claimId":"(clm_[^"]+)"[^}]*"status":"queued"`).FindStringSubmatch(string(b)); m != nil {
		mine = m[1]
	}
	if mine == "" {
		t.Fatalf("Ada's claim does not wait for src/boss.go: %s", b)
	}
	t.Logf("idle after %v, claim %s queued", time.Since(start).Round(time.Millisecond), mine)

	// 1. The grant: one new turn, carrying it; its next tool result
	// carries the grant once, the one after not again.
	time.Sleep(time.Second)
	released := time.Now()
	CallTool(t, other, "release_claim", map[string]any{"all": true})
	waitFor(t, 10*time.Second, "the grant's channel message", func() bool { return len(p.seen()) >= 1 })
	waitFor(t, 20*time.Second, "the woken turn's end", func() bool { _, _, done, _, _ := p.state(); return done })
	_, _, _, ws, results := p.state()
	w1 := ws[0]
	t.Logf("woken %v after the release: %v %q", w1.at.Sub(released).Round(time.Millisecond), w1.meta, w1.content)
	if w1.meta["kind"] != "claim_granted" || w1.meta["claimId"] != mine || !strings.Contains(w1.content, "src/boss.go") || !strings.Contains(w1.content, "release_claim") {
		t.Errorf("the first message: want the grant of %s on src/boss.go with the next call, got %v %q", mine, w1.meta, w1.content)
	}
	if n := newsCount(t, results["call_status"], "claim.granted", mine); n != 1 {
		t.Errorf("the tool result after the wake: the grant %d times in its news, want once: %s", n, tail(results["call_status"], 1500))
	}
	if n := newsCount(t, results["call_tasks"], "claim.granted", mine); n != 0 {
		t.Errorf("the second tool result after the wake: the grant again in its news: %s", tail(results["call_tasks"], 1500))
	}

	// 2. A handoff to the idle agent wakes it, once (10 s at least after
	// the first message).
	ho := CallTool(t, other, "request_handoff", map[string]any{"toActor": Actor, "summary": "take over the boss fight's balance", "claimIds": []string{}})
	hb, _ := json.Marshal(ho["handoff"])
	handoff := regexp.MustCompile(`"handoffId":"(hnd_[^"]+)"`).FindStringSubmatch(string(hb))
	if handoff == nil {
		t.Fatalf("request_handoff: no id in %s", hb)
	}
	waitFor(t, 15*time.Second, "the handoff's channel message", func() bool { return len(p.seen()) >= 2 })
	w2 := p.seen()[1]
	t.Logf("woken %v after the first message: %v %q", w2.at.Sub(w1.at).Round(time.Millisecond), w2.meta, w2.content)
	if w2.meta["kind"] != "handoff_requested" || w2.meta["handoffId"] != handoff[1] || !strings.Contains(w2.content, OtherActor) || !strings.Contains(w2.content, "respond_handoff") {
		t.Errorf("the second message: want the handoff %s from %s with the next call, got %v %q", handoff[1], OtherActor, w2.meta, w2.content)
	}

	// 3. Ten tasks assigned in a burst: at most three messages, 10 s apart,
	// that name every one.
	var tasks []string
	for i := range 10 {
		out := CallTool(t, other, "create_task", map[string]any{"title": fmt.Sprintf("balance wave %d", i+1), "assignee": Actor})
		tb, _ := json.Marshal(out["task"])
		if m := regexp.MustCompile(`"taskId":"(tsk_[^"]+)"`).FindStringSubmatch(string(tb)); m != nil {
			tasks = append(tasks, m[1])
		}
	}
	named := func() int {
		n := 0
		for _, id := range tasks {
			for _, wk := range p.seen()[2:] {
				if strings.Contains(wk.content, id) || wk.meta["taskId"] == id {
					n++
					break
				}
			}
		}
		return n
	}
	waitFor(t, 35*time.Second, "messages naming the ten tasks", func() bool { return named() == len(tasks) })
	time.Sleep(time.Second)
	ws = p.seen()
	burst := ws[2:]
	if len(burst) > 3 {
		t.Errorf("ten tasks in a burst gave %d messages, want at most 3", len(burst))
	}
	// Claude Code's debug log names each channel message it received, and
	// when: as many as the model saw (each a turn of its own), 10 s apart
	// (the model's turns start later, by however long Claude Code takes).
	b, _ = os.ReadFile(debug)
	received := channelReceipts(string(b))
	if len(received) != len(ws) {
		t.Errorf("Claude Code received %d channel messages, the model saw %d", len(received), len(ws))
	}
	var gaps []time.Duration
	for i := 1; i < len(received); i++ {
		// Sent 10 s apart at least; a few ms of the pipe between.
		gaps = append(gaps, received[i].Sub(received[i-1]))
		if gaps[i-1] < 9950*time.Millisecond {
			t.Errorf("messages %d and %d reached Claude Code %v apart, want 10 s", i, i+1, gaps[i-1])
		}
	}
	t.Logf("Claude Code received them %v apart", gaps)
	kinds := map[string]int{}
	for _, wk := range ws {
		kinds[wk.meta["kind"]]++
	}
	if kinds["claim_granted"] != 1 || kinds["handoff_requested"] != 1 {
		t.Errorf("messages by kind %v: want the grant once and the handoff once", kinds)
	}
	t.Logf("%d messages in all, %d for the ten tasks; %v from the start", len(ws), len(burst), time.Since(start).Round(time.Millisecond))
}

// channelReceipts are the times at which Claude Code's debug log says it
// received a channel message of crosscode's.
func channelReceipts(debug string) []time.Time {
	var out []time.Time
	for _, m := range channelReceipt.FindAllStringSubmatch(debug, -1) {
		if at, err := time.Parse(time.RFC3339Nano, m[1]); err == nil {
			out = append(out, at)
		}
	}
	return out
}

var channelReceipt = regexp.MustCompile(`(?m)^(\S+) \[DEBUG\] MCP server "(?:plugin:crosscode:)?crosscode": notifications/claude/channel \(`)

// channelRegistered is the line of Claude Code's debug log that says
// crosscode's channel is open (every gate passed).
var channelRegistered = regexp.MustCompile(`MCP server "(?:plugin:crosscode:)?crosscode": Channel notifications registered`)

// waitFor polls cond until it holds, for at most d.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("%s: not within %v", what, d)
}

// grepLines are the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// clientNamed is the registered client of that name.
func clientNamed(t *testing.T, name string) *Client {
	t.Helper()
	for _, c := range clients {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("%s is not registered", name)
	return nil
}

// TestClaudeCodeChannelsPrintMode: Claude Code's print mode (-p) shows no
// channel messages, and crosscode-mcp knows it (CLAUDE_CODE_ENTRYPOINT is
// sdk-cli there): it sends none, even between tool calls while news that
// needs the agent comes, keeps the newest MCP revision, and loses no
// news: the task assigned meanwhile is in the next tool result.
func TestClaudeCodeChannelsPrintMode(t *testing.T) {
	t.Parallel()
	c := clientNamed(t, "claude-code")
	w := NewWorld(t)
	other := w.Agent(t, OtherActor, "codex")
	var task string
	var assignErr error
	results := map[string]string{}
	w.Model = NewModel(t, c.Mount, func(r *Request) Reply {
		for _, res := range r.Results {
			results[res.CallID] = res.Text
		}
		switch {
		case results["call_p1"] == "":
			return Reply{Calls: []Call{{ID: "call_p1", Name: r.Tool("workspace_status")}}}
		case results["call_p2"] == "":
			// Between two tool calls, another agent assigns it a task,
			// and more time passes than an idle session waits for news.
			out, err := callTool(other, "create_task", map[string]any{"title": "balance wave 1", "assignee": Actor})
			if tk, ok := out["task"].(map[string]any); ok {
				task, _ = tk["taskId"].(string)
			}
			assignErr = err
			time.Sleep(1500 * time.Millisecond)
			return Reply{Calls: []Call{{ID: "call_p2", Name: r.Tool("list_tasks")}}}
		}
		return Reply{Text: "Done."}
	})
	c.Configure(t, w)
	run := runClaudeArgs(t, w, "What is there to do?", channelArgs)
	if run.ExitCode != 0 {
		t.Fatalf("claude -p exited %d: %s", run.ExitCode, tail(run.Stderr, 2000))
	}
	if assignErr != nil || task == "" {
		t.Fatalf("create_task: %v", assignErr)
	}
	if n := newsCount(t, results["call_p2"], "task.created", task); n != 1 {
		t.Errorf("the tool result after the task was assigned: it is %d times in its news, want once: %s", n, tail(results["call_p2"], 1500))
	}
	if strings.Contains(run.Debug, "wake: ") || strings.Contains(run.Debug, "notifications/claude/channel (") {
		t.Errorf("crosscode-mcp woke a print-mode session:\n%s", grepLines(run.Debug, "channel"))
	}
	if run.Negotiated != "2026-07-28" {
		t.Errorf("print mode negotiated MCP %q, want 2026-07-28 (only sessions that can be woken keep to 2025-11-25)", run.Negotiated)
	}
}

// TestClaudeCodeChannelsPlugin: the plugin's launch line of the docs,
// `claude --dangerously-load-development-channels
// plugin:crosscode@crosscode`, with the plugin installed from a checkout
// by Claude Code's own command: the plugin's server opens the channel, and
// a handoff to the idle agent wakes it. (The checkout's plugin starts
// the binary on PATH instead of `npx -y crosscode-mcp`, which
// TestPackagesInClients runs.)
func TestClaudeCodeChannelsPlugin(t *testing.T) {
	t.Parallel()
	c := clientNamed(t, "claude-code")
	w := NewWorld(t)
	src := checkoutCopy(t)
	mcpJSON := filepath.Join(src, "plugins", "crosscode", ".mcp.json")
	if err := os.WriteFile(mcpJSON, []byte(`{"mcpServers": {"crosscode": {"command": "crosscode-mcp", "env": {"CROSSCODE_VIA": "plugin"}}}}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"add", "."}, {"-c", "user.email=ci@example.com", "-c", "user.name=ci", "commit", "-qm", "the binary on PATH"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = src
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	var mu sync.Mutex
	var wakes []wake
	w.Model = NewModel(t, c.Mount, func(r *Request) Reply {
		if wk, ok := wakeOf(r); ok {
			mu.Lock()
			wakes = append(wakes, wk)
			mu.Unlock()
			return Reply{Text: "Noted."}
		}
		return Reply{Text: "Hello."}
	})
	runIn(t, w, claudeBin(t), []string{"plugin", "install", "crosscode", "--marketplace", src}, claudeEnv(w)...)
	seedInteractive(t, w)
	tm, debug := startInteractive(t, w, pluginChannelArgs)
	defer func() {
		if t.Failed() {
			b, _ := os.ReadFile(debug)
			t.Logf("Claude Code's debug log, its channel lines:\n%s\nthe terminal:\n%s", grepLines(string(b), "hannel"), tm.Screen())
		}
	}()
	tm.prompt("Hello.")
	time.Sleep(2 * time.Second)
	other := w.Agent(t, OtherActor, "codex")
	ho := CallTool(t, other, "request_handoff", map[string]any{"toActor": Actor, "summary": "take over the boss fight's balance", "claimIds": []string{}})
	waitFor(t, 15*time.Second, "the handoff's channel message", func() bool { mu.Lock(); defer mu.Unlock(); return len(wakes) > 0 })
	mu.Lock()
	wk := wakes[0]
	mu.Unlock()
	b, _ := os.ReadFile(debug)
	t.Logf("%s", channelRegistered.Find(b))
	hb, _ := json.Marshal(ho["handoff"])
	if wk.meta["kind"] != "handoff_requested" || !strings.Contains(string(hb), wk.meta["handoffId"]) || !strings.Contains(wk.content, "respond_handoff") {
		t.Errorf("the message: %v %q, want the handoff %s", wk.meta, wk.content, hb)
	}
}
