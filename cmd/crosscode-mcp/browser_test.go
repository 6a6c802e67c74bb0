package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	_ "image/jpeg"
	_ "image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	validator "github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/crosscode/crosscode-mcp/internal/proctree"
	"github.com/crosscode/crosscode-mcp/internal/testing/procs"
	"github.com/crosscode/crosscode-mcp/internal/testing/sysdeps"
)

// arenaDir is examples/phaser-arena.
func arenaDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", "examples", "phaser-arena"))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

var arenaOnce sync.Mutex

// buildArena installs the example's npm packages when they are missing
// (npm ci, from package-lock.json) and builds it: dist/ (on Phaser 4),
// with the tuned variant dist-changed/, and on Phaser 3 dist-phaser3/.
func buildArena(t *testing.T) string {
	t.Helper()
	arenaOnce.Lock()
	defer arenaOnce.Unlock()
	sysdeps.Need(t, "node")
	sysdeps.Need(t, "npm")
	dir := arenaDir(t)
	run := func(name string, args ...string) {
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
	}
	for _, pkg := range []string{"phaser", "phaser3"} {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", pkg, "dist", "phaser.min.js")); err != nil {
			run("npm", "ci", "--no-audit", "--no-fund")
			break
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, "node_modules", "phaser", "package.json")); err != nil || !strings.Contains(string(b), `"version": "4.`) {
		run("npm", "ci", "--no-audit", "--no-fund") // node_modules from before the move to Phaser 4
	}
	run("node", "build.mjs")
	run("node", "build.mjs", "--variant", "changed", "--out", "dist-changed")
	run("node", "build.mjs", "--phaser", "3", "--out", "dist-phaser3")
	return dir
}

// schemaAgent checks every tool result's structuredContent against the
// tool's output schema, as the official TypeScript client does.
type schemaAgent struct {
	*agent
	schemas map[string]*validator.Schema
}

func withSchemas(t *testing.T, a *agent) *schemaAgent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	list, err := a.c.ListTools(ctx, mcpgo.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	sa := &schemaAgent{agent: a, schemas: map[string]*validator.Schema{}}
	for _, tool := range list.Tools {
		raw, err := json.Marshal(tool.OutputSchema)
		if len(tool.RawOutputSchema) > 0 {
			raw, err = tool.RawOutputSchema, nil
		}
		if err != nil {
			t.Fatal(err)
		}
		doc, err := validator.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			t.Fatalf("%s: output schema: %v", tool.Name, err)
		}
		c := validator.NewCompiler()
		if err := c.AddResource(tool.Name+".json", doc); err != nil {
			t.Fatal(err)
		}
		if sa.schemas[tool.Name], err = c.Compile(tool.Name + ".json"); err != nil {
			t.Fatalf("%s: output schema: %v", tool.Name, err)
		}
	}
	return sa
}

// callFull runs a tool and returns its whole result, its structuredContent
// checked against the output schema.
func (a *schemaAgent) callFull(tool string, args map[string]any) (*mcpgo.CallToolResult, map[string]any) {
	a.t.Helper()
	// Longer than the server's own waits (a launch: 30 s to start the
	// browser, 30 s more for the handshake), on a loaded machine too.
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	req := mcpgo.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = tool, args
	res, err := a.c.CallTool(ctx, req)
	if err != nil {
		a.t.Fatalf("%s: %v\nstderr:\n%s", tool, err, a.stderr.String())
	}
	if res.StructuredContent == nil {
		if res.IsError {
			// A failed operation is its JSON as text alone (no
			// structuredContent); other errors are a message.
			var out map[string]any
			var text strings.Builder
			for _, c := range res.Content {
				if tc, ok := c.(mcpgo.TextContent); ok {
					text.WriteString(tc.Text)
				}
			}
			if json.Unmarshal([]byte(text.String()), &out) == nil {
				return res, out
			}
			return res, map[string]any{"error": fmt.Sprint(res.Content)}
		}
		a.t.Fatalf("%s: no structuredContent: %+v", tool, res)
	}
	b, _ := json.Marshal(res.StructuredContent)
	var out map[string]any
	json.Unmarshal(b, &out)
	v, _ := validator.UnmarshalJSON(bytes.NewReader(b))
	if err := a.schemas[tool].Validate(v); err != nil {
		a.t.Fatalf("%s: structuredContent does not match the output schema: %v\n%s", tool, err, b)
	}
	return res, out
}

