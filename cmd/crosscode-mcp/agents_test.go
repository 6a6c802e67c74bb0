package main

// End-to-end tests of the stdio MCP server: the real binary as a
// subprocess, driven by mcp-go's client, as two agents of different
// vendors on one repository, in local mode and against `serve`.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/crosscode/crosscode-mcp/internal/testing/storetest"
	"github.com/crosscode/crosscode-mcp/internal/testing/sysdeps"
	"github.com/crosscode/crosscode-mcp/protocol"
)

// gitRepo makes a repository with one commit.
//
// Under Wine, where git cannot run, it is the same folder without git: the
// server keeps its local state per folder then, which the tests that use
// one folder for every agent do not tell apart (those that need git itself
// say so with sysdeps.Need).
func gitRepo(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "mygame")
	if err := os.MkdirAll(filepath.Join(dir, "src", "game"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "src", "game", "boss.gd"), []byte("extends Node\n"), 0o644)
	if sysdeps.UnderWine() {
		return dir
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "."}, {"-c", "user.email=ci@example.com", "-c", "user.name=ci", "commit", "-qm", "init"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	return dir
}

// agent is one MCP client driving its own crosscode-mcp process.
type agent struct {
	t      *testing.T
	name   string
	c      *mcpclient.Client
	cmd    *exec.Cmd
	stderr *syncBuffer
	init   *mcpgo.InitializeResult
}

type agentOpts struct {
	legacy     bool // the 2025-11-25 handshake (initialize) only; else the client negotiates 2026-07-28 (server/discover)
	clientName string
	dir        string
	args       []string
	env        []string
}

func startAgent(t *testing.T, name string, o agentOpts) *agent {
	t.Helper()
	a := &agent{t: t, name: name, stderr: &syncBuffer{}}
	env := append(os.Environ(), mainEnv+"=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1", "CROSSCODE_SESSION_REF=", "CLAUDE_CODE_SESSION_ID=", "CLAUDE_CODE_ENTRYPOINT=")
	env = append(env, tempEnv(t)...)
	env = append(env, o.env...)
	var mu sync.Mutex
	tr := transport.NewStdioWithOptions(os.Args[0], env, o.args,
		transport.WithCommandFunc(func(ctx context.Context, command string, env []string, args []string) (*exec.Cmd, error) {
			cmd := exec.CommandContext(ctx, command, args...)
			cmd.Env, cmd.Dir = env, o.dir
			mu.Lock()
			a.cmd = cmd
			mu.Unlock()
			return cmd, nil
		}),
		transport.WithCommandStderrWriter(a.stderr))
	if err := tr.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	var copts []mcpclient.ClientOption
	if o.legacy {
		copts = append(copts, mcpclient.WithProtocolVersion(mcpgo.ProtocolVersion20251125))
	}
	c := mcpclient.NewClient(tr, copts...)
	a.c = c
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil { // wires notifications to OnNotification
		t.Fatal(err)
	}
	req := mcpgo.InitializeRequest{}
	req.Params.ProtocolVersion = mcpgo.LATEST_PROTOCOL_VERSION
	req.Params.ClientInfo = mcpgo.Implementation{Name: o.clientName, Version: "1.0"}
	init, err := c.Initialize(ctx, req)
	if err != nil {
		t.Fatalf("%s: initialize: %v\n%s", name, err, a.stderr.String())
	}
	a.init = init
	t.Cleanup(func() { a.c.Close() })
	return a
}

// call runs a tool and decodes its structured result; isError results fail
// the test unless wantError.
func (a *agent) call(tool string, args map[string]any) map[string]any {
	a.t.Helper()
	out, isErr := a.callRaw(tool, args)
	if isErr {
		a.t.Fatalf("%s: %s: tool error: %s", a.name, tool, out["error"])
	}
	return out
}

// callRaw runs a tool; a tool error is {"error": its text} and true, with
// the structured result of a failed operation beside it.
func (a *agent) callRaw(tool string, args map[string]any) (map[string]any, bool) {
	a.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, toolErr, err := callTool(ctx, a.c, tool, args)
	if err != nil {
		a.t.Fatalf("%s: %s: %v\nstderr:\n%s", a.name, tool, err, a.stderr.String())
	}
	if toolErr != "" {
		if out == nil {
			out = map[string]any{}
		}
		out["error"] = toolErr
		return out, true
	}
	return out, false
}

func (a *agent) kill9() {
	a.t.Helper()
	if err := a.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		a.t.Fatal(err)
	}
	a.cmd.Wait()
}

