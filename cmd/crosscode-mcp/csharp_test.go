package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crosscode/crosscode-mcp/internal/proctree"
	"github.com/crosscode/crosscode-mcp/internal/testing/sysdeps"
)

// The Unity package's C# core (adapters/unity/Runtime/Core) in a real
// game: examples/csharp-arena, a Mono console game built on it with mcs,
// launched by its capture config as shipped, under the real stdio server.

// csharpArena builds the C# example in a fresh repository at its path
// and starts an agent on it with its capture config (extra server args
// after it; env, e.g. ARENA_RESETS=1, reaches the game).
func csharpArena(t *testing.T, name string, env []string, args ...string) *agent {
	t.Helper()
	m := sysdeps.NeedMono(t)
	repo := gitRepo(t)
	m.Arena(t, repo)
	config := filepath.Join(repo, "examples", "csharp-arena", ".crosscode", "capture.json")
	return startAgent(t, name, agentOpts{clientName: "claude-code", dir: repo,
		args: append([]string{"--actor", name + "@example.com", "--capture-config", config}, args...), env: env})
}

// events lists a result's timeline as "t EVENT payload" lines.
func events(t *testing.T, out map[string]any) []string {
	t.Helper()
	var lines []string
	for _, e := range list(out, "timeline") {
		b, _ := json.Marshal(e["payload"])
		lines = append(lines, fmt.Sprintf("%v %v %s", e["t"], e["event"], b))
	}
	for _, e := range list(out, "events") {
		b, _ := json.Marshal(e["payload"])
		lines = append(lines, fmt.Sprintf("%v %v %s", e["t"], e["event"], b))
	}
	return lines
}