func (a *schemaAgent) callS(tool string, args map[string]any) map[string]any {
	a.t.Helper()
	_, out := a.callFull(tool, args)
	return out
}

// played runs an operation's tool and waits for its outcome: on a loaded
// machine a software-rendered browser may take longer than one call's wait.
func (a *schemaAgent) played(tool string, args map[string]any) map[string]any {
	a.t.Helper()
	args["waitSeconds"] = 50
	out := a.callS(tool, args)
	for range 4 {
		if s := out["status"]; s != "running" && s != "preparing" && s != "starting" && s != "stopping" {
			break
		}
		// get_capture reports the outcome; the tool's own fields (a
		// replay's divergence) come with the tool's answer only.
		waited := a.callS("get_capture", map[string]any{"op": out["op"], "waitSeconds": 50, "limit": 1})
		if waited["status"] == "running" {
			continue
		}
		if tool == "replay" {
			a.t.Fatalf("the replay took longer than a call waits: %v", waited)
		}
		return waited
	}
	return out
}

// pixelVariance is the variance of an image's luminance (0 for a blank one).
func pixelVariance(t *testing.T, data []byte) float64 {
	t.Helper()
	img, _, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("frame: %v", err)
	}
	var sum, sq, n float64
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, _ := img.At(x, y).RGBA()
			l := (0.299*float64(r) + 0.587*float64(g) + 0.114*float64(bl)) / 257
			sum += l
			sq += l * l
			n++
		}
	}
	mean := sum / n
	return sq/n - mean*mean
}

// images returns the image contents of a result.
func images(res *mcpgo.CallToolResult) [][]byte {
	var out [][]byte
	for _, c := range res.Content {
		if ic, ok := c.(mcpgo.ImageContent); ok {
			if b, err := base64.StdEncoding.DecodeString(ic.Data); err == nil {
				out = append(out, b)
			}
		}
	}
	return out
}

