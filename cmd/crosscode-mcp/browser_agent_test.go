package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/crosscode/crosscode-mcp/internal/testing/sysdeps"
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

// pixelsChanged is the share of two pictures' pixels (of the same size)
// where a channel differs by more than 16 of 255.
func pixelsChanged(t *testing.T, a, b []byte) float64 {
	t.Helper()
	ia, _, err := image.Decode(bytes.NewReader(a))
	if err != nil {
		t.Fatal(err)
	}
	ib, _, err := image.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if ia.Bounds() != ib.Bounds() {
		return 1
	}
	var changed, n float64
	r := ia.Bounds()
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			r1, g1, b1, _ := ia.At(x, y).RGBA()
			r2, g2, b2, _ := ib.At(x, y).RGBA()
			d := func(p, q uint32) bool { return max(p, q)-min(p, q) > 16*257 }
			if d(r1, r2) || d(g1, g2) || d(b1, b2) {
				changed++
			}
			n++
		}
	}
	return changed / n
}

// look is what one step showed the agent: its events (t, name, payload)
// and its picture.
type look struct {
	events  string
	picture []byte
}

// TestBrowserAgentPlay: an agent plays examples/phaser-arena in headless
// Chromium through the real stdio server, every result checked against
// its tool's output schema: start_recording with control "agent" (the
// game's actions and a first picture), ten step_game with the keyboard's
// and the pointer's actions and a picture each, refused steps that leave
// the play going, inspect_game, stop_recording, the replay at timeScale
// 0.5 without event or visual divergence, and a second play of the same
// steps from the same seed that shows the same events and pictures.
func TestBrowserAgentPlay(t *testing.T) {
	sysdeps.Need(t, "chromium")
	dir := buildArena(t)
	root := filepath.Dir(filepath.Dir(dir))
	// The example's build, every recording from seed 7 (the page's ?seed=).
	config := filepath.Join(t.TempDir(), "capture.json")
	if err := os.WriteFile(config, []byte(fmt.Sprintf(`{"game": {"serve": %q, "url": "/?seed=7"}}`, filepath.Join(dir, "dist"))), 0o644); err != nil {
		t.Fatal(err)
	}
	a := withSchemas(t, startAgent(t, "ada", agentOpts{clientName: "claude-code", dir: root,
		args: []string{"--toolsets", "capture", "--data", t.TempDir(), "--capture-config", config}}))

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

	// play starts an agent-controlled recording and plays the ten steps,
	// checking each answer; it returns the op, what each step showed and
	// the simulation time played.
	play := func() (string, []look, float64) {
		// Start: the game's actions and the first picture, of the paused start.
		res, rec := a.callFull("start_recording", map[string]any{"control": "agent", "frames": 10})
		if res.IsError || rec["status"] != "running" || rec["t"] != 0.0 || rec["simT"] != 0.0 {
			t.Fatalf("start_recording control agent: %v %s", rec, resultText(res))
		}
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
		// The paused start shows the arena and the player alone: less
		// contrast than a scene in play, far from a blank picture's 0.
		pics := images(res)
		if len(pics) != 1 || pixelVariance(t, pics[0]) < 10 {
			t.Fatalf("start_recording's first picture: %d images", len(pics))
		}
		looks := []look{{picture: pics[0]}}
		simT := 0.0
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
			if out["status"] != "running" || out["simT"] != simT || out["t"] != simT || out["op"] != rec["op"] {
				t.Fatalf("step %d (ms %g): %v, want simT %g", i+1, s.ms, out, simT)
			}
			var evs []string
			for _, x := range out["events"].([]any) {
				e := x.(map[string]any)
				if et := e["t"].(float64); et < prev || et > simT {
					t.Fatalf("step %d: event %v outside the step's time %g..%g", i+1, e, prev, simT)
				}
				evs = append(evs, fmt.Sprintf("%v %v %s", e["t"], e["event"], mustJSON(t, e["payload"])))
			}
			pics := images(res)
			if len(pics) != 1 || pixelVariance(t, pics[0]) < 10 {
				t.Fatalf("step %d: %d pictures (%v), or a blank one", i+1, len(pics), out["pictureNote"])
			}
			looks = append(looks, look{events: strings.Join(evs, "\n"), picture: pics[0]})
		}
		return rec["op"].(string), looks, simT
	}

	op, looks, simT := play()

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
	for _, k := range []string{"player", "enemies", "bullets", "tick", "score", "seed"} {
		if !strings.Contains(fmt.Sprint(field(what, "value", "keys")), k+":") {
			t.Fatalf("inspect_game \"\": no %s in %v", k, what)
		}
	}
	_, over := a.callFull("inspect_game", map[string]any{"query": "over"})
	_, tick := a.callFull("inspect_game", map[string]any{"query": "tick"})
	_, player := a.callFull("inspect_game", map[string]any{"query": "player"})
	var p struct{ X, Y, HP float64 }
	if err := json.Unmarshal(mustJSON(t, player["value"]), &p); err != nil || p.HP < 1 {
		t.Fatalf("inspect_game player: %v (%v)", player, err)
	}
	if string(mustJSON(t, over["value"])) == "null" {
		if field(tick, "value") != simT/20 || p.X != 320+40*3-52*3 || p.Y != 200+40*3-85*3 {
			t.Fatalf("inspect_game after %g ms: tick %v, player %+v", simT, tick["value"], p)
		}
	} else {
		t.Logf("the run ended (%v) during the play: the player's path is not checked", over["value"])
	}
	if _, missing := a.callFull("inspect_game", map[string]any{"query": "player.mana"}); missing["errorCode"] != "UNKNOWN_QUERY" || !strings.Contains(fmt.Sprint(missing["errorMessage"]), "hp") {
		t.Fatalf("inspect_game player.mana: %v", missing)
	}

	// Stop: the play is a recording; its replay at half speed shows the
	// same events and the same pictures at the same simulation times.
	stopped := a.callS("stop_recording", map[string]any{"op": op})
	if stopped["status"] != "completed" || field(stopped, "replay", "format") != "phaser-arena/v1" {
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
	t.Logf("agent play: %v events in %g ms of simulation; replay at 0.5: %v", stopped["events"], simT, vd)

	// The same steps from the same seed: the same events and pictures.
	op2, looks2, _ := play()
	if again := a.callS("stop_recording", map[string]any{"op": op2}); again["status"] != "completed" || again["events"] != stopped["events"] {
		t.Fatalf("the second play: %v (the first had %v events)", again, stopped["events"])
	}
	for i := range looks {
		if looks[i].events != looks2[i].events {
			t.Fatalf("step %d's events differ on the second play:\n%s\n---\n%s", i, looks[i].events, looks2[i].events)
		}
		if d := pixelsChanged(t, looks[i].picture, looks2[i].picture); d > 0.001 {
			t.Fatalf("step %d's picture differs on the second play: %.4f of its pixels", i, d)
		}
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
