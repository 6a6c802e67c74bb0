package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crosscode/crosscode-mcp/internal/testing/sysdeps"
	"github.com/crosscode/crosscode-mcp/internal/testing/webgames"
)

// TestBrowserPageDriver: an agent plays a canvas game that has no line of
// adapter code (internal/testing/webgames/pickup) in headless Chromium
// through the real stdio server, every result checked against its tool's
// output schema: crosscode-mcp drives the page on virtual time
// (game.adapter "page"), start_recording with a seed answers with the
// keyboard's and the pointer's actions and the first picture, step_game
// moves the hero exactly as the page time it ran, inspect_game reads
// render_game_to_text() by path and refuses code, a console error and an
// uncaught exception arrive as events, and the replay at timeScale 0.5
// has no event or visual divergence.
func TestBrowserPageDriver(t *testing.T) {
	sysdeps.Need(t, "chromium")
	config := filepath.Join(t.TempDir(), "capture.json")
	if err := os.WriteFile(config, []byte(fmt.Sprintf(`{"game": {"serve": %q, "adapter": "page"}}`, webgames.Dir(t, "pickup"))), 0o644); err != nil {
		t.Fatal(err)
	}
	a := withSchemas(t, startAgent(t, "ada", agentOpts{clientName: "claude-code", dir: t.TempDir(),
		args: []string{"--toolsets", "capture", "--data", t.TempDir(), "--capture-config", config}}))

	res, rec := a.callFull("start_recording", map[string]any{"control": "agent", "seed": 42, "frames": 4})
	for i := 0; i < 3 && res.IsError && strings.Contains(resultText(res), "did not connect within"); i++ {
		res, rec = a.callFull("start_recording", map[string]any{"control": "agent", "seed": 42, "frames": 4})
	}
	if res.IsError || rec["status"] != "running" || rec["seed"] != 42.0 || rec["t"] != 0.0 {
		t.Fatalf("start_recording: %v %s", rec, resultText(res))
	}
	// The pointer as an action, and every key by name, compactly: the
	// answer stays small (it was 7 KB with one described action a key).
	var names []string
	for _, x := range rec["actions"].([]any) {
		names = append(names, x.(map[string]any)["name"].(string))
	}
	buttons := fmt.Sprint(rec["buttons"])
	for _, want := range []string{"ArrowLeft", "KeyA..KeyZ", "Space", "Enter", "Digit0..Digit9", "NumpadEnter", "MetaLeft", "CapsLock", "IntlBackslash", "F1..F24"} {
		if !strings.Contains(buttons, want) {
			t.Fatalf("the buttons lack %s: %s", want, buttons)
		}
	}
	if b, _ := json.Marshal(map[string]any{"actions": rec["actions"], "buttons": rec["buttons"]}); strings.Join(names, " ") != "pointer" || len(b) > 2000 {
		t.Fatalf("the actions (%d bytes): %s", len(b), b)
	}
	if pics := images(res); len(pics) != 1 || pixelVariance(t, pics[0]) < 10 {
		t.Fatalf("start_recording: %d pictures, or a blank one", len(pics))
	}
	status := a.callS("capture_status", nil)
	if field(status, "adapter", "name") != "crosscode-page" {
		t.Fatalf("capture_status: %v", status)
	}

	press := func(name string, on bool) map[string]any { return map[string]any{"name": name, "pressed": on} }
	res, out := a.callFull("step_game", map[string]any{"actions": []any{press("ArrowRight", true)}, "ms": 500})
	if res.IsError || out["simT"] != 500.0 || len(images(res)) != 1 {
		t.Fatalf("step_game: %v %s", out, resultText(res))
	}
	_, hx := a.callFull("inspect_game", map[string]any{"query": "hero.x"})
	if hx["value"] != 160.0 {
		t.Fatalf("inspect_game hero.x after 500 ms right: %v", hx)
	}
	_, what := a.callFull("inspect_game", map[string]any{"query": ""})
	if field(what, "value", "hasRenderGameToText") != true || !strings.Contains(fmt.Sprint(field(what, "value", "keys")), "pickups") {
		t.Fatalf("inspect_game \"\": %v", what)
	}
	if _, bad := a.callFull("inspect_game", map[string]any{"query": "hero.x; document.title='x'"}); bad["errorCode"] != "INVALID_QUERY" {
		t.Fatalf("inspect_game with code: %v", bad)
	}
	res, out = a.callFull("step_game", map[string]any{"actions": []any{press("ArrowRight", false), press("KeyC", true), press("KeyE", true)}, "ms": 300})
	var evs []string
	for _, x := range out["events"].([]any) {
		e := x.(map[string]any)
		evs = append(evs, fmt.Sprintf("%v %v", e["t"], e["event"]))
	}
	if res.IsError || strings.Join(evs, ", ") != "500 CONSOLE_ERROR, 600 PAGE_ERROR" {
		t.Fatalf("step_game with errors: %v; %s", evs, resultText(res))
	}
	_, text := a.callFull("inspect_game", map[string]any{"query": "text"})
	stopped := a.callS("stop_recording", map[string]any{"op": rec["op"]})
	if stopped["status"] != "completed" || field(stopped, "replay", "format") != "crosscode-page/1" || stopped["seed"] != 42.0 {
		t.Fatalf("stop_recording: %v", stopped)
	}
	rp := a.played("replay", map[string]any{"op": rec["op"], "presentation": map[string]any{"timeScale": 0.5}, "frames": 4})
	if rp["status"] != "completed" || rp["seed"] != 42.0 || field(rp, "divergence", "identical") != true || field(rp, "divergence", "compared") != 2.0 {
		t.Fatalf("replay at 0.5: %v", rp)
	}
	if vd, _ := rp["visualDivergence"].(map[string]any); vd == nil || vd["identical"] != true || vd["compared"].(float64) < 3 {
		t.Fatalf("the replay's pictures: %v", rp["visualDivergence"])
	}
	_, again := a.callFull("inspect_game", map[string]any{"query": "text"})
	if a, b := mustJSONString(t, text["value"]), mustJSONString(t, again["value"]); a != b {
		t.Fatalf("the replay ended elsewhere:\n%s\n%s", a, b)
	}
}