// TestCaptureCSharpArena: handshake and capabilities; two scenarios with
// events (the game's own and the capture config's C# event and
// UnityEvent-like ones) and frames; the game's own failure; every refusal
// an agent can meet; a recording of the autopilot's play and its replays,
// at speed 1 and 0.5, each in a new game process, the same in events and
// pictures; and a killed game relaunched by the next call.
func TestCaptureCSharpArena(t *testing.T) {
	t.Parallel()
	a := csharpArena(t, "ada", nil)
	sc := a.call("list_scenarios", nil)
	if sc["game"] != "csharp-arena" || len(sc["scenarios"].([]any)) != 3 {
		t.Fatalf("list_scenarios: %v", sc)
	}
	st := a.call("capture_status", nil)
	caps := fmt.Sprint(field(st, "adapter", "capabilities"))
	for _, c := range []string{"scenarios", "freeform_recording", "replay", "time_scale", "frames", "input", "inspect", "seed", "config_events"} {
		if !strings.Contains(caps, c) {
			t.Fatalf("the arena lacks %s: %v", c, caps)
		}
	}
	if strings.Contains(caps, "resets_itself") || field(st, "adapter", "name") != "cappy-csharp" {
		t.Fatalf("adapter: %v", st["adapter"])
	}

	run, imgs := a.callImages("run_scenario", map[string]any{"scenario": "waves", "parameters": map[string]any{"waves": 2}})
	joined := strings.Join(events(t, run), "\n")
	if run["status"] != "completed" || len(imgs) != 1 || field(run, "frames", "stored").(float64) < 3 {
		t.Fatalf("waves: %v", run)
	}
	for _, want := range []string{" WAVE {", " SPAWN {", " HIT {", " HURT {\"args\":[4],", " COIN_PICKED {\"args\":[1],", " VICTORY {"} {
		if !strings.Contains(joined, want) {
			t.Fatalf("the waves' events lack %q:\n%s", want, joined)
		}
	}
	boss := a.call("run_scenario", map[string]any{"scenario": "boss", "parameters": map[string]any{"difficulty": 1}})
	joined = strings.Join(events(t, boss), "\n")
	if boss["status"] != "completed" || !strings.Contains(joined, " BOSS_INTRO {") || !strings.Contains(joined, " BOSS_PHASE {\"hp\":") {
		t.Fatalf("boss: %v\n%s", boss["status"], joined)
	}

	// Refusals, each with what to do.
	refusals := []struct {
		tool  string
		args  map[string]any
		words string
	}{
		{"run_scenario", map[string]any{"scenario": "dragon"}, "SCENARIO_NOT_FOUND"},
		{"run_scenario", map[string]any{"scenario": "waves", "parameters": map[string]any{"waves": 9}}, "INVALID_PARAMETERS"},
		{"run_scenario", map[string]any{"scenario": "waves", "parameters": map[string]any{"hp": "lots"}}, "INVALID_PARAMETERS"},
		{"run_scenario", map[string]any{"scenario": "waves", "presentation": map[string]any{"timeScale": 9}}, "timeScale"},
		{"run_scenario", map[string]any{"scenario": "waves", "presentation": map[string]any{"camera": "top"}}, "alternate_cameras"},
		{"step_game", map[string]any{"ms": 100}, "start_recording"},
		{"replay", map[string]any{"op": "op_nope"}, "op_nope"},
	}
	for _, r := range refusals {
		out, isErr := a.callRaw(r.tool, r.args)
		if !isErr || !strings.Contains(fmt.Sprint(out["error"]), r.words) {
			t.Fatalf("%s %v: %v; expected a tool error naming %s", r.tool, r.args, out, r.words)
		}
	}
	if out, isErr := a.callRaw("run_scenario", map[string]any{"scenario": "waves", "parameters": map[string]any{"hp": 1, "waves": 3}}); !isErr || out["status"] != "failed" || out["code"] != "HERO_DOWN" {
		t.Fatalf("the game's own failure: %v", out)
	}
	longRunCancelled(t, a, map[string]any{"scenario": "waves", "parameters": map[string]any{"waves": 5, "hp": 500}})

	// A recording of the autopilot's play (ARENA_AUTOPILOT=1 in the
	// config), and its replays in new game processes.
	rec := a.call("start_recording", nil)
	if rec["status"] != "running" {
		t.Fatalf("start_recording: %v", rec)
	}
	played := gamePID(t, a)
	time.Sleep(3 * time.Second)
	stopped, _ := a.callImages("stop_recording", map[string]any{"op": rec["op"]})
	if stopped["status"] != "completed" || field(stopped, "replay", "sha256") == nil || stopped["events"].(float64) < 5 || field(stopped, "replay", "format") != "cappy-csharp/v1" {
		t.Fatalf("stop_recording: %v", stopped)
	}
	for _, scale := range []float64{1, 0.5} {
		rp, _ := a.callImages("replay", map[string]any{"op": rec["op"], "presentation": map[string]any{"timeScale": scale}})
		if rp["status"] != "completed" || field(rp, "divergence", "identical") != true || field(rp, "divergence", "compared") != stopped["events"] ||
			field(rp, "visualDivergence", "identical") != true || field(rp, "visualDivergence", "compared").(float64) < 4 {
			t.Fatalf("replay at %v: %v %v", scale, rp["divergence"], rp["visualDivergence"])
		}
		if lastT := rp["lastT"].(float64); lastT < stopped["lastT"].(float64)/scale-1 {
			t.Fatalf("replay at %v ends at t %v; the recording at %v", scale, lastT, stopped["lastT"])
		}
		if pid := gamePID(t, a); pid == played || pid == 0 {
			t.Fatalf("the replay at %v ran in the process of the play before (%v)", scale, pid)
		} else {
			played = pid
		}
	}

	// The game dies (SIGKILL); the next call relaunches it.
	pid := int(gamePID(t, a))
	if err := proctree.KillProcess(pid); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the killed game to be seen gone", func() bool {
		st, _ := a.callRaw("capture_status", nil)
		return field(st, "game", "running") == false && st["adapter"] == nil
	})
	launches := field(a.call("capture_status", nil), "game", "launches").(float64)
	if sc := a.call("list_scenarios", nil); len(sc["scenarios"].([]any)) != 3 {
		t.Fatalf("after the relaunch: %v", sc)
	}
	if st := a.call("capture_status", nil); field(st, "game", "launches") != launches+1 || field(st, "game", "running") != true {
		t.Fatalf("after the relaunch: %v", st)
	}
}

// steps is an agent's play of the arena: a look, walking right, swings,
// a press of the pointer, walking back.
var arenaSteps = []map[string]any{
	{"ms": 500, "actions": []map[string]any{{"name": "move", "x": 1, "y": 0}}},
	{"ms": 250},
	{"ms": 0, "actions": []map[string]any{{"name": "attack", "pressed": true}}},
	{"ms": 750, "actions": []map[string]any{{"name": "move", "x": 0, "y": 0}}},
	{"ms": 1000, "actions": []map[string]any{{"name": "attack", "pressed": false}, {"name": "pointer", "x": 100, "y": 60, "pressed": true}}},
	{"ms": 500, "actions": []map[string]any{{"name": "move", "x": -1, "y": 0.5}, {"name": "attack", "pressed": true}}},
	{"ms": 1500, "actions": []map[string]any{{"name": "move", "x": 0, "y": 0}}},
}