// TestBrowserGame plays examples/phaser-arena in headless Chromium through
// the real stdio server and the example's capture config.
func TestBrowserGame(t *testing.T) {
	sysdeps.Need(t, "chromium")
	dir := buildArena(t)
	root := filepath.Dir(filepath.Dir(dir))
	data := t.TempDir()
	start := func(config string) *schemaAgent {
		return withSchemas(t, startAgent(t, "ada", agentOpts{clientName: "claude-code", dir: root,
			args: []string{"--toolsets", "capture", "--data", data, "--capture-config", config}}))
	}
	a := start(filepath.Join(dir, "capture.json"))

	// The first launch: on a loaded machine the page may take longer than
	// the 30 s a call waits for its handshake; asking again, as an agent
	// would, finds it connected.
	sc := a.callS("list_scenarios", nil)
	for i := 0; i < 3 && strings.Contains(fmt.Sprint(sc["error"]), "did not connect within"); i++ {
		sc = a.callS("list_scenarios", nil)
	}
	if sc["game"] != "phaser-arena" || len(sc["scenarios"].([]any)) != 3 {
		t.Fatalf("list_scenarios: %v", sc)
	}
	st := a.callS("capture_status", nil)
	if field(st, "game", "running") != true || field(st, "game", "launches") != 1.0 || !strings.Contains(fmt.Sprint(field(st, "adapter", "capabilities")), "frames") {
		t.Fatalf("capture_status after launch: %v", st)
	}
	if cmd := fmt.Sprint(field(st, "game", "command")); strings.Contains(cmd, "cappy-token") || strings.Contains(st["game"].(map[string]any)["logTail"].(string), "cappy-token=") {
		t.Fatalf("the session token shows in capture_status: %v", st["game"])
	}

	// A scenario with parameters, at half speed on the overview camera.
	run := a.played("run_scenario", map[string]any{"scenario": "wave_clear", "parameters": map[string]any{"enemies": 3, "seed": 5}, "preset": "slow-overview"})
	if run["status"] != "completed" || run["events"].(float64) < 8 {
		t.Fatalf("run_scenario: %v", run)
	}
	var kills int
	for _, e := range run["timeline"].([]any) {
		if field(e.(map[string]any), "event") == "KILL" {
			kills++
		}
	}
	if kills != 3 {
		t.Fatalf("wave_clear with 3 enemies: %d KILL events in %v", kills, run["timeline"])
	}
	// Frames from the WebGL canvas: stored at the asked rate, and pictures
	// of the arena, not blank ones.
	if stored, _ := field(run, "frames", "stored").(float64); stored < 3 {
		t.Fatalf("run_scenario stored %v frames: %v", field(run, "frames"), run)
	}
	res, got := a.callFull("get_capture", map[string]any{"op": run["op"], "keyframes": 4})
	pics := images(res)
	if len(pics) < 4 {
		t.Fatalf("get_capture keyframes 4: %d images: %v", len(pics), got["pictures"])
	}
	for i, p := range pics {
		if v := pixelVariance(t, p); v < 50 {
			t.Fatalf("picture %d is blank: luminance variance %.1f", i, v)
		}
	}

	// A freeform recording of the autopilot's input with frames, then its
	// replay at half speed with frames: the same events, the same
	// simulation, and the same pictures at the same simulation time.
	rec := a.callS("start_recording", map[string]any{"frames": 10})
	for deadline := time.Now().Add(3 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
		st := a.callS("capture_status", nil)
		ev, _ := field(st, "active", "events").(float64)
		if lastT, _ := field(st, "active", "lastT").(float64); ev >= 8 && lastT >= 4000 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the recording holds too few events: %v", st["active"])
		}
	}
	stopped := a.callS("stop_recording", map[string]any{"op": rec["op"]})
	if stopped["status"] != "completed" || field(stopped, "replay", "format") != "phaser-arena/v1" {
		t.Fatalf("stop_recording: %v", stopped)
	}
	if stored, _ := field(stopped, "frames", "stored").(float64); stored < 20 {
		t.Fatalf("the recording stored %v frames: %v", field(stopped, "frames"), stopped)
	}
	rp := a.played("replay", map[string]any{"op": rec["op"], "presentation": map[string]any{"timeScale": 0.5}, "frames": 10})
	if rp["status"] != "completed" || field(rp, "divergence", "identical") != true || field(rp, "divergence", "compared") != stopped["events"] {
		t.Fatalf("replay at timeScale 0.5: %v", rp)
	}
	// The pictures were compared, frame for frame at the same simulation
	// time, and look the same: the presentation changed when they were
	// shown, not what.
	vd, _ := rp["visualDivergence"].(map[string]any)
	if compared, _ := field(vd, "compared").(float64); vd == nil || vd["identical"] != true || compared < 10 {
		t.Fatalf("the half-speed replay's pictures: %v (recording frames %v, replay frames %v)", vd, field(stopped, "frames"), field(rp, "frames"))
	}
	t.Logf("visual comparison of the half-speed replay: %v", vd)
	if rp["lastT"].(float64) < 1.9*stopped["lastT"].(float64) {
		t.Fatalf("the half-speed replay's presented time %v is not twice the recording's %v", rp["lastT"], stopped["lastT"])
	}

	// An error in the game: the operation fails with a code, and the
	// console shows in capture_status.
	broken := a.played("run_scenario", map[string]any{"scenario": "broken_spawn"})
	if broken["status"] != "failed" || broken["code"] != "ADAPTER_ERROR" || !strings.Contains(broken["message"].(string), "TypeError") {
		t.Fatalf("broken_spawn: %v", broken)
	}
	st = a.callS("capture_status", nil)
	tail := field(st, "game", "logTail").(string)
	if !strings.Contains(tail, `[console.error] spawn: no sprite for enemy kind "ghost"`) || !strings.Contains(tail, "TypeError") {
		t.Fatalf("the console error is not in capture_status's log tail:\n%s", tail)
	}

	// The browser killed: the next call launches it again.
	pid := int(field(st, "game", "pid").(float64))
	if err := proctree.KillProcess(pid); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the killed browser to be noticed", func() bool {
		st := a.callS("capture_status", nil)
		return st["adapter"] == nil && field(st, "game", "running") == false
	})
	if again := a.played("run_scenario", map[string]any{"scenario": "survive", "parameters": map[string]any{"seconds": 1}}); again["status"] != "completed" {
		t.Fatalf("after the browser was killed: %v", again)
	}
	st = a.callS("capture_status", nil)
	if field(st, "game", "launches") != 2.0 || field(st, "game", "pid") == float64(pid) {
		t.Fatalf("the browser was not launched again: %v", st["game"])
	}

	// Stopped with the server: no browser process outlives it.
	pid = int(field(st, "game", "pid").(float64))
	tree := append(procs.Descendants(procs.All(), pid), pid)
	if len(tree) < 2 {
		t.Fatalf("the browser %d has no helper processes: %v", pid, tree)
	}
	a.c.Close()
	a.cmd.Wait()
	waitFor(t, "the browser's processes to end with the server", func() bool {
		for _, p := range tree {
			if procs.Alive(p) {
				return false
			}
		}
		return true
	})

	// The changed build: the replay of the same recording diverges.
	changed := filepath.Join(t.TempDir(), "capture.json")
	cfg := fmt.Sprintf(`{"game": {"serve": %q, "url": "/?autopilot=1"}}`, filepath.Join(dir, "dist-changed"))
	if err := os.WriteFile(changed, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	b := start(changed)
	div := b.played("replay", map[string]any{"op": rec["op"]})
	if div["status"] != "completed" || field(div, "divergence", "identical") != false {
		t.Fatalf("the replay on the changed build did not diverge: %v", div)
	}
}

