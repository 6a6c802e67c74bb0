package main

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

// TestAgentPlay: an agent plays the demo game over stdio (spec section
// 11): start_recording with control agent answers the game's actions and
// a first picture, ten steps each answer their events and a picture, an
// inspect reads the boss, stop_recording stores the replay, and the
// replay at timeScale 0.5 reproduces it without event or visual
// divergence. Every result is checked against its output schema.
func TestAgentPlay(t *testing.T) {
	t.Parallel() // mostly waiting on its processes: overlaps the package's other tests
	repo := gitRepo(t)
	a := startAgent(t, "ada", agentOpts{clientName: "claude-code", dir: repo,
		args: []string{"--actor", "ada@example.com", "--game-cmd", os.Args[0] + " demo-game"}})

	// Steps need an agent-controlled recording.
	if out, isErr := a.callRaw("step_game", map[string]any{"ms": 100}); !isErr || !strings.Contains(out["error"].(string), "start_recording") {
		t.Fatalf("step_game before start: %v", out)
	}
	rec, imgs := a.callImages("start_recording", map[string]any{"control": "agent"})
	op, _ := rec["op"].(string)
	var actions []string
	for _, x := range list(rec, "actions") {
		actions = append(actions, x["name"].(string))
	}
	if rec["status"] != "running" || len(imgs) != 1 || rec["t"] != 0.0 || !slices.Equal(actions, []string{"move", "attack", "cast", "dodge", "potion"}) {
		t.Fatalf("start_recording: %v (%d images)", rec, len(imgs))
	}
	type step struct {
		actions []any
		ms      float64
	}
	press := func(name string, on bool) any { return map[string]any{"name": name, "pressed": on} }
	walk := func(x, y float64) any { return map[string]any{"name": "move", "x": x, "y": y} }
	script := []step{
		{[]any{walk(1, 0)}, 500}, {nil, 500}, {nil, 0}, {[]any{walk(1, 0.2)}, 500},
		{[]any{walk(0, 0), press("attack", true)}, 1000}, {nil, 500}, {[]any{press("cast", true)}, 250},
		{[]any{press("cast", false)}, 750}, {[]any{press("dodge", true), walk(0, -1)}, 120}, {[]any{press("dodge", false), walk(0, 0)}, 1380},
	}
	var total float64
	var seen []string
	for i, s := range script {
		args := map[string]any{"ms": s.ms}
		if s.actions != nil {
			args["actions"] = s.actions
		}
		out, imgs := a.callImages("step_game", args)
		total += s.ms
		if out["op"] != op || out["step"] != fmt.Sprintf("s%d", i+2) || out["t"] != total || out["simT"] != total || out["status"] != "running" || len(imgs) != 1 {
			t.Fatalf("step %d: %v (%d images)", i, out, len(imgs))
		}
		for _, e := range list(out, "events") {
			seen = append(seen, e["event"].(string))
		}
		if i == 5 {
			boss := a.call("inspect_game", map[string]any{"query": "boss"})
			if field(boss, "value", "present") != true || field(boss, "value", "hp") == nil || boss["truncated"] != nil {
				t.Fatalf("inspect_game boss: %v", boss)
			}
		}
	}
	for _, want := range []string{"SPAWN", "BOSS_INTRO", "BOSS_PHASE", "HIT", "SHIELD_UP", "DODGE"} {
		if !slices.Contains(seen, want) {
			t.Fatalf("the steps' events lack %s: %v", want, seen)
		}
	}
	// A refused step: the play goes on.
	if out, isErr := a.callRaw("step_game", map[string]any{"actions": []any{press("jump", true)}, "ms": 100}); !isErr || !strings.Contains(out["error"].(string), "INVALID_INPUT") {
		t.Fatalf("unknown action: %v", out)
	}
	if out, isErr := a.callRaw("step_game", map[string]any{"actions": []any{walk(3, 0)}, "ms": 100}); !isErr || !strings.Contains(out["error"].(string), "INVALID_INPUT") {
		t.Fatalf("value out of range: %v", out)
	}
	if q := a.call("inspect_game", map[string]any{"query": "dragon"}); q["errorCode"] != "UNKNOWN_QUERY" {
		t.Fatalf("inspect_game dragon: %v", q)
	}

	stopped := a.call("stop_recording", map[string]any{"op": op})
	if stopped["status"] != "completed" || field(stopped, "replay", "sha256") == nil {
		t.Fatalf("stop_recording: %v", stopped)
	}
	if out, isErr := a.callRaw("step_game", map[string]any{"ms": 100}); !isErr {
		t.Fatalf("step_game after stop: %v", out)
	}
	slow, _ := a.callImages("replay", map[string]any{"op": op, "presentation": map[string]any{"timeScale": 0.5}})
	if slow["status"] != "completed" || field(slow, "divergence", "identical") != true || field(slow, "divergence", "compared") != stopped["events"] ||
		field(slow, "visualDivergence", "identical") != true || field(slow, "visualDivergence", "compared").(float64) < 5 {
		t.Fatalf("replay at 0.5: %v %v", slow["divergence"], slow["visualDivergence"])
	}

	// The same play replayed by a build that draws two stretches of it
	// otherwise (the demo game's -flash): the events are the same, and the
	// pictures differ in exactly those two spans, each reported.
	b := startAgent(t, "bo", agentOpts{clientName: "cursor", dir: repo,
		args: []string{"--actor", "bo@example.com", "--game-cmd", os.Args[0] + " demo-game -flash 900-1600,3900-4100"}})
	flashed, imgs := b.callImages("replay", map[string]any{"op": op})
	vd, _ := flashed["visualDivergence"].(map[string]any)
	spans, _ := vd["spans"].([]any)
	if field(flashed, "divergence", "identical") != true || vd["identical"] != false || len(spans) != 2 || len(imgs) < 1 || !strings.Contains(flashed["next"].(string), "2 spans") {
		t.Fatalf("two planted changes: events %v, pictures %v\n%v", flashed["divergence"], vd, flashed["next"])
	}
	for i, want := range [][2]float64{{900, 1600}, {3900, 4100}} {
		sp := spans[i].(map[string]any)
		from, to := sp["simT"].(float64), sp["endSimT"].(float64)
		if from < want[0] || to > want[1] || from > to || sp["frames"].(float64) < 1 || sp["image"] == nil || sp["maxDiff"].(float64) <= 0 {
			t.Fatalf("span %d: %v; expected within %v", i, sp, want)
		}
	}
}

