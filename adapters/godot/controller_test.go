package godot_test

import (
	"bytes"
	"context"
	"image"
	"image/jpeg"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/crosscode/crosscode-mcp/bridge/cappy"
	"github.com/crosscode/crosscode-mcp/internal/testing/sysdeps"
	"github.com/crosscode/crosscode-mcp/protocol"
	"github.com/crosscode/crosscode-mcp/store"
)

// controller is the real Cappy controller over a real store, with the
// arena launched under it.
type controller struct {
	c        *cappy.Controller
	st       *store.Store
	frameDir string
	l        *cappy.Launcher
}

func newController(t testing.TB) *controller {
	t.Helper()
	dir := t.TempDir()
	st, err := store.Open(context.Background(), filepath.Join(dir, "captures.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	c := &controller{st: st, frameDir: filepath.Join(dir, "frames")}
	c.c, err = cappy.New(cappy.Config{Store: st, ReplayDir: filepath.Join(dir, "replays"), FrameDir: c.frameDir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.c.Close() })
	return c
}

// launch starts Godot on dir with args and waits for its handshake and
// registry.
func (c *controller) launch(t testing.TB, g sysdeps.Godot, dir string, env map[string]string, args ...string) *cappy.Adapter {
	t.Helper()
	c.l = &cappy.Launcher{Command: append([]string{g.Launcher}, args...), Dir: dir, Env: env, LogPath: filepath.Join(t.TempDir(), "game.log")}
	if err := c.l.Start(c.c.Endpoint(), c.c.Token()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.l.Stop(3 * time.Second)
		if t.Failed() {
			t.Logf("game log:\n%s", c.l.Tail(8<<10))
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), cappy.LaunchWait)
	defer cancel()
	a, err := c.c.WaitAdapter(ctx)
	if err != nil {
		t.Fatalf("the game did not connect: %v", err)
	}
	return a
}

// run runs a request to its end.
func (c *controller) run(t testing.TB, r cappy.Request) cappy.Outcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	op, err := c.c.Start(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	return op.Wait(ctx)
}

// blank reports whether an image is (nearly) one colour.
func blank(img image.Image) bool {
	b := img.Bounds()
	var n, sum, sq float64
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, _ := img.At(x, y).RGBA()
			l := (0.299*float64(r) + 0.587*float64(g) + 0.114*float64(bl)) / 257
			n++
			sum += l
			sq += l * l
		}
	}
	mean := sum / n
	return sq/n-mean*mean < 4 // a luma standard deviation under 2 of 255
}

// TestFramesUnderXvfb: with --headless off, under Xvfb with the opengl3
// renderer, the arena advertises frames and sends them at the asked rate,
// at most maxWidth wide, on the operation's clock, and they show the arena
// (not a blank image); headless it advertises none (TestArenaHandshake).
func TestFramesUnderXvfb(t *testing.T) {
	t.Parallel()
	g := sysdeps.NeedGodot(t)
	c := newController(t)
	a := c.launch(t, g, project(t, g, "examples/godot-arena"), nil, "--xvfb", "--path", ".")
	if !slices.Contains(a.Capabilities, protocol.CapFrames) {
		t.Fatalf("no frames under Xvfb: %v", a.Capabilities)
	}
	req := &protocol.FramesRequest{FPS: 4, MaxWidth: 320, Formats: []string{protocol.MimeJPEG, protocol.MimePNG}}
	out := c.run(t, cappy.Request{Kind: cappy.KindScenario, Scenario: "boss_fight", Parameters: map[string]any{"difficulty": 1.0}, Frames: req})
	if out.Status != cappy.StatusCompleted {
		t.Fatalf("boss_fight: %+v", out)
	}
	frames, err := c.st.Frames(context.Background(), store.FrameQuery{Op: out.Op, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	// About 4 a second over the fight's presented time.
	want := int(out.LastT / 1000 * 4)
	if len(frames) < want-1 || len(frames) > 2*want+2 {
		t.Fatalf("%d frames over %v ms at 4 fps", len(frames), out.LastT)
	}
	last := -1.0
	for _, f := range frames {
		if f.Mime != protocol.MimeJPEG || f.Width != 320 || f.Height != 180 || f.T < last || f.T > out.LastT+1000 {
			t.Fatalf("frame %+v (previous t %v)", f, last)
		}
		last = f.T
		b, err := os.ReadFile(filepath.Join(c.frameDir, f.File))
		if err != nil {
			t.Fatal(err)
		}
		img, err := jpeg.Decode(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		if blank(img) {
			t.Fatalf("frame at t %v is blank", f.T)
		}
	}
	t.Logf("%d frames over %.0f ms", len(frames), out.LastT)
}
