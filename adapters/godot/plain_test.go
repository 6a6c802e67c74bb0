package godot_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crosscode/crosscode-mcp/adapters/go/cappy/cappytest"
	"github.com/crosscode/crosscode-mcp/internal/testing/sysdeps"
	"github.com/crosscode/crosscode-mcp/protocol"
)

// plainEvents is a capture config's "events" for the plain game: its own
// signals (the root's, "."; the Start button's) as events.
var plainEvents = map[string]string{
	".:title_shown":   "TITLE_SHOWN",
	".:round_started": "ROUND_STARTED",
	".:coin_spawned":  "COIN",
	".:clock_ticked":  "TICK",
	".:bell_rung":     "BELL",
	".:coin_taken":    "COIN_TAKEN",
	"Start:pressed":   "START_PRESSED",
	"Nowhere:gone":    "NEVER",
	".:no_such":       "NEVER",
}

// plainGame launches the plain game (adapters/godot/testdata/plain: no
// Cappy code, only the autoload) with a fixed frame step and shakes hands,
// handing it plainEvents; args are Godot's (default headless).
func plainGame(t *testing.T, ctx context.Context, g sysdeps.Godot, dir string, env map[string]string, args ...string) (*cappytest.Peer, *protocol.Hello) {
	t.Helper()
	if len(args) == 0 {
		args = []string{"--headless", "--fixed-fps", "60", "--path", "."}
	}
	ctrl := scripted(t)
	launch(t, g, dir, ctrl.Endpoint, ctrl.Token, env, args...)
	peer, err := ctrl.Accept(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { peer.Close() })
	w := cappytest.Welcome()
	w.Events = plainEvents
	hello, _, err := peer.HandshakeWelcome(ctx, ctrl.Token, w)
	if err != nil {
		t.Fatal(err)
	}
	return peer, hello
}

func num(t *testing.T, m msg) float64 {
	t.Helper()
	var f float64
	value(t, m, &f)
	return f
}

// eventsNamed are the events called name, with their payloads.
func eventsNamed(t *testing.T, evs []protocol.Event, name string) (ts []float64, payloads []map[string]any) {
	t.Helper()
	for _, e := range evs {
		if e.Event == name {
			ts = append(ts, e.T)
			payloads = append(payloads, payload(t, e))
		}
	}
	return ts, payloads
}