// TestAgentPlayFramesZero: frames 0 is a recording's rate, and each step
// still answers its picture (the Go adapter, the demo game): the
// recording keeps the steps' pictures only, says so, and its replay
// compares its pictures with them.
func TestAgentPlayFramesZero(t *testing.T) {
	a := startAgent(t, "ada", agentOpts{clientName: "claude-code", dir: t.TempDir(),
		args: []string{"--toolsets", "capture", "--data", t.TempDir(), "--game-cmd", os.Args[0] + " demo-game"}})
	rec, imgs := a.callImages("start_recording", map[string]any{"control": "agent", "frames": 0})
	if rec["status"] != "running" || len(imgs) != 1 {
		t.Fatalf("start_recording at frames 0: %v (%d images)", rec, len(imgs))
	}
	for i := range 3 {
		if out, imgs := a.callImages("step_game", map[string]any{"ms": 500}); len(imgs) != 1 || out["pictureNote"] != nil {
			t.Fatalf("step %d at frames 0: %v (%d images)", i, out, len(imgs))
		}
	}
	stopped := a.call("stop_recording", map[string]any{"op": rec["op"]})
	if stopped["status"] != "completed" || field(stopped, "frames", "stored") != 4.0 || field(stopped, "frames", "fps") != nil ||
		!strings.Contains(fmt.Sprint(field(stopped, "frames", "note")), "each step's picture") {
		t.Fatalf("stop_recording: %v", stopped["frames"])
	}
	rp, _ := a.callImages("replay", map[string]any{"op": rec["op"]})
	if field(rp, "divergence", "identical") != true || field(rp, "visualDivergence", "identical") != true || field(rp, "visualDivergence", "compared").(float64) < 1 {
		t.Fatalf("replay: %v %v", rp["divergence"], rp["visualDivergence"])
	}
}
