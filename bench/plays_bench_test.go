package bench

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crosscode/crosscode-mcp/internal/testing/capturebench"
	"github.com/crosscode/crosscode-mcp/internal/testing/sysdeps"
	"github.com/crosscode/crosscode-mcp/internal/testing/webgames"
)

// playGame is a game for the saved plays' benchmark: its capture config,
// the environment its launch needs, and the agent's play of it.
type playGame struct {
	config map[string]any
	env    []string
	steps  []map[string]any
}

// BenchmarkPlaysTest: `crosscode-mcp test` on a saved play, a process of
// its own from start to exit (the game's start included), against the
// play's own length; beside it, in the same iterations, the floor: the
// same replay through the replay tool (of the recording the play was
// saved from), from the server's start to its exit, as the test command
// runs from its start to its exit. The play is an agent's, made
// in the setup through the real server and saved with stop_recording
// saveAs, 30 s long. Reported: the play's length, each side's p50, and how many
// times faster than real time each ran (length / p50).
func BenchmarkPlaysTest(b *testing.B) {
	sysdeps.SkipUnderWine(b, "the games run Linux programs (Chromium, Godot)")
	key := func(code string, on bool) map[string]any { return map[string]any{"name": code, "pressed": on} }
	b.Run("demo", func(b *testing.B) {
		walk := func(x, y float64) map[string]any { return map[string]any{"name": "move", "x": x, "y": y} }
		press := func(name string, on bool) map[string]any { return map[string]any{"name": name, "pressed": on} }
		benchPlay(b, playGame{
			config: map[string]any{"game": map[string]any{"command": []string{binary(b), "demo-game"}}},
			steps: []map[string]any{
				{"actions": []any{walk(1, 0)}, "ms": 2000}, {"actions": []any{walk(0, 0), press("attack", true)}, "ms": 3000},
				{"actions": []any{press("cast", true)}, "ms": 500}, {"actions": []any{press("cast", false)}, "ms": 2500},
				{"actions": []any{press("dodge", true)}, "ms": 200}, {"actions": []any{press("dodge", false)}, "ms": 1800},
			},
		})
	})
	b.Run("web-page-driver", func(b *testing.B) {
		sysdeps.Need(b, "chromium")
		benchPlay(b, playGame{
			config: map[string]any{"game": map[string]any{"serve": webgames.Dir(b, "pickup"), "adapter": "page"}},
			steps: []map[string]any{
				{"actions": []any{key("ArrowRight", true)}, "ms": 2000}, {"actions": []any{key("ArrowRight", false), key("ArrowDown", true)}, "ms": 2000},
				{"actions": []any{key("ArrowDown", false), key("ArrowLeft", true)}, "ms": 2000}, {"actions": []any{key("ArrowLeft", false), key("ArrowUp", true)}, "ms": 2000},
				{"actions": []any{key("ArrowUp", false)}, "ms": 2000},
			},
		})
	})
	b.Run("godot", func(b *testing.B) {
		repo, env := godotArena(b)
		move := func(x, y float64) map[string]any { return map[string]any{"name": "move", "x": x, "y": y} }
		press := func(name string, on bool) map[string]any { return map[string]any{"name": name, "pressed": on} }
		benchPlayIn(b, repo, playGame{
			config: map[string]any{"game": map[string]any{"command": godotCommand}},
			env:    env,
			steps: []map[string]any{
				{"actions": []any{move(1, 0)}, "ms": 2000}, {"actions": []any{move(0, 1), press("attack", true)}, "ms": 2000},
				{"actions": []any{move(-1, 0), press("attack", false)}, "ms": 2000}, {"actions": []any{move(0, -1), press("dodge", true)}, "ms": 2000},
				{"actions": []any{move(0, 0), press("dodge", false)}, "ms": 2000},
			},
		})
	})
}

func benchPlay(b *testing.B, g playGame) { benchPlayIn(b, benchRepo(b), g) }