// TestPlainGameAgentPlay: a Godot game with no Cappy code at all, only
// the addon's autoload, offers agent play, inspect, recordings and
// replays; its actions are its InputMap's and the pointer. It waits held
// from its first frame: seconds of wall time move nothing, not even a
// SceneTree.create_timer timer. A step of ms runs exactly ms of game time
// in _process, Timer nodes and SceneTree timers (the title timer fires
// after 1 s of game time, not before); pressing the start_game action
// presses the Start button whose shortcut it is, as the player's Enter
// would; the game's own signals come as events with their arguments (the
// config's events map, in welcome); and the play's replays, each in a new
// game process with the same seed, give the same events at speed 1 and
// 0.5.
func TestPlainGameAgentPlay(t *testing.T) {
	t.Parallel()
	g := sysdeps.NeedGodot(t)
	ctx := timeout(t, 180*time.Second)
	dir := project(t, g, "adapters/godot/testdata/plain")
	env := map[string]string{protocol.SeedEnv: "7"}
	peer, hello := plainGame(t, ctx, g, dir, env)
	for _, c := range []string{"freeform_recording", "replay", "input", "inspect", "time_scale", "seed", protocol.CapConfigEvents} {
		if !hello.HasCapability(c) {
			t.Fatalf("a game with no Cappy code lacks %s: %v", c, hello.Capabilities)
		}
	}
	if hello.HasCapability(protocol.CapResetsItself) {
		t.Fatalf("a game with no start callable says it resets itself: %v", hello.Capabilities)
	}
	var kinds []string
	for _, a := range peer.Actions.Actions {
		kinds = append(kinds, a.Name+":"+a.Kind)
	}
	if want := []string{"move_left:button", "move_right:button", "move_up:button", "move_down:button", "start_game:button", "pointer:pointer"}; !slices.Equal(kinds, want) {
		t.Fatalf("actions %v, expected %v (the InputMap's and the pointer)", kinds, want)
	}
	if d := peer.Actions.Actions[4].Description; !strings.Contains(d, "Enter") {
		t.Fatalf("start_game's description does not name its key: %q", d)
	}

	// Held from the first frame: wall time moves nothing.
	if e := num(t, inspect(t, ctx, peer, "i0", ".:elapsed")); e != 0 {
		t.Fatalf("the game ran %v s before any operation", e)
	}
	time.Sleep(1500 * time.Millisecond) // the title timer is 1 s
	var visible bool
	value(t, inspect(t, ctx, peer, "i1", "Start:visible"), &visible)
	if e := num(t, inspect(t, ctx, peer, "i2", ".:elapsed")); e != 0 || visible {
		t.Fatalf("1.5 s of wall time: elapsed %v, Start shown %v; the game must stay held", e, visible)
	}

	send(t, ctx, peer, map[string]any{"type": "record_start", "op": "a1", "control": "agent", "seed": 7})
	expectMsg(t, ctx, peer, "started")
	p := &play{t: t, ctx: ctx, peer: peer, op: "a1"}
	stepped(t, p.step(0), 0)
	r := p.step(500)
	stepped(t, r, 500)
	if ts, _ := eventsNamed(t, r.events, "TITLE_SHOWN"); len(ts) != 0 {
		t.Fatalf("the title timer of 1 s fired within 500 ms: %v", r.events)
	}
	if e := num(t, p.inspect("i3", ".:elapsed")); math.Abs(e-0.5) > 1e-9 {
		t.Fatalf("after a step of 500 ms, _process ran %v s", e)
	}
	time.Sleep(time.Second) // held between steps, whatever the wall clock
	if e := num(t, p.inspect("i4", ".:elapsed")); math.Abs(e-0.5) > 1e-9 {
		t.Fatalf("held, _process still ran: %v s", e)
	}
	r = p.step(500)
	stepped(t, r, 1000)
	ts, _ := eventsNamed(t, r.events, "TITLE_SHOWN")
	if len(ts) != 1 || ts[0] < 1000 || ts[0] > 1000+17 {
		t.Fatalf("the title timer of 1 s: %v; expected TITLE_SHOWN at t 1000 (within a frame)", r.events)
	}
	// The Start button's shortcut is the start_game action: pressing the
	// action presses it, as the player's Enter does.
	r = p.step(100, map[string]any{"name": "start_game", "pressed": true})
	stepped(t, r, 1100)
	pressed, _ := eventsNamed(t, r.events, "START_PRESSED")
	started, pl := eventsNamed(t, r.events, "ROUND_STARTED")
	// The key goes down between the frames, as a player's does: at t 1000.
	if len(pressed) != 1 || len(started) != 1 || pressed[0] != 1000 {
		t.Fatalf("pressing start_game: %v; expected START_PRESSED and ROUND_STARTED as the step began", r.events)
	}
	seedCheck := pl[0]["args"]
	var playing bool
	value(t, p.inspect("i5", ".:playing"), &playing)
	if !playing {
		t.Fatal("the round did not start")
	}
	// Walk right 500 ms: 60 px at 120 px a second of game time.
	var x0, x1 float64
	value(t, p.inspect("i6", "Hero:position:x"), &x0)
	stepped(t, p.step(500, map[string]any{"name": "start_game", "pressed": false}, map[string]any{"name": "move_right", "pressed": true}), 1600)
	value(t, p.inspect("i7", "Hero:position:x"), &x1)
	if math.Abs(x1-x0-60) > 1e-6 {
		t.Fatalf("500 ms right moved the hero from %v to %v; expected 60 px", x0, x1)
	}
	for i := range 6 {
		acts := []map[string]any{{"name": "move_right", "pressed": i%2 == 0}, {"name": "move_down", "pressed": i%3 == 0}, {"name": "move_up", "pressed": i%3 == 2}}
		stepped(t, p.step(400, acts...), 1600+400*float64(i+1))
	}
	done := p.stop()
	var summary map[string]any
	json.Unmarshal(done.Summary, &summary)
	// Its warnings: the two events that cannot connect, and nothing of
	// the frame step (it is fixed).
	if probs, _ := summary["warnings"].([]any); len(probs) != 2 || !strings.HasPrefix(fmt.Sprint(probs[0]), "events: ") || summary["seed"] != 7.0 {
		t.Fatalf("summary: %s", done.Summary)
	}
	// The Clock, a Timer node of 0.5 s: tick k at k x 500 ms of game time
	// (within the frame its time runs out in), its count as the argument.
	ticks, tickPl := eventsNamed(t, p.events, "TICK")
	if len(ticks) != 7 { // the 8th is due a frame after 4000 ms
		t.Fatalf("%d Clock ticks in 4 s of game time: %v", len(ticks), p.events)
	}
	for k, tt := range ticks {
		if tt < 500*float64(k+1) || tt > 500*float64(k+1)+17 || fmt.Sprint(tickPl[k]["args"]) != fmt.Sprintf("[%d]", k+1) {
			t.Fatalf("tick %d at t %v with %v: expected t %d (within a frame)", k+1, tt, tickPl[k], 500*(k+1))
		}
	}
	bell, _ := eventsNamed(t, p.events, "BELL")
	coins, coinPl := eventsNamed(t, p.events, "COIN")
	if len(bell) != 1 || math.Abs(bell[0]-(1016.667+2000)) > 17 || len(coins) < 6 {
		t.Fatalf("the round's events: %v", p.events)
	}
	if at, _ := coinPl[0]["args"].([]any); len(at) != 2 {
		t.Fatalf("COIN's args: %v", coinPl[0])
	}
	t.Logf("played %d events (round seed check %v): %s", len(p.events), seedCheck, done.Summary)

	// Each replay in a new game process launched with the recording's seed.
	for _, scale := range []float64{1, 0.5} {
		// No seed in prepare_replay: the replay's own (7) is taken.
		fresh, _ := plainGame(t, ctx, g, project(t, g, "adapters/godot/testdata/plain"), env)
		evs, end := replay(t, ctx, fresh, "rep", done.Replay, protocol.Presentation{"timeScale": scale})
		if end.Completed == nil {
			t.Fatalf("replay at %v: %+v", scale, end.Failed)
		}
		sameEvents(t, p.events, evs, scale)
	}
}

