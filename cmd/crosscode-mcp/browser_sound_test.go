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

// soundGame is an agent of the stdio server whose capture config serves
// site at page, driven by the page driver.
func soundGame(t *testing.T, site, page string) *schemaAgent {
	t.Helper()
	config := filepath.Join(t.TempDir(), "capture.json")
	if err := os.WriteFile(config, []byte(fmt.Sprintf(`{"game": {"serve": %q, "url": %q, "adapter": "page"}}`, site, page)), 0o644); err != nil {
		t.Fatal(err)
	}
	return withSchemas(t, startAgent(t, "ada", agentOpts{clientName: "claude-code", dir: t.TempDir(),
		args: []string{"--toolsets", "capture", "--data", t.TempDir(), "--capture-config", config}}))
}

// soundPlay records a play from a fresh page: steps of 50 ms until the
// game's preloader has ended (loaded reads its state), then the cursor
// keys; then replays it. It returns the step at which the preloader
// ended and the state the play ended in, and fails unless the replay has
// the recording's events and pictures.
func soundPlay(t *testing.T, a *schemaAgent, loaded func(state map[string]any) bool) (int, string) {
	t.Helper()
	res, rec := a.callFull("start_recording", map[string]any{"control": "agent", "seed": 5, "frames": 4})
	for i := 0; i < 3 && res.IsError && strings.Contains(resultText(res), "did not connect within"); i++ {
		res, rec = a.callFull("start_recording", map[string]any{"control": "agent", "seed": 5, "frames": 4})
	}
	if res.IsError || rec["status"] != "running" {
		t.Fatalf("start_recording: %v %s", rec, resultText(res))
	}
	state := func() map[string]any {
		_, st := a.callFull("inspect_game", map[string]any{"query": "text"})
		v, _ := st["value"].(map[string]any)
		return v
	}
	press := func(name string, on bool) map[string]any { return map[string]any{"name": name, "pressed": on} }
	step := func(ms float64, actions ...any) {
		res, out := a.callFull("step_game", map[string]any{"actions": actions, "ms": ms})
		if res.IsError || len(images(res)) != 1 {
			t.Fatalf("step_game: %v %s", out, resultText(res))
		}
	}
	steps := 0
	for ; !loaded(state()); steps++ {
		if steps == 60 {
			t.Fatalf("the preloader did not end within 3 s of page time: %v", state())
		}
		step(50)
	}
	step(600, press("ArrowRight", true))
	step(600, press("ArrowRight", false), press("ArrowDown", true))
	step(900, press("ArrowDown", false))
	end := mustJSONString(t, state())
	if stopped := a.callS("stop_recording", map[string]any{"op": rec["op"]}); stopped["status"] != "completed" {
		t.Fatalf("stop_recording: %v", stopped)
	}
	rp := a.played("replay", map[string]any{"op": rec["op"], "frames": 4})
	if rp["status"] != "completed" || field(rp, "divergence", "identical") != true {
		t.Fatalf("the replay of a play whose preloader ended at step %d: %v", steps, rp)
	}
	if vd, _ := rp["visualDivergence"].(map[string]any); vd == nil || vd["identical"] != true || vd["compared"].(float64) < 8 {
		t.Fatalf("the replay's pictures, of a play whose preloader ended at step %d: %v", steps, rp["visualDivergence"])
	}
	if again := mustJSONString(t, state()); again != end {
		t.Fatalf("the replay ended elsewhere:\n%s\n%s", end, again)
	}
	return steps, end
}

// twoSoundPlays plays twice from fresh pages: each replays identically,
// the preloader ends at the same step and the plays end the same.
func twoSoundPlays(t *testing.T, a *schemaAgent, loaded func(map[string]any) bool) string {
	t.Helper()
	n1, end1 := soundPlay(t, a, loaded)
	n2, end2 := soundPlay(t, a, loaded)
	t.Logf("the preloader ended at steps %d and %d", n1, n2)
	if n1 != n2 || end1 != end2 {
		t.Fatalf("two fresh plays with the same steps differ: the preloader ended at step %d, then %d; the plays ended:\n%s\n%s", n1, n2, end1, end2)
	}
	return end1
}

