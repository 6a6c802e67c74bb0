//go:build unix

package hooks

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crosscode/crosscode-mcp/bridge/hooks/wire"
	"github.com/crosscode/crosscode-mcp/internal/identity"
	"github.com/crosscode/crosscode-mcp/protocol"
	"github.com/crosscode/crosscode-mcp/store"
)

// servedRepo is a git repository whose database has ada's exclusive
// claim on src/game/**: bo's edits there are denied.
type servedRepo struct {
	top, db string
	st      *store.Store
}

func newServedRepo(t *testing.T) *servedRepo {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("needs git")
	}
	// The sockets' directory, short (a socket's path is at most 104
	// bytes on macOS) and the test's own.
	rt, err := os.MkdirTemp("/tmp", "cchk")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(rt) })
	t.Setenv("XDG_RUNTIME_DIR", rt)
	top := filepath.Join(t.TempDir(), "mygame")
	if out, err := exec.Command("git", "init", "-q", top).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	top, _ = filepath.EvalSymlinks(top)
	db := identity.DatabasePath(filepath.Join(top, ".git", "crosscode"), "", "mygame")
	os.MkdirAll(filepath.Dir(db), 0o755)
	ctx := context.Background()
	st, err := store.Open(ctx, db, &store.Options{Projections: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if _, err := st.EnsureWorkspace(ctx, "mygame", ""); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	e := &protocol.Envelope{ID: "clm_ada", SchemaVersion: protocol.SchemaVersion, WorkspaceID: "mygame", ReplicaID: "rep_ada", ActorID: "ada@example.com",
		SessionID: "ses_ada", Type: protocol.EventClaimCreated, CreatedAt: now,
		Payload: &protocol.Claim{ID: "clm_ada", WorkspaceID: "mygame", ActorID: "ada@example.com", ReplicaID: "rep_ada",
			Patterns: []string{"src/game/**"}, Exclusive: true, Reason: "boss fight", CreatedAt: now, ExpiresAt: now.Add(time.Hour)}}
	res, err := st.IngestBatch(ctx, []store.Item{{Workspace: "mygame", Envelope: e, NextSequence: true}})
	if err != nil || res[0].Err != nil {
		t.Fatalf("claim: %v %v", err, res)
	}
	return &servedRepo{top: top, db: db, st: st}
}

// hook runs one hook as `crosscode-mcp hook` would, with env as its
// environment (nothing else of the process's).
func (r *servedRepo) hook(t *testing.T, env map[string]string, client, event, input string) (stdout, stderr string) {
	t.Helper()
	env = mapsWith(env, wire.TraceEnv, "1")
	var out, errOut bytes.Buffer
	err := Run(context.Background(), Config{Client: client, Event: event, Actor: "bo@example.com", Dir: r.top,
		Getenv: func(n string) string { return env[n] }}, strings.NewReader(input), &out, &errOut)
	if err != nil {
		t.Fatal(err)
	}
	return out.String(), errOut.String()
}

func mapsWith(m map[string]string, kv ...string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

// processEnv is the test process's values of sameEnv: what a hook the
// server serves must have.
func processEnv() map[string]string { return wire.Env(wire.SameEnv, os.Getenv) }

func (r *servedRepo) edit(file string) string {
	b, _ := json.Marshal(map[string]any{"session_id": "bo-session", "cwd": r.top, "hook_event_name": "PreToolUse",
		"tool_name": "Edit", "tool_input": map[string]any{"file_path": filepath.Join(r.top, file), "old_string": "a", "new_string": "b"}})
	return string(b)
}

// TestServedHooks: with a listener on the database, a hook's answer comes
// from it and is the one the hook gives from the database itself, for a
// denial, a free file and news; the trace says which answered.
func TestServedHooks(t *testing.T) {
	r := newServedRepo(t)
	env := processEnv()
	held, free := r.edit("src/game/boss.gd"), r.edit("docs/notes.md")
	prompt, _ := json.Marshal(map[string]any{"session_id": "bo-session", "cwd": r.top, "hook_event_name": "UserPromptSubmit", "prompt": "go"})

	type result struct{ stdout, stderr string }
	direct := map[string]result{}
	for name, in := range map[string]string{"held": held, "free": free, "prompt": string(prompt)} {
		event := "PreToolUse"
		if name == "prompt" {
			event = "UserPromptSubmit"
		}
		out, errOut := r.hook(t, env, "claude-code", event, in)
		if !strings.Contains(errOut, "answered by the database (no MCP server runs on this database)") {
			t.Fatalf("%s without a server: stderr %q", name, errOut)
		}
		direct[name] = result{out, errOut}
	}
	if !strings.Contains(direct["held"].stdout, `"permissionDecision":"deny"`) || !strings.Contains(direct["held"].stdout, "ada@example.com") {
		t.Fatalf("held file: want ada's denial: %q", direct["held"].stdout)
	}

	l, err := Listen(r.db, r.st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if fi, err := os.Stat(l.Path()); err != nil || fi.Mode()&os.ModeSocket == 0 {
		t.Fatalf("socket %s: %v", l.Path(), err)
	}
	for name, in := range map[string]string{"held": held, "free": free, "prompt": string(prompt)} {
		event := "PreToolUse"
		if name == "prompt" {
			event = "UserPromptSubmit"
		}
		out, errOut := r.hook(t, env, "claude-code", event, in)
		if out != direct[name].stdout {
			t.Errorf("%s: served %q, from the database %q", name, out, direct[name].stdout)
		}
		if want := fmt.Sprintf("answered by the MCP server (pid %d)", os.Getpid()); !strings.Contains(errOut, want) {
			t.Errorf("%s: want it served (%q), stderr %q", name, want, errOut)
		}
	}
	// Gemini's format, through the server too.
	gem, _ := json.Marshal(map[string]any{"session_id": "bo-gemini", "cwd": r.top, "hook_event_name": "BeforeTool",
		"tool_name": "write_file", "tool_input": map[string]any{"file_path": filepath.Join(r.top, "src/game/boss.gd"), "content": "x"}})
	out, errOut := r.hook(t, env, "gemini", "BeforeTool", string(gem))
	if !strings.Contains(out, `"decision":"deny"`) || !strings.Contains(errOut, "answered by the MCP server") {
		t.Errorf("gemini: %q %q", out, errOut)
	}
	// Off: the database.
	out, errOut = r.hook(t, mapsWith(env, wire.ServerEnv, "off"), "claude-code", "PreToolUse", held)
	if out != direct["held"].stdout || !strings.Contains(errOut, "answered by the database ("+wire.ServerEnv+"=off)") {
		t.Errorf("off: %q %q", out, errOut)
	}
}

// TestServedHooksRefused: a server does not serve a hook whose
// environment would make git answer otherwise, nor a request it cannot
// read; the hook answers from the database, the same answer.
func TestServedHooksRefused(t *testing.T) {
	r := newServedRepo(t)
	l, err := Listen(r.db, r.st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	held := r.edit("src/game/boss.gd")
	want, _ := r.hook(t, processEnv(), "claude-code", "PreToolUse", held)
	for _, name := range []string{"HOME", "GIT_CONFIG_GLOBAL"} {
		out, errOut := r.hook(t, mapsWith(processEnv(), name, "/elsewhere"), "claude-code", "PreToolUse", held)
		if out != want || !strings.Contains(errOut, "answered by the database (the MCP server did not serve it: the hook's "+name+" is not the server's)") {
			t.Errorf("%s differs: %q %q", name, out, errOut)
		}
	}
	// Each refused with its reason, nothing run.
	for _, c := range []struct{ req, why string }{
		{"not json\n", "malformed request"},
		{`{"v":99}` + "\n", "request version 99"},
		{`{"v":1,"client":"vim","event":"x"}` + "\n", `unknown client "vim"`},
		{`{"v":1,"client":"claude-code","event":"PreToolUse","policy":"maybe"}` + "\n", "maybe"},
		{`{"v":1,"client":"claude-code","event":"PreToolUse","dir":"relative","timeoutMs":1000,"sameEnv":` + sameEnvJSON() + `}` + "\n", "not absolute"},
		{`{"v":1,"client":"claude-code","event":"PreToolUse","dir":"/","timeoutMs":-5,"sameEnv":` + sameEnvJSON() + `}` + "\n", "no time left"},
	} {
		conn, err := net.Dial("unix", l.Path())
		if err != nil {
			t.Fatal(err)
		}
		conn.Write([]byte(c.req))
		b, _ := io.ReadAll(conn)
		conn.Close()
		var rep wire.Reply
		if err := json.Unmarshal(b, &rep); err != nil || !strings.Contains(rep.Refused, c.why) || rep.Stdout != "" || rep.Stderr != "" {
			t.Errorf("request %q: want a refusal naming %q, got %q", c.req, c.why, b)
		}
	}
	// A request larger than the limit is refused, not read whole.
	conn, err := net.Dial("unix", l.Path())
	if err != nil {
		t.Fatal(err)
	}
	go conn.Write(append([]byte(`{"v":1,"input":"`), bytes.Repeat([]byte("a"), wire.MaxRequest+10)...))
	b, _ := io.ReadAll(conn)
	conn.Close()
	if !strings.Contains(string(b), "malformed request") {
		t.Errorf("oversized request: %q", b)
	}
	out, errOut := r.hook(t, processEnv(), "claude-code", "PreToolUse", held)
	if out != want || !strings.Contains(errOut, "answered by the MCP server") {
		t.Errorf("after the bad requests: %q %q", out, errOut)
	}
}

// TestServedHooksStaleSocket: the socket of a killed server (still there,
// nothing listening) is passed over and removed; a live server's next to
// it answers.
func TestServedHooksStaleSocket(t *testing.T) {
	r := newServedRepo(t)
	fi, _ := os.Stat(r.db)
	dir, err := wire.SocketFolder(fi, true)
	if err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(dir, "999999.sock")
	ln, err := net.Listen("unix", stale)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	future := time.Now().Add(time.Hour)
	os.Chtimes(stale, future, future) // the newest: tried first
	held := r.edit("src/game/boss.gd")
	out, errOut := r.hook(t, processEnv(), "claude-code", "PreToolUse", held)
	if !strings.Contains(out, "ada@example.com") || !strings.Contains(errOut, "answered by the database (no MCP server answered)") {
		t.Errorf("stale socket alone: %q %q", out, errOut)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("the stale socket is still there: %v", err)
	}

	ln, _ = net.Listen("unix", stale)
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	os.Chtimes(stale, future, future)
	l, err := Listen(r.db, r.st, nil)
	if err != nil {
		t.Fatal(err)
	}
	out2, errOut := r.hook(t, processEnv(), "claude-code", "PreToolUse", held)
	if out2 != out || !strings.Contains(errOut, "answered by the MCP server") {
		t.Errorf("stale and live: %q %q", out2, errOut)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("Close left the folder: %v", err)
	}
}

// TestServedHooksPrivate: a sockets' directory other users can write to
// is not used, by the server nor by a hook.
func TestServedHooksPrivate(t *testing.T) {
	r := newServedRepo(t)
	root := wire.SocketRoot()
	if err := os.Mkdir(root, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(root, 0o777)
	if _, err := Listen(r.db, r.st, nil); err == nil || !strings.Contains(err.Error(), "open to other users") {
		t.Fatalf("Listen in a shared directory: %v", err)
	}
	os.Chmod(root, 0o700)
	l, err := Listen(r.db, r.st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	os.Chmod(root, 0o777)
	_, errOut := r.hook(t, processEnv(), "claude-code", "PreToolUse", r.edit("src/game/boss.gd"))
	if !strings.Contains(errOut, "answered by the database (") || !strings.Contains(errOut, "open to other users") {
		t.Errorf("hook with a shared directory: %q", errOut)
	}
	os.Chmod(root, 0o700)
}

// TestServedHooksConcurrent: many hooks at once get the same answers.
func TestServedHooksConcurrent(t *testing.T) {
	r := newServedRepo(t)
	l, err := Listen(r.db, r.st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	held, free := r.edit("src/game/boss.gd"), r.edit("docs/notes.md")
	wantHeld, _ := r.hook(t, processEnv(), "claude-code", "PreToolUse", held)
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			in, want := held, wantHeld
			if i%2 == 1 {
				in, want = free, ""
			}
			out, errOut := r.hook(t, processEnv(), "claude-code", "PreToolUse", in)
			if out != want || !strings.Contains(errOut, "answered by the MCP server") {
				errs <- fmt.Sprintf("run %d: %q %q", i, out, errOut)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// TestForwardedEnv: every variable a run reads through Config.Getenv is
// forwarded to the server (or is the hook's own switch), so a served run
// reads what the hook would have read.
func TestForwardedEnv(t *testing.T) {
	r := newServedRepo(t)
	var mu sync.Mutex
	read := map[string]bool{}
	env := mapsWith(processEnv(), ViaEnv, "plugin", wire.ServerEnv, "off")
	getenv := func(n string) string {
		mu.Lock()
		read[n] = true
		mu.Unlock()
		return env[n]
	}
	prompt, _ := json.Marshal(map[string]any{"session_id": "bo-session", "cwd": r.top, "hook_event_name": "UserPromptSubmit", "prompt": "go"})
	for _, c := range []struct{ client, event, input string }{
		{"claude-code", "PreToolUse", r.edit("src/game/boss.gd")},
		{"claude-code", "UserPromptSubmit", string(prompt)},
		{"claude-code", "SessionStart", string(prompt)},
		{"codex", "PreToolUse", r.edit("docs/x.md")},
		{"gemini", "BeforeAgent", string(prompt)},
	} {
		Run(context.Background(), Config{Client: c.client, Event: c.event, Actor: "bo@example.com", Dir: r.top, Getenv: getenv},
			strings.NewReader(c.input), io.Discard, io.Discard)
	}
	for n := range read {
		if !slices.Contains(wire.ForwardedEnv, n) && !slices.Contains(wire.SameEnv, n) && n != wire.ServerEnv && n != wire.NotServedEnv {
			t.Errorf("a hook run reads %s, which a server would not see", n)
		}
	}
	if !read["HOME"] || !read[ViaEnv] {
		t.Errorf("the runs did not read what they should: %v", read)
	}
}

// sameEnvJSON is the test process's wire.SameEnv values as a request
// carries them: a request the environment check lets through.
func sameEnvJSON() string {
	b, _ := json.Marshal(processEnv())
	return string(b)
}
