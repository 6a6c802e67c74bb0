package unitytest

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crosscode/crosscode-mcp/adapters/go/cappy/cappytest"
	"github.com/crosscode/crosscode-mcp/internal/testing/sysdeps"
	"github.com/crosscode/crosscode-mcp/protocol"
)

// The core over a real socket: the C# example (examples/csharp-arena,
// built with mcs, run under mono) against a scriptable controller.

// arena is the built example and its running process.
type arena struct {
	cmd    *exec.Cmd
	stderr *bytes.Buffer
	done   chan error
}

// buildArena builds the example in a fresh folder and returns its folder.
func buildArena(t testing.TB) string {
	t.Helper()
	m := sysdeps.NeedMono(t)
	return m.Arena(t, t.TempDir())
}

// startArena runs the example against endpoint with token (and env).
func startArena(t testing.TB, dir, endpoint, token string, env ...string) *arena {
	t.Helper()
	a := &arena{stderr: &bytes.Buffer{}, done: make(chan error, 1)}
	a.cmd = exec.Command("mono", filepath.Join("bin", "arena.exe"))
	a.cmd.Dir = dir
	a.cmd.Env = append(os.Environ(), append([]string{"CAPPY_ENDPOINT=" + endpoint, "CAPPY_SESSION_TOKEN=" + token, "TMPDIR=" + t.TempDir()}, env...)...)
	a.cmd.Stderr = a.stderr
	if err := a.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { a.done <- a.cmd.Wait() }()
	t.Cleanup(func() {
		a.cmd.Process.Kill()
		<-a.done
		if t.Failed() {
			t.Logf("the arena's log:\n%s", a.stderr.String())
		}
	})
	return a
}

// wait waits for the arena to exit and returns its status.
func (a *arena) wait(t testing.TB, within time.Duration) int {
	t.Helper()
	select {
	case err := <-a.done:
		a.done <- err // for the cleanup
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	case <-time.After(within):
		t.Fatalf("the arena did not exit within %s", within)
		return -1
	}
}

func ctxFor(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func raw(s string) []byte { return []byte(s) }

// connect starts the arena against a new scriptable controller (with
// token, or the controller's own) and accepts its connection.
func connect(t testing.TB, dir, token string) (*arena, *cappytest.Controller, *cappytest.Peer, context.Context) {
	t.Helper()
	ctl, err := cappytest.NewController()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ctl.Close() })
	if token == "" {
		token = ctl.Token
	}
	a := startArena(t, dir, ctl.Endpoint, token)
	ctx := ctxFor(t, 60*time.Second)
	peer, err := ctl.Accept(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return a, ctl, peer, ctx
}

