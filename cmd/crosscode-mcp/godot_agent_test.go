package main

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"image/jpeg"
	"slices"
	"testing"
)

// TestCaptureGodotAgentPlay: an agent plays the Godot example itself,
// over the real stdio server, with the real Godot 4.6 rendering under Xvfb
// (the example's capture config as shipped): start_recording with control
// "agent" answers the arena's actions (from its InputMap) and a first
// picture of the held game; ten step_game calls run exactly their game
// time with the input held, each with its events and a picture of where
// it paused; inspect_game reads the hero where the steps put it;
// stop_recording stores the play, and its replay at half speed gives the
// same events and the same pictures.
func TestCaptureGodotAgentPlay(t *testing.T) {
	t.Parallel() // mostly waiting on the engine: overlaps the package's other tests
	_, repo, config, path := godotArena(t)
	exampleCommand(t, config)
	a := startAgent(t, "ada", agentOpts{clientName: "claude-code", dir: repo, args: []string{"--capture-config", config}, env: []string{path}})
	launchGodot(t, a)

	rec, imgs := a.callImages("start_recording", map[string]any{"control": "agent"})
	op, _ := rec["op"].(string)
	var kinds []string
	for _, act := range list(rec, "actions") {
		kinds = append(kinds, fmt.Sprint(act["name"], ":", act["kind"]))
	}
	if rec["status"] != "running" || op == "" || !slices.Equal(kinds, []string{"move:axis2d", "attack:button", "dodge:button", "pointer:pointer"}) || rec["simT"] != 0.0 || len(imgs) != 1 {
		t.Fatalf("start_recording control agent: %v with %d images", rec, len(imgs))
	}
	held := imgs[0].Data

	// Right for three steps, a swing standing still, back left for two,
	// then swings and dodges in place: 250 ms (15 physics frames) each.
	simT := 0.0
	for i := range 10 {
		var acts []map[string]any
		switch {
		case i < 3:
			acts = []map[string]any{{"name": "move", "x": 1, "y": 0}}
		case i == 3:
			acts = []map[string]any{{"name": "move", "x": 0, "y": 0}, {"name": "attack", "pressed": true}}
		case i < 6:
			acts = []map[string]any{{"name": "move", "x": -1, "y": 0}, {"name": "attack", "pressed": false}}
		default:
			acts = []map[string]any{{"name": "move", "x": 0, "y": 0}, {"name": "attack", "pressed": i%2 == 0}, {"name": "dodge", "pressed": i%2 == 1}}
		}
		out, imgs := a.callImages("step_game", map[string]any{"actions": acts, "ms": 250})
		simT += 250
		pics := list(out, "pictures")
		if out["status"] != "running" || out["op"] != op || out["simT"] != simT || out["t"] != simT || len(imgs) != 1 || pics[0]["t"] != simT {
			t.Fatalf("step %d: %v", i, out)
		}
		b, _ := base64.StdEncoding.DecodeString(imgs[0].Data)
		pic, err := jpeg.Decode(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		if lumaSpread(pic) < 2 {
			t.Fatalf("step %d's picture is blank", i)
		}
		if i == 0 && imgs[0].Data == held {
			t.Fatal("the first step's picture is the held one: the hero did not move")
		}
	}

	hero := a.call("inspect_game", map[string]any{"query": "World:hero"})
	// 45 frames right and 30 left at 3 px a frame, from the middle (320, 180).
	if field(hero, "value", "pos", "x") != 365.0 || field(hero, "value", "pos", "y") != 180.0 || field(hero, "value", "hp") == nil {
		t.Fatalf("inspect_game World:hero: %v", hero)
	}
	if what := a.call("inspect_game", map[string]any{"query": ""}); field(what, "value", "scene") != "/root/Main" {
		t.Fatalf("inspect_game with the empty query: %v", what)
	}
	if bad, _ := a.callRaw("inspect_game", map[string]any{"query": "World:wings"}); bad["errorCode"] != "UNKNOWN_QUERY" {
		t.Fatalf("inspect_game of nothing: %v", bad)
	}
	if bad, isErr := a.callRaw("step_game", map[string]any{"actions": []any{map[string]any{"name": "fly", "pressed": true}}, "ms": 100}); !isErr {
		t.Fatalf("step_game with an unknown action: %v", bad)
	}

	stopped, _ := a.callImages("stop_recording", map[string]any{"op": op})
	if stopped["status"] != "completed" || field(stopped, "replay", "sha256") == nil || field(stopped, "frames", "stored").(float64) < 10 {
		t.Fatalf("stop_recording: %v", stopped)
	}
	slow, _ := a.callImages("replay", map[string]any{"op": op, "presentation": map[string]any{"timeScale": 0.5}})
	if slow["status"] != "completed" || field(slow, "divergence", "identical") != true || field(slow, "visualDivergence", "identical") != true ||
		field(slow, "visualDivergence", "compared").(float64) < 10 || slow["lastT"].(float64) < 1.9*stopped["lastT"].(float64) {
		t.Fatalf("replay at 0.5: events %v, pictures %v (lastT %v, recorded %v)", slow["divergence"], slow["visualDivergence"], slow["lastT"], stopped["lastT"])
	}
	t.Logf("played %v events; replay at 0.5 compared %v pictures", stopped["events"], field(slow, "visualDivergence", "compared"))
}