// playArena plays arenaSteps with seed and returns the recording's op and
// the steps' events.
func playArena(t *testing.T, a *agent, seed int) (string, []string) {
	t.Helper()
	rec, imgs := a.callImages("start_recording", map[string]any{"control": "agent", "seed": seed})
	op, _ := rec["op"].(string)
	var kinds []string
	for _, act := range list(rec, "actions") {
		kinds = append(kinds, fmt.Sprint(act["name"], ":", act["kind"]))
	}
	if rec["status"] != "running" || len(imgs) != 1 || rec["simT"] != 0.0 || !slices.Equal(kinds, []string{"move:axis2d", "attack:button", "pointer:pointer"}) {
		t.Fatalf("start_recording control agent: %v (%d images)", rec, len(imgs))
	}
	first := imgs[0].Data
	var evs []string
	simT := 0.0
	for i, step := range arenaSteps {
		out, imgs := a.callImages("step_game", step)
		simT += float64(step["ms"].(int))
		if out["status"] != "running" || out["simT"] != simT || out["t"] != simT || len(imgs) != 1 {
			t.Fatalf("step %d: %v (%d images)", i, out, len(imgs))
		}
		if i == 0 && imgs[0].Data == first {
			t.Fatal("the first step's picture is the held one: the hero did not move")
		}
		evs = append(evs, events(t, out)...)
	}
	return op, evs
}

// TestCaptureCSharpAgentPlay: an agent plays the C# arena in steps:
// start_recording with control "agent" answers its actions and a first
// picture of the held game; each step runs exactly its game time with
// the input held and answers its events and a picture; the game stays
// held while the agent thinks; inspect reads the scene (roots, an
// object's transform and components' public fields, a field); the play's
// replay at half speed, in a new process seeded as the play, gives the
// same events and pictures; and the same seed and steps play the same.
func TestCaptureCSharpAgentPlay(t *testing.T) {
	t.Parallel()
	a := csharpArena(t, "ada", nil)
	op, evs := playArena(t, a, 7)
	joined := strings.Join(evs, "\n")
	for _, want := range []string{"516.667 WAVE {", " SWING {", " SPAWN {"} {
		if !strings.Contains(joined, want) {
			t.Fatalf("the play's events lack %q:\n%s", want, joined)
		}
	}

	what := a.call("inspect_game", map[string]any{"query": ""})
	if field(what, "value", "scene") != "Arena" || !strings.Contains(fmt.Sprint(field(what, "value", "roots")), "name:Hero") {
		t.Fatalf("inspect_game \"\": %v", what)
	}
	hero := a.call("inspect_game", map[string]any{"query": "Hero"})
	x, _ := field(hero, "value", "position", "x").(float64)
	if x == 320 || field(hero, "value", "components", "Health", "max") != 100.0 || field(hero, "value", "components", "Mover", "speed") != 180.0 {
		t.Fatalf("inspect_game Hero: %v", hero)
	}
	before := a.call("inspect_game", map[string]any{"query": "Arena:ArenaState.tick"})
	time.Sleep(time.Second) // the agent thinks: the game is held
	if after := a.call("inspect_game", map[string]any{"query": "Arena:ArenaState.tick"}); after["value"] != before["value"] || before["value"] != 270.0 {
		t.Fatalf("held between steps: tick %v, then %v (4500 ms is 270 frames)", before["value"], after["value"])
	}
	if bad, _ := a.callRaw("inspect_game", map[string]any{"query": "Dragon"}); bad["errorCode"] != "UNKNOWN_QUERY" || !strings.Contains(fmt.Sprint(bad), "Hero") {
		t.Fatalf("inspect_game Dragon: %v", bad)
	}
	for _, bad := range []map[string]any{
		{"ms": 100, "actions": []map[string]any{{"name": "fly", "pressed": true}}},
		{"ms": 100, "actions": []map[string]any{{"name": "move", "x": 3, "y": 0}}},
	} {
		if out, isErr := a.callRaw("step_game", bad); !isErr || !strings.Contains(fmt.Sprint(out["error"]), "INVALID_INPUT") {
			t.Fatalf("step_game %v: %v", bad, out)
		}
	}

	stopped, _ := a.callImages("stop_recording", map[string]any{"op": op})
	if stopped["status"] != "completed" || field(stopped, "replay", "sha256") == nil || field(stopped, "frames", "stored").(float64) < float64(len(arenaSteps)) {
		t.Fatalf("stop_recording: %v", stopped)
	}
	played := gamePID(t, a)
	slow, _ := a.callImages("replay", map[string]any{"op": op, "presentation": map[string]any{"timeScale": 0.5}})
	if slow["status"] != "completed" || field(slow, "divergence", "identical") != true || field(slow, "visualDivergence", "identical") != true ||
		field(slow, "visualDivergence", "compared").(float64) < float64(len(arenaSteps)) || slow["lastT"].(float64) < 1.9*stopped["lastT"].(float64) {
		t.Fatalf("replay at 0.5: events %v, pictures %v (lastT %v, recorded %v)", slow["divergence"], slow["visualDivergence"], slow["lastT"], stopped["lastT"])
	}
	if pid := gamePID(t, a); pid == played {
		t.Fatalf("the replay ran in the play's process (%v)", pid)
	}

	// The same seed and steps: the same play.
	_, again := playArena(t, a, 7)
	if !slices.Equal(evs, again) {
		t.Fatalf("two plays with the same seed and steps differ:\n%s\n---\n%s", joined, strings.Join(again, "\n"))
	}
	a.c.Close()

	// A build that draws two stretches of the play otherwise (its floor
	// red): the events are the same, and the pictures differ in exactly
	// those two spans.
	config := filepath.Join(repo(t, a), "examples", "csharp-arena", ".crosscode", "capture.json")
	cfg := map[string]any{}
	b, _ := os.ReadFile(config)
	json.Unmarshal(b, &cfg)
	cfg["game"].(map[string]any)["env"] = map[string]string{"ARENA_FLASH": "1000-1600,3000-3300"}
	bo := startAgent(t, "bo", agentOpts{clientName: "cursor", dir: repo(t, a), args: []string{"--actor", "bo@example.com", "--capture-config", writeConfig(t, cfg)}})
	plantedSpans(t, bo, op, [][2]float64{{1000, 1600}, {3000, 3300}}, 0)
}