// TestPlainGameFallback: without --fixed-fps the engine runs on the
// wall clock; the addon still holds the game and runs steps of physics
// frames, and says in each summary what to add for exact steps.
func TestPlainGameFallback(t *testing.T) {
	t.Parallel()
	g := sysdeps.NeedGodot(t)
	ctx := timeout(t, 90*time.Second)
	peer, _ := plainGame(t, ctx, g, project(t, g, "adapters/godot/testdata/plain"), nil, "--headless", "--path", ".")
	time.Sleep(1200 * time.Millisecond)
	var visible bool
	value(t, inspect(t, ctx, peer, "i1", "Start:visible"), &visible)
	if visible {
		t.Fatal("held from the start, the title timer fired")
	}
	send(t, ctx, peer, map[string]any{"type": "record_start", "op": "f1", "control": "agent"})
	expectMsg(t, ctx, peer, "started")
	p := &play{t: t, ctx: ctx, peer: peer, op: "f1"}
	stepped(t, p.step(0), 0)
	stepped(t, p.step(250), 250)
	done := p.stop()
	var summary map[string]any
	json.Unmarshal(done.Summary, &summary)
	w, _ := summary["warnings"].([]any)
	if len(w) == 0 || !strings.Contains(fmt.Sprint(w[0]), "--fixed-fps 60") {
		t.Fatalf("summary without a fixed frame step: %s", done.Summary)
	}
}

// collectFrames reads a replay to its end: its events and frames.
func collectFrames(t *testing.T, ctx context.Context, peer *cappytest.Peer, op string) ([]protocol.Event, []protocol.Frame, *protocol.Completed) {
	t.Helper()
	var evs []protocol.Event
	var frames []protocol.Frame
	for {
		m := recvMsg(t, ctx, peer)
		switch m.typ() {
		case "event":
			var e protocol.Event
			json.Unmarshal(m.raw, &e)
			evs = append(evs, e)
		case "frame":
			var f protocol.Frame
			json.Unmarshal(m.raw, &f)
			frames = append(frames, f)
		case "completed":
			d, _ := protocol.DecodeAdapterMessage(m.raw)
			return evs, frames, d.Completed
		default:
			t.Fatalf("replay %s: %s", op, m.raw)
		}
	}
}