// collaborate runs the two-agent story against ada (claude-code) and bo
// (cursor): intents, a granted and a denied claim, handoff with claims
// moving, tasks, validations and news.
func collaborate(t *testing.T, ada, bo *agent) {
	st := ada.call("workspace_status", nil)
	if field(st, "you", "provider") != "claude-code" || field(st, "you", "actor") != "ada@example.com" {
		t.Fatalf("ada's identity: %v", st["you"])
	}
	if st := bo.call("workspace_status", nil); field(st, "you", "provider") != "cursor" {
		t.Fatalf("bo's identity: %v", st["you"])
	}

	in := ada.call("publish_intent", map[string]any{"summary": "Rebalance the boss fight", "paths": []string{"src/game/**"}})
	if field(in, "write", "status") != "acknowledged" {
		t.Fatalf("intent write: %v", in["write"])
	}
	granted := ada.call("claim", map[string]any{"patterns": []string{"src/game/**"}, "reason": "phase-2 damage"})
	if granted["status"] != "granted" {
		t.Fatalf("ada's claim: %v", granted)
	}
	claimID := granted["claimId"].(string)

	denied := bo.call("claim", map[string]any{"patterns": []string{"src/game/boss.gd"}, "reason": "vfx"})
	if denied["status"] != "denied" {
		t.Fatalf("bo's overlapping claim was not denied: %v", denied)
	}
	conflicts := denied["conflicts"].([]any)
	if len(conflicts) != 1 || field(conflicts[0].(map[string]any), "actor") != "ada@example.com" || field(conflicts[0].(map[string]any), "claimId") != claimID {
		t.Fatalf("denial does not name ada's claim: %v", conflicts)
	}
	if !strings.Contains(denied["next"].(string), "ada@example.com") {
		t.Fatalf("next step does not name the holder: %v", denied["next"])
	}
	// bo's news shows ada's intent and claim.
	var sawClaim bool
	for _, it := range list(denied, "news", "items") {
		if it["id"] == claimID && it["provider"] == "claude-code" {
			sawClaim = true
		}
	}
	if !sawClaim {
		t.Fatalf("bo's news lacks ada's claim: %v", denied["news"])
	}
	cc := bo.call("check_conflicts", map[string]any{"paths": []string{"src/game/boss.gd"}})
	if cc["clear"] != false || len(cc["claims"].([]any)) != 1 || len(cc["intents"].([]any)) != 1 {
		t.Fatalf("check_conflicts: %v", cc)
	}
	if free := bo.call("check_conflicts", map[string]any{"paths": []string{"docs/README.md"}}); free["clear"] != true {
		t.Fatalf("unrelated path not clear: %v", free)
	}

	task := ada.call("create_task", map[string]any{"title": "Boss VFX pass", "labels": []string{"vfx"}})
	taskID := field(task, "task", "taskId").(string)
	ho := ada.call("request_handoff", map[string]any{"toActor": "bo@example.com", "summary": "Damage curve done; needs VFX", "taskId": taskID})
	hoID := field(ho, "handoff", "handoffId").(string)
	if ids := field(ho, "handoff", "claimIds").([]any); len(ids) != 1 || ids[0] != claimID {
		t.Fatalf("handoff claims: %v", ids)
	}
	st = bo.call("workspace_status", nil)
	var forYou bool
	for _, it := range list(st, "news", "items") {
		if it["id"] == hoID && it["forYou"] == true {
			forYou = true
		}
	}
	if !forYou || len(st["handoffsForYou"].([]any)) != 1 {
		t.Fatalf("bo does not see the handoff: news %v, handoffsForYou %v", st["news"], st["handoffsForYou"])
	}
	acc := bo.call("respond_handoff", map[string]any{"handoffId": hoID, "response": "accept", "note": "on it"})
	if field(acc, "handoff", "status") != "accepted" {
		t.Fatalf("accept: %v", acc)
	}
	st = bo.call("workspace_status", nil)
	mine := st["yourClaims"].([]any)
	if len(mine) != 1 || field(mine[0].(map[string]any), "claimId") != claimID {
		t.Fatalf("the claim did not move to bo: %v", mine)
	}
	if st := ada.call("workspace_status", nil); len(st["yourClaims"].([]any)) != 0 {
		t.Fatalf("ada still holds the claim: %v", st["yourClaims"])
	}
	// Now bo holds it: ada's overlapping claim is denied, naming bo.
	if again := ada.call("claim", map[string]any{"patterns": []string{"src/game/boss.gd"}}); again["status"] != "denied" || !strings.Contains(again["next"].(string), "bo@example.com") {
		t.Fatalf("ada's claim after the handoff: %v", again)
	}
	upd := bo.call("update_task", map[string]any{"taskId": taskID, "status": "in_progress", "assignee": "bo@example.com"})
	if field(upd, "task", "status") != "in_progress" {
		t.Fatalf("update_task: %v", upd)
	}
	listed := ada.call("list_tasks", nil)
	if tasks := listed["tasks"].([]any); len(tasks) != 1 || field(tasks[0].(map[string]any), "assignee") != "bo@example.com" {
		t.Fatalf("list_tasks: %v", listed)
	}
	bo.call("record_validation", map[string]any{"kind": "test", "name": "go test ./...", "status": "passed", "summary": "42 tests"})
	news := ada.call("read_feed", map[string]any{"kind": "validation"})
	if items := news["items"].([]any); len(items) != 1 || field(items[0].(map[string]any), "provider") != "cursor" {
		t.Fatalf("read_feed validations: %v", news)
	}
	rel := bo.call("release_claim", map[string]any{"all": true, "reason": "done"})
	if len(rel["released"].([]any)) != 1 {
		t.Fatalf("release: %v", rel)
	}
	// Bad input is a tool error that says what to do.
	if out, isErr := bo.callRaw("claim", map[string]any{"patterns": []string{"../etc/passwd"}}); !isErr || !strings.Contains(out["error"].(string), "repository-relative") {
		t.Fatalf("bad pattern: %v %v", out, isErr)
	}
	if out, isErr := bo.callRaw("claim", map[string]any{"patterns": "src"}); !isErr || !strings.Contains(out["error"].(string), "patterns") {
		t.Fatalf("wrong type: %v", out)
	}
}