// TestBrowserGamePhaser3: the example built on Phaser 3.90 (its main
// build is on Phaser 4) still plays with the JavaScript adapter: its
// scenarios, pictures from its WebGL canvas, and agent play in steps.
func TestBrowserGamePhaser3(t *testing.T) {
	sysdeps.Need(t, "chromium")
	dir := buildArena(t)
	if b, err := os.ReadFile(filepath.Join(dir, "dist-phaser3", "phaser.min.js")); err != nil || !strings.Contains(string(b), `VERSION:"3.90.0"`) {
		t.Fatalf("dist-phaser3 is not on Phaser 3.90 (%v)", err)
	}
	config := filepath.Join(t.TempDir(), "capture.json")
	if err := os.WriteFile(config, []byte(fmt.Sprintf(`{"game": {"serve": %q, "url": "/?seed=7"}}`, filepath.Join(dir, "dist-phaser3"))), 0o644); err != nil {
		t.Fatal(err)
	}
	a := withSchemas(t, startAgent(t, "ada", agentOpts{clientName: "claude-code", dir: filepath.Dir(filepath.Dir(dir)),
		args: []string{"--toolsets", "capture", "--data", t.TempDir(), "--capture-config", config}}))
	sc := a.callS("list_scenarios", nil)
	for i := 0; i < 3 && strings.Contains(fmt.Sprint(sc["error"]), "did not connect within"); i++ {
		sc = a.callS("list_scenarios", nil)
	}
	if sc["game"] != "phaser-arena" || len(sc["scenarios"].([]any)) != 3 {
		t.Fatalf("list_scenarios: %v", sc)
	}
	run := a.played("run_scenario", map[string]any{"scenario": "wave_clear", "parameters": map[string]any{"enemies": 2, "seed": 5}})
	if run["status"] != "completed" || run["events"].(float64) < 5 {
		t.Fatalf("run_scenario: %v", run)
	}
	res, _ := a.callFull("get_capture", map[string]any{"op": run["op"], "keyframes": 2})
	for i, p := range images(res) {
		if v := pixelVariance(t, p); v < 10 {
			t.Fatalf("picture %d is blank: luminance variance %.1f", i, v)
		}
	}
	res, rec := a.callFull("start_recording", map[string]any{"control": "agent", "frames": 2})
	if res.IsError || rec["status"] != "running" {
		t.Fatalf("start_recording: %v", rec)
	}
	res, out := a.callFull("step_game", map[string]any{"actions": []any{map[string]any{"name": "move_right", "pressed": true}}, "ms": 400})
	if res.IsError || out["simT"] != 400.0 || len(images(res)) != 1 {
		t.Fatalf("step_game: %v", out)
	}
	if _, p := a.callFull("inspect_game", map[string]any{"query": "player"}); field(p, "value", "x") != 320.0+20*3 {
		t.Fatalf("inspect_game player after 400 ms right: %v", p)
	}
	if stopped := a.callS("stop_recording", map[string]any{"op": rec["op"]}); stopped["status"] != "completed" {
		t.Fatalf("stop_recording: %v", stopped)
	}
}