// TestArenaSocket: the core's socket with the real thing on the other
// side (coder/websocket, as the controller): the controller's first
// request in the same read as welcome is not lost; a 5 MiB message is
// refused (the socket closes) rather than read; a rejected game quits
// with status 1 and says why; a game whose controller closes quits.
func TestArenaSocket(t *testing.T) {
	t.Parallel()
	dir := buildArena(t)

	t.Run("burst", func(t *testing.T) {
		a, _, peer, ctx := connect(t, dir, "")
		hello, err := peer.Expect(ctx, "hello", "")
		if err != nil {
			t.Fatal(err)
		}
		if hello.Hello.Adapter.Name != "cappy-csharp" || hello.Hello.Game.ID != "csharp-arena" || !hello.Hello.HasCapability(protocol.CapInput) {
			t.Fatalf("hello: %+v", hello.Hello)
		}
		// welcome, a scenario and its start, in one write.
		if err := peer.Send(ctx, cappytest.Welcome(),
			raw(`{"type":"prepare_scenario","op":"o1","scenario":"stall","parameters":{"ms":0}}`),
			raw(`{"type":"start","op":"o1"}`)); err != nil {
			t.Fatal(err)
		}
		var seen []string
		for len(seen) == 0 || seen[len(seen)-1] != "completed" {
			m, err := peer.Recv(ctx)
			if err != nil {
				t.Fatalf("after %v: %v", seen, err)
			}
			seen = append(seen, m.Type)
		}
		if got := strings.Join(seen, " "); !strings.HasPrefix(got, "scenarios actions ready started event") {
			t.Fatalf("the burst's answers: %s", got)
		}
		// A message over 4 MiB: the core closes rather than reads it.
		big := `{"type":"inspect","id":"i1","query":"` + strings.Repeat("x", 5<<20) + `"}`
		peer.Conn.SetReadLimit(8 << 20)
		if err := peer.Send(ctx, raw(big)); err != nil {
			t.Fatal(err)
		}
		if _, err := peer.Recv(ctx); err == nil {
			t.Fatal("the adapter answered a 5 MiB message")
		}
		if code := a.wait(t, 10*time.Second); code != 0 || !strings.Contains(a.stderr.String(), "over 4 MiB") {
			t.Fatalf("after a 5 MiB message: exit %d\n%s", code, a.stderr.String())
		}
	})

	t.Run("rejected", func(t *testing.T) {
		a, _, peer, ctx := connect(t, dir, "not-the-token")
		if _, err := peer.Expect(ctx, "hello", ""); err != nil {
			t.Fatal(err)
		}
		if err := peer.Send(ctx, protocol.Reject{Type: "reject", Code: protocol.CappyUnauthenticated, Message: "wrong session token"}); err != nil {
			t.Fatal(err)
		}
		if code := a.wait(t, 15*time.Second); code != 1 || !strings.Contains(a.stderr.String(), "PROTOCOL_UNAUTHENTICATED") {
			t.Fatalf("a rejected game: exit %d\n%s", code, a.stderr.String())
		}
	})

	t.Run("controller gone", func(t *testing.T) {
		a, ctl, peer, ctx := connect(t, dir, "")
		if _, _, err := peer.Handshake(ctx, ctl.Token); err != nil {
			t.Fatal(err)
		}
		peer.Close()
		if code := a.wait(t, 15*time.Second); code != 0 {
			t.Fatalf("exit %d\n%s", code, a.stderr.String())
		}
	})
}

// pongsWhileBusy runs the stall scenario (the game's main thread busy for
// ms) and pings every 250 ms meanwhile; it returns the longest a pong
// took, and the round trip of a ping before, with the game idle.
func pongsWhileBusy(t testing.TB, dir string, ms int) (worst, idle time.Duration) {
	_, ctl, peer, ctx := connect(t, dir, "")
	defer peer.Close()
	if _, _, err := peer.Handshake(ctx, ctl.Token); err != nil {
		t.Fatal(err)
	}
	ping := func(nonce string) time.Duration {
		t0 := time.Now()
		if err := peer.Send(ctx, protocol.Ping{Type: "ping", Nonce: nonce}); err != nil {
			t.Fatal(err)
		}
		for {
			m, err := peer.Recv(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if m.Pong != nil && m.Pong.Nonce == nonce {
				return time.Since(t0)
			}
		}
	}
	idle = ping("idle")
	b, _ := json.Marshal(map[string]any{"type": "prepare_scenario", "op": "o1", "scenario": "stall", "parameters": map[string]any{"ms": ms}})
	if err := peer.Send(ctx, b, raw(`{"type":"start","op":"o1"}`)); err != nil {
		t.Fatal(err)
	}
	for {
		m, err := peer.Recv(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if m.Event != nil && m.Event.Event == "STALL_BEGIN" {
			break
		}
	}
	start := time.Now()
	for i := 0; time.Since(start) < time.Duration(ms)*time.Millisecond; i++ {
		worst = max(worst, ping("busy"+string(rune('a'+i%26))+time.Now().Format("150405.000")))
		time.Sleep(250 * time.Millisecond)
	}
	return worst, idle
}

// TestArenaPongsWhileBusy: while the game's main thread is busy for 5 s,
// every ping is answered at once (from the core's socket thread), far
// within the 6 s the controller allows.
func TestArenaPongsWhileBusy(t *testing.T) {
	t.Parallel()
	worst, idle := pongsWhileBusy(t, buildArena(t), 5000)
	if worst > time.Second {
		t.Fatalf("a pong took %s while the main thread was busy (idle: %s)", worst, idle)
	}
	t.Logf("the longest pong while busy: %s (idle: %s)", worst, idle)
}