// checkStamps asserts every envelope carries its agent's provider and
// session reference, and each replica's clientSequences are unique and
// increasing.
func checkStamps(t *testing.T, envs []*protocol.Envelope, want map[string][2]string) {
	t.Helper()
	if len(envs) == 0 {
		t.Fatal("no envelopes")
	}
	last := map[string]int64{}
	for _, e := range envs {
		w, ok := want[e.ActorID]
		if !ok {
			t.Fatalf("unexpected actor %q", e.ActorID)
		}
		if e.Agent == nil || string(e.Agent.Provider) != w[0] || e.Agent.AdapterID != "crosscode-mcp" {
			t.Fatalf("%s by %s: agent %+v, want provider %s", e.Type, e.ActorID, e.Agent, w[0])
		}
		if w[1] != "" && e.Agent.SessionReference != w[1] {
			t.Fatalf("%s by %s: sessionReference %q, want %q", e.Type, e.ActorID, e.Agent.SessionReference, w[1])
		}
		if e.Agent.SessionReference == "" || e.SessionID == "" {
			t.Fatalf("%s: no session reference or session id", e.Type)
		}
		if e.ClientSequence <= last[e.ReplicaID] {
			t.Fatalf("replica %s: clientSequence %d after %d", e.ReplicaID, e.ClientSequence, last[e.ReplicaID])
		}
		last[e.ReplicaID] = e.ClientSequence
	}
}

func TestTwoAgentsLocalMode(t *testing.T) {
	sysdeps.Need(t, "git") // a worktree's agent shares the clone's workspace
	repo := gitRepo(t)
	// ada works in the main checkout, bo in a linked worktree of the same clone.
	wt := filepath.Join(t.TempDir(), "mygame-vfx")
	if out, err := exec.Command("git", "-C", repo, "worktree", "add", "-q", "-b", "vfx", wt).CombinedOutput(); err != nil {
		t.Fatalf("worktree: %v %s", err, out)
	}
	ada := startAgent(t, "ada", agentOpts{clientName: "claude-code", dir: repo, args: []string{"--actor", "ada@example.com"}, env: []string{"CLAUDE_CODE_SESSION_ID=claude-sess-1"}})
	bo := startAgent(t, "bo", agentOpts{clientName: "Cursor", dir: wt, args: []string{"--actor", "bo@example.com"}})
	if st := bo.call("workspace_status", nil); st["workspace"] != "mygame" || st["mode"] != "local" {
		t.Fatalf("a worktree must share the clone's workspace: %v", st)
	}
	collaborate(t, ada, bo)

	// kill -9 right after a tool answered: the answer's envelope is durable.
	in := ada.call("publish_intent", map[string]any{"summary": "last words", "paths": []string{"docs/**"}})
	seq := int64(field(in, "write", "serverSequence").(float64))
	ada.kill9()
	ada2 := startAgent(t, "ada again", agentOpts{clientName: "claude-code", dir: repo, args: []string{"--actor", "ada@example.com"}, env: []string{"CLAUDE_CODE_SESSION_ID=claude-sess-2"}})
	in2 := ada2.call("publish_intent", map[string]any{"summary": "back", "paths": []string{"docs/**"}})
	if int64(field(in2, "write", "serverSequence").(float64)) != seq+1 {
		t.Fatalf("after kill -9: sequence %v, want %d", in2["write"], seq+1)
	}
	ada2.c.Close()
	bo.c.Close()

	envs := storetest.ReadLog(t, filepath.Join(repo, ".git", "crosscode", "workspace.db"), "mygame")
	if last := envs[len(envs)-1]; last.Intent() == nil || last.Intent().Summary != "back" || envs[seq-1].Intent().Summary != "last words" {
		t.Fatalf("the acknowledged intent before kill -9 is not at %d", seq)
	}
	for _, e := range envs {
		if e.ActorID == "ada@example.com" && e.Agent.SessionReference != "claude-sess-1" && e.Agent.SessionReference != "claude-sess-2" {
			t.Fatalf("ada's envelope without Claude's session id: %+v", e.Agent)
		}
	}
	checkStamps(t, envs, map[string][2]string{"ada@example.com": {"claude-code", ""}, "bo@example.com": {"cursor", ""}})
	fmt.Fprintf(os.Stderr, "local mode: %d envelopes\n", len(envs))
}