// TestBrowserPhaserSounds: a Phaser 4 game with sounds and no adapter code
// (internal/testing/webgames/phaser with ?sounds), played through the
// real stdio server in headless Chromium. Its loader fetches and decodes
// a blip and a music track with Web Audio; it loops the music, plays the
// blip on a catch, and a jingle whose end (Phaser's complete event, the
// source's ended) turns the catcher green. Two plays from fresh pages
// load at the same step, end the same, and each replays with the
// recording's events and pictures; so does a play with Phaser's <audio>
// sound manager (?sounds=html5).
func TestBrowserPhaserSounds(t *testing.T) {
	sysdeps.Need(t, "chromium")
	site := phaserSite(t)
	loaded := func(st map[string]any) bool { return st["sounds"] != nil }
	end := twoSoundPlays(t, soundGame(t, site, "/?sounds=webaudio"), loaded)
	var g struct {
		Phaser string
		Sounds struct {
			LoadedAtFrame float64
			Ready         bool
			Theme         float64
			Playing       int
		}
	}
	if err := json.Unmarshal([]byte(end), &g); err != nil || !strings.HasPrefix(g.Phaser, "4.") || !g.Sounds.Ready || g.Sounds.Theme <= 0 || g.Sounds.Playing < 1 {
		t.Fatalf("the play's end: %s (%v)", end, err)
	}
	n, html5 := soundPlay(t, soundGame(t, site, "/?sounds=html5"), loaded)
	if err := json.Unmarshal([]byte(html5), &g); err != nil || !g.Sounds.Ready || g.Sounds.Theme <= 0 {
		t.Fatalf("the play with <audio> sounds (loaded at step %d) ended: %s (%v)", n, html5, err)
	}
}

// phaserSite is the Phaser game of internal/testing/webgames/phaser with
// examples/phaser-arena's Phaser 4 and the sounds.
func phaserSite(t *testing.T) string {
	t.Helper()
	arena := buildArena(t)
	dir := webgames.Dir(t, "phaser")
	return webgames.Site(t, webgames.WithSounds(t, map[string]string{
		"index.html":    filepath.Join(dir, "index.html"),
		"game.js":       filepath.Join(dir, "game.js"),
		"phaser.min.js": filepath.Join(arena, "node_modules", "phaser", "dist", "phaser.min.js"),
	}))
}

// TestBrowserMelonJSSounds: a melonJS game with sounds and no adapter code
// (internal/testing/webgames/melon, melonJS pinned in its npm/), played
// through the real stdio server in headless Chromium: its Howler-based
// audio fetches and decodes a blip and a music track behind melonJS's
// loading screen, on its default renderer. Two plays from fresh pages
// end the preloader at the same step, end the same, and each replays
// with the recording's events and pictures.
func TestBrowserMelonJSSounds(t *testing.T) {
	sysdeps.Need(t, "chromium")
	dir := webgames.Dir(t, "melon")
	site := webgames.Site(t, webgames.WithSounds(t, map[string]string{
		"index.html": filepath.Join(dir, "index.html"),
		"game.js":    filepath.Join(dir, "game.js"),
		"melonjs.js": webgames.MelonJS(t),
	}))
	end := twoSoundPlays(t, soundGame(t, site, "/"), func(st map[string]any) bool { return st["phase"] == "play" })
	var g struct {
		Melonjs string
		Ready   bool
		Theme   float64
		Hero    struct{ X, Y float64 }
	}
	if err := json.Unmarshal([]byte(end), &g); err != nil || !strings.HasPrefix(g.Melonjs, "20.") || !g.Ready || g.Theme <= 0 || g.Hero.X < 150 {
		t.Fatalf("the play's end: %s (%v)", end, err)
	}
}
