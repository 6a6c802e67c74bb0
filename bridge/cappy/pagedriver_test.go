package cappy

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/crosscode/crosscode-mcp/internal/testing/procs"
	"github.com/crosscode/crosscode-mcp/internal/testing/sysdeps"
	"github.com/crosscode/crosscode-mcp/internal/testing/webgames"
	"github.com/crosscode/crosscode-mcp/protocol"
	"github.com/crosscode/crosscode-mcp/store"
)

// pageService is a capture service whose game is the web game pickup at
// page (a path with its query), driven by the page driver (adapter).
func pageService(t *testing.T, page, adapter string) *Service {
	t.Helper()
	return webGameService(t, "pickup", page, adapter)
}

// webGameService is pageService for the web game name.
func webGameService(t *testing.T, name, page, adapter string) *Service {
	t.Helper()
	sysdeps.Need(t, "chromium")
	dir := webgames.Dir(t, name)
	cfg := &CaptureConfig{Game: &GameConfig{Serve: dir, URL: page, Adapter: adapter}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	s, err := NewService(context.Background(), ServiceConfig{Data: t.TempDir(), Config: cfg, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func key(name string, down bool) protocol.ActionInput {
	return protocol.ActionInput{Name: name, Pressed: &down}
}

// agentRecording starts an agent-controlled recording with seed and
// frames at 2 fps, and waits until it runs.
func pageRecording(t *testing.T, s *Service, seed int64) *Operation {
	t.Helper()
	ctx := context.Background()
	if _, err := s.EnsureAdapter(ctx); err != nil {
		t.Fatal(err)
	}
	op, err := s.Controller.Start(ctx, Request{Kind: KindRecording, Control: ControlAgent, Seed: &seed, Frames: s.FramesRequest(2)})
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); op.Status().Status != StatusRunning; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) || Final(op.Status().Status) {
			t.Fatalf("the recording is %+v, not running; the game's log:\n%s", op.Status(), s.Launcher.Tail(3000))
		}
	}
	return op
}

func step(t *testing.T, s *Service, op *Operation, ms float64, in ...protocol.ActionInput) *StepResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r, err := s.Controller.Step(ctx, op, in, ms)
	if err != nil {
		t.Fatalf("step of %v ms: %v\n%s", ms, err, s.Launcher.Tail(2000))
	}
	return r
}

// gameState is the test game's render_game_to_text().
type gameState struct {
	Hero                  struct{ X, Y float64 }
	Score, Frames, Clicks int
	Pickups               []struct{ X, Y float64 }
	Now                   float64
	Date                  float64
}

func inspectState(t *testing.T, s *Service) (gameState, string) {
	t.Helper()
	return inspectText[gameState](t, s)
}

// inspectText is the page's render_game_to_text(), decoded and as text.
func inspectText[T any](t *testing.T, s *Service) (T, string) {
	t.Helper()
	var v T
	ans, err := s.Controller.Inspect(context.Background(), "text")
	if err != nil || ans.Error != nil {
		t.Fatalf("inspect text: %v %+v", err, ans)
	}
	if err := json.Unmarshal(ans.Value, &v); err != nil {
		t.Fatalf("%s: %v", ans.Value, err)
	}
	return v, string(ans.Value)
}