func benchPlayIn(b *testing.B, repo string, g playGame) {
	useGame(b, repo, g.config, g.env)
	data := b.TempDir()
	a := startStdio(b, repo, "--data", data)
	rec := a.call(b, "start_recording", map[string]any{"control": "agent"})
	// The steps three times over: a play of 30 s, a boss fight's length.
	for range 3 {
		for _, s := range g.steps {
			a.call(b, "step_game", s)
		}
	}
	saved := a.call(b, "stop_recording", map[string]any{"op": rec["op"], "saveAs": "bench"})
	length := saved["saved"].(map[string]any)["lengthMs"].(float64)
	a.close() // and its game: nothing else runs while the two sides are timed
	var tests, replays []time.Duration
	b.ResetTimer()
	for range b.N {
		// The floor: a server started for it, its game launched for the
		// replay, as test does, and stopped after.
		t0 := time.Now()
		fl := startStdio(b, repo, "--data", data)
		r := fl.call(b, "replay", map[string]any{"op": rec["op"]})
		fl.close()
		replays = append(replays, time.Since(t0))
		if r["status"] != "completed" {
			b.Fatalf("replay: %v", r)
		}
		t1 := time.Now()
		cmd := exec.Command(binary(b), "test", "bench", "--data", b.TempDir())
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		out, err := cmd.CombinedOutput()
		tests = append(tests, time.Since(t1))
		if err != nil || !strings.Contains(string(out), "1 passed, 0 failed") {
			b.Fatalf("crosscode-mcp test: %v\n%s", err, out)
		}
	}
	b.StopTimer()
	median := func(d []time.Duration) float64 { return ms(capturebench.Median(d)) }
	b.ReportMetric(length/1000, "play-s")
	b.ReportMetric(median(tests), "test-p50-ms")
	b.ReportMetric(length/median(tests), "test-x-realtime")
	b.ReportMetric(median(replays), "floor-p50-ms")
	b.ReportMetric(length/median(replays), "floor-x-realtime")
	// Files per minute of play: the play file and its data files.
	size := int64(0)
	filepath.WalkDir(filepath.Join(repo, ".crosscode", "plays"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				size += fi.Size()
			}
		}
		return nil
	})
	b.ReportMetric(float64(size)/1024/(length/60000), "KiB-per-minute")
}

// close ends the server (stdin closed: it stops its game) and waits for it.
func (a *stdioAgent) close() {
	a.c.Close()
	if a.cmd != nil && a.cmd.Process != nil {
		a.cmd.Wait()
	}
}

// useGame writes repo's capture config and sets the environment its game's
// launch needs (the servers and the test command inherit it).
func useGame(b *testing.B, repo string, config map[string]any, env []string) {
	os.MkdirAll(filepath.Join(repo, ".crosscode"), 0o755)
	cfg, _ := json.Marshal(config)
	if err := os.WriteFile(filepath.Join(repo, ".crosscode", "capture.json"), cfg, 0o644); err != nil {
		b.Fatal(err)
	}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		b.Setenv(k, v)
	}
}

// godotCommand is the Godot example's game command, at a fixed frame step.
var godotCommand = []string{"godot", "--fixed-fps", "60", "--audio-driver", "Dummy", "--path", "."}

// godotArena copies the Godot example into a fresh repository and returns
// it with the environment in which godotCommand runs the engine in its
// tree, under Xvfb (it renders).
func godotArena(b *testing.B) (repo string, env []string) {
	g := sysdeps.NeedGodot(b)
	repo = benchRepo(b)
	g.Project(b, "examples/godot-arena", repo)
	bin := b.TempDir()
	script := "#!/bin/sh\nexec '" + g.Launcher + "' --xvfb \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "godot"), []byte(script), 0o755); err != nil {
		b.Fatal(err)
	}
	return repo, []string{"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"), "CROSSCODE_GODOT_TREE=" + g.Tree}
}
