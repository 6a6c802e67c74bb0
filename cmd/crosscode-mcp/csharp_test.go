package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crosscode/crosscode-mcp/internal/testing/sysdeps"
)

// csharpArena builds the C# example (examples/csharp-arena, on the Unity
// package's core) in a fresh repository at its path and starts an agent
// on it with its capture config as shipped (extra args after it).
func csharpArena(t *testing.T, name string, env []string, args ...string) (*agent, string) {
	t.Helper()
	m := sysdeps.NeedMono(t)
	repo := gitRepo(t)
	m.Arena(t, repo)
	config := filepath.Join(repo, "examples", "csharp-arena", ".crosscode", "capture.json")
	a := startAgent(t, name, agentOpts{clientName: "claude-code", dir: repo,
		args: append([]string{"--actor", name + "@example.com", "--capture-config", config}, args...), env: env})
	return a, repo
}

// TestCaptureCSharpArena: the Unity package's C# core, in a Mono console
// game (examples/csharp-arena), is the game of the real stdio server:
// handshake, scenarios with events and frames, the game's own failure,
// a recording of the autopilot's play and its replays (also at half
// speed) the same in events and pictures.
func TestCaptureCSharpArena(t *testing.T) {
	t.Parallel()
	a, _ := csharpArena(t, "ada", nil)
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
	run, imgs := a.callImages("run_scenario", map[string]any{"scenario": "waves", "parameters": map[string]any{"waves": 2}})
	if run["status"] != "completed" || run["events"].(float64) < 5 || len(imgs) != 1 || field(run, "frames", "stored").(float64) < 3 {
		t.Fatalf("waves: %v", run)
	}
	t.Logf("waves: %v", run)
	boss, _ := a.callImages("run_scenario", map[string]any{"scenario": "boss", "parameters": map[string]any{"difficulty": 1}})
	if boss["status"] != "completed" {
		t.Fatalf("boss: %v", boss)
	}
	rec := a.call("start_recording", nil)
	time.Sleep(2 * time.Second)
	stopped, _ := a.callImages("stop_recording", map[string]any{"op": rec["op"]})
	if stopped["status"] != "completed" || field(stopped, "replay", "sha256") == nil {
		t.Fatalf("stop_recording: %v", stopped)
	}
	t.Logf("recorded: %v", stopped)
	for _, scale := range []float64{1, 0.5} {
		rp, _ := a.callImages("replay", map[string]any{"op": rec["op"], "presentation": map[string]any{"timeScale": scale}})
		if rp["status"] != "completed" || field(rp, "divergence", "identical") != true || field(rp, "visualDivergence", "identical") != true {
			t.Fatalf("replay at %v: %v %v", scale, rp["divergence"], rp["visualDivergence"])
		}
		t.Logf("replay at %v: %v %v %v", scale, rp["divergence"], rp["visualDivergence"], rp["lastT"])
	}
}
