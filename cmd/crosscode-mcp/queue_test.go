package main

// End-to-end tests of claims that wait their turn (spec section 14): real
// stdio servers in worktrees of one repository (local mode) and against
// `serve` (remote mode), real hooks, kill -9.

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/crosscode/crosscode-mcp/internal/testing/sysdeps"
)

// claimCall is a claim call that may wait: its result, or its error
// (a call the test cut short), and the progress notifications it got.
type claimCall struct {
	out      map[string]any
	err      error
	progress int
}

// claimWaiting calls claim on a with args, for at most timeout (a
// shorter timeout is a client that gives up: it cancels the call), asking
// for progress.
func (a *agent) claimWaiting(args map[string]any, timeout time.Duration) claimCall {
	a.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	token := "claim-" + a.name + "-" + time.Now().Format("150405.000000000")
	var mu sync.Mutex
	progress := 0
	a.c.OnNotification(func(n mcpgo.JSONRPCNotification) {
		if n.Method == "notifications/progress" && n.Params.AdditionalFields["progressToken"] == token {
			mu.Lock()
			progress++
			mu.Unlock()
		}
	})
	req := mcpgo.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = "claim", args
	req.Params.Meta = &mcpgo.Meta{ProgressToken: token}
	res, err := a.c.CallTool(ctx, req)
	mu.Lock()
	defer mu.Unlock()
	if err != nil {
		return claimCall{err: err, progress: progress}
	}
	if checkResult != nil {
		if err := checkResult(context.Background(), a.c, "claim", res); err != nil {
			a.t.Fatalf("%s: claim result: %v", a.name, err)
		}
	}
	var out map[string]any
	text := res.Content[0].(mcpgo.TextContent).Text
	if res.IsError {
		return claimCall{out: map[string]any{"error": text}, progress: progress}
	}
	if err := json.Unmarshal([]byte(text), &out); err != nil {
		a.t.Fatal(err)
	}
	return claimCall{out: out, progress: progress}
}

// queueClaim makes a claim that waits for up to waitSeconds and gives up
// on the call after a moment, as a client that moves on does: the claim
// stays queued.
func (a *agent) queueClaim(path, reason string, waitSeconds int) string {
	a.t.Helper()
	c := a.claimWaiting(map[string]any{"patterns": []string{path}, "reason": reason, "waitSeconds": waitSeconds}, 1500*time.Millisecond)
	if c.out != nil {
		if c.out["status"] != "queued" {
			a.t.Fatalf("%s: claim %s: %v", a.name, path, c.out)
		}
		return c.out["claimId"].(string)
	}
	return a.waitingClaim(path)
}

// waitingClaim is a's queued claim on path, as workspace_status lists it.
func (a *agent) waitingClaim(path string) string {
	a.t.Helper()
	var id string
	waitFor(a.t, a.name+"'s queued claim on "+path, func() bool {
		st, _ := a.callRaw("workspace_status", nil)
		for _, c := range asList(st["yourClaims"]) {
			c := c.(map[string]any)
			if pats := asList(c["patterns"]); c["status"] == "queued" && len(pats) == 1 && pats[0] == path {
				id = c["claimId"].(string)
			}
		}
		return id != ""
	})
	return id
}

func asList(v any) []any { l, _ := v.([]any); return l }

// holds reports whether a's claim id is active, as workspace_status says.
func (a *agent) holds(id string) bool {
	st, _ := a.callRaw("workspace_status", nil)
	for _, c := range asList(st["yourClaims"]) {
		if c := c.(map[string]any); c["claimId"] == id && c["status"] == "active" {
			return true
		}
	}
	return false
}

// waitLong is waitFor for what takes up to a lease's end: polled every
// 200 ms, for up to two minutes.
func waitLong(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); !cond(); time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func jsonText(v any) string { b, _ := json.Marshal(v); return string(b) }

// newsOf returns the news items of a result with the given event.
func newsOf(out map[string]any, event string) []map[string]any {
	var got []map[string]any
	for _, it := range asList(field(out, "news", "items")) {
		if m := it.(map[string]any); m["event"] == event {
			got = append(got, m)
		}
	}
	return got
}

// promptHook runs the agent's UserPromptSubmit hook (Claude Code) in dir
// for session and returns the context it adds.
func promptHook(t *testing.T, dir, session string) string {
	t.Helper()
	in, _ := json.Marshal(map[string]any{"session_id": session, "cwd": dir, "hook_event_name": "UserPromptSubmit", "prompt": "go on"})
	return hookContext(runHookCLI(t, dir, nil, string(in), "claude-code", "UserPromptSubmit"))
}

