package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/crosscode/crosscode-mcp/internal/sysdeps"
)

// resultText is the text content of a tool result.
func resultText(res *mcpgo.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(mcpgo.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// TestBrowserAgentPlay: an agent plays examples/phaser-arena in headless
// Chromium through the real stdio server, every result checked against
// its tool's output schema: start_recording with control "agent" (the
// game's actions and a first picture), ten step_game with the keyboard's
// and the pointer's actions and a picture each, inspect_game,
// stop_recording, and the replay at timeScale 0.5 without event or visual
// divergence.
func TestBrowserAgentPlay(t *testing.T) {
	sysdeps.Need(t, "chromium")
	dir := buildArena(t)
	root := filepath.Dir(filepath.Dir(dir))
	a := withSchemas(t, startAgent(t, "ada", agentOpts{clientName: "claude-code", dir: root,
		args: []string{"--toolsets", "capture", "--data", t.TempDir(), "--capture-config", filepath.Join(dir, "capture.json")}}))

	// The first launch may take longer than a call waits, on a loaded machine.
	sc := a.callS("list_scenarios", nil)
	for i := 0; i < 3 && strings.Contains(fmt.Sprint(sc["error"]), "did not connect within"); i++ {
		sc = a.callS("list_scenarios", nil)
	}
	if sc["game"] != "phaser-arena" {
		t.Fatalf("list_scenarios: %v", sc)
	}
	caps := fmt.Sprint(field(a.callS("capture_status", nil), "adapter", "capabilities"))
	for _, c := range []string{"input", "inspect", "frames"} {
		if !strings.Contains(caps, c) {
			t.Fatalf("the arena does not advertise %s: %s", c, caps)
		}
	}

	// Start: the game's actions and the first picture, of the paused start.
	res, rec := a.callFull("start_recording", map[string]any{"control": "agent", "frames": 10})
	if res.IsError || rec["status"] != "running" || rec["t"] != 0.0 || rec["simT"] != 0.0 {
		t.Fatalf("start_recording control agent: %v %s", rec, resultText(res))
	}
	op := rec["op"].(string)
	var names []string
	for _, x := range rec["actions"].([]any) {
		act := x.(map[string]any)
		names = append(names, fmt.Sprintf("%s:%s", act["name"], act["kind"]))
		if d, _ := act["description"].(string); d == "" {
			t.Fatalf("action without a description: %v", act)
		}
	}
	if want := []string{"move_up:button", "move_down:button", "move_left:button", "move_right:button", "fire:button", "aim:pointer"}; !slices.Equal(names, want) {
		t.Fatalf("actions: %v, want %v", names, want)
	}
	// The paused start shows the arena and the player alone: less contrast
	// than a scene in play, far from a blank picture's 0.
	pics := images(res)
	if len(pics) != 1 || pixelVariance(t, pics[0]) < 10 {
		t.Fatalf("start_recording's first picture: %d images", len(pics))
	}

	press := func(name string, on bool) map[string]any { return map[string]any{"name": name, "pressed": on} }
	aim := func(x, y float64, on bool) map[string]any {
		return map[string]any{"name": "aim", "x": x, "y": y, "pressed": on}
	}
	steps := []struct {
		actions []any
		ms      float64
	}{
		{[]any{press("move_right", true), press("fire", true)}, 400},
		{nil, 400},
		{[]any{press("move_right", false), press("move_down", true)}, 300},
		{[]any{aim(560, 80, true)}, 500},
		{nil, 0}, // look
		{[]any{aim(560, 80, false), press("move_down", false), press("move_left", true)}, 600},
		{nil, 240},
		{[]any{press("fire", false)}, 200},
		{[]any{press("move_left", false), press("move_up", true), press("fire", true)}, 700},
		{nil, 1000},
	}
	simT := 0.0
	events := 0
	for i, s := range steps {
		args := map[string]any{"ms": s.ms}
		if s.actions != nil {
			args["actions"] = s.actions
		}
		res, out := a.callFull("step_game", args)
		if res.IsError {
			t.Fatalf("step %d: %s %v", i+1, resultText(res), out)
		}
		prev := simT
		simT += s.ms
		if out["status"] != "running" || out["simT"] != simT || out["t"] != simT || out["op"] != op {
			t.Fatalf("step %d (ms %g): %v, want simT %g", i+1, s.ms, out, simT)
		}
		for _, e := range out["events"].([]any) {
			et := field(e.(map[string]any), "t").(float64)
			if et < prev || et > simT {
				t.Fatalf("step %d: event %v outside the step's time %g..%g", i+1, e, prev, simT)
			}
			events++
		}
		pics := images(res)
		if len(pics) != 1 {
			t.Fatalf("step %d: %d pictures: %v", i+1, len(pics), out["pictureNote"])
		}
		if pixelVariance(t, pics[0]) < 10 {
			t.Fatalf("step %d: a blank picture", i+1)
		}
	}

	// Refused steps: an action the game does not have (the controller),
	// and a point outside the picture (the game): the play goes on.
	for _, bad := range []map[string]any{
		{"actions": []any{press("jump", true)}, "ms": 100},
		{"actions": []any{aim(900, 80, true)}, "ms": 100},
	} {
		res, out := a.callFull("step_game", bad)
		if !res.IsError || !strings.Contains(resultText(res)+fmt.Sprint(out), "INVALID_INPUT") {
			t.Fatalf("step_game %v: %v %s", bad, out, resultText(res))
		}
	}

	// Inspect: what can be asked, then the player and the clock. The
	// player's path follows from the steps alone: right 800 ms, down 800,
	// left 1040, up 1700, at 3 px a 20 ms tick from the arena's centre.
	_, what := a.callFull("inspect_game", map[string]any{"query": ""})
	for _, k := range []string{"player", "enemies", "bullets", "tick", "score"} {
		if !strings.Contains(fmt.Sprint(field(what, "value", "keys")), k+":") {
			t.Fatalf("inspect_game \"\": no %s in %v", k, what)
		}
	}
	_, state := a.callFull("inspect_game", map[string]any{"query": "over"})
	_, tick := a.callFull("inspect_game", map[string]any{"query": "tick"})
	_, player := a.callFull("inspect_game", map[string]any{"query": "player"})
	var p struct{ X, Y, HP float64 }
	if err := json.Unmarshal(mustJSON(t, player["value"]), &p); err != nil || p.HP < 1 {
		t.Fatalf("inspect_game player: %v (%v)", player, err)
	}
	if string(mustJSON(t, state["value"])) == "null" {
		if field(tick, "value") != simT/20 || p.X != 320+40*3-52*3 || p.Y != 200+40*3-85*3 {
			t.Fatalf("inspect_game after %g ms: tick %v, player %+v", simT, tick["value"], p)
		}
	} else {
		t.Logf("the run ended (%v) during the play: the player's path is not checked", state["value"])
	}
	if _, missing := a.callFull("inspect_game", map[string]any{"query": "player.mana"}); missing["errorCode"] != "UNKNOWN_QUERY" || !strings.Contains(fmt.Sprint(missing["errorMessage"]), "hp") {
		t.Fatalf("inspect_game player.mana: %v", missing)
	}

	// Stop: the play is a recording; its replay at half speed shows the
	// same events and the same pictures at the same simulation times.
	stopped := a.callS("stop_recording", map[string]any{"op": op})
	if stopped["status"] != "completed" || field(stopped, "replay", "format") != "phaser-arena/v1" || stopped["events"].(float64) < float64(events) {
		t.Fatalf("stop_recording: %v", stopped)
	}
	if stored, _ := field(stopped, "frames", "stored").(float64); stored < 11 {
		t.Fatalf("the play stored %v frames", field(stopped, "frames"))
	}
	rp := a.played("replay", map[string]any{"op": op, "presentation": map[string]any{"timeScale": 0.5}, "frames": 10})
	if rp["status"] != "completed" || field(rp, "divergence", "identical") != true || field(rp, "divergence", "compared") != stopped["events"] {
		t.Fatalf("replay at timeScale 0.5: %v", rp)
	}
	vd, _ := rp["visualDivergence"].(map[string]any)
	if compared, _ := field(vd, "compared").(float64); vd == nil || vd["identical"] != true || compared < 10 {
		t.Fatalf("the half-speed replay's pictures: %v (recording frames %v, replay frames %v)", vd, field(stopped, "frames"), field(rp, "frames"))
	}
	t.Logf("agent play: %d events in %g ms of simulation; replay at 0.5: %v", events, simT, vd)
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
