// Package godot_test tests the Cappy addon for Godot 4
// (adapters/godot/addons/cappy) in the real engine: Godot 4.6 from Debian
// unstable, run in the tree scripts/godot-tree builds, against a
// scriptable controller (cappytest) and the real one (bridge/cappy).
package godot_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crosscode/crosscode-mcp/adapters/go/cappy/cappytest"
	"github.com/crosscode/crosscode-mcp/bridge/cappy"
	"github.com/crosscode/crosscode-mcp/internal/proctree"
	"github.com/crosscode/crosscode-mcp/internal/testing/sysdeps"
	"github.com/crosscode/crosscode-mcp/protocol"
)

// project copies a Godot project of the repository (e.g.
// "examples/godot-arena") into a temporary directory, with the addon as it
// is in adapters/godot, and returns the copy's path.
func project(t testing.TB, g sysdeps.Godot, rel string) string {
	t.Helper()
	return g.Project(t, rel, filepath.Join(t.TempDir(), filepath.Base(rel)))
}

// game is Godot running a project in the tree, launched the way the
// controller launches games (cappy.Launcher: its own process group, a
// capped log, stopped with SIGTERM then SIGKILL).
type game struct {
	l *cappy.Launcher
}

// launch starts Godot on dir, connecting to endpoint with token.
func launch(t testing.TB, g sysdeps.Godot, dir, endpoint, token string, env map[string]string, args ...string) *game {
	t.Helper()
	if len(args) == 0 {
		args = []string{"--headless", "--path", "."}
	}
	l := &cappy.Launcher{Command: append([]string{g.Launcher}, args...), Dir: dir, Env: env, LogPath: filepath.Join(t.TempDir(), "game.log")}
	if s, ok := env[protocol.SeedEnv]; ok { // the launcher sets it, as the controller's does
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		l.SetSeed(n)
	}
	if err := l.Start(endpoint, token); err != nil {
		t.Fatal(err)
	}
	gm := &game{l: l}
	t.Cleanup(func() {
		l.Stop(3 * time.Second)
		if t.Failed() {
			t.Logf("game log:\n%s", l.Tail(8<<10))
		}
	})
	return gm
}

// connect starts the game in dir against a scriptable controller (with
// Godot's arguments args, headless by default) and shakes hands (with a
// game with capability input, its actions are peer.Actions).
func connect(t testing.TB, ctx context.Context, dir string, env map[string]string, args ...string) (*cappytest.Peer, *protocol.Hello, *protocol.Scenarios) {
	t.Helper()
	g := sysdeps.NeedGodot(t)
	ctrl := scripted(t)
	launch(t, g, dir, ctrl.Endpoint, ctrl.Token, env, args...)
	peer, err := ctrl.Accept(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { peer.Close() })
	hello, sc, err := peer.Handshake(ctx, ctrl.Token)
	if err != nil {
		t.Fatal(err)
	}
	return peer, hello, sc
}

func timeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func send(t *testing.T, ctx context.Context, p *cappytest.Peer, msgs ...any) {
	t.Helper()
	if err := p.Send(ctx, msgs...); err != nil {
		t.Fatal(err)
	}
}

