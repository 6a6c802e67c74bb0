package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/crosscode/crosscode-mcp/bridge/hooks/wire"
	"github.com/crosscode/crosscode-mcp/internal/testing/sysdeps"
)

// hookRun is one run of `crosscode-mcp hook ...` as a client runs it.
type hookRun struct {
	stdout, stderr string
	code           int
	out            map[string]any // stdout decoded, nil when empty
}

// runHookCLI runs `crosscode-mcp hook args...` in dir with input on stdin.
func runHookCLI(t *testing.T, dir string, env []string, input string, args ...string) hookRun {
	t.Helper()
	cmd := command(t, append([]string{"hook"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(cmd.Env, "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1", "CROSSCODE_ACTOR=", "CROSSCODE_DATA=", "CROSSCODE_SERVICE=", "CROSSCODE_WORKSPACE=")
	cmd.Env = append(cmd.Env, env...)
	return runHookCmd(t, cmd, input)
}

// runHookCmd runs a hook's command with input on stdin: its output, its
// stdout as the one JSON object a hook prints.
func runHookCmd(t *testing.T, cmd *exec.Cmd, input string) hookRun {
	t.Helper()
	cmd.Stdin = strings.NewReader(input)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errorsAs(err, &ee) {
		t.Fatal(err)
	}
	r := hookRun{stdout: stdout.String(), stderr: stderr.String(), code: cmd.ProcessState.ExitCode()}
	if s := strings.TrimSpace(r.stdout); s != "" {
		if err := json.Unmarshal([]byte(s), &r.out); err != nil || strings.Count(s, "\n") > 0 {
			t.Fatalf("hook stdout is not one JSON object: %q (stderr %q)", r.stdout, r.stderr)
		}
	}
	return r
}

func errorsAs(err error, target **exec.ExitError) bool {
	e, ok := err.(*exec.ExitError)
	if ok {
		*target = e
	}
	return ok
}

// editInput is Claude Code's PreToolUse input for tool on file.
func editInput(session, cwd, tool, file string) string {
	field := "file_path"
	if tool == "NotebookEdit" {
		field = "notebook_path"
	}
	b, _ := json.Marshal(map[string]any{"session_id": session, "transcript_path": "/tmp/t.jsonl", "cwd": cwd, "hook_event_name": "PreToolUse",
		"tool_name": tool, "tool_input": map[string]any{field: file, "old_string": "a", "new_string": "b"}})
	return string(b)
}

// denial returns a Claude Code / Codex PreToolUse denial's reason, "" if
// the answer is not a denial.
func denial(r hookRun) string {
	h, _ := r.out["hookSpecificOutput"].(map[string]any)
	if h["permissionDecision"] != "deny" || h["hookEventName"] != "PreToolUse" {
		return ""
	}
	s, _ := h["permissionDecisionReason"].(string)
	return s
}

func hookContext(r hookRun) string {
	h, _ := r.out["hookSpecificOutput"].(map[string]any)
	s, _ := h["additionalContext"].(string)
	return s
}

// addWorktree adds a linked worktree of repo on a new branch.
func addWorktree(t *testing.T, repo, name string) string {
	t.Helper()
	wt := filepath.Join(t.TempDir(), name)
	if out, err := exec.Command("git", "-C", repo, "worktree", "add", "-q", "-b", name, wt).CombinedOutput(); err != nil {
		t.Fatalf("worktree: %v %s", err, out)
	}
	if r, err := filepath.EvalSymlinks(wt); err == nil {
		wt = r
	}
	return wt
}

// TestHookStopsEditsOfClaimedFiles: with ada's exclusive claim on
// src/game/**, bo's Edit of a file there, named any way (absolute,
// relative, through a symlink, in the other worktree), is denied with
// ada's name and claim; a free file and a tool that edits nothing pass;
// Gemini CLI's and Codex's inputs get their own formats; ada's own edit
// passes, her identity found as her MCP server's.
func TestHookStopsEditsOfClaimedFiles(t *testing.T) {
	t.Parallel() // mostly waiting on its processes: overlaps the package's other tests
	repo, wt := repoAndWorktree(t)
	ada := startAgent(t, "ada", agentOpts{clientName: "claude-code", dir: repo, args: []string{"--actor", "ada@example.com"}, env: []string{"CLAUDE_CODE_SESSION_ID=ada-session"}})
	c := ada.call("claim", map[string]any{"patterns": []string{"src/game/**"}, "reason": "boss fight"})
	if c["status"] != "granted" {
		t.Fatalf("claim: %v", c)
	}
	claimID := c["claimId"].(string)
	bo := []string{"CROSSCODE_ACTOR=bo@example.com"}

	if runtime.GOOS != "windows" {
		os.Symlink(filepath.Join(wt, "src", "game"), filepath.Join(wt, "game-link"))
	}
	for _, tc := range []struct{ name, cwd, tool, file string }{
		{"absolute", wt, "Edit", filepath.Join(wt, "src", "game", "boss.gd")},
		{"relative", wt, "Write", filepath.Join("src", "game", "new_boss.gd")},
		{"relative from a subdirectory", filepath.Join(wt, "src"), "MultiEdit", filepath.Join("game", "boss.gd")},
		{"in the other worktree", wt, "Edit", filepath.Join(repo, "src", "game", "boss.gd")},
		{"notebook", wt, "NotebookEdit", filepath.Join(wt, "src", "game", "notes.ipynb")},
		{"through a symlink", wt, "Edit", filepath.Join(wt, "game-link", "boss.gd")},
	} {
		if tc.name == "through a symlink" && runtime.GOOS == "windows" {
			continue
		}
		r := runHookCLI(t, tc.cwd, bo, editInput("bo-session", tc.cwd, tc.tool, tc.file), "claude-code", "PreToolUse")
		reason := denial(r)
		if r.code != 0 || reason == "" || !strings.Contains(reason, "ada@example.com") || !strings.Contains(reason, claimID) ||
			!strings.Contains(reason, "src/game/") || !strings.Contains(reason, "request_handoff") {
			t.Errorf("%s: want a denial naming ada and %s: exit %d, stdout %q, stderr %q", tc.name, claimID, r.code, r.stdout, r.stderr)
		}
	}
	for _, tc := range []struct{ name, tool, file string }{
		{"a free file", "Edit", filepath.Join(wt, "docs", "notes.md")},
		{"a tool that edits nothing", "Read", filepath.Join(wt, "src", "game", "boss.gd")},
	} {
		r := runHookCLI(t, wt, bo, editInput("bo-session", wt, tc.tool, tc.file), "claude-code", "PreToolUse")
		if r.code != 0 || r.stdout != "" {
			t.Errorf("%s: want no answer (the edit goes on): exit %d, stdout %q, stderr %q", tc.name, r.code, r.stdout, r.stderr)
		}
	}

	// Gemini CLI: BeforeTool, write_file; its denial is {"decision":"deny","reason"}.
	gem, _ := json.Marshal(map[string]any{"session_id": "bo-gemini", "cwd": wt, "hook_event_name": "BeforeTool", "timestamp": "2026-12-02T08:00:00Z",
		"tool_name": "write_file", "tool_input": map[string]any{"file_path": filepath.Join(wt, "src", "game", "boss.gd"), "content": "x"}})
	r := runHookCLI(t, wt, bo, string(gem), "gemini", "BeforeTool")
	if reason, _ := r.out["reason"].(string); r.out["decision"] != "deny" || !strings.Contains(reason, "ada@example.com") || len(r.out) != 2 {
		t.Errorf("gemini: want {decision: deny, reason}: %q %q", r.stdout, r.stderr)
	}
	// Codex: PreToolUse of apply_patch, the files named in the patch.
	patch := "*** Begin Patch\n*** Update File: docs/notes.md\n@@\n-a\n+b\n*** Update File: src/game/boss.gd\n@@\n-a\n+b\n*** End Patch\n"
	cdx, _ := json.Marshal(map[string]any{"session_id": "bo-codex", "cwd": wt, "hook_event_name": "PreToolUse", "model": "m", "permission_mode": "default",
		"tool_name": "apply_patch", "tool_use_id": "call_1", "turn_id": "1", "transcript_path": nil, "tool_input": map[string]any{"command": patch}})
	r = runHookCLI(t, wt, bo, string(cdx), "codex", "PreToolUse")
	if reason := denial(r); !strings.Contains(reason, "src/game/boss.gd") || strings.Contains(reason, "docs/notes.md") {
		t.Errorf("codex: want a denial of src/game/boss.gd alone: %q %q", r.stdout, r.stderr)
	}
	// ada's own edit: no actor given, so the hook takes the one her MCP
	// server reported for her session (not git's user.email, unset here).
	r = runHookCLI(t, repo, nil, editInput("ada-session", repo, "Edit", filepath.Join(repo, "src", "game", "boss.gd")), "claude-code", "PreToolUse")
	if r.code != 0 || r.stdout != "" {
		t.Errorf("ada's own edit: want no answer: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	// Policy warn: the edit goes, with a note naming the holder.
	r = runHookCLI(t, wt, bo, editInput("bo-session", wt, "Edit", filepath.Join(wt, "src", "game", "boss.gd")), "--policy", "warn", "claude-code", "PreToolUse")
	if note := hookContext(r); denial(r) != "" || !strings.Contains(note, "ada@example.com") {
		t.Errorf("warn: want a note, not a denial: %q", r.stdout)
	}
}

var claimIDRe = regexp.MustCompile(`clm_[A-Za-z0-9_-]+`)

// TestHookPolicyClaim: with the policy claim, bo's edit of a free file
// takes an exclusive claim for bo first, which other agents see and which
// stops ada's edit; bo's later edits need no new claim; bo's
// release_claim of all releases it with the others.
func TestHookPolicyClaim(t *testing.T) {
	repo, wt := repoAndWorktree(t)
	os.MkdirAll(filepath.Join(wt, ".crosscode"), 0o755)
	os.WriteFile(filepath.Join(wt, ".crosscode", "hooks.json"), []byte(`{"policy": "claim", "claimTTL": "10m"}`), 0o644)
	ada := startAgent(t, "ada", agentOpts{clientName: "claude-code", dir: repo, args: []string{"--actor", "ada@example.com"}, env: []string{"CLAUDE_CODE_SESSION_ID=ada-session"}})
	boAgent := startAgent(t, "bo", agentOpts{clientName: "claude-code", dir: wt, args: []string{"--actor", "bo@example.com"}, env: []string{"CLAUDE_CODE_SESSION_ID=bo-session"}})
	boFile := filepath.Join(wt, "src", "menu.gd")
	boAgent.call("workspace_status", nil) // its session is under way: it told its presence

	r := runHookCLI(t, wt, nil, editInput("bo-session", wt, "Write", boFile), "claude-code", "PreToolUse")
	note := hookContext(r)
	id := claimIDRe.FindString(note)
	if denial(r) != "" || !strings.Contains(note, "claimed src/menu.gd") || id == "" {
		t.Fatalf("bo's first edit: want a claim taken: %q %q", r.stdout, r.stderr)
	}
	cc := ada.call("check_conflicts", map[string]any{"paths": []string{"src/menu.gd"}})
	if b, _ := json.Marshal(cc["claims"]); !strings.Contains(string(b), id) || !strings.Contains(string(b), "bo@example.com") {
		t.Fatalf("ada's check_conflicts does not show bo's claim %s: %v", id, cc["claims"])
	}
	r = runHookCLI(t, repo, nil, editInput("ada-session", repo, "Edit", filepath.Join(repo, "src", "menu.gd")), "claude-code", "PreToolUse")
	if reason := denial(r); !strings.Contains(reason, "bo@example.com") || !strings.Contains(reason, id) {
		t.Fatalf("ada's edit of bo's file: want a denial: %q %q", r.stdout, r.stderr)
	}
	r = runHookCLI(t, wt, nil, editInput("bo-session", wt, "Edit", boFile), "claude-code", "PreToolUse")
	if r.stdout != "" {
		t.Fatalf("bo's second edit: want no answer (his claim covers it): %q %q", r.stdout, r.stderr)
	}
	rel := boAgent.call("release_claim", map[string]any{"all": true})
	if b, _ := json.Marshal(rel["released"]); !strings.Contains(string(b), id) {
		t.Fatalf("release_claim all did not release the hook's claim %s: %v", id, rel)
	}
	r = runHookCLI(t, repo, nil, editInput("ada-session", repo, "Edit", filepath.Join(repo, "src", "menu.gd")), "claude-code", "PreToolUse")
	if denial(r) != "" {
		t.Fatalf("ada's edit after the release: %q", r.stdout)
	}
}

// TestHookNews: a handoff to ada reaches her context at her next prompt
// without a tool call, is not repeated in her next tool result nor at the
// prompt after, and comes again at a session start while it is open; the
// news is capped at 2 KB.
func TestHookNews(t *testing.T) {
	t.Parallel() // mostly waiting on its processes: overlaps the package's other tests
	sysdeps.Need(t, "git")
	repo := gitRepo(t)
	wt := addWorktree(t, repo, "bo")
	ada := startAgent(t, "ada", agentOpts{clientName: "claude-code", dir: repo, args: []string{"--actor", "ada@example.com"}, env: []string{"CLAUDE_CODE_SESSION_ID=ada-session"}})
	bo := startAgent(t, "bo", agentOpts{clientName: "claude-code", dir: wt, args: []string{"--actor", "bo@example.com"}})
	prompt := func(event string) hookRun {
		in, _ := json.Marshal(map[string]any{"session_id": "ada-session", "cwd": repo, "hook_event_name": event, "prompt": "go on", "source": "startup"})
		return runHookCLI(t, repo, nil, string(in), "claude-code", event)
	}
	ada.call("workspace_status", nil) // her session is under way: it told its presence
	if r := prompt("SessionStart"); r.code != 0 || r.stdout != "" {
		t.Fatalf("session start with no news: %q %q", r.stdout, r.stderr)
	}
	h := bo.call("request_handoff", map[string]any{"toActor": "ada@example.com", "summary": "finish the boss fight", "claimIds": []string{}})
	hid := field(h, "handoff", "handoffId").(string)

	r := prompt("UserPromptSubmit")
	text := hookContext(r)
	if h, _ := r.out["hookSpecificOutput"].(map[string]any); h["hookEventName"] != "UserPromptSubmit" || !strings.Contains(text, "finish the boss fight") ||
		!strings.Contains(text, hid) || !strings.Contains(text, "bo@example.com") {
		t.Fatalf("prompt: want the handoff in the context: %q %q", r.stdout, r.stderr)
	}
	st := ada.call("workspace_status", nil)
	if b, _ := json.Marshal(st["news"]); strings.Contains(string(b), hid) {
		t.Fatalf("ada's next tool result repeats the news the hook gave: %s", b)
	}
	if r := prompt("UserPromptSubmit"); r.stdout != "" {
		t.Fatalf("the next prompt repeats the news: %q", r.stdout)
	}
	if text := hookContext(prompt("SessionStart")); !strings.Contains(text, hid) || !strings.Contains(text, "respond_handoff") {
		t.Fatalf("session start: want the open handoff again: %q", text)
	}
	// Many events that concern ada: the news stays within 2 KB.
	for i := range 30 {
		bo.call("record_validation", map[string]any{"kind": "test", "name": fmt.Sprintf("suite %d", i), "status": "failed",
			"summary": strings.Repeat("the boss does not die ", 8)})
	}
	text = hookContext(prompt("UserPromptSubmit"))
	if len(text) > 2048 || !strings.Contains(text, "failed") || !strings.Contains(text, "read_feed") {
		t.Fatalf("capped news: %d bytes: %q", len(text), text)
	}
}

// TestHookBadInputIsSafe: input it cannot use, state it cannot read: the
// hook exits 0 with nothing on stdout and the reason on stderr; with
// --strict it denies the edit in the client's format. It never waits past
// its deadline for input that does not end.
func TestHookBadInputIsSafe(t *testing.T) {
	t.Parallel() // mostly waiting on its processes: overlaps the package's other tests
	sysdeps.Need(t, "git")
	repo := gitRepo(t)
	ada := startAgent(t, "ada", agentOpts{clientName: "claude-code", dir: repo, args: []string{"--actor", "ada@example.com"}})
	ada.call("claim", map[string]any{"patterns": []string{"src/**"}})
	ada.c.Close()      // the database stays
	bare := gitRepo(t) // no server ever ran here: no data dir
	corrupt := gitRepo(t)
	os.MkdirAll(filepath.Join(corrupt, ".git", "crosscode"), 0o700)
	os.WriteFile(filepath.Join(corrupt, ".git", "crosscode", "workspace.db"), bytes.Repeat([]byte("not a database "), 500), 0o600)
	edit := func(dir, file string) string { return editInput("s", dir, "Edit", file) }
	for _, tc := range []struct{ name, dir, input, why string }{
		{"malformed JSON", repo, `{"session_id": "s", "tool_name": "Edit", "tool_input": {`, "malformed hook input"},
		{"not an object", repo, `["Edit"]`, "malformed hook input"},
		{"too large", repo, `{"session_id":"` + strings.Repeat("x", 2<<20) + `"}`, "larger than"},
		{"a path outside the repository", repo, edit(repo, filepath.Join(filepath.Dir(repo), "elsewhere.txt")), "outside the repository"},
		{"inside .git", repo, edit(repo, filepath.Join(repo, ".git", "config")), "outside the repository"},
		{"missing data dir", bare, edit(bare, filepath.Join(bare, "src", "game", "boss.gd")), "no coordination state"},
		{"corrupt database", corrupt, edit(corrupt, filepath.Join(corrupt, "src", "game", "boss.gd")), "open "},
	} {
		env := []string{"CROSSCODE_ACTOR=bo@example.com"}
		r := runHookCLI(t, tc.dir, env, tc.input, "claude-code", "PreToolUse")
		if r.code != 0 || r.stdout != "" || !strings.Contains(r.stderr, tc.why) || !strings.Contains(r.stderr, "allowed without a check") {
			t.Errorf("%s: want exit 0, no stdout, %q on stderr: exit %d, stdout %q, stderr %q", tc.name, tc.why, r.code, r.stdout, r.stderr)
		}
		r = runHookCLI(t, tc.dir, env, tc.input, "--strict", "claude-code", "PreToolUse")
		if reason := denial(r); r.code != 0 || !strings.Contains(reason, tc.why) || !strings.Contains(reason, "--strict") {
			t.Errorf("%s --strict: want a denial saying why: exit %d, stdout %q, stderr %q", tc.name, r.code, r.stdout, r.stderr)
		}
		gem := strings.Replace(tc.input, `"tool_name":"Edit"`, `"tool_name":"replace"`, 1)
		r = runHookCLI(t, tc.dir, env, gem, "--strict", "gemini", "BeforeTool")
		if r.out["decision"] != "deny" {
			t.Errorf("%s --strict, gemini: want its denial: %q", tc.name, r.stdout)
		}
		// News events never deny; they say nothing on stdout.
		r = runHookCLI(t, tc.dir, env, tc.input, "--strict", "claude-code", "UserPromptSubmit")
		if r.code != 0 || r.stdout != "" {
			t.Errorf("%s, UserPromptSubmit: exit %d, stdout %q", tc.name, r.code, r.stdout)
		}
	}
	// Input that never ends: the answer comes at the deadline.
	cmd := command(t, "hook", "--strict", "claude-code", "PreToolUse")
	cmd.Dir = repo
	cmd.Env = append(cmd.Env, "CROSSCODE_ACTOR=bo@example.com")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	stdin.Write([]byte(`{"session_id": "s", `))
	out, err := cmd.Output()
	if err != nil || !strings.Contains(string(out), `"permissionDecision":"deny"`) || !strings.Contains(string(out), "no answer within") {
		t.Fatalf("input that never ends: %v %q", err, out)
	}
	// A mistake on the command line exits 1 (which does not stop the
	// client), with nothing on stdout.
	if r := runHookCLI(t, repo, nil, "{}", "vim", "PreToolUse"); r.code != 1 || r.stdout != "" {
		t.Fatalf("unknown client: exit %d, stdout %q", r.code, r.stdout)
	}
}

// TestHooksInstallCLI: `hooks install` writes the entries into the
// repository's Claude Code settings beside the user's own hooks, with the
// server flags given, twice changes nothing, doctor reports them, and
// `hooks uninstall` gives the file back byte for byte.
func TestHooksInstallCLI(t *testing.T) {
	sysdeps.Need(t, "git")
	repo := gitRepo(t)
	settings := filepath.Join(repo, ".claude", "settings.json")
	os.MkdirAll(filepath.Dir(settings), 0o755)
	orig := "{\n  \"hooks\": {\n    \"Stop\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"say done\"}]}]\n  }\n}\n"
	os.WriteFile(settings, []byte(orig), 0o644)
	home := t.TempDir()
	cli := func(args ...string) (string, string, int) {
		cmd := command(t, args...)
		cmd.Env = append(cmd.Env, "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"), "GIT_CONFIG_GLOBAL=/dev/null")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		cmd.Run()
		return stdout.String(), stderr.String(), cmd.ProcessState.ExitCode()
	}
	if out, errOut, code := cli("hooks", "install", "--client", "claude-code", "--repo", repo, "--actor", "ada@example.com", "--policy", "claim"); code != 0 || !strings.Contains(out, "installed") {
		t.Fatalf("install: %d %s %s", code, out, errOut)
	}
	b, _ := os.ReadFile(settings)
	var v struct {
		Hooks map[string][]struct {
			Matcher string
			Hooks   []struct{ Command string }
		}
	}
	if err := json.Unmarshal(b, &v); err != nil || len(v.Hooks["Stop"]) != 1 || len(v.Hooks["PreToolUse"]) != 1 {
		t.Fatalf("settings after install: %v\n%s", err, b)
	}
	if c := v.Hooks["PreToolUse"][0].Hooks[0].Command; !strings.Contains(c, "hook --actor 'ada@example.com' --policy 'claim' claude-code PreToolUse") {
		t.Fatalf("PreToolUse command: %s", c)
	}
	if out, _, code := cli("hooks", "install", "--client", "claude-code", "--repo", repo, "--actor", "ada@example.com", "--policy", "claim"); code != 0 || !strings.Contains(out, "already") {
		t.Fatalf("second install: %d %s", code, out)
	}
	if again, _ := os.ReadFile(settings); !bytes.Equal(again, b) {
		t.Fatalf("second install changed the file")
	}
	out, _, _ := cli("doctor", "--repo", repo, "--json")
	var d struct{ Checks []Check }
	json.Unmarshal([]byte(out), &d)
	found := false
	for _, c := range d.Checks {
		found = found || (c.Name == "hooks claude-code" && c.Status == "ok" && strings.Contains(c.Detail, "PreToolUse, SessionStart, UserPromptSubmit"))
	}
	if !found {
		t.Fatalf("doctor does not report the hooks: %s", out)
	}
	if out, errOut, code := cli("hooks", "uninstall", "--client", "claude-code", "--repo", repo); code != 0 || !strings.Contains(out, "removed") {
		t.Fatalf("uninstall: %d %s %s", code, out, errOut)
	}
	if back, _ := os.ReadFile(settings); string(back) != orig {
		t.Fatalf("uninstall did not give the file back:\n%s", back)
	}
	if _, errOut, code := cli("hooks", "install", "--client", "vim", "--repo", repo); code != 2 || !strings.Contains(errOut, "unknown client") {
		t.Fatalf("unknown client: %d %s", code, errOut)
	}
}

// TestHookRemoteModeOffline: in remote mode the hook answers from the
// local mirror and outbox, with the service down: a claim the mirror holds
// and a claim still queued in the outbox both stop the edit.
func TestHookRemoteModeOffline(t *testing.T) {
	sysdeps.Need(t, "git")
	hubData := t.TempDir()
	token := createToken(t, hubData, "mygame")
	svc := startServe(t, hubData)
	repo := gitRepo(t)
	wt := addWorktree(t, repo, "bo")
	args := []string{"--actor", "ada@example.com", "--service", svc.URL, "--token", token}
	ada := startAgent(t, "ada", agentOpts{clientName: "claude-code", dir: repo, args: args})
	if c := ada.call("claim", map[string]any{"patterns": []string{"src/game/**"}}); c["status"] != "granted" {
		t.Fatalf("claim: %v", c)
	}
	svc.cmd.Process.Kill()
	<-svc.exited
	queued := ada.call("claim", map[string]any{"patterns": []string{"assets/**"}})
	if queued["status"] != "pending" {
		t.Fatalf("a claim with the service down: %v", queued)
	}
	bo := []string{"CROSSCODE_ACTOR=bo@example.com", "CROSSCODE_SERVICE=" + svc.URL}
	r := runHookCLI(t, wt, bo, editInput("bo-session", wt, "Edit", filepath.Join(wt, "src", "game", "boss.gd")), "claude-code", "PreToolUse")
	if reason := denial(r); !strings.Contains(reason, "ada@example.com") {
		t.Fatalf("the mirror's claim: want a denial: %q %q", r.stdout, r.stderr)
	}
	r = runHookCLI(t, wt, bo, editInput("bo-session", wt, "Write", filepath.Join(wt, "assets", "boss.png")), "claude-code", "PreToolUse")
	if reason := denial(r); !strings.Contains(reason, queued["claimId"].(string)) || !strings.Contains(reason, "queued on this machine") {
		t.Fatalf("the outbox's claim: want a denial: %q %q", r.stdout, r.stderr)
	}
}

// TestHookQuoter: a path with a space and a quote survives each client's
// shell: sh's single quotes, PowerShell's (quote doubled), cmd.exe's
// double quotes.
func TestHookQuoter(t *testing.T) {
	for _, tc := range []struct{ goos, client, want string }{
		{"linux", "claude-code", `'C:/My Tools/it'\''s/crosscode-mcp'`},
		{"windows", "claude-code", `'C:/My Tools/it'\''s/crosscode-mcp'`},
		{"windows", "gemini", `'C:/My Tools/it''s/crosscode-mcp'`},
		{"windows", "codex", `"C:/My Tools/it's/crosscode-mcp"`},
		{"darwin", "codex", `'C:/My Tools/it'\''s/crosscode-mcp'`},
	} {
		if got := hookQuoter(tc.goos, tc.client)("C:/My Tools/it's/crosscode-mcp"); got != tc.want {
			t.Errorf("%s %s: %s, want %s", tc.goos, tc.client, got, tc.want)
		}
	}
}

// TestHookClaimRemoteUploaded: in remote mode the hook's claim (policy
// claim) is queued in the outbox with no network call, and the agent's
// MCP server uploads it: the service's log gets it, stamped with the
// client's session id.
func TestHookClaimRemoteUploaded(t *testing.T) {
	sysdeps.Need(t, "git")
	hubData := t.TempDir()
	token := createToken(t, hubData, "mygame")
	svc := startServe(t, hubData)
	repo := gitRepo(t)
	args := []string{"--actor", "ada@example.com", "--service", svc.URL, "--token", token}
	ada := startAgent(t, "ada", agentOpts{clientName: "claude-code", dir: repo, args: args, env: []string{"CLAUDE_CODE_SESSION_ID=ada-session"}})
	ada.call("workspace_status", nil)
	env := []string{"CROSSCODE_SERVICE=" + svc.URL}
	r := runHookCLI(t, repo, env, editInput("ada-session", repo, "Write", filepath.Join(repo, "src", "menu.gd")), "--policy", "claim", "claude-code", "PreToolUse")
	id := claimIDRe.FindString(hookContext(r))
	if id == "" || !strings.Contains(hookContext(r), "claimed src/menu.gd") {
		t.Fatalf("the hook did not claim: %q %q", r.stdout, r.stderr)
	}
	c := newClient(t, svc.URL, token)
	waitFor(t, "the hook's claim at the service", func() bool {
		for _, e := range c.events(t) {
			if e.ID == id {
				if e.ActorID != "ada@example.com" || e.Agent == nil || e.Agent.SessionReference != "ada-session" {
					t.Fatalf("the claim at the service: actor %s, agent %+v", e.ActorID, e.Agent)
				}
				return true
			}
		}
		return false
	})
}

// TestDoctorPackages: doctor recognises the plugin (Claude Code, Codex)
// and the extension (Gemini CLI), says which binary their hooks run, warns
// when there is none, and does not call their hooks missing; it warns a
// Codex user only while the plugin would start the server through npx
// (no binary found) and Codex would not wait for it; beside hooks wired
// by hand it says which run.
func TestDoctorPackages(t *testing.T) {
	sysdeps.Need(t, "git")
	repo := gitRepo(t)
	home := t.TempDir()
	cache := filepath.Join(home, ".cache")
	// PATH without crosscode-mcp: the packages find the recorded binary or none.
	var path []string
	for _, d := range filepath.SplitList(os.Getenv("PATH")) {
		_, err := os.Stat(filepath.Join(d, "crosscode-mcp"))
		if _, errExe := os.Stat(filepath.Join(d, "crosscode-mcp.exe")); err != nil && errExe != nil {
			path = append(path, d)
		}
	}
	cli := func(args ...string) map[string]Check {
		cmd := command(t, args...)
		cmd.Env = append(cmd.Env, "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"), "XDG_CACHE_HOME="+cache, "CODEX_HOME=", "GIT_CONFIG_GLOBAL=/dev/null",
			"PATH="+strings.Join(path, string(os.PathListSeparator)))
		out, _ := cmd.Output()
		var d struct{ Checks []Check }
		if err := json.Unmarshal(out, &d); err != nil {
			t.Fatalf("doctor --json: %v\n%s", err, out)
		}
		m := map[string]Check{}
		for _, c := range d.Checks {
			m[c.Name] = c
		}
		return m
	}
	os.MkdirAll(filepath.Join(home, ".claude"), 0o755)
	os.WriteFile(filepath.Join(home, ".claude", "settings.json"), []byte(`{"enabledPlugins": {"crosscode@crosscode": true, "other@x": true}}`), 0o644)
	os.MkdirAll(filepath.Join(home, ".codex"), 0o755)
	os.WriteFile(filepath.Join(home, ".codex", "config.toml"), []byte("[plugins.\"crosscode@crosscode\"]\nenabled = false\n"), 0o644)
	os.MkdirAll(filepath.Join(home, ".gemini", "extensions", "crosscode"), 0o755)
	os.WriteFile(filepath.Join(home, ".gemini", "extensions", "crosscode", "gemini-extension.json"), []byte(`{"name":"crosscode","version":"0.1.0"}`), 0o644)

	checks := cli("doctor", "--repo", repo, "--json")
	if c := checks["package claude-code"]; c.Status != "warn" || !strings.Contains(c.Detail, "crosscode@crosscode") || !strings.Contains(c.Fix, "start the agent once") {
		t.Errorf("no binary recorded yet: %+v", c)
	}
	if c, ok := checks["package codex"]; ok {
		t.Errorf("a disabled Codex plugin is reported: %+v", c)
	}
	if _, ok := checks["package gemini"]; !ok {
		t.Errorf("the Gemini extension is not reported: %v", checks)
	}
	if c, ok := checks["hooks"]; ok {
		t.Errorf("doctor says no hooks are installed beside the packages: %+v", c)
	}

	bin := filepath.Join(home, "bin", "crosscode-mcp")
	os.MkdirAll(filepath.Dir(bin), 0o755)
	os.WriteFile(bin, []byte("x"), 0o755)
	os.MkdirAll(filepath.Join(cache, "crosscode-mcp"), 0o755)
	os.WriteFile(filepath.Join(cache, "crosscode-mcp", "binary"), []byte(bin+"\n"), 0o644)
	codexConfig := filepath.Join(home, ".codex", "config.toml")
	os.WriteFile(codexConfig, []byte("[plugins.\"crosscode@crosscode\"]\nenabled = true\n"), 0o644)
	checks = cli("doctor", "--repo", repo, "--json")
	if c := checks["package claude-code"]; c.Status != "ok" || !strings.Contains(c.Detail, "its hooks run "+bin) {
		t.Errorf("with the binary recorded: %+v", c)
	}
	// Codex waits 1 s for a server unless told more: the plugin starts the
	// recorded binary itself, in time.
	if c := checks["package codex"]; c.Status != "ok" || strings.Contains(c.Detail, "within 1000 ms") || c.Fix != "" {
		t.Errorf("Codex with its default startup grace and a binary to start: %+v", c)
	}
	// With no binary to start, the plugin goes through npx, which may need
	// longer.
	os.Rename(filepath.Join(cache, "crosscode-mcp", "binary"), filepath.Join(cache, "crosscode-mcp", "binary.away"))
	checks = cli("doctor", "--repo", repo, "--json")
	if c := checks["package codex"]; c.Status != "warn" || !strings.Contains(c.Detail, "within 1000 ms") || !strings.Contains(c.Detail, "through npx") ||
		!strings.Contains(c.Fix, "start the agent once") || !strings.Contains(c.Fix, "mcp_optional_startup_grace_ms = 30000 at the top of "+codexConfig) {
		t.Errorf("Codex with its default startup grace and no binary: %+v", c)
	}
	os.WriteFile(codexConfig, []byte("mcp_optional_startup_grace_ms = 30000\n[plugins.\"crosscode@crosscode\"]\nenabled = true\n"), 0o644)
	checks = cli("doctor", "--repo", repo, "--json")
	if c := checks["package codex"]; strings.Contains(c.Detail, "within") || strings.Contains(c.Fix, "grace") {
		t.Errorf("Codex with a startup grace of 30 s: %+v", c)
	}
	os.Rename(filepath.Join(cache, "crosscode-mcp", "binary.away"), filepath.Join(cache, "crosscode-mcp", "binary"))

	if out, err := command(t, "hooks", "install", "--client", "claude-code", "--repo", repo).CombinedOutput(); err != nil {
		t.Fatalf("hooks install: %v %s", err, out)
	}
	checks = cli("doctor", "--repo", repo, "--json")
	if c := checks["package claude-code"]; c.Status != "ok" || !strings.Contains(c.Detail, "hooks wired by hand for claude-code run instead") {
		t.Errorf("beside hand-wired hooks: %+v", c)
	}
}

// TestHookServedByServer: with ada's MCP server running on the
// repository's database, bo's hooks (in another worktree, with another
// actor) are answered by that server, real processes both: the same
// denial as from the database, a claim the policy takes for bo that
// stops ada's edit; after kill -9 of the server, its socket is passed
// over and removed and the hook answers from the database.
func TestHookServedByServer(t *testing.T) {
	repo, wt := repoAndWorktree(t)
	rt := runtimeDir(t)
	same := []string{"HOME=" + os.Getenv("HOME"), "XDG_RUNTIME_DIR=" + rt, wire.TraceEnv + "=1"}
	ada := startAgent(t, "ada", agentOpts{clientName: "claude-code", dir: repo, args: []string{"--actor", "ada@example.com"}, env: same})
	if c := ada.call("claim", map[string]any{"patterns": []string{"src/game/**"}, "reason": "boss fight"}); c["status"] != "granted" {
		t.Fatalf("claim: %v", c)
	}
	bo := append([]string{"CROSSCODE_ACTOR=bo@example.com"}, same...)
	served := fmt.Sprintf("answered by the MCP server (pid %d)", ada.cmd.Process.Pid)
	if runtime.GOOS == "windows" {
		served = "answered by the database (hooks are served by the MCP server on unix systems only)"
	}
	held := editInput("bo-session", wt, "Edit", filepath.Join(wt, "src", "game", "boss.gd"))
	r := runHookCLI(t, wt, bo, held, "claude-code", "PreToolUse")
	if !strings.Contains(denial(r), "ada@example.com") || !strings.Contains(r.stderr, served) {
		t.Fatalf("bo's edit of ada's file: want a denial %s: %q %q", served, r.stdout, r.stderr)
	}
	off := runHookCLI(t, wt, append(bo, wire.ServerEnv+"=off"), held, "claude-code", "PreToolUse")
	if off.stdout != r.stdout || !strings.Contains(off.stderr, "answered by the database") {
		t.Errorf("from the database: %q %q, served: %q", off.stdout, off.stderr, r.stdout)
	}
	// Another environment (a HOME of its own, as the other tests' hooks
	// have): the database answers, the same.
	other := runHookCLI(t, wt, []string{"CROSSCODE_ACTOR=bo@example.com", "XDG_RUNTIME_DIR=" + rt, wire.TraceEnv + "=1"}, held, "claude-code", "PreToolUse")
	if other.stdout != r.stdout || !strings.Contains(other.stderr, "answered by the database") {
		t.Errorf("another HOME: %q %q", other.stdout, other.stderr)
	}
	// The policy claim, served: bo's edit of a free file claims it for
	// bo, and ada's edit of it is then denied.
	free := editInput("bo-session", wt, "Write", filepath.Join(wt, "docs", "free.md"))
	r = runHookCLI(t, wt, bo, free, "--policy", "claim", "claude-code", "PreToolUse")
	if note := hookContext(r); !strings.Contains(note, "claimed docs/free.md for you") || !strings.Contains(r.stderr, served) {
		t.Errorf("policy claim: %q %q", r.stdout, r.stderr)
	}
	r = runHookCLI(t, repo, append([]string{"CROSSCODE_ACTOR=ada@example.com"}, same...), editInput("ada-session", repo, "Edit", filepath.Join(repo, "docs", "free.md")), "claude-code", "PreToolUse")
	if !strings.Contains(denial(r), "bo@example.com") {
		t.Errorf("ada's edit of the file bo's hook claimed: %q %q", r.stdout, r.stderr)
	}

	ada.kill9()
	r = runHookCLI(t, wt, bo, held, "claude-code", "PreToolUse")
	if r.stdout != off.stdout || !strings.Contains(r.stderr, "answered by the database") {
		t.Errorf("after kill -9 of the server: %q %q", r.stdout, r.stderr)
	}
	socks, _ := filepath.Glob(filepath.Join(rt, "crosscode-mcp", "*", "*.sock"))
	if len(socks) != 0 {
		t.Errorf("the killed server's socket is still there: %v", socks)
	}
}

// repoAndWorktree is a repository (its path with symlinks resolved, as
// the hooks report paths) and a worktree of it, bo's.
func repoAndWorktree(t *testing.T) (repo, wt string) {
	t.Helper()
	sysdeps.Need(t, "git")
	repo = gitRepo(t)
	if r, err := filepath.EvalSymlinks(repo); err == nil {
		repo = r
	}
	return repo, addWorktree(t, repo, "bo")
}

// runtimeDir is a folder for the hook sockets (XDG_RUNTIME_DIR) of the
// test's processes, short: a socket's path is at most 104 bytes on macOS.
func runtimeDir(t *testing.T) string {
	t.Helper()
	rt, err := os.MkdirTemp("", "cchk")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(rt) })
	return rt
}
