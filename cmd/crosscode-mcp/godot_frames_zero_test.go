package main

import "testing"

// TestCaptureGodotStepPicturesAtFramesZero: the Godot addon path through
// the controller keeps each step's picture when the recording asks for
// frames 0 (no frames at a rate), as the page driver and the Go adapter
// do: start_recording and each step_game answer one picture.
func TestCaptureGodotStepPicturesAtFramesZero(t *testing.T) {
	t.Parallel() // mostly waiting on the engine
	_, repo, config, path := godotArena(t)
	exampleCommand(t, config)
	a := startAgent(t, "ada", agentOpts{clientName: "claude-code", dir: repo, args: []string{"--capture-config", config}, env: []string{path}})
	launchGodot(t, a)
	rec, imgs := a.callImages("start_recording", map[string]any{"control": "agent", "frames": 0})
	if rec["status"] != "running" || len(imgs) != 1 {
		t.Fatalf("start_recording at frames 0: %v with %d images", rec, len(imgs))
	}
	for i := range 2 {
		if out, imgs := a.callImages("step_game", map[string]any{"actions": []map[string]any{{"name": "move", "x": 1, "y": 0}}, "ms": 250}); len(imgs) != 1 {
			t.Fatalf("step %d at frames 0: %v with %d images", i, out, len(imgs))
		}
	}
	if stopped := a.call("stop_recording", map[string]any{"op": rec["op"]}); stopped["status"] != "completed" || field(stopped, "frames", "stored") != 3.0 {
		t.Fatalf("stop_recording: %v", stopped)
	}
}