// TestClaimQueueWorktrees: three agents in three worktrees of one
// repository (local mode, one shared database) queue on one file. The
// holder's news names the waiters and why; the line is first come, first
// served; the grant reaches a waiter whose call gave up at its next prompt
// (the hook) or its next tool result, once, and a waiter whose call still
// waits in that call, with progress meanwhile; leases run from the grant.
// A wait that runs out answers wait_expired; 2- and 3-cycles are refused
// at the claim that closes them; a withdrawn claim leaves the line; a
// waiter killed -9 stays in line until its wait ends, and then no longer
// holds it up.
func TestClaimQueueWorktrees(t *testing.T) {
	t.Parallel() // mostly waiting on its processes: overlaps the package's other tests
	sysdeps.Need(t, "git")
	repo := gitRepo(t)
	wtBo, wtCy := addWorktree(t, repo, "bo"), addWorktree(t, repo, "cy")
	ada := startAgent(t, "ada", agentOpts{clientName: "claude-code", dir: repo, args: []string{"--actor", "ada@example.com"}, env: []string{"CLAUDE_CODE_SESSION_ID=ada-s"}})
	bo := startAgent(t, "bo", agentOpts{clientName: "claude-code", dir: wtBo, args: []string{"--actor", "bo@example.com"}, env: []string{"CLAUDE_CODE_SESSION_ID=bo-s"}})
	cy := startAgent(t, "cy", agentOpts{clientName: "cursor", dir: wtCy, args: []string{"--actor", "cy@example.com"}})
	for _, a := range []*agent{ada, bo, cy} {
		a.call("workspace_status", nil) // sessions under way
	}
	promptHook(t, wtBo, "bo-s") // bo's hooks have looked once: news starts now

	held := ada.call("claim", map[string]any{"patterns": []string{"src/game/boss.gd"}, "reason": "phase 2", "ttlMinutes": 30})
	// bo's edit is denied at once, and the denial says how to wait.
	boss := filepath.Join(wtBo, "src", "game", "boss.gd")
	if reason := denial(runHookCLI(t, wtBo, nil, editInput("bo-s", wtBo, "Edit", boss), "claude-code", "PreToolUse")); !strings.Contains(reason, held["claimId"].(string)) || !strings.Contains(reason, "waitSeconds") {
		t.Fatalf("bo's edit: %q", reason)
	}
	boID := bo.queueClaim("src/game/boss.gd", "boss intro", 600)
	// The hook's policy claim never queues: dee's edit is denied, and dee
	// claims nothing.
	dee := []string{"CROSSCODE_ACTOR=dee@example.com"}
	if reason := denial(runHookCLI(t, wtBo, dee, editInput("dee-s", wtBo, "Edit", boss), "--policy", "claim", "claude-code", "PreToolUse")); !strings.Contains(reason, "waitSeconds") {
		t.Fatalf("dee's edit under the policy claim: %q", reason)
	}
	// cy's call waits, with progress, while bo is first in line.
	cyDone := make(chan claimCall, 1)
	go func() {
		cyDone <- cy.claimWaiting(map[string]any{"patterns": []string{"src/game/*.gd"}, "reason": "all the scripts", "waitSeconds": 600, "ttlMinutes": 20}, 120*time.Second)
	}()
	var st map[string]any
	var told []string // ada's news of claims waiting for hers
	waitFor(t, "ada's news to name both waiters", func() bool {
		st = ada.call("workspace_status", nil)
		for _, it := range newsOf(st, "claim.created") {
			if txt := it["text"].(string); strings.Contains(txt, "waits for your claim "+held["claimId"].(string)) && it["forYou"] == true {
				told = append(told, it["actor"].(string)+": "+txt)
			}
		}
		q := asList(field(asList(st["yourClaims"])[0].(map[string]any), "queue"))
		return len(q) == 2 && len(told) == 2
	})
	if !strings.Contains(told[0], "bo@example.com: ") || !strings.Contains(told[0], "boss intro") || !strings.Contains(told[1], "cy@example.com: ") || !strings.Contains(told[1], "all the scripts") {
		t.Fatalf("ada's news of the waiters: %q", told)
	}
	q := asList(field(asList(st["yourClaims"])[0].(map[string]any), "queue"))
	if len(q) != 2 || field(q[0].(map[string]any), "actor") != "bo@example.com" || field(q[1].(map[string]any), "actor") != "cy@example.com" || field(q[0].(map[string]any), "reason") != "boss intro" {
		t.Fatalf("ada's queue: %v", q)
	}
	time.Sleep(6 * time.Second) // cy's call reports progress meanwhile
	before := time.Now()
	ada.call("release_claim", map[string]any{"claimIds": []string{held["claimId"].(string)}})

	// bo, first in line, is granted; its next prompt's hook tells it, and
	// its next tool result does not repeat it.
	text := promptHook(t, wtBo, "bo-s")
	if !strings.Contains(text, boID) || !strings.Contains(text, "granted") {
		t.Fatalf("bo's prompt hook: %q", text)
	}
	if g := newsOf(bo.call("workspace_status", nil), "claim.granted"); len(g) != 0 {
		t.Fatalf("bo told twice: %v", g)
	}
	boSt := bo.call("workspace_status", nil)
	mine := asList(boSt["yourClaims"])[0].(map[string]any)
	exp, _ := time.Parse(time.RFC3339Nano, mine["expiresAt"].(string))
	if mine["status"] != "active" || exp.Before(before.Add(30*time.Minute-time.Minute)) || exp.After(time.Now().Add(30*time.Minute+time.Minute)) {
		t.Fatalf("bo's lease runs from the grant: %v", mine)
	}
	select {
	case c := <-cyDone:
		t.Fatalf("cy was granted before bo released: %v", c)
	default:
	}
	bo.call("release_claim", map[string]any{"all": true})
	var cyCall claimCall
	select {
	case cyCall = <-cyDone:
	case <-time.After(60 * time.Second):
		t.Fatal("cy's waiting call did not answer after bo released")
	}
	if cyCall.err != nil || cyCall.out["status"] != "granted" || cyCall.out["grantedAt"] == nil || cyCall.progress == 0 {
		t.Fatalf("cy's waiting call: %+v", cyCall)
	}
	cy.call("release_claim", map[string]any{"all": true})

	// A wait that runs out with the call.
	level := ada.call("claim", map[string]any{"patterns": []string{"src/game/level.gd"}})
	if c := bo.claimWaiting(map[string]any{"patterns": []string{"src/game/level.gd"}, "waitSeconds": 2}, 30*time.Second); c.err != nil || c.out["status"] != "wait_expired" ||
		!strings.Contains(jsonText(c.out["conflicts"]), level["claimId"].(string)) || !strings.Contains(c.out["next"].(string), "ada@example.com holds src/game/level.gd") {
		t.Fatalf("short wait: %+v", c)
	}

	// Deadlocks, refused at the claim that closes the cycle.
	ada.call("claim", map[string]any{"patterns": []string{"a.gd"}})
	bo.call("claim", map[string]any{"patterns": []string{"b.gd"}})
	cy.call("claim", map[string]any{"patterns": []string{"c.gd"}})
	ada.queueClaim("b.gd", "a needs b", 600)
	if c := bo.claimWaiting(map[string]any{"patterns": []string{"a.gd"}, "waitSeconds": 600}, 30*time.Second); c.err != nil || c.out["status"] != "denied" || c.out["reason"] != "DEADLOCK" || len(asList(c.out["cycle"])) != 2 {
		t.Fatalf("2-cycle: %+v", c)
	}
	bo.queueClaim("c.gd", "b needs c", 600)
	c3 := cy.claimWaiting(map[string]any{"patterns": []string{"a.gd"}, "waitSeconds": 600}, 30*time.Second)
	if c3.err != nil || c3.out["status"] != "denied" || c3.out["reason"] != "DEADLOCK" || len(asList(c3.out["cycle"])) != 3 ||
		!strings.Contains(c3.out["next"].(string), "ada@example.com") || !strings.Contains(c3.out["next"].(string), "bo@example.com") {
		t.Fatalf("3-cycle: %+v", c3)
	}
	// ada withdraws: bo's wait for c.gd is untouched, ada's is gone.
	out := ada.call("release_claim", map[string]any{"claimIds": []string{ada.waitingClaim("b.gd")}})
	if len(asList(out["withdrawn"])) != 1 {
		t.Fatalf("withdrawal: %v", out)
	}
	bo.waitingClaim("c.gd")

	// A waiter killed -9 stays in line until its wait ends, and then no
	// longer holds the line up.
	hold := cy.call("claim", map[string]any{"patterns": []string{"src/game/hud.gd"}})
	deadID := bo.queueClaim("src/game/hud.gd", "then killed", 3)
	bo.kill9()
	adaWait := make(chan claimCall, 1)
	go func() {
		adaWait <- ada.claimWaiting(map[string]any{"patterns": []string{"src/game/hud.gd"}, "waitSeconds": 120}, 90*time.Second)
	}()
	time.Sleep(4 * time.Second) // past the killed waiter's wait
	cy.call("release_claim", map[string]any{"claimIds": []string{hold["claimId"].(string)}})
	select {
	case c := <-adaWait:
		if c.err != nil || c.out["status"] != "granted" {
			t.Fatalf("behind a dead waiter: %+v", c)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the line stayed held up by a dead waiter")
	}
	cc := cy.call("check_conflicts", map[string]any{"paths": []string{"src/game/hud.gd"}})
	if strings.Contains(jsonText(cc), deadID) {
		t.Fatalf("the dead waiter's claim still shows: %v", cc)
	}
}

// TestClaimQueueRemote: two agents in worktrees of one clone and a third
// in another clone, all through `serve`: the line is the log's, the same
// for every replica; a holder killed -9 keeps its lease to its end, and
// the next in line is granted then; a waiter's grant during a service
// outage is computed once the log is back, the same everywhere.
func TestClaimQueueRemote(t *testing.T) {
	t.Parallel() // mostly waiting on its processes: overlaps the package's other tests
	sysdeps.Need(t, "git")
	hubData := t.TempDir()
	token := createToken(t, hubData, "mygame")
	svc := startServe(t, hubData)
	remote := func(actor string) []string {
		return []string{"--actor", actor, "--service", svc.URL, "--token", token, "--workspace", "mygame"}
	}
	repo1, repo2 := gitRepo(t), gitRepo(t)
	wt := addWorktree(t, repo1, "bo")
	ada := startAgent(t, "ada", agentOpts{clientName: "claude-code", dir: repo1, args: remote("ada@example.com"), env: []string{"CLAUDE_CODE_SESSION_ID=ada-r"}})
	bo := startAgent(t, "bo", agentOpts{clientName: "claude-code", dir: wt, args: remote("bo@example.com"), env: []string{"CLAUDE_CODE_SESSION_ID=bo-r"}})
	cy := startAgent(t, "cy", agentOpts{clientName: "codex", dir: repo2, args: remote("cy@example.com")})

	// The holder's lease is a minute: it is killed -9 and its claim holds
	// to the end of the lease, then bo, first in line, gets the file.
	held := ada.call("claim", map[string]any{"patterns": []string{"src/game/boss.gd"}, "ttlMinutes": 1})
	heldUntil, _ := time.Parse(time.RFC3339Nano, held["expiresAt"].(string))
	boID := bo.queueClaim("src/game/boss.gd", "boss intro", 900)
	cyID := cy.queueClaim("src/game/boss.gd", "after bo", 900)
	// Every replica sees the same line.
	for _, a := range []*agent{ada, bo, cy} {
		var line []string
		waitFor(t, a.name+" to see the line", func() bool {
			dee, _ := a.callRaw("check_conflicts", map[string]any{"paths": []string{"src/game/boss.gd"}})
			line = nil
			for _, c := range asList(dee["claims"]) {
				for _, w := range asList(field(c.(map[string]any), "queue")) {
					line = append(line, field(w.(map[string]any), "claimId").(string))
				}
			}
			return len(line) == 2 || a == ada
		})
		if a != ada && strings.Join(line, ",") != boID+","+cyID {
			t.Fatalf("%s sees the line %v, want %s then %s", a.name, line, boID, cyID)
		}
	}
	ada.kill9()
	if time.Now().After(heldUntil) {
		t.Fatal("the test was too slow for the one-minute lease")
	}
	waitLong(t, "bo's grant when ada's lease ends", func() bool { return bo.holds(boID) })
	if time.Now().Before(heldUntil) {
		t.Fatalf("bo was granted before the dead holder's lease ended at %s", heldUntil)
	}

	// The service goes down while cy waits; bo releases meanwhile (queued
	// in its outbox). When the service is back, cy is granted, and every
	// replica agrees.
	svc.cmd.Process.Signal(syscall.SIGKILL)
	<-svc.exited
	if out := bo.call("release_claim", map[string]any{"claimIds": []string{boID}}); field(asList(out["writes"])[0].(map[string]any), "status") != "queued" {
		t.Fatalf("release while the service is down: %v", out)
	}
	host := strings.TrimPrefix(svc.URL, "http://")
	svc = startServe(t, hubData, "--listen", host)
	waitFor(t, "cy's grant once the log is back", func() bool { return cy.holds(cyID) })
	// bo's replica (the worktree's mirror) sees cy holding it, as cy does.
	waitFor(t, "bo to see cy's grant", func() bool {
		cc, _ := bo.callRaw("check_conflicts", map[string]any{"paths": []string{"src/game/boss.gd"}})
		cs := asList(cc["claims"])
		return len(cs) == 1 && field(cs[0].(map[string]any), "claimId") == cyID && field(cs[0].(map[string]any), "status") == "active"
	})
}
