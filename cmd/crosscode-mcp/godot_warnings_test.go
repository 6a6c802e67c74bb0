package main

import (
	"bytes"
	"fmt"
	"image"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crosscode/crosscode-mcp/internal/testing/sysdeps"
)

// TestCaptureGodotWarnings: what the game's log warns of reaches the
// agent in the answer of each call it concerns, through the real stdio
// server and the real Godot: a typo in the config's events ("Playr:hit"),
// a project never imported (its texture fails to load, and the pictures
// lack it), a command without --fixed-fps. start_recording, stop_recording
// and replay each answer them in warnings, once each, and capture_status
// has the game's. A play without events says where it ended (endT).
func TestCaptureGodotWarnings(t *testing.T) {
	t.Parallel()
	g := sysdeps.NeedGodot(t)
	repo := gitRepo(t)
	game := g.Project(t, "adapters/godot/testdata/plain", filepath.Join(repo, "games", "plain"))
	// A texture the main scene draws, in a project never imported.
	var b bytes.Buffer
	png.Encode(&b, image.NewRGBA(image.Rect(0, 0, 8, 8)))
	os.MkdirAll(filepath.Join(game, "art"), 0o755)
	os.WriteFile(filepath.Join(game, "art", "hero-big.png"), b.Bytes(), 0o644)
	scene, err := os.ReadFile(filepath.Join(game, "main.tscn"))
	if err != nil {
		t.Fatal(err)
	}
	scene = bytes.Replace(scene, []byte(`[ext_resource type="Script" path="res://main.gd" id="1"]`),
		[]byte(`[ext_resource type="Script" path="res://main.gd" id="1"]`+"\n"+`[ext_resource type="Texture2D" path="res://art/hero-big.png" id="2"]`), 1)
	scene = append(scene, []byte("\n[node name=\"Badge\" type=\"Sprite2D\" parent=\".\"]\ntexture = ExtResource(\"2\")\n")...)
	os.WriteFile(filepath.Join(game, "main.tscn"), scene, 0o644)

	cfg := plainConfig(nil)
	cfg["game"].(map[string]any)["command"] = []string{"godot", "--audio-driver", "Dummy", "--path", "."} // no --fixed-fps
	cfg["events"].(map[string]string)["Playr:hit"] = "PLAYER_HIT"
	// No --fixed-fps: a step's frames get the wall clock's deltas, so the
	// game's 0.5 s Clock (and on a slow machine its 1 s title timer) may
	// fire within a step of 500 ms; the play below has no events to tell.
	delete(cfg["events"].(map[string]string), ".:clock_ticked")
	delete(cfg["events"].(map[string]string), ".:title_shown")
	path := "PATH=" + displayGodot(t, g) + string(os.PathListSeparator) + os.Getenv("PATH")
	a := startAgent(t, "ada", agentOpts{clientName: "claude-code", dir: repo,
		args: []string{"--actor", "ada@example.com", "--capture-config", writeConfig(t, cfg)}, env: []string{path}})

	want := []string{"events: no node Playr", "(for PLAYER_HIT)", "the project is not imported", "res://art/hero-big.png",
		"godot --headless --import --path " + game, "--fixed-fps 60"}
	check := func(call string, out map[string]any) {
		t.Helper()
		var ws []string
		for _, w := range out["warnings"].([]any) {
			ws = append(ws, fmt.Sprint(w))
		}
		all := strings.Join(ws, "\n")
		for _, s := range want {
			if !strings.Contains(all, s) {
				t.Fatalf("%s: its warnings lack %q:\n%s", call, s, all)
			}
		}
		for i, w := range ws {
			for _, other := range ws[i+1:] {
				if w == other {
					t.Fatalf("%s: %q twice", call, w)
				}
			}
		}
	}
	rec, _ := a.callImages("start_recording", map[string]any{"control": "agent"})
	if rec["status"] != "running" || rec["warnings"] == nil {
		t.Fatalf("start_recording: %v", rec)
	}
	check("start_recording", rec)
	check("capture_status", a.call("capture_status", nil))
	a.call("step_game", map[string]any{"ms": 500})
	stopped := a.call("stop_recording", map[string]any{"op": rec["op"]})
	if stopped["status"] != "completed" {
		t.Fatalf("stop_recording: %v", stopped)
	}
	check("stop_recording", stopped)
	// A play of 500 ms without events: lastT is 0, endT where it ended.
	if end, _ := stopped["endT"].(float64); math.Abs(end-500) > 1 || stopped["lastT"] != 0.0 {
		t.Fatalf("stop_recording: endT %v lastT %v after a step of 500 ms", stopped["endT"], stopped["lastT"])
	}
	rp := a.call("replay", map[string]any{"op": rec["op"]})
	if rp["status"] != "completed" {
		t.Fatalf("replay: %v", rp)
	}
	check("replay", rp)
}
