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
	if summary["warnings"] != nil || summary["seed"] != 7.0 {
		t.Fatalf("summary: %s", done.Summary)
	}
	if probs, _ := summary["eventProblems"].([]any); len(probs) != 2 {
		t.Fatalf("the two events that cannot connect are not reported: %s", done.Summary)
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
		fresh, _ := plainGame(t, ctx, g, project(t, g, "adapters/godot/testdata/plain"), env)
		send(t, ctx, fresh, map[string]any{"type": "prepare_replay", "op": "rep", "replay": done.Replay, "seed": 7, "presentation": map[string]any{"timeScale": scale}})
		expect(t, ctx, fresh, "ready", "rep")
		send(t, ctx, fresh, start("rep"))
		expect(t, ctx, fresh, "started", "rep")
		evs, end, err := fresh.Collect(ctx, "rep")
		if err != nil {
			t.Fatal(err)
		}
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
	if len(w) != 1 || !strings.Contains(fmt.Sprint(w[0]), "--fixed-fps 60") {
		t.Fatalf("summary without a fixed frame step: %s", done.Summary)
	}
}