func mustJSONString(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestBrowserPhaserWithoutAdapter: a Phaser 4 game with no adapter code
// (internal/testing/webgames/phaser), played through the page driver
// (game.adapter "auto": no adapter says hello): Phaser's own loop, timers,
// keyboard and randomness run on the driver's clock, so the same seed and
// steps give the same game, and the replay has no divergence.
func TestBrowserPhaserWithoutAdapter(t *testing.T) {
	sysdeps.Need(t, "chromium")
	site := phaserSite(t)
	config := filepath.Join(t.TempDir(), "capture.json")
	if err := os.WriteFile(config, []byte(fmt.Sprintf(`{"game": {"serve": %q}}`, site)), 0o644); err != nil {
		t.Fatal(err)
	}
	a := withSchemas(t, startAgent(t, "ada", agentOpts{clientName: "claude-code", dir: t.TempDir(),
		args: []string{"--toolsets", "capture", "--data", t.TempDir(), "--capture-config", config}}))

	press := func(name string, on bool) map[string]any { return map[string]any{"name": name, "pressed": on} }
	play := func() (string, string) {
		res, rec := a.callFull("start_recording", map[string]any{"control": "agent", "seed": 5, "frames": 4})
		for i := 0; i < 3 && res.IsError && strings.Contains(resultText(res), "did not connect within"); i++ {
			res, rec = a.callFull("start_recording", map[string]any{"control": "agent", "seed": 5, "frames": 4})
		}
		if res.IsError || rec["status"] != "running" {
			t.Fatalf("start_recording: %v %s", rec, resultText(res))
		}
		if pics := images(res); len(pics) != 1 || pixelVariance(t, pics[0]) < 5 {
			t.Fatalf("start_recording: %d pictures, or a blank one", len(pics))
		}
		for _, s := range []struct {
			actions []any
			ms      float64
		}{
			{[]any{press("ArrowRight", true)}, 500},
			{[]any{press("ArrowRight", false), press("ArrowDown", true)}, 700},
			{[]any{press("ArrowDown", false)}, 1000},
		} {
			res, out := a.callFull("step_game", map[string]any{"actions": s.actions, "ms": s.ms})
			if res.IsError || len(images(res)) != 1 {
				t.Fatalf("step_game: %v %s", out, resultText(res))
			}
		}
		_, st := a.callFull("inspect_game", map[string]any{"query": "text"})
		return rec["op"].(string), mustJSONString(t, st["value"])
	}
	op, state := play()
	var g struct {
		Phaser  string
		Catcher struct{ X, Y float64 }
		Stars   []any
		Score   int
		Time    float64
	}
	if err := json.Unmarshal([]byte(state), &g); err != nil || !strings.HasPrefix(g.Phaser, "4.") {
		t.Fatalf("the state: %s (%v)", state, err)
	}
	// Phaser smooths its deltas; the catcher went about 75 px right and
	// 105 px down, and stars spawned each second of Phaser's time.
	if g.Catcher.X < 165 || g.Catcher.X > 185 || g.Catcher.Y < 295 || g.Catcher.Y > 315 || len(g.Stars)+g.Score < 5 {
		t.Fatalf("after the steps: %s", state)
	}
	if st := a.callS("capture_status", nil); field(st, "adapter", "name") != "crosscode-page" {
		t.Fatalf("capture_status: %v", st)
	}
	if stopped := a.callS("stop_recording", map[string]any{"op": op}); stopped["status"] != "completed" {
		t.Fatalf("stop_recording: %v", stopped)
	}
	op2, state2 := play()
	if state2 != state {
		t.Fatalf("the same seed and steps gave another game:\n%s\n%s", state, state2)
	}
	a.callS("stop_recording", map[string]any{"op": op2})
	rp := a.played("replay", map[string]any{"op": op, "presentation": map[string]any{"timeScale": 0.5}, "frames": 4})
	if rp["status"] != "completed" || field(rp, "divergence", "identical") != true {
		t.Fatalf("replay: %v", rp)
	}
	if vd, _ := rp["visualDivergence"].(map[string]any); vd == nil || vd["identical"] != true {
		t.Fatalf("the replay's pictures: %v", rp["visualDivergence"])
	}
}
