package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/jpeg"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crosscode/crosscode-mcp/internal/proctree"
	"github.com/crosscode/crosscode-mcp/internal/testing/procs"
	"github.com/crosscode/crosscode-mcp/internal/testing/sysdeps"
)

// godotArena copies the Godot example into a fresh repository at
// examples/godot-arena (its capture config's game.cwd) and returns the
// repository and the example's capture config, with `godot` on PATH being
// Godot as on a machine with a display (see displayGodot).
func godotArena(t *testing.T) (g sysdeps.Godot, repo, config, path string) {
	t.Helper()
	g = sysdeps.NeedGodot(t)
	repo = gitRepo(t)
	g.Project(t, "examples/godot-arena", filepath.Join(repo, "examples", "godot-arena"))
	config = filepath.Join(repo, "examples", "godot-arena", ".crosscode", "capture.json")
	path = "PATH=" + displayGodot(t, g) + string(os.PathListSeparator) + os.Getenv("PATH")
	return g, repo, config, path
}

// displayGodot returns a directory holding `godot` that stands for Godot
// on a machine with a display: it renders, here under Xvfb with the
// opengl3 renderer in the Debian unstable tree (scripts/godot-chroot
// --xvfb), unless --headless is among its arguments, then it draws nothing
// (scripts/godot-chroot, headless).
func displayGodot(t *testing.T, g sysdeps.Godot) string {
	t.Helper()
	dir := t.TempDir()
	launcher := "'" + strings.ReplaceAll(g.Launcher, "'", `'\''`) + "'"
	script := "#!/bin/sh\n# Godot on a machine with a display: it renders unless told --headless.\n" +
		"for a in \"$@\"; do\n\tif [ \"$a\" = --headless ]; then exec " + launcher + " \"$@\"; fi\ndone\n" +
		"exec " + launcher + " --xvfb \"$@\"\n"
	if err := os.WriteFile(filepath.Join(dir, "godot"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// exampleCommand is the example's capture config as shipped: its game
// command, which must not be headless (an agent playing the example sees
// its pictures), and the whole config.
func exampleCommand(t *testing.T, config string) (cmd []any, cfg map[string]any) {
	t.Helper()
	b, err := os.ReadFile(config)
	if err == nil {
		err = json.Unmarshal(b, &cfg)
	}
	if err != nil {
		t.Fatal(err)
	}
	cmd, _ = cfg["game"].(map[string]any)["command"].([]any)
	if len(cmd) == 0 || cmd[0] != "godot" || slices.Contains(cmd, any("--headless")) {
		t.Fatalf("the example's game.command is not godot with a picture: %v", cmd)
	}
	return cmd, cfg
}

// headlessConfig writes the example's capture config with the README's
// one-line change for a machine that cannot render ("--headless" after
// "godot") and returns its path.
func headlessConfig(t *testing.T, config string) string {
	t.Helper()
	cmd, cfg := exampleCommand(t, config)
	cfg["game"].(map[string]any)["command"] = append([]any{cmd[0], "--headless"}, cmd[1:]...)
	path := filepath.Join(t.TempDir(), "capture.json")
	b, _ := json.Marshal(cfg)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// launchGodot launches the game with list_scenarios and returns its
// answer. On a machine this busy Godot may take longer than the launch
// timeout (30 s) to shake hands; the game keeps starting and the next call
// waits for it again, so a launch that timed out is asked again, for up to
// two minutes.
func launchGodot(t *testing.T, a *agent) map[string]any {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); ; {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
		out, toolErr, err := callTool(ctx, a.c, "list_scenarios", nil)
		cancel()
		switch {
		case err != nil:
			t.Fatalf("list_scenarios: %v\n%s", err, a.stderr.String())
		case toolErr == "":
			return out
		case !strings.Contains(toolErr, "did not connect within") || time.Now().After(deadline):
			t.Fatalf("list_scenarios: %s", toolErr)
		}
		t.Logf("the game is slow to start, asking again: %s", toolErr)
	}
}

// groupAlive reports whether any process of process group pgid is alive.
func groupAlive(pgid int) bool { return proctree.GroupAlive(pgid) }

// godotPID is the PID of the Godot engine in the launch whose process
// group is pgid (the launcher's, the controller's Setpgid).
func godotPID(t *testing.T, pgid int) int {
	t.Helper()
	for pid, p := range procs.All() {
		if p.Comm == "godot" && p.PGID == pgid {
			return pid
		}
	}
	t.Fatalf("no godot process in process group %d", pgid)
	return 0
}

// TestCaptureWithGodot runs the real stdio server with the Godot example's
// capture config, headless (the README's one-line change for machines that
// cannot render), and the real Godot 4.6 (Debian unstable, in its tree):
// handshake, scenarios with parameters, the game's own failure, cancel, a
// recording of scripted input and its replays (also at half speed), a
// divergence once the game's code changed, and a killed game relaunched.
func TestCaptureWithGodot(t *testing.T) {
	t.Parallel() // mostly waiting on the engine: overlaps the package's other tests
	_, repo, config, path := godotArena(t)
	config = headlessConfig(t, config)
	a := startAgent(t, "ada", agentOpts{clientName: "claude-code", dir: repo,
		args: []string{"--actor", "ada@example.com", "--capture-config", config}, env: []string{path}})

	if st := a.call("capture_status", nil); st["adapter"] != nil || field(st, "game", "running") == true {
		t.Fatalf("before launch: %v", st)
	}
	sc := launchGodot(t, a)
	if sc["game"] != "godot-arena" || len(sc["scenarios"].([]any)) != 4 {
		t.Fatalf("list_scenarios: %v", sc)
	}
	st := a.call("capture_status", nil)
	if field(st, "adapter", "name") != "cappy-godot" || field(st, "game", "running") != true || field(st, "game", "launches") != 1.0 {
		t.Fatalf("after launch: %v", st)
	}
	if caps := fmt.Sprint(field(st, "adapter", "capabilities")); strings.Contains(caps, "frames") {
		t.Fatalf("headless, the game offers frames: %v", caps)
	}

	run := a.call("run_scenario", map[string]any{"scenario": "boss_fight", "parameters": map[string]any{"difficulty": 1, "hero": "mage"}})
	if run["status"] != "completed" || run["events"].(float64) < 5 || len(run["timeline"].([]any)) == 0 {
		t.Fatalf("boss_fight: %v", run)
	}
	// The game's own failure code, as a tool error with the whole result.
	if out, isErr := a.callRaw("run_scenario", map[string]any{"scenario": "survive", "parameters": map[string]any{"hp": 1}}); !isErr || out["status"] != "failed" || out["code"] != "HERO_DOWN" {
		t.Fatalf("survive with 1 hp: %v", out)
	}
	if out, isErr := a.callRaw("run_scenario", map[string]any{"scenario": "boss_fight", "parameters": map[string]any{"hero": "bard"}}); !isErr || !strings.Contains(out["error"].(string), "INVALID_PARAMETERS") {
		t.Fatalf("bad parameter: %v", out)
	}
	// A long run answers running; cancel_capture ends it.
	longRunCancelled(t, a, map[string]any{"scenario": "survive", "parameters": map[string]any{"waves": 10, "hp": 500}})

	// A recording of the autopilot's input (ARENA_AUTOPILOT=1 in the
	// example's config), then its replays.
	rec := a.call("start_recording", nil)
	if rec["status"] != "running" {
		t.Fatalf("start_recording: %v", rec)
	}
	time.Sleep(2 * time.Second) // the length of the recording
	stopped := a.call("stop_recording", map[string]any{"op": rec["op"]})
	if stopped["status"] != "completed" || field(stopped, "replay", "sha256") == nil || stopped["events"].(float64) < 3 {
		t.Fatalf("stop_recording: %v", stopped)
	}
	rp := a.call("replay", map[string]any{"op": rec["op"]})
	if rp["status"] != "completed" || field(rp, "divergence", "identical") != true || field(rp, "divergence", "compared") != stopped["events"] {
		t.Fatalf("replay: %v", rp)
	}
	slow := a.call("replay", map[string]any{"op": rec["op"], "preset": "half-speed"})
	if field(slow, "divergence", "identical") != true || slow["lastT"].(float64) < 1.9*stopped["lastT"].(float64) {
		t.Fatalf("replay at half speed: %v (recorded lastT %v)", slow, stopped["lastT"])
	}

	// The game's code changes; the game is killed (SIGKILL to the engine);
	// the next call relaunches it and the replay now diverges.
	world := filepath.Join(repo, "examples", "godot-arena", "world.gd")
	src, err := os.ReadFile(world)
	// Slimes get tougher: wave 1 (half a second in) always has one.
	const was, now = `"slime": {"hp": 24,`, `"slime": {"hp": 30,`
	if err != nil || !strings.Contains(string(src), was) {
		t.Fatalf("world.gd no longer has %s (%v): update this test", was, err)
	}
	if err := os.WriteFile(world, []byte(strings.Replace(string(src), was, now, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	pgid := int(field(a.call("capture_status", nil), "game", "pid").(float64))
	if err := proctree.KillProcess(godotPID(t, pgid)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the killed game to be seen gone", func() bool {
		st, _ := a.callRaw("capture_status", nil)
		return field(st, "game", "running") == false && st["adapter"] == nil
	})
	waitFor(t, "no process of the killed launch left", func() bool { return !groupAlive(pgid) })
	launchGodot(t, a) // the next call relaunches the game
	changed := a.call("replay", map[string]any{"op": rec["op"]})
	if field(changed, "divergence", "identical") != false || field(changed, "divergence", "field") != "payload" {
		t.Fatalf("replay after the code changed: %v", changed)
	}
	if st := a.call("capture_status", nil); field(st, "game", "launches") != 2.0 || field(st, "game", "running") != true {
		t.Fatalf("after the relaunch: %v", st)
	}
}

// TestCaptureGodotFrames: the example's capture config as shipped, as a
// user who copies it runs it, with `godot` on PATH rendering as on a
// machine with a display (here under Xvfb with the opengl3 renderer): the
// agent gets pictures. The game advertises frames, a scenario comes back
// with its contact sheet, get_capture's keyframes show the arena, not a
// blank image, and a recording's replay at half speed shows the same
// pictures at the same simulation times.
func TestCaptureGodotFrames(t *testing.T) {
	t.Parallel() // mostly waiting on the engine: overlaps the package's other tests
	_, repo, config, path := godotArena(t)
	exampleCommand(t, config)
	a := startAgent(t, "ada", agentOpts{clientName: "claude-code", dir: repo, args: []string{"--capture-config", config}, env: []string{path}})
	launchGodot(t, a)
	if st := a.call("capture_status", nil); !strings.Contains(fmt.Sprint(field(st, "adapter", "capabilities")), "frames") {
		t.Fatalf("the example's config as shipped offers no frames: %v", st)
	}
	run, imgs := a.callImages("run_scenario", map[string]any{"scenario": "boss_fight", "parameters": map[string]any{"difficulty": 1}})
	if run["status"] != "completed" || len(imgs) != 1 || list(run, "pictures")[0]["kind"] != "contact_sheet" || field(run, "frames", "stored").(float64) < 3 {
		t.Fatalf("boss_fight with frames: %v", run)
	}
	got, imgs := a.callImages("get_capture", map[string]any{"op": run["op"], "limit": 1, "keyframes": 3})
	if len(imgs) != 3 {
		t.Fatalf("keyframes: %v", got["pictures"])
	}
	for i, img := range imgs {
		data, _ := base64.StdEncoding.DecodeString(img.Data)
		pic, err := jpeg.Decode(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		if lumaSpread(pic) < 2 {
			t.Fatalf("keyframe %d is blank", i)
		}
	}
	// A recording with frames and its replay at half speed: the same events
	// and the same pictures at the same simulation times.
	rec := a.call("start_recording", nil)
	time.Sleep(2 * time.Second) // the length of the recording
	stopped, _ := a.callImages("stop_recording", map[string]any{"op": rec["op"]})
	slow, _ := a.callImages("replay", map[string]any{"op": rec["op"], "presentation": map[string]any{"timeScale": 0.5}})
	if field(stopped, "frames", "stored").(float64) < 3 || field(slow, "divergence", "identical") != true ||
		field(slow, "visualDivergence", "identical") != true || field(slow, "visualDivergence", "compared").(float64) < 1 {
		t.Fatalf("replay at 0.5: recording's frames %v; events %v, pictures %v", stopped["frames"], slow["divergence"], slow["visualDivergence"])
	}
}

// longRunCancelled runs a scenario (args of run_scenario) that outlives
// a wait of 1 s: it answers running, and cancel_capture ends it.
func longRunCancelled(t *testing.T, a *agent, args map[string]any) {
	t.Helper()
	args["waitSeconds"] = 1
	if long := a.call("run_scenario", args); long["status"] != "running" {
		t.Fatalf("a long run: %v", long)
	}
	if c := a.call("cancel_capture", nil); c["status"] != "cancelled" {
		t.Fatalf("cancel_capture: %v", c)
	}
}

// lumaSpread is an image's luma standard deviation (0 to 255), from every
// other pixel.
func lumaSpread(img image.Image) float64 {
	r := img.Bounds()
	var n, sum, sq float64
	for y := r.Min.Y; y < r.Max.Y; y += 2 {
		for x := r.Min.X; x < r.Max.X; x += 2 {
			cr, cg, cb, _ := img.At(x, y).RGBA()
			l := (0.299*float64(cr) + 0.587*float64(cg) + 0.114*float64(cb)) / 257
			n++
			sum += l
			sq += l * l
		}
	}
	mean := sum / n
	return math.Sqrt(max(sq/n-mean*mean, 0))
}
