package godot_test

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	adapter "github.com/crosscode/crosscode-mcp/adapters/go/cappy"
	"github.com/crosscode/crosscode-mcp/bridge/cappy"
	"github.com/crosscode/crosscode-mcp/internal/demogame"
	"github.com/crosscode/crosscode-mcp/internal/proctree"
	"github.com/crosscode/crosscode-mcp/internal/testing/sysdeps"
	"github.com/crosscode/crosscode-mcp/protocol"
)

// stressEvents is how many events one stress run emits.
const stressEvents = 20000

// BenchmarkEventsThroughController: the stress scenario's tiny events, each
// stored by the real controller in its SQLite store, from the Godot addon
// (the arena, headless, in the real engine) and, in the same run, from the
// demo game on the Go adapter library; "godot-bare" is the addon streaming
// to a bare read loop that only reads frames (cappytest), which bounds
// what the addon itself can send.
func BenchmarkEventsThroughController(b *testing.B) {
	g := sysdeps.NeedGodot(b)
	stress := func(b *testing.B, c *controller) {
		b.ResetTimer()
		start := time.Now()
		for range b.N {
			out := c.run(b, cappy.Request{Kind: cappy.KindScenario, Scenario: "stress", Parameters: map[string]any{"events": float64(stressEvents)}})
			if out.Status != cappy.StatusCompleted || out.Events != stressEvents {
				b.Fatalf("stress: %+v", out)
			}
		}
		b.ReportMetric(float64(b.N*stressEvents)/time.Since(start).Seconds(), "events/s")
	}
	b.Run("demo", func(b *testing.B) {
		c := newController(b)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go adapter.Run(ctx, demogame.New(), &adapter.Options{Endpoint: c.c.Endpoint(), Token: c.c.Token()})
		wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
		defer wcancel()
		if _, err := c.c.WaitAdapter(wctx); err != nil {
			b.Fatal(err)
		}
		stress(b, c)
	})
	b.Run("godot", func(b *testing.B) {
		c := newController(b)
		c.launch(b, g, project(b, g, "examples/godot-arena"), nil, "--headless", "--path", ".")
		stress(b, c)
	})
	b.Run("godot-bare", func(b *testing.B) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		peer, _, _ := connect(b, ctx, project(b, g, "examples/godot-arena"), nil)
		b.ResetTimer()
		start := time.Now()
		for i := range b.N {
			op := "op" + string(rune('a'+i%26)) + time.Now().Format("150405.000000")
			peer.Send(ctx, protocol.PrepareScenario{Type: "prepare_scenario", Op: op, Scenario: "stress", Parameters: map[string]any{"events": stressEvents}})
			if _, err := peer.Expect(ctx, "ready", op); err != nil {
				b.Fatal(err)
			}
			peer.Send(ctx, protocol.OpMessage{Type: "start", Op: op})
			for frames := 0; frames < stressEvents+2; frames++ { // started, events, completed
				if _, _, err := peer.Conn.Read(ctx); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(b.N*stressEvents)/time.Since(start).Seconds(), "events/s")
	})
}

// BenchmarkLaunchToHandshake: from launching the arena (in the tree, as a
// capture config names it) to its handshake and scenario registry at the
// real controller ("handshake-ms"), beside its floor measured in the same
// iterations, alternately: Godot alone (a bare project without the addon)
// from launch to its first processed frame, through the same launcher
// ("first-frame-ms", by the engine's own clock).
func BenchmarkLaunchToHandshake(b *testing.B) {
	g := sysdeps.NeedGodot(b)
	arena := project(b, g, "examples/godot-arena")
	bare := project(b, g, "adapters/godot/testdata/bare")
	var handshake, firstFrame time.Duration
	for range b.N {
		b.StopTimer()
		c := newController(b)
		l := &cappy.Launcher{Command: []string{g.Launcher, "--headless", "--path", "."}, Dir: arena, LogPath: b.TempDir() + "/game.log"}
		b.StartTimer()
		start := time.Now()
		if err := l.Start(c.c.Endpoint(), c.c.Token()); err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), cappy.LaunchWait)
		_, err := c.c.WaitAdapter(ctx)
		cancel()
		handshake += time.Since(start)
		b.StopTimer()
		l.Stop(3 * time.Second)
		if err != nil {
			b.Fatalf("%v\n%s", err, l.Tail(4096))
		}
		c.c.Close()
		firstFrame += bareFirstFrame(b, g, bare)
		b.StartTimer()
	}
	b.ReportMetric(float64(handshake.Milliseconds())/float64(b.N), "handshake-ms")
	b.ReportMetric(float64(firstFrame.Milliseconds())/float64(b.N), "first-frame-ms")
}

// bareFirstFrame launches the bare project and returns the time from launch
// to its first frame, by the engine's clock (the pipe may deliver the line
// later).
func bareFirstFrame(b *testing.B, g sysdeps.Godot, dir string) time.Duration {
	b.Helper()
	start := time.Now()
	cmd := exec.Command(g.Launcher, "--headless", "--path", ".")
	cmd.Dir = dir
	cmd.Env = os.Environ()
	proctree.Prepare(cmd)
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	tree, err := proctree.Attach(cmd)
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		tree.Kill()
		cmd.Wait()
		tree.Close()
	}()
	for sc := bufio.NewScanner(out); sc.Scan(); {
		if ms, ok := strings.CutPrefix(sc.Text(), "FIRST_FRAME "); ok {
			at, err := strconv.ParseInt(ms, 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return time.UnixMilli(at).Sub(start)
		}
	}
	b.Fatal("Godot printed no FIRST_FRAME")
	return 0
}