func TestTwoAgentsRemoteMode(t *testing.T) {
	hubData := t.TempDir()
	token := createToken(t, hubData, "mygame")
	svc := startServe(t, hubData)
	repo := gitRepo(t)
	remote := []string{"--service", svc.URL, "--token", token}
	ada := startAgent(t, "ada", agentOpts{clientName: "claude-code", dir: repo, args: append([]string{"--actor", "ada@example.com"}, remote...), env: []string{"CLAUDE_CODE_SESSION_ID=claude-sess-r"}})
	bo := startAgent(t, "bo", agentOpts{clientName: "cursor", dir: repo, args: append([]string{"--actor", "bo@example.com", "--session-ref", "bo-ref"}, remote...)})
	if st := ada.call("workspace_status", nil); st["mode"] != "remote" || field(st, "service", "connected") != true {
		t.Fatalf("remote status: %v", st)
	}
	collaborate(t, ada, bo)

	// The service dies while ada works: her writes are queued, durable.
	svc.cmd.Process.Signal(syscall.SIGKILL)
	<-svc.exited
	queued := ada.call("publish_intent", map[string]any{"summary": "while the service is down", "paths": []string{"assets/**"}})
	if field(queued, "write", "status") != "queued" {
		t.Fatalf("write while the service is down: %v", queued["write"])
	}
	pending := ada.call("claim", map[string]any{"patterns": []string{"assets/ui/**"}})
	if pending["status"] != "pending" || pending["likely"] != "granted" {
		t.Fatalf("claim while the service is down: %v", pending)
	}
	if st := ada.call("workspace_status", nil); field(st, "service", "connected") != false || field(st, "service", "pendingUploads").(float64) != 2 {
		t.Fatalf("status while down: %v", st["service"])
	}
	// ada's server is killed right after a tool answered "queued".
	ada.kill9()

	// The service comes back on the same address; a restarted ada uploads
	// her outbox in order, exactly once.
	host := strings.TrimPrefix(svc.URL, "http://")
	svc = startServe(t, hubData, "--listen", host)
	ada = startAgent(t, "ada again", agentOpts{clientName: "claude-code", dir: repo, args: append([]string{"--actor", "ada@example.com"}, remote...), env: []string{"CLAUDE_CODE_SESSION_ID=claude-sess-r"}})
	waitFor(t, "ada's outbox to drain", func() bool {
		st, _ := ada.callRaw("workspace_status", nil)
		n, _ := field(st, "service", "pendingUploads").(float64)
		return field(st, "service", "connected") == true && n == 0
	})
	// bo sees what ada did while the service was down.
	var seenIntent bool
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline) && !seenIntent; {
		feed := bo.call("read_feed", map[string]any{"kind": "intent", "limit": 100})
		for _, it := range feed["items"].([]any) {
			if strings.Contains(field(it.(map[string]any), "text").(string), "while the service is down") {
				seenIntent = true
			}
		}
		if !seenIntent {
			time.Sleep(100 * time.Millisecond)
		}
	}
	if !seenIntent {
		t.Fatal("bo never saw the intent ada published while the service was down")
	}
	// bo's claim on the same paths is now denied: ada's queued claim was
	// ordered first when it landed.
	if c := bo.call("claim", map[string]any{"patterns": []string{"assets/ui/button.png"}}); c["status"] != "denied" {
		t.Fatalf("bo's claim over ada's uploaded claim: %v", c)
	}

	envs := newClient(t, svc.URL, token).events(t)
	count := map[string]int{}
	for _, e := range envs {
		if in := e.Intent(); in != nil {
			count[in.Summary]++
		}
	}
	if count["while the service is down"] != 1 {
		t.Fatalf("the queued intent landed %d times", count["while the service is down"])
	}
	checkStamps(t, envs, map[string][2]string{"ada@example.com": {"claude-code", "claude-sess-r"}, "bo@example.com": {"cursor", "bo-ref"}})
}