// TestPlainGamePictures: under Xvfb, the plain game played by an agent
// (the Start button pressed by its action, a banner sliding in on a
// Tween, coins at random places, the hero walking in _process) and its
// replays in new processes at speed 1 and 0.5 show the same pictures, pixel
// for pixel, at every step's end and at every frame the two share in game
// time; the events are the same too.
func TestPlainGamePictures(t *testing.T) {
	t.Parallel()
	g := sysdeps.NeedGodot(t)
	ctx := timeout(t, 240*time.Second)
	args := []string{"--xvfb", "--fixed-fps", "60", "--audio-driver", "Dummy", "--path", "."}
	env := map[string]string{protocol.SeedEnv: "3"}
	peer, hello := plainGame(t, ctx, g, project(t, g, "adapters/godot/testdata/plain"), env, args...)
	if !hello.HasCapability("frames") {
		t.Fatalf("under Xvfb the addon does not offer frames: %v", hello.Capabilities)
	}
	req := &protocol.FramesRequest{FPS: 4, MaxWidth: 320, Formats: []string{protocol.MimePNG}}
	p := recordAgent(t, ctx, peer, "pic", req)
	steps := []struct {
		ms   float64
		acts []map[string]any
	}{
		{0, nil},
		{1100, nil}, // the title timer shows the Start button at 1 s
		{200, []map[string]any{{"name": "start_game", "pressed": true}}},
		{300, []map[string]any{{"name": "start_game", "pressed": false}, {"name": "move_left", "pressed": true}}},
		{0, []map[string]any{{"name": "move_up", "pressed": true}}},
		{450, nil},
		{600, []map[string]any{{"name": "move_left", "pressed": false}, {"name": "move_down", "pressed": true}, {"name": "move_up", "pressed": false}}},
		{350, []map[string]any{{"name": "pointer", "x": 40, "y": 30, "pressed": true}}},
		{500, []map[string]any{{"name": "pointer", "x": 40, "y": 30, "pressed": false}, {"name": "move_right", "pressed": true}}},
	}
	var pictures []protocol.Frame
	for i, s := range steps {
		r := p.step(s.ms, s.acts...)
		if r.end.typ() != "stepped" || len(r.frames) == 0 {
			t.Fatalf("step %d: %s with %d frames", i, r.end.raw, len(r.frames))
		}
		last := r.frames[len(r.frames)-1]
		if last.Reason != "step" || last.T != r.end.num("t") {
			t.Fatalf("step %d's last frame: %+v", i, last)
		}
		pictures = append(pictures, last)
	}
	if started, _ := eventsNamed(t, p.events, "ROUND_STARTED"); len(started) != 1 {
		t.Fatalf("the round did not start: %v", p.events)
	}
	done := p.stop()
	if blank(decodePNG(t, pictures[len(pictures)-1])) {
		t.Fatal("the last step's picture is blank")
	}
	for _, scale := range []float64{1, 0.5} {
		fresh, _ := plainGame(t, ctx, g, project(t, g, "adapters/godot/testdata/plain"), env, args...)
		op := fmt.Sprint("rep", scale)
		send(t, ctx, fresh, map[string]any{"type": "prepare_replay", "op": op, "replay": done.Replay, "seed": 3,
			"presentation": map[string]any{"timeScale": scale}, "frames": req})
		expect(t, ctx, fresh, "ready", op)
		send(t, ctx, fresh, start(op))
		expect(t, ctx, fresh, "started", op)
		evs, frames, end := collectFrames(t, ctx, fresh, op)
		if end == nil {
			t.Fatalf("replay at %v did not complete", scale)
		}
		sameEvents(t, p.events, evs, scale)
		// Step pictures: one per distinct step end, at the same game time.
		var again []protocol.Frame
		for _, f := range frames {
			if f.Reason == "step" {
				again = append(again, f)
			}
		}
		var want []protocol.Frame
		for _, f := range pictures {
			if len(want) == 0 || want[len(want)-1].T != f.T {
				want = append(want, f)
			}
		}
		if len(again) != len(want) {
			t.Fatalf("replay at %v: %d step pictures, the recording %d", scale, len(again), len(want))
		}
		for i := range want {
			if math.Abs(again[i].T*scale-want[i].T) > 0.01 || !slices.Equal(decodePNG(t, want[i]).Pix, decodePNG(t, again[i]).Pix) {
				t.Fatalf("replay at %v: step picture %d (t %v) differs from the recording's (t %v)", scale, i, again[i].T, want[i].T)
			}
		}
		// Every frame at a game time both have is the same picture.
		byT := map[float64]protocol.Frame{}
		for _, f := range p.frames {
			byT[math.Round(f.T*1000)] = f
		}
		shared := 0
		for _, f := range frames {
			r, ok := byT[math.Round(f.T*scale*1000)]
			if !ok {
				continue
			}
			shared++
			if !slices.Equal(decodePNG(t, r).Pix, decodePNG(t, f).Pix) {
				t.Fatalf("replay at %v: the frame at game time %v differs from the recording's", scale, r.T)
			}
		}
		if shared < 10 {
			t.Fatalf("replay at %v shares %d frames with the recording", scale, shared)
		}
		t.Logf("replay at %v: %d events, %d frames (%d at the recording's times) the same", scale, len(evs), len(frames), shared)
	}
}