func expect(t *testing.T, ctx context.Context, p *cappytest.Peer, typ, op string) *protocol.AdapterMessage {
	t.Helper()
	m, err := p.Expect(ctx, typ, op)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// expectFailed reads a failed for op and checks its code.
func expectFailed(t *testing.T, ctx context.Context, p *cappytest.Peer, op, code string) *protocol.Failed {
	t.Helper()
	m := expect(t, ctx, p, "failed", op)
	if m.Failed.Code != code {
		t.Fatalf("failed %s: code %s (%s), expected %s", op, m.Failed.Code, m.Failed.Message, code)
	}
	return m.Failed
}

func prepare(op, scenario string, params map[string]any, pres protocol.Presentation) protocol.PrepareScenario {
	return protocol.PrepareScenario{Type: "prepare_scenario", Op: op, Scenario: scenario, Parameters: params, Presentation: pres}
}

func start(op string) protocol.OpMessage  { return protocol.OpMessage{Type: "start", Op: op} }
func stop(op string) protocol.OpMessage   { return protocol.OpMessage{Type: "stop", Op: op} }
func cancel(op string) protocol.OpMessage { return protocol.OpMessage{Type: "cancel", Op: op} }

// run prepares and runs a scenario to its end.
func run(t *testing.T, ctx context.Context, p *cappytest.Peer, op, scenario string, params map[string]any, pres protocol.Presentation) ([]protocol.Event, *protocol.AdapterMessage) {
	t.Helper()
	send(t, ctx, p, prepare(op, scenario, params, pres))
	expect(t, ctx, p, "ready", op)
	send(t, ctx, p, start(op))
	expect(t, ctx, p, "started", op)
	evs, end, err := p.Collect(ctx, op)
	if err != nil {
		t.Fatal(err)
	}
	return evs, end
}

func payload(t *testing.T, e protocol.Event) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(e.Payload, &m); err != nil {
		t.Fatalf("payload of %s: %v", e.Event, err)
	}
	return m
}