// repo is the repository an agent works in.
func repo(t *testing.T, a *agent) string {
	t.Helper()
	return a.cmd.Dir
}

// TestCaptureCSharpResetsItself: with ARENA_RESETS=1 the game puts itself
// where a recording starts (the package does so in Unity's Editor): hello
// says resets_itself, and a play and its replay run in one process.
func TestCaptureCSharpResetsItself(t *testing.T) {
	t.Parallel()
	a := csharpArena(t, "ada", []string{"ARENA_RESETS=1"})
	op, _ := playArena(t, a, 3)
	a.call("stop_recording", map[string]any{"op": op})
	if caps := fmt.Sprint(field(a.call("capture_status", nil), "adapter", "capabilities")); !strings.Contains(caps, "resets_itself") {
		t.Fatalf("capabilities: %v", caps)
	}
	rp, _ := a.callImages("replay", map[string]any{"op": op})
	if field(rp, "divergence", "identical") != true || field(rp, "visualDivergence", "identical") != true {
		t.Fatalf("replay: %v %v", rp["divergence"], rp["visualDivergence"])
	}
	if st := a.call("capture_status", nil); field(st, "game", "launches") != 1.0 {
		t.Fatalf("a game that resets itself was launched again: %v", st["game"])
	}
}

// TestCaptureCSharpLiveness: the game's main thread is busy for 8 s (the
// stall scenario: a long synchronous load, say), longer than the 6 s the
// controller waits for a pong; the core answers the controller's pings
// from its socket's thread, so the game is not counted unresponsive and
// the scenario completes.
func TestCaptureCSharpLiveness(t *testing.T) {
	t.Parallel()
	a := csharpArena(t, "ada", nil)
	a.call("list_scenarios", nil)
	start := time.Now()
	run := a.call("run_scenario", map[string]any{"scenario": "stall", "parameters": map[string]any{"ms": 8000}})
	joined := strings.Join(events(t, run), "\n")
	if run["status"] != "completed" || !strings.Contains(joined, "STALL_BEGIN") || !strings.Contains(joined, "STALL_END") || time.Since(start) < 8*time.Second {
		t.Fatalf("stall: %v", run)
	}
	if st := a.call("capture_status", nil); field(st, "game", "launches") != 1.0 || st["adapter"] == nil {
		t.Fatalf("after the stall: %v", st)
	}
}
