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
	"sync"
	"testing"

	"github.com/crosscode/crosscode-mcp/bridge/hooks/wire"
)

var (
	hookClientOnce sync.Once
	hookClientPath string
	hookClientErr  error
)

// hookClient builds cmd/crosscode-hook once per test run.
func hookClient(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("needs the go command to build crosscode-hook")
	}
	hookClientOnce.Do(func() {
		dir, err := os.MkdirTemp("", "crosscode-hook-bin")
		if err != nil {
			hookClientErr = err
			return
		}
		hookClientPath = filepath.Join(dir, "crosscode-hook")
		out, err := exec.Command("go", "build", "-o", hookClientPath, "../crosscode-hook").CombinedOutput()
		if err != nil {
			hookClientErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if hookClientErr != nil {
		t.Fatal(hookClientErr)
	}
	return hookClientPath
}

// runHookClient runs crosscode-hook with args in dir, as the plugin's
// launcher does: crosscode-mcp (this test binary) in CROSSCODE_MCP_BIN.
func runHookClient(t *testing.T, dir string, env []string, input string, args ...string) hookRun {
	t.Helper()
	cmd := exec.Command(hookClient(t), args...)
	cmd.Dir = dir
	cmd.Env = append(command(t).Env, "CROSSCODE_MCP_BIN="+os.Args[0], "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"CROSSCODE_ACTOR=", "CROSSCODE_DATA=", "CROSSCODE_SERVICE=", "CROSSCODE_WORKSPACE=")
	cmd.Env = append(cmd.Env, env...)
	return runHookCmd(t, cmd, input)
}

// TestHookClient: crosscode-hook, the small hook client, real processes:
// with ada's MCP server running, bo's hooks are answered by it (the same
// answers as `crosscode-mcp hook` gives, flags and news too); in another
// environment, with the server killed (kill -9), or with a command line
// to correct, crosscode-mcp hook answers (from the database), the same;
// with no crosscode-mcp anywhere, the edit goes ahead and stderr says why.
func TestHookClient(t *testing.T) {
	t.Parallel() // mostly waiting on its processes: overlaps the package's other tests
	if runtime.GOOS == "windows" {
		t.Skip("crosscode-hook is served on unix only (it hands every run to crosscode-mcp hook on Windows)")
	}
	repo, wt := repoAndWorktree(t)
	rt := runtimeDir(t)
	same := []string{"HOME=" + os.Getenv("HOME"), "XDG_RUNTIME_DIR=" + rt, wire.TraceEnv + "=1"}
	ada := startAgent(t, "ada", agentOpts{clientName: "claude-code", dir: repo, args: []string{"--actor", "ada@example.com"}, env: same})
	boAgent := startAgent(t, "bo", agentOpts{clientName: "claude-code", dir: wt, args: []string{"--actor", "bo@example.com"},
		env: append([]string{"CLAUDE_CODE_SESSION_ID=bo-session"}, same...)})
	boAgent.call("workspace_status", nil) // bo's session is under way: it told its presence
	if c := ada.call("claim", map[string]any{"patterns": []string{"src/game/**"}, "reason": "boss fight"}); c["status"] != "granted" {
		t.Fatalf("claim: %v", c)
	}
	bo := append([]string{"CROSSCODE_ACTOR=bo@example.com"}, same...)
	// bo's session starts (its first look: news from here on), then ada
	// hands bo work.
	start := fmt.Sprintf(`{"session_id":"bo-session","cwd":%q,"hook_event_name":"SessionStart","source":"startup"}`, wt)
	if r := runHookClient(t, wt, bo, start, "claude-code", "SessionStart"); r.code != 0 || r.stdout != "" || !strings.Contains(r.stderr, "answered by the MCP server") {
		t.Fatalf("session start: %q %q", r.stdout, r.stderr)
	}
	ada.call("request_handoff", map[string]any{"toActor": "bo@example.com", "summary": "rework the boss fight", "claimIds": []string{}})
	// Two servers on the database: either answers (the newest is asked
	// first).
	served := regexp.MustCompile(fmt.Sprintf(`answered by the MCP server \(pid (%d|%d)\)`, ada.cmd.Process.Pid, boAgent.cmd.Process.Pid))

	held := editInput("bo-session", wt, "Edit", filepath.Join(wt, "src", "game", "boss.gd"))
	free := editInput("bo-session", wt, "Edit", filepath.Join(wt, "docs", "notes.md"))
	prompt := fmt.Sprintf(`{"session_id":"bo-session","cwd":%q,"hook_event_name":"UserPromptSubmit","prompt":"go"}`, wt)
	for _, c := range []struct {
		name, input string
		args        []string
	}{
		{"held", held, []string{"claude-code", "PreToolUse"}},
		{"held, policy warn", held, []string{"--policy", "warn", "claude-code", "PreToolUse"}},
		{"free", free, []string{"claude-code", "PreToolUse"}},
		{"news", prompt, []string{"claude-code", "UserPromptSubmit"}},
	} {
		r := runHookClient(t, wt, bo, c.input, c.args...)
		want := runHookCLI(t, wt, append(bo, wire.ServerEnv+"=off"), c.input, c.args...)
		if c.name == "news" {
			// Told once: by the server; crosscode-mcp hook after it has
			// nothing new to tell.
			want.stdout, r.stdout = r.stdout, r.stdout+want.stdout
		}
		if r.code != 0 || r.stdout != want.stdout || !served.MatchString(r.stderr) {
			t.Errorf("%s: crosscode-hook: exit %d, %q, stderr %q; crosscode-mcp hook from the database: %q", c.name, r.code, r.stdout, r.stderr, want.stdout)
		}
		switch c.name {
		case "held":
			if !strings.Contains(denial(r), "ada@example.com") {
				t.Errorf("held: want ada's denial: %q", r.stdout)
			}
		case "held, policy warn":
			if denial(r) != "" || !strings.Contains(hookContext(r), "ada@example.com") {
				t.Errorf("warn: want a note: %q", r.stdout)
			}
		case "news":
			if !strings.Contains(hookContext(r), "rework the boss fight") {
				t.Errorf("news: want ada's handoff: %q %q", r.stdout, r.stderr)
			}
		case "free":
			if r.stdout != "" {
				t.Errorf("free: want no answer: %q", r.stdout)
			}
		}
	}
	if r := runHookClient(t, wt, bo, prompt, "claude-code", "UserPromptSubmit"); r.stdout != "" {
		t.Errorf("news told again: %q", r.stdout)
	}

	// Another environment: crosscode-mcp hook answers, the same.
	other := []string{"CROSSCODE_ACTOR=bo@example.com", "XDG_RUNTIME_DIR=" + rt, wire.TraceEnv + "=1"}
	want := runHookCLI(t, wt, append(other, wire.ServerEnv+"=off"), held, "claude-code", "PreToolUse")
	r := runHookClient(t, wt, other, held, "claude-code", "PreToolUse")
	if r.stdout != want.stdout || !strings.Contains(r.stderr, "answered by the database (the MCP server did not serve it: the hook's HOME is not the server's)") {
		t.Errorf("another HOME: %q %q", r.stdout, r.stderr)
	}
	// A command line to correct: crosscode-mcp's usage, its exit code.
	if r := runHookClient(t, wt, bo, held, "claude-code"); r.code != 1 || !strings.Contains(r.stderr, "usage: crosscode-mcp hook") {
		t.Errorf("one argument: exit %d, stderr %q", r.code, r.stderr)
	}
	// No crosscode-mcp anywhere (and no server to ask): allowed, and why.
	r = runHookClient(t, wt, append(bo, "CROSSCODE_MCP_BIN=", "PATH=/usr/bin:/bin", wire.ServerEnv+"=off"), held, "claude-code", "PreToolUse")
	if r.code != 0 || r.stdout != "" || !strings.Contains(r.stderr, "no crosscode-mcp binary found") || !strings.Contains(r.stderr, "allowed unchecked") {
		t.Errorf("no crosscode-mcp: exit %d, %q, stderr %q", r.code, r.stdout, r.stderr)
	}

	// hooks install, from a crosscode-mcp with the hook client next to it
	// (as unpacked from a release archive), writes the client's command;
	// the client as Claude Code runs it (through sh, the settings' command
	// line as written) is served.
	bin := t.TempDir()
	for from, to := range map[string]string{os.Args[0]: "crosscode-mcp", hookClient(t): "crosscode-hook"} {
		if err := copyFile(from, filepath.Join(bin, to)); err != nil {
			t.Fatal(err)
		}
		os.Chmod(filepath.Join(bin, to), 0o755)
	}
	inst := exec.Command(filepath.Join(bin, "crosscode-mcp"), "hooks", "install", "--client", "claude-code", "--repo", wt, "--actor", "bo@example.com")
	inst.Env = command(t).Env
	if out, err := inst.CombinedOutput(); err != nil {
		t.Fatalf("hooks install: %v %s", err, out)
	}
	var settings struct {
		Hooks map[string][]struct{ Hooks []struct{ Command string } }
	}
	b, _ := os.ReadFile(filepath.Join(wt, ".claude", "settings.json"))
	if err := json.Unmarshal(b, &settings); err != nil || len(settings.Hooks["PreToolUse"]) != 1 {
		t.Fatalf("settings: %v %s", err, b)
	}
	line := settings.Hooks["PreToolUse"][0].Hooks[0].Command
	if want := "'" + filepath.Join(bin, "crosscode-hook") + "' --actor 'bo@example.com' claude-code PreToolUse"; line != want {
		t.Fatalf("installed command %q, want %q", line, want)
	}
	sh := exec.Command("sh", "-c", line)
	sh.Dir, sh.Env, sh.Stdin = wt, append(append(command(t).Env, same...), "CROSSCODE_ACTOR=", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1"), strings.NewReader(held)
	var so, se bytes.Buffer
	sh.Stdout, sh.Stderr = &so, &se
	if err := sh.Run(); err != nil || so.String() != off(t, wt, bo, held) || !served.MatchString(se.String()) {
		t.Errorf("the installed command: %v, %q, stderr %q", err, so.String(), se.String())
	}

	ada.kill9()
	boAgent.kill9()
	r = runHookClient(t, wt, bo, held, "claude-code", "PreToolUse")
	if !strings.Contains(denial(r), "ada@example.com") || !strings.Contains(r.stderr, "answered by the database (no MCP server answered)") {
		t.Errorf("after kill -9 of the server: %q %q", r.stdout, r.stderr)
	}
	if socks, _ := filepath.Glob(filepath.Join(rt, "crosscode-mcp", "*", "*.sock")); len(socks) != 0 {
		t.Errorf("the killed server's socket is still there: %v", socks)
	}
}

// TestHookClientDeps: crosscode-hook links the standard library, the
// exchange and the database's location only: none of what makes
// crosscode-mcp's start slow (SQLite, the MCP library, the protocol's
// schemas, the browser).
func TestHookClientDeps(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("needs the go command")
	}
	out, err := exec.Command("go", "list", "-deps", "../crosscode-hook").Output()
	if err != nil {
		t.Fatal(err)
	}
	allowed := map[string]bool{
		"github.com/crosscode/crosscode-mcp/cmd/crosscode-hook": true,
		"github.com/crosscode/crosscode-mcp/bridge/hooks/wire":  true,
		"github.com/crosscode/crosscode-mcp/internal/location":  true,
	}
	for _, p := range strings.Fields(string(out)) {
		if strings.Contains(strings.SplitN(p, "/", 2)[0], ".") && !allowed[p] {
			t.Errorf("crosscode-hook links %s", p)
		}
	}
}

// off is crosscode-mcp hook's answer from the database.
func off(t *testing.T, dir string, env []string, input string) string {
	t.Helper()
	return runHookCLI(t, dir, append(env, wire.ServerEnv+"=off"), input, "claude-code", "PreToolUse").stdout
}