// TestArenaHandshakeAndScenario: hello as the protocol has it, the
// registry with typed parameters, a request in the same burst as welcome,
// and a scenario's events on the simulation's clock.
func TestArenaHandshakeAndScenario(t *testing.T) {
	t.Parallel()
	g := sysdeps.NeedGodot(t)
	ctx := timeout(t, 90*time.Second)
	ctrl := scripted(t)
	launch(t, g, project(t, g, "examples/godot-arena"), ctrl.Endpoint, ctrl.Token, nil)
	peer, err := ctrl.Accept(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	hello := expect(t, ctx, peer, "hello", "").Hello
	if hello.Token != ctrl.Token || hello.Adapter.Name != "cappy-godot" || hello.Game.ID != "godot-arena" || hello.Game.Name != "Godot Arena" || hello.Build != "0.1.0" {
		t.Fatalf("hello: %+v", hello)
	}
	for _, c := range []string{"scenarios", "freeform_recording", "replay", "time_scale", "alternate_cameras", "input", "inspect"} {
		if !hello.HasCapability(c) {
			t.Fatalf("hello lacks %s: %v", c, hello.Capabilities)
		}
	}
	if hello.HasCapability("frames") {
		t.Fatalf("a headless Godot advertises frames: %v", hello.Capabilities)
	}
	// welcome, list_scenarios and a prepare in one read.
	send(t, ctx, peer, cappytest.Welcome(), protocol.ListScenarios{Type: "list_scenarios"},
		prepare("op1", "boss_fight", map[string]any{"difficulty": 1, "hero": "mage"}, nil))
	first := expect(t, ctx, peer, "scenarios", "").Scenarios
	expect(t, ctx, peer, "actions", "") // capability input: the actions follow the registry
	second := expect(t, ctx, peer, "scenarios", "").Scenarios
	if len(first.Scenarios) != 4 || len(second.Scenarios) != 4 {
		t.Fatalf("registry: %+v", first)
	}
	byID := map[string]protocol.Scenario{}
	for _, s := range first.Scenarios {
		byID[s.ID] = s
	}
	d := byID["boss_fight"].Parameters["difficulty"]
	if d.Type != "integer" || *d.Minimum != 1 || *d.Maximum != 3 || d.Default != 2.0 || byID["boss_fight"].Name != "Boss fight" {
		t.Fatalf("boss_fight: %+v", byID["boss_fight"])
	}
	if h := byID["boss_fight"].Parameters["hero"]; h.Type != "string" || len(h.Enum) != 3 || h.Default != "knight" {
		t.Fatalf("boss_fight hero: %+v", h)
	}
	expect(t, ctx, peer, "ready", "op1")
	send(t, ctx, peer, start("op1"))
	expect(t, ctx, peer, "started", "op1")
	evs, end, err := peer.Collect(ctx, "op1")
	if err != nil {
		t.Fatal(err)
	}
	if end.Completed == nil {
		t.Fatalf("boss_fight ended %s: %+v", end.Type, end.Failed)
	}
	names := map[string]int{}
	last := -1.0
	for _, e := range evs {
		names[e.Event]++
		if e.T < last {
			t.Fatalf("t goes back: %v after %v", e.T, last)
		}
		last = e.T
		if p := payload(t, e); p["simT"] != e.T {
			t.Fatalf("%s at t %v has simT %v (timeScale 1)", e.Event, e.T, p["simT"])
		}
	}
	if names["SPAWN"] < 2 || names["HIT"] == 0 || names["BOSS_DEFEATED"]+names["PLAYER_DOWN"] != 1 || last <= 0 {
		t.Fatalf("boss_fight events: %v", names)
	}
	var summary map[string]any
	json.Unmarshal(end.Completed.Summary, &summary)
	if summary["outcome"] == nil || summary["events"] != float64(len(evs)) || summary["simMs"].(float64) < last {
		t.Fatalf("summary: %s (%d events, last t %v)", end.Completed.Summary, len(evs), last)
	}
	t.Logf("%d events, last t %v, summary %s", len(evs), last, end.Completed.Summary)
	if !strings.Contains(string(end.Completed.Summary), `"ticks"`) {
		t.Fatalf("summary lacks the scenario's own keys: %s", end.Completed.Summary)
	}
}

// TestArenaRefusals: what the addon refuses before ready, and one
// operation at a time.
func TestArenaRefusals(t *testing.T) {
	t.Parallel()
	g := sysdeps.NeedGodot(t)
	ctx := timeout(t, 90*time.Second)
	peer, _, _ := connect(t, ctx, project(t, g, "examples/godot-arena"), nil)
	for _, c := range []struct {
		msg  any
		code string
	}{
		{prepare("r1", "nope", nil, nil), protocol.CappyScenarioNotFound},
		{prepare("r2", "boss_fight", map[string]any{"difficulty": 9}, nil), protocol.CappyInvalidParameters},
		{prepare("r3", "boss_fight", map[string]any{"difficulty": 1.5}, nil), protocol.CappyInvalidParameters},
		{prepare("r4", "boss_fight", map[string]any{"hero": "bard"}, nil), protocol.CappyInvalidParameters},
		{prepare("r5", "boss_fight", map[string]any{"colour": "red"}, nil), protocol.CappyInvalidParameters},
		{prepare("r6", "boss_fight", nil, protocol.Presentation{"camera": "drone"}), protocol.CappyUnknownCamera},
		{prepare("r7", "boss_fight", nil, protocol.Presentation{"timeScale": 9.0}), protocol.CappyPresentationRejected},
		{start("r8"), protocol.CappyOutOfState},
		{protocol.PrepareReplay{Type: "prepare_replay", Op: "r9", Replay: &protocol.ReplayPayload{Kind: "inline", Encoding: "base64", Data: "e30=", SHA256: strings.Repeat("0", 64)}}, protocol.CappyReplayInvalid},
		{protocol.PrepareReplay{Type: "prepare_replay", Op: "r10", Replay: protocol.NewInlineReplay([]byte(`{"format":"demo-arena/v1"}`), "demo-arena/v1")}, protocol.CappyReplayUnsupported},
	} {
		send(t, ctx, peer, c.msg)
		op := ""
		switch m := c.msg.(type) {
		case protocol.PrepareScenario:
			op = m.Op
		case protocol.OpMessage:
			op = m.Op
		case protocol.PrepareReplay:
			op = m.Op
		}
		expectFailed(t, ctx, peer, op, c.code)
	}
	// One at a time: a second prepare is busy; cancelled before start, the
	// slot is free again and the cancelled op sends nothing more.
	send(t, ctx, peer, prepare("a", "load_level", map[string]any{"ms": 0}, nil), prepare("b", "load_level", nil, nil))
	expect(t, ctx, peer, "ready", "a")
	expectFailed(t, ctx, peer, "b", protocol.CappyOperationBusy)
	send(t, ctx, peer, cancel("a"), prepare("c", "load_level", map[string]any{"ms": 0}, nil))
	expect(t, ctx, peer, "ready", "c")
	send(t, ctx, peer, start("c"))
	expect(t, ctx, peer, "started", "c")
	evs, end, err := peer.Collect(ctx, "c")
	if err != nil || end.Completed == nil || len(evs) != 2 || evs[1].Event != "LEVEL_LOADED" {
		t.Fatalf("c: %v %+v %+v", err, end, evs)
	}
	// A running scenario cancelled: nothing more of it arrives, the next runs.
	send(t, ctx, peer, prepare("d", "survive", map[string]any{"waves": 10}, nil))
	expect(t, ctx, peer, "ready", "d")
	send(t, ctx, peer, start("d"))
	expect(t, ctx, peer, "started", "d")
	expect(t, ctx, peer, "event", "d")
	send(t, ctx, peer, cancel("d"), prepare("e", "load_level", map[string]any{"ms": 0}, nil))
	for {
		m, err := peer.Recv(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if m.Op() == "d" && m.Event != nil {
			continue // sent before the cancel arrived
		}
		if m.Type != "ready" || m.Op() != "e" {
			t.Fatalf("after cancel: %s for %s", m.Type, m.Op())
		}
		break
	}
}

// TestArenaFailuresAndSlowFrames: the game's own failure code, and pings
// answered while the main thread is blocked for longer than the
// controller's 6 s liveness limit.
func TestArenaFailuresAndSlowFrames(t *testing.T) {
	t.Parallel()
	g := sysdeps.NeedGodot(t)
	ctx := timeout(t, 90*time.Second)
	peer, _, _ := connect(t, ctx, project(t, g, "examples/godot-arena"), nil)
	evs, end := run(t, ctx, peer, "f1", "survive", map[string]any{"hp": 1}, nil)
	if end.Failed == nil || end.Failed.Code != "HERO_DOWN" || len(evs) == 0 || evs[len(evs)-1].Event != "PLAYER_DOWN" {
		t.Fatalf("survive with 1 hp: %+v after %d events", end, len(evs))
	}

	send(t, ctx, peer, prepare("slow", "load_level", map[string]any{"ms": 3000}, nil))
	expect(t, ctx, peer, "ready", "slow")
	send(t, ctx, peer, start("slow"))
	expect(t, ctx, peer, "started", "slow")
	expect(t, ctx, peer, "event", "slow") // LEVEL_LOAD: the main thread now blocks for 3 s
	// Answered while the main thread is blocked: before LEVEL_LOADED (on
	// the main thread, they would come after it).
	for i := range 3 {
		nonce := "n" + strconv.Itoa(i)
		send(t, ctx, peer, protocol.Ping{Type: "ping", Nonce: nonce})
		if m := expect(t, ctx, peer, "pong", ""); m.Pong.Nonce != nonce {
			t.Fatalf("pong %+v, expected nonce %s", m.Pong, nonce)
		}
	}
	if m := expect(t, ctx, peer, "event", "slow"); m.Event.Event != "LEVEL_LOADED" {
		t.Fatalf("after the load: %s", m.Event.Event)
	}
	expect(t, ctx, peer, "completed", "slow")
}

// record runs a freeform recording (the autopilot plays) for about d and
// returns its events and its completed.
func record(t *testing.T, ctx context.Context, peer *cappytest.Peer, op string, d time.Duration) ([]protocol.Event, *protocol.Completed) {
	t.Helper()
	send(t, ctx, peer, protocol.RecordStart{Type: "record_start", Op: op})
	expect(t, ctx, peer, "started", op)
	timer := time.AfterFunc(d, func() { peer.Send(ctx, stop(op)) })
	defer timer.Stop()
	evs, end, err := peer.Collect(ctx, op)
	if err != nil {
		t.Fatal(err)
	}
	if end.Completed == nil {
		t.Fatalf("recording ended %s: %+v", end.Type, end.Failed)
	}
	return evs, end.Completed
}

// replay plays a replay to its end.
func replay(t *testing.T, ctx context.Context, peer *cappytest.Peer, op string, r *protocol.ReplayPayload, pres protocol.Presentation) ([]protocol.Event, *protocol.AdapterMessage) {
	t.Helper()
	send(t, ctx, peer, protocol.PrepareReplay{Type: "prepare_replay", Op: op, Replay: r, Presentation: pres})
	expect(t, ctx, peer, "ready", op)
	send(t, ctx, peer, start(op))
	expect(t, ctx, peer, "started", op)
	evs, end, err := peer.Collect(ctx, op)
	if err != nil {
		t.Fatal(err)
	}
	return evs, end
}

// sameEvents reports the first difference between a recording's events and
// a replay's at timeScale scale (t compared as t*scale).
func sameEvents(t *testing.T, rec, rep []protocol.Event, scale float64) {
	t.Helper()
	for i := range max(len(rec), len(rep)) {
		if i >= len(rec) || i >= len(rep) {
			t.Fatalf("the replay has %d events, the recording %d\n%s", len(rep), len(rec), listEvents(rec, rep))
		}
		a, b := rec[i], rep[i]
		if a.Event != b.Event || string(a.Payload) != string(b.Payload) || abs(b.T*scale-a.T) > 0.01 {
			t.Fatalf("event %d differs: recorded %s t=%v %s, replayed %s t=%v %s\n%s", i, a.Event, a.T, a.Payload, b.Event, b.T, b.Payload, listEvents(rec, rep))
		}
	}
}

func listEvents(rec, rep []protocol.Event) string {
	var b strings.Builder
	for i := range max(len(rec), len(rep)) {
		for _, l := range [][]protocol.Event{rec, rep} {
			if i < len(l) {
				fmt.Fprintf(&b, "%-8v %-14s %-60s | ", l[i].T, l[i].Event, l[i].Payload)
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

func abs(f float64) float64 {
	if f < 0 {
		return -f
	}
	return f
}

// TestArenaRecordAndReplay: the autopilot's input, recorded with its
// physics frames and the seed, replays to the same events, at speed 1 and
// at half speed (t doubled, the same simulation); stop ends a replay early.
func TestArenaRecordAndReplay(t *testing.T) {
	t.Parallel()
	g := sysdeps.NeedGodot(t)
	ctx := timeout(t, 120*time.Second)
	peer, _, _ := connect(t, ctx, project(t, g, "examples/godot-arena"), map[string]string{"ARENA_AUTOPILOT": "1"})
	rec, done := record(t, ctx, peer, "rec1", 2*time.Second)
	if done.Replay == nil || done.Replay.Kind != "inline" || done.Replay.Format != "cappy-godot/v2" {
		t.Fatalf("recording's replay: %+v", done.Replay)
	}
	data, err := done.Replay.DecodeInline() // checks the SHA-256 as the controller does
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Format string  `json:"format"`
		Seed   float64 `json:"seed"`
		TPS    int     `json:"physicsTicksPerSecond"`
		Ticks  int     `json:"ticks"`
		Inputs [][2]json.RawMessage
	}
	if err := json.Unmarshal(data, &r); err != nil || r.TPS != 60 || r.Ticks < 60 || len(r.Inputs) < 5 {
		t.Fatalf("replay data (%v): %s", err, data)
	}
	names := map[string]int{}
	for _, e := range rec {
		names[e.Event]++
	}
	if names["SPAWN"] < 2 || names["WAVE_START"] == 0 {
		t.Fatalf("the recording's events: %v", names)
	}
	t.Logf("recorded %d ticks, %d inputs, %d events %v", r.Ticks, len(r.Inputs), len(rec), names)

	rep, end := replay(t, ctx, peer, "rep1", done.Replay, nil)
	if end.Completed == nil {
		t.Fatalf("replay: %+v", end.Failed)
	}
	sameEvents(t, rec, rep, 1)
	slow, end := replay(t, ctx, peer, "rep2", done.Replay, protocol.Presentation{"timeScale": 0.5, "camera": "follow"})
	if end.Completed == nil {
		t.Fatalf("replay at half speed: %+v", end.Failed)
	}
	sameEvents(t, rec, slow, 0.5)

	// stop ends a replay early, with what it played.
	send(t, ctx, peer, protocol.PrepareReplay{Type: "prepare_replay", Op: "rep3", Replay: done.Replay})
	expect(t, ctx, peer, "ready", "rep3")
	send(t, ctx, peer, start("rep3"), stop("rep3"))
	expect(t, ctx, peer, "started", "rep3")
	_, end, err = peer.Collect(ctx, "rep3")
	if err != nil || end.Completed == nil || !strings.Contains(string(end.Completed.Summary), `"stopped":true`) {
		t.Fatalf("stopped replay: %v %+v", err, end)
	}
}

// TestProbeMisbehaviour: a GDScript error in a scenario fails it with
// SCRIPT_ERROR naming the script and line (it does not hang), with or
// without an await before it; a paused tree still answers; a game without
// cameras says so, and one without a start callable does not say it resets
// itself (its recordings and replays each get a new process).
func TestProbeMisbehaviour(t *testing.T) {
	t.Parallel()
	g := sysdeps.NeedGodot(t)
	ctx := timeout(t, 90*time.Second)
	peer, hello, sc := connect(t, ctx, project(t, g, "adapters/godot/testdata/probe"), nil)
	if hello.Game.ID != "cappy-probe" || !hello.HasCapability("freeform_recording") || !hello.HasCapability("replay") || hello.HasCapability(protocol.CapResetsItself) || hello.HasCapability("alternate_cameras") || len(sc.Scenarios) != 5 {
		t.Fatalf("hello %+v, registry %+v", hello, sc)
	}
	for i, wait := range []bool{true, false} {
		op := "err" + strconv.Itoa(i)
		evs, end := run(t, ctx, peer, op, "script_error", map[string]any{"await": wait}, nil)
		if end.Failed == nil || end.Failed.Code != "SCRIPT_ERROR" || !strings.Contains(end.Failed.Message, "res://main.gd:") || !strings.Contains(end.Failed.Message, "in _script_error(): Invalid call. Nonexistent function 'explode'") || len(evs) != 1 || evs[0].Event != "BEFORE" {
			t.Fatalf("script error (await %v): %+v %+v", wait, end.Failed, evs)
		}
	}
	send(t, ctx, peer, prepare("req", "required", nil, nil))
	expectFailed(t, ctx, peer, "req", protocol.CappyInvalidParameters)
	// The game changing Engine.time_scale at timeScale 0.5 is caught; at
	// speed 1, where the addon changes nothing, it is the game's business.
	if _, end := run(t, ctx, peer, "tamper", "tamper", nil, protocol.Presentation{"timeScale": 0.5}); end.Failed == nil || end.Failed.Code != "SIMULATION_CHANGED" {
		t.Fatalf("tamper at 0.5: %+v", end)
	}
	if evs, end := run(t, ctx, peer, "tamper1", "tamper", nil, nil); end.Completed == nil || len(evs) != 1 || string(evs[0].Payload) != `{"simT":133.333,"ticks":60,"timeScale":1.0}` {
		t.Fatalf("tamper at 1 (the engine restored after the failed one): %+v %v", end, evs)
	}
	if evs, end := run(t, ctx, peer, "codec", "codec", nil, nil); end.Completed == nil || len(evs) != 8 {
		t.Fatalf("codec: %+v, %d kinds", end.Failed, len(evs))
	}
	// No start callable: a recording still records (the game as it is).
	send(t, ctx, peer, protocol.RecordStart{Type: "record_start", Op: "rec"})
	expect(t, ctx, peer, "started", "rec")
	send(t, ctx, peer, stop("rec"))
	if _, end, err := peer.Collect(ctx, "rec"); err != nil || end.Completed == nil || end.Completed.Replay == nil {
		t.Fatalf("a recording without a start callable: %v %+v", err, end)
	}
	send(t, ctx, peer, protocol.PrepareReplay{Type: "prepare_replay", Op: "rep", Replay: protocol.NewInlineReplay([]byte("{}"), "")})
	expectFailed(t, ctx, peer, "rep", protocol.CappyReplayUnsupported)
	send(t, ctx, peer, prepare("cam", "paused", nil, protocol.Presentation{"camera": "overview"}))
	expectFailed(t, ctx, peer, "cam", protocol.CappyCapabilityMissing)

	// Paused: the registry, pings and cancel still work.
	send(t, ctx, peer, prepare("p", "paused", nil, nil))
	expect(t, ctx, peer, "ready", "p")
	send(t, ctx, peer, start("p"))
	expect(t, ctx, peer, "started", "p")
	expect(t, ctx, peer, "event", "p")
	send(t, ctx, peer, protocol.ListScenarios{Type: "list_scenarios"}, protocol.Ping{Type: "ping", Nonce: "paused"})
	for _, typ := range []string{"scenarios", "pong"} {
		m := expect(t, ctx, peer, typ, "")
		if typ == "pong" && m.Pong.Nonce != "paused" {
			t.Fatalf("pong: %+v", m.Pong)
		}
	}
	send(t, ctx, peer, cancel("p"))
	evs, end := run(t, ctx, peer, "r", "required", map[string]any{"level": "one"}, nil)
	if end.Completed == nil || len(evs) != 0 || !strings.Contains(string(end.Completed.Summary), `"level":"one"`) {
		t.Fatalf("after the paused one: %+v", end)
	}
}

// TestWithoutControllerTheAddonIsIdle: without CAPPY_ENDPOINT and
// CAPPY_SESSION_TOKEN (a shipped game) the addon connects nowhere and the
// game runs as usual.
func TestWithoutControllerTheAddonIsIdle(t *testing.T) {
	t.Parallel()
	g := sysdeps.NeedGodot(t)
	cmd := exec.Command(g.Launcher, "--headless", "--path", ".")
	cmd.Dir = project(t, g, "adapters/godot/testdata/probe")
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CAPPY_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "PROBE_QUIT=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "cappy enabled=false") || strings.Contains(string(out), "Cappy:") {
		t.Fatalf("%v\n%s", err, out)
	}
}

// groupAlive reports whether any process of process group pgid is alive.
func groupAlive(pgid int) bool { return proctree.GroupAlive(pgid) }

// waitGone waits until no process of the group is left.
func waitGone(t *testing.T, pgid int, what string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for groupAlive(pgid) {
		if time.Now().After(deadline) {
			out, _ := exec.Command("ps", "-o", "pid,pgid,comm", "-g", strconv.Itoa(pgid)).CombinedOutput()
			t.Fatalf("%s: processes left in group %d:\n%s", what, pgid, out)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestConcurrentLaunchesLeaveNothing: two games run in the tree at once,
// each in its own namespaces; stopped as the controller stops a game
// (SIGTERM to the group), or with only the launcher SIGKILLed, nothing of
// either stays behind, and nothing stays mounted.
func TestConcurrentLaunchesLeaveNothing(t *testing.T) {
	t.Parallel()
	g := sysdeps.NeedGodot(t)
	ctx := timeout(t, 60*time.Second)
	ctrl := scripted(t)
	dir := project(t, g, "adapters/godot/testdata/probe")
	games := []*game{launch(t, g, dir, ctrl.Endpoint, ctrl.Token, nil), launch(t, g, dir, ctrl.Endpoint, ctrl.Token, nil)}
	var peers []*cappytest.Peer
	for range games {
		p, err := ctrl.Accept(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		if _, _, err := p.Handshake(ctx, ctrl.Token); err != nil {
			t.Fatal(err)
		}
		peers = append(peers, p)
	}
	first, second := games[0].l.Info().PID, games[1].l.Info().PID
	t0 := time.Now()
	games[0].l.Stop(5 * time.Second)
	waitGone(t, first, "after SIGTERM to the group")
	t.Logf("stopped in %s", time.Since(t0))
	// The other one still runs and answers.
	for _, p := range peers {
		if err := p.Send(ctx, protocol.Ping{Type: "ping", Nonce: "alive"}); err != nil {
			continue // the stopped game's connection
		}
	}
	if groupAlive(second) == false {
		t.Fatal("the second game died with the first")
	}
	// Only the launcher (unshare) killed: what it started dies with it.
	if err := proctree.KillProcess(second); err != nil {
		t.Fatal(err)
	}
	t0 = time.Now()
	waitGone(t, second, "after SIGKILL to the launcher alone")
	t.Logf("gone in %s", time.Since(t0))
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	if strings.Contains(string(mounts), g.Tree) {
		t.Fatalf("mounts of the tree left behind:\n%s", mounts)
	}
}

// TestHandshakeWhileTheMainThreadStalls: the registry answers welcome from
// the connection's thread, so a main thread blocked as the game is
// welcomed (here for 8 s, past the controller's liveness limit) holds back
// neither the handshake nor pings.
func TestHandshakeWhileTheMainThreadStalls(t *testing.T) {
	t.Parallel()
	g := sysdeps.NeedGodot(t)
	ctx := timeout(t, 90*time.Second)
	ctrl := scripted(t)
	gm := launch(t, g, project(t, g, "adapters/godot/testdata/probe"), ctrl.Endpoint, ctrl.Token, map[string]string{"PROBE_STALL_MS": "8000"})
	peer, err := ctrl.Accept(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	if _, sc, err := peer.Handshake(ctx, ctrl.Token); err != nil || len(sc.Scenarios) == 0 {
		t.Fatalf("handshake: %v %+v", err, sc)
	}
	send(t, ctx, peer, protocol.ListScenarios{Type: "list_scenarios"}, protocol.Ping{Type: "ping", Nonce: "stalled"})
	expect(t, ctx, peer, "scenarios", "")
	expect(t, ctx, peer, "pong", "")
	if log := gm.l.Tail(64 << 10); strings.Contains(log, "STALL_OVER") {
		t.Fatalf("the handshake waited for the stalled main thread:\n%s", log)
	}
	// The stall does end, and the log shows it (so the check above can fail).
	for deadline := time.Now().Add(60 * time.Second); !strings.Contains(gm.l.Tail(64<<10), "STALL_OVER"); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the stall never ended in the game's log")
		}
	}
}

// TestGameQuitsWithTheController: when the controller's connection ends,
// normally or because the controller died, the game quits (a game the
// controller launched never outlives it).
func TestGameQuitsWithTheController(t *testing.T) {
	t.Parallel()
	g := sysdeps.NeedGodot(t)
	ctx := timeout(t, 90*time.Second)
	ctrl := scripted(t)
	dir := project(t, g, "examples/godot-arena")
	for _, how := range []string{"close", "drop"} {
		gm := launch(t, g, dir, ctrl.Endpoint, ctrl.Token, nil)
		peer, err := ctrl.Accept(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := peer.Handshake(ctx, ctrl.Token); err != nil {
			t.Fatal(err)
		}
		if how == "close" {
			peer.Close()
		} else {
			peer.Conn.CloseNow() // as when the controller's process dies
		}
		pgid := gm.l.Info().PID
		waitGone(t, pgid, "after the controller's "+how)
	}
}

// scripted is a scripted Cappy controller, closed when the test ends.
func scripted(t testing.TB) *cappytest.Controller {
	t.Helper()
	ctrl, err := cappytest.NewController()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ctrl.Close() })
	return ctrl
}