// TestPageDriverPlay plays the test game, which has no adapter code,
// through the page driver in real Chromium: steps run exactly their page
// time, nothing runs between them, pickups are seeded, keys, pointer,
// errors and console errors arrive, and the play replays identically.
func TestPageDriverPlay(t *testing.T) {
	s := pageService(t, "/", AdapterPage)
	ctx := context.Background()
	a, err := s.EnsureAdapter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if a.Name != PageAdapterName || a.Game != "pickup" {
		t.Fatalf("adapter %+v", a)
	}
	for _, c := range pageCapabilities {
		if !strings.Contains(strings.Join(a.Capabilities, " "), c) {
			t.Fatalf("capabilities %v lack %s", a.Capabilities, c)
		}
	}
	op := pageRecording(t, s, 7)
	r0 := step(t, s, op, 0)
	if r0.T != 0 || r0.Frame == nil || r0.Frame.Width != 640 || r0.Frame.Height != 480 {
		t.Fatalf("first look: %+v", r0)
	}
	g0, _ := inspectState(t, s)
	if g0.Hero.X != 100 || g0.Now != 0 || g0.Frames != 1 || len(g0.Pickups) != 3 || g0.Date != pageEpoch {
		t.Fatalf("at page time 0: %+v", g0)
	}
	r := step(t, s, op, 500, key("ArrowRight", true))
	g1, text1 := inspectState(t, s)
	if r.SimT != 500 || r.T != 500 || math.Abs(g1.Hero.X-160) > 1e-9 || g1.Hero.Y != 100 || g1.Now != 500 || g1.Frames != 31 {
		t.Fatalf("after 500 ms to the right: step %+v, state %+v", r, g1)
	}
	// Nothing runs between steps, however long the agent thinks.
	time.Sleep(300 * time.Millisecond)
	if _, again := inspectState(t, s); again != text1 {
		t.Fatalf("the page ran between steps:\n%s\n%s", text1, again)
	}
	// The held key stays held; a release stops the hero; new pickups
	// spawn each second of page time.
	step(t, s, op, 250)
	step(t, s, op, 1000, key("ArrowRight", false), key("ArrowDown", true))
	g2, _ := inspectState(t, s)
	if math.Abs(g2.Hero.X-190) > 1e-9 || math.Abs(g2.Hero.Y-220) > 1e-9 || len(g2.Pickups)+g2.Score != 4 {
		t.Fatalf("after 1.75 s: %+v", g2)
	}
	// The pointer, in the frames' pixels (640 wide for an 800 px page).
	x, y := 320.0, 240.0
	step(t, s, op, 100, key("ArrowDown", false), protocol.ActionInput{Name: PagePointer, X: &x, Y: &y, Pressed: ptrTo(true)})
	g3, _ := inspectState(t, s)
	if g3.Clicks != 1 || g3.Hero.X != 400 || g3.Hero.Y != 300 {
		t.Fatalf("after a click at (320, 240) of the frame: %+v", g3)
	}
	// A console error and, 100 ms of page time later, an uncaught error.
	r = step(t, s, op, 300, protocol.ActionInput{Name: PagePointer, X: &x, Y: &y, Pressed: ptrTo(false)}, key("KeyC", true), key("KeyE", true))
	var names []string
	for _, e := range r.Events {
		names = append(names, e.Event)
	}
	if len(r.Events) != 2 || r.Events[0].Event != "CONSOLE_ERROR" || r.Events[1].Event != "PAGE_ERROR" {
		t.Fatalf("events %v", names)
	}
	if ce := r.Events[0]; ce.T != 1850 || !strings.Contains(string(ce.Payload), "texture missing: hero.png") || !strings.Contains(string(ce.Payload), `"line":`) {
		t.Fatalf("console error %+v %s", ce, ce.Payload)
	}
	if pe := r.Events[1]; pe.T != 1950 || !strings.Contains(string(pe.Payload), "the boss fell through the floor") {
		t.Fatalf("page error %+v %s", pe, pe.Payload)
	}
	_, finalText := inspectState(t, s)
	if err := s.Controller.Stop(ctx, op); err != nil {
		t.Fatal(err)
	}
	out := op.Wait(ctxTimeout(t, 30*time.Second))
	if out.Status != StatusCompleted || out.Replay == nil || out.Replay.Format != PageReplayFormat {
		t.Fatalf("stopped: %+v", out)
	}
	if c, _ := s.Store.Capture(ctx, op.ID); c.Seed == nil || *c.Seed != 7 {
		t.Fatalf("capture seed %v", c.Seed)
	}

	// The same seed and steps play the same game.
	op2 := pageRecording(t, s, 7)
	step(t, s, op2, 0)
	step(t, s, op2, 500, key("ArrowRight", true))
	step(t, s, op2, 250)
	step(t, s, op2, 1000, key("ArrowRight", false), key("ArrowDown", true))
	step(t, s, op2, 100, key("ArrowDown", false), protocol.ActionInput{Name: PagePointer, X: &x, Y: &y, Pressed: ptrTo(true)})
	step(t, s, op2, 300, protocol.ActionInput{Name: PagePointer, X: &x, Y: &y, Pressed: ptrTo(false)}, key("KeyC", true), key("KeyE", true))
	if _, again := inspectState(t, s); again != finalText {
		t.Fatalf("the same seed and steps gave another game:\n%s\n%s", finalText, again)
	}
	s.Controller.Cancel(op2)
	// Another seed, other pickups.
	op3 := pageRecording(t, s, 8)
	step(t, s, op3, 0)
	if g, _ := inspectState(t, s); g.Pickups[0] == g0.Pickups[0] {
		t.Fatalf("seeds 7 and 8 gave the same pickups: %+v", g.Pickups)
	}
	s.Controller.Cancel(op3)

	// The replay at half speed reproduces events and pictures.
	stored, err := s.Store.Replay(ctx, out.Replay.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := s.Store.Capture(ctx, op.ID)
	rep, err := s.Controller.Start(ctx, Request{Kind: KindReplay, Replay: stored, ReplayOf: op.ID, Seed: c.Seed,
		Presentation: protocol.Presentation{"timeScale": 0.5}, Frames: s.FramesRequest(2)})
	if err != nil {
		t.Fatal(err)
	}
	rout := rep.Wait(ctxTimeout(t, 60*time.Second))
	if rout.Status != StatusCompleted || rout.Events != 2 || rout.LastT != 3900 {
		t.Fatalf("replay: %+v\n%s", rout, s.Launcher.Tail(2000))
	}
	if _, text := inspectState(t, s); text != finalText {
		t.Fatalf("the replay ended in another state: %s, want %s", text, finalText)
	}
	d, err := Compare(ctx, s.Store, op.ID, rep.ID, 0.5, 1)
	if err != nil || !d.Identical || d.Compared != 2 {
		t.Fatalf("event divergence %+v %v", d, err)
	}
	vd, err := s.CompareFrames(ctx, op.ID, rep.ID, nil)
	if err != nil || !vd.Identical || vd.Compared < 5 {
		t.Fatalf("visual divergence %+v %v", vd, err)
	}
}

func ctxTimeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// TestPageDriverQueries: a query is a path into render_game_to_text's
// JSON; anything that looks like code is refused before it reaches the
// page, and nothing of it runs.
func TestPageDriverQueries(t *testing.T) {
	s := pageService(t, "/?variant=advance", AdapterPage)
	ctx := context.Background()
	if _, err := s.EnsureAdapter(ctx); err != nil {
		t.Fatal(err)
	}
	ans, err := s.Controller.Inspect(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		HasRenderGameToText, HasAdvanceTime bool
		Keys                                []string
		T                                   float64
	}
	json.Unmarshal(ans.Value, &list)
	if !list.HasRenderGameToText || !list.HasAdvanceTime || !strings.Contains(strings.Join(list.Keys, ","), "hero") {
		t.Fatalf("inspect \"\": %s %+v", ans.Value, ans.Error)
	}
	if ans, err := s.Controller.Inspect(ctx, "hero.x"); err != nil || string(ans.Value) != "100" {
		t.Fatalf("hero.x: %s %v", ans.Value, err)
	}
	if ans, err := s.Controller.Inspect(ctx, "pickups.0"); err != nil || !strings.HasPrefix(string(ans.Value), `{"x":`) {
		t.Fatalf("pickups.0: %+v %v", ans, err)
	}
	if ans, err := s.Controller.Inspect(ctx, "hero.z"); err != nil || ans.Error == nil || ans.Error.Code != "UNKNOWN_PATH" {
		t.Fatalf("hero.z: %+v %v", ans, err)
	}
	for _, q := range []string{"hero.x; alert(1)", "constructor.constructor('return 1')()", "hero[0]", "globalThis.fetch('x')", "a..b", "`x`", "hero.x+1"} {
		ans, err := s.Controller.Inspect(ctx, q)
		if err != nil || ans.Error == nil || ans.Error.Code != "INVALID_QUERY" {
			t.Fatalf("%q: %+v %v", q, ans, err)
		}
	}
	// A path that names JavaScript's own members finds only the state's.
	for _, q := range []string{"constructor", "hero.constructor", "__proto__", "hero.__proto__.x"} {
		ans, err := s.Controller.Inspect(ctx, q)
		if err != nil || ans.Error == nil || ans.Error.Code != "UNKNOWN_PATH" {
			t.Fatalf("%q: %+v %v", q, ans, err)
		}
	}
	// The advanceTime variant plays on the driver's clock like any page.
	op := pageRecording(t, s, 1)
	step(t, s, op, 0)
	step(t, s, op, 500, key("ArrowLeft", true))
	if g, _ := inspectState(t, s); math.Abs(g.Hero.X-40) > 1e-9 || g.Now != 500 {
		t.Fatalf("advanceTime variant after 500 ms left: %+v", g)
	}
	s.Controller.Cancel(op)
}

var _ = store.CaptureEvent{}

// TestPageDriverFaults: a page that hangs inside a frame, opens a dialog
// or a popup, navigates away or floods the console ends the step and the
// operation with a clear code and the browser gone; the next recording
// launches it afresh. A page that throws on load says so at page time 0.
func TestPageDriverFaults(t *testing.T) {
	s := pageService(t, "/?throw=1", AdapterPage)
	for _, tc := range []struct{ key, code string }{
		{"KeyL", protocol.CappyAdapterUnresponsive},
		{"KeyP", CodePageDialog},
		{"KeyO", CodePagePopup},
		{"KeyN", CodePageNavigated},
		{"KeyF", CodePageConsoleFlood},
	} {
		t.Run(tc.key, func(t *testing.T) {
			op := pageRecording(t, s, 1)
			t.Cleanup(func() { s.Controller.Cancel(op) })
			r := step(t, s, op, 0)
			if len(r.Events) != 1 || r.Events[0].Event != "PAGE_ERROR" || r.Events[0].T != 0 || !strings.Contains(string(r.Events[0].Payload), "broken on load") {
				t.Fatalf("the error on load: %+v", r.Events)
			}
			pid := s.Launcher.Info().PID
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			_, err := s.Controller.Step(ctx, op, []protocol.ActionInput{key(tc.key, true)}, 100)
			var ce *Error
			if !errors.As(err, &ce) || ce.Code != tc.code {
				t.Fatalf("step: %v, want %s", err, tc.code)
			}
			if out := op.Wait(ctx); out.Status != StatusFailed || out.Code != tc.code || out.Message == "" {
				t.Fatalf("operation %+v", out)
			}
			select {
			case <-s.Launcher.Exited():
			case <-ctx.Done():
				t.Fatal("the browser was not closed")
			}
			for deadline := time.Now().Add(20 * time.Second); procs.Alive(pid); time.Sleep(20 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("the browser (pid %d) still runs", pid)
				}
			}
		})
	}
}

// TestPageDriverAuto: with game.adapter "auto" (the default), a page whose
// own adapter says no hello within 5 s of its load is driven by the page
// driver.
func TestPageDriverAuto(t *testing.T) {
	s := pageService(t, "/", "")
	a, err := s.EnsureAdapter(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	b := s.Launcher.(*BrowserLauncher)
	if a.Name != PageAdapterName || !b.Driven() || !strings.Contains(b.Tail(4000), "no adapter said hello within 5s of the page's load") {
		t.Fatalf("adapter %+v, driven %v; log:\n%s", a, b.Driven(), b.Tail(4000))
	}
	op := pageRecording(t, s, 1)
	step(t, s, op, 200, key("ArrowRight", true))
	if g, _ := inspectState(t, s); math.Abs(g.Hero.X-124) > 1e-9 {
		t.Fatalf("after 200 ms to the right: %+v", g)
	}
}
