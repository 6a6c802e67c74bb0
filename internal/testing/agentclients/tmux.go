package agentclients

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crosscode/crosscode-mcp/internal/proctree"
)

// Tmux is a program in a terminal of its own: a tmux server on a socket
// of the test's, with one session that runs the program. Claude Code's
// interactive session needs a terminal, and channels (spec section 21)
// reach interactive sessions only.
//
// A tmux server keeps the environment it started with and gives it to
// what it runs: the server is started with the world's environment
// (World.Env, which takes nothing from the test's own but PATH, the
// locale and TERM), so no authentication variable of the machine's
// reaches the program. It runs in the foreground (tmux -D), as the
// test's child, and dies with it, even when the test is killed: the
// program then loses its terminal and ends.
type Tmux struct {
	t      *testing.T
	sock   string
	pid    int // the program's, the leader of its process group
	server *proctree.Tree
	done   chan struct{} // the server ended
}

// StartTmux runs name with args in w.Repo under a new tmux server, with
// the environment w.Env(extra...), in a terminal of 200x50 characters.
// It stops with the test: the program's process group is killed, then
// the server.
func StartTmux(t *testing.T, w *World, name string, args []string, extra ...string) *Tmux {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatal("tmux is not installed: scripts/deps installs it")
	}
	tm := &Tmux{t: t, sock: filepath.Join(w.Root, "tmux.sock"), done: make(chan struct{})}
	srv := exec.Command("tmux", "-D", "-S", tm.sock, "-f", os.DevNull)
	srv.Env = w.Env(extra...)
	proctree.Prepare(srv)
	if err := srv.Start(); err != nil {
		t.Fatalf("tmux: %v", err)
	}
	tree, err := proctree.Attach(srv)
	if err != nil {
		t.Fatal(err)
	}
	tm.server = tree
	go func() { srv.Wait(); close(tm.done) }()
	t.Cleanup(tm.stop)
	for end := time.Now().Add(10 * time.Second); tm.command("list-sessions").Run() != nil; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("tmux: the server did not start")
		}
	}
	cmdArgs := append([]string{"new-session", "-d", "-s", "main", "-x", "200", "-y", "50", "-c", w.Repo, "--", name}, args...)
	cmd := tm.command(cmdArgs...)
	cmd.Env = w.Env(extra...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("tmux new-session: %v\n%s", err, out)
	}
	out, err := tm.command("display-message", "-p", "-t", "main", "#{pane_pid}").Output()
	if err != nil {
		t.Fatalf("tmux: the program's pid: %v", err)
	}
	if tm.pid, err = strconv.Atoi(strings.TrimSpace(string(out))); err != nil {
		t.Fatalf("tmux: the program's pid: %q", out)
	}
	return tm
}

func (tm *Tmux) command(args ...string) *exec.Cmd {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	tm.t.Cleanup(cancel)
	return exec.CommandContext(ctx, "tmux", append([]string{"-S", tm.sock, "-f", os.DevNull}, args...)...)
}

// Screen is what the terminal shows now.
func (tm *Tmux) Screen() string {
	out, err := tm.command("capture-pane", "-p", "-t", "main").Output()
	if err != nil {
		return ""
	}
	return string(out)
}

// Keys types keys (tmux's names: "Enter", "Escape", or text).
func (tm *Tmux) Keys(keys ...string) {
	tm.t.Helper()
	if out, err := tm.command(append([]string{"send-keys", "-t", "main"}, keys...)...).CombinedOutput(); err != nil {
		tm.t.Fatalf("tmux send-keys %v: %v %s", keys, err, out)
	}
}

// WaitScreen waits up to d for the terminal to show text; false if it
// never did.
func (tm *Tmux) WaitScreen(text string, d time.Duration) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if strings.Contains(tm.Screen(), text) {
			return true
		}
	}
	return false
}

// stop kills the program's process group and the tmux server.
func (tm *Tmux) stop() {
	if tm.pid > 0 {
		killGroup(tm.pid)
	}
	tm.server.Kill()
	<-tm.done
	tm.server.Close()
	os.Remove(tm.sock)
}
