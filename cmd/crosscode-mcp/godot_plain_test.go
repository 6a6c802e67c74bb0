package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/crosscode/crosscode-mcp/internal/testing/sysdeps"
)

// plainConfig is the capture config of the plain game (no Cappy code, the
// addon's autoload only) as the README writes one: Godot with a fixed
// frame step and no sound device, rendering (godot on PATH draws under
// Xvfb), and the game's own signals as events.
func plainConfig(env map[string]string) map[string]any {
	return map[string]any{
		"game": map[string]any{"command": []string{"godot", "--fixed-fps", "60", "--audio-driver", "Dummy", "--path", "."}, "cwd": "games/plain", "env": env},
		"events": map[string]string{
			".:title_shown":   "TITLE_SHOWN",
			".:round_started": "ROUND_STARTED",
			".:coin_spawned":  "COIN",
			".:clock_ticked":  "TICK",
			".:bell_rung":     "BELL",
			"Start:pressed":   "START_PRESSED",
		},
	}
}

func writeConfig(t *testing.T, cfg map[string]any) string {
	t.Helper()
	b, _ := json.Marshal(cfg)
	p := filepath.Join(t.TempDir(), "capture.json")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// plainPlay is the agent's play of the plain game: wait for the Start
// button, press it by its action, walk about while coins appear.
var plainPlay = []map[string]any{
	{"ms": 1100},
	{"ms": 200, "actions": []map[string]any{{"name": "start_game", "pressed": true}}},
	{"ms": 300, "actions": []map[string]any{{"name": "start_game", "pressed": false}, {"name": "move_left", "pressed": true}}},
	{"ms": 0, "actions": []map[string]any{{"name": "move_up", "pressed": true}}},
	{"ms": 700},
	{"ms": 600, "actions": []map[string]any{{"name": "move_left", "pressed": false}, {"name": "move_up", "pressed": false}, {"name": "move_down", "pressed": true}}},
	{"ms": 500, "actions": []map[string]any{{"name": "move_right", "pressed": true}}},
	{"ms": 400, "actions": []map[string]any{{"name": "move_down", "pressed": false}}},
}

// playPlain records the agent's play of the plain game with seed and
// returns its op and the events as the steps answered them.
func playPlain(t *testing.T, a *agent, seed int) (string, []string) {
	t.Helper()
	rec, imgs := a.callImages("start_recording", map[string]any{"control": "agent", "seed": seed})
	op, _ := rec["op"].(string)
	var names []string
	for _, act := range list(rec, "actions") {
		names = append(names, fmt.Sprint(act["name"]))
	}
	if rec["status"] != "running" || len(imgs) != 1 || !slices.Contains(names, "start_game") || !slices.Contains(names, "pointer") {
		t.Fatalf("start_recording: %v (%d images)", rec, len(imgs))
	}
	var events []string
	simT := 0.0
	for i, step := range plainPlay {
		out, imgs := a.callImages("step_game", step)
		simT += float64(step["ms"].(int))
		if out["simT"] != simT || len(imgs) != 1 {
			t.Fatalf("step %d: %v", i, out)
		}
		for _, e := range list(out, "events") {
			b, _ := json.Marshal(e["payload"])
			events = append(events, fmt.Sprintf("%v %v %s", e["t"], e["event"], b))
		}
	}
	stopped := a.call("stop_recording", map[string]any{"op": op})
	if stopped["status"] != "completed" || field(stopped, "replay", "sha256") == nil {
		t.Fatalf("stop_recording: %v", stopped)
	}
	return op, events
}

func gamePID(t *testing.T, a *agent) float64 {
	t.Helper()
	pid, _ := field(a.call("capture_status", nil), "game", "pid").(float64)
	return pid
}

// TestCaptureGodotNoCode: a Godot game nobody wrote for Cappy (the plain
// test game: the addon's autoload, nothing else), over the real stdio
// server with the real Godot 4.6 rendering under Xvfb, configured as the
// README says (--fixed-fps, --audio-driver Dummy, its signals as events).
// The agent plays it: the title timer holds while it thinks, the Start
// button is pressed by its action, the game's signals come as events.
// Its replays, at speed 1 and 0.5, each run in a new game process seeded
// as the recording, and reproduce its events and pictures; a second play
// with the same seed and steps is the same play; and a build that draws
// two stretches otherwise is reported with both spans.
func TestCaptureGodotNoCode(t *testing.T) {
	t.Parallel() // mostly waiting on the engine: overlaps the package's other tests
	g := sysdeps.NeedGodot(t)
	repo := gitRepo(t)
	g.Project(t, "adapters/godot/testdata/plain", filepath.Join(repo, "games", "plain"))
	path := "PATH=" + displayGodot(t, g) + string(os.PathListSeparator) + os.Getenv("PATH")
	a := startAgent(t, "ada", agentOpts{clientName: "claude-code", dir: repo,
		args: []string{"--actor", "ada@example.com", "--capture-config", writeConfig(t, plainConfig(nil))}, env: []string{path}})

	op, events := playPlain(t, a, 7)
	joined := strings.Join(events, "\n")
	for _, want := range []string{"1000 TITLE_SHOWN", "1100 START_PRESSED", "1100 ROUND_STARTED", " COIN {", " BELL {"} {
		if !strings.Contains(joined, want) {
			t.Fatalf("the play's events lack %q:\n%s", want, joined)
		}
	}
	if x := a.call("inspect_game", map[string]any{"query": ".:elapsed"}); x["value"] == nil {
		t.Fatalf("inspect_game: %v", x)
	}
	played := gamePID(t, a)

	for _, scale := range []float64{1, 0.5} {
		rp, imgs := a.callImages("replay", map[string]any{"op": op, "presentation": map[string]any{"timeScale": scale}})
		if rp["status"] != "completed" || field(rp, "divergence", "identical") != true || field(rp, "visualDivergence", "identical") != true ||
			field(rp, "visualDivergence", "compared").(float64) < 8 || len(imgs) < 1 {
			t.Fatalf("replay at %v: events %v, pictures %v", scale, rp["divergence"], rp["visualDivergence"])
		}
		if pid := gamePID(t, a); pid == played || pid == 0 {
			t.Fatalf("the replay at %v ran in the game process of the play before (%v)", scale, pid)
		} else {
			played = pid
		}
	}
	if st := a.call("capture_status", nil); field(st, "game", "launches").(float64) < 3 {
		t.Fatalf("a new game process for each replay: %v", st)
	}

	// The same seed and steps again: the same play.
	again, events2 := playPlain(t, a, 7)
	if !slices.Equal(events, events2) {
		t.Fatalf("two plays with the same seed and steps differ:\n%s\n---\n%s", joined, strings.Join(events2, "\n"))
	}
	rp := a.call("replay", map[string]any{"op": again})
	if field(rp, "divergence", "identical") != true || field(rp, "visualDivergence", "identical") != true {
		t.Fatalf("the second play's replay: %v %v", rp["divergence"], rp["visualDivergence"])
	}
	a.c.Close()

	// A build whose background is red in two stretches of game time: the
	// events are the same, the pictures differ in those two spans.
	b := startAgent(t, "bo", agentOpts{clientName: "cursor", dir: repo,
		args: []string{"--actor", "bo@example.com", "--capture-config", writeConfig(t, plainConfig(map[string]string{"PLAIN_FLASH": "1400-1800,2400-2600"}))}, env: []string{path}})
	t.Logf("spans: %v", plantedSpans(t, b, op, [][2]float64{{1400, 1800}, {2400, 2600}}, 17))
}

// plantedSpans replays op with a build that draws the stretches of game
// time want otherwise: the events are the same, and the pictures differ in
// exactly those spans (each within its stretch, its end within slack ms
// after), each with its picture. It returns the spans.
func plantedSpans(t *testing.T, a *agent, op string, want [][2]float64, slack float64) []any {
	t.Helper()
	flashed, imgs := a.callImages("replay", map[string]any{"op": op})
	vd, _ := flashed["visualDivergence"].(map[string]any)
	spans, _ := vd["spans"].([]any)
	if field(flashed, "divergence", "identical") != true || vd["identical"] != false || len(spans) != len(want) || len(imgs) < 1 {
		t.Fatalf("%d planted changes: events %v, pictures %v", len(want), flashed["divergence"], vd)
	}
	for i, w := range want {
		sp := spans[i].(map[string]any)
		if from, to := sp["simT"].(float64), sp["endSimT"].(float64); from < w[0] || to > w[1]+slack || sp["image"] == nil {
			t.Fatalf("span %d: %v; expected within %v", i, sp, w)
		}
	}
	return spans
}
