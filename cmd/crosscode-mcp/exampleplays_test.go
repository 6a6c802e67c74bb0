package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crosscode/crosscode-mcp/internal/testing/sysdeps"
)

// recordPlaysEnv=1 makes TestExamplePlays record the examples' saved
// plays again before it runs them: an agent plays each example through the
// real server and saves its play into the example (review the diff, and
// commit it). `CROSSCODE_RECORD_PLAYS=1 go test -run TestExamplePlays ./cmd/crosscode-mcp`
const recordPlaysEnv = "CROSSCODE_RECORD_PLAYS"

// repoRoot is this repository's top folder.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// selfOnPath returns a PATH whose crosscode-mcp is this build.
func selfOnPath(t *testing.T) string {
	t.Helper()
	bin := t.TempDir()
	script := "#!/bin/sh\nCROSSCODE_MCP_TEST_MAIN=1 exec " + shellQuote(os.Args[0]) + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "crosscode-mcp"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin + string(os.PathListSeparator) + os.Getenv("PATH")
}

// step is one step_game of a scripted agent play.
type step struct {
	actions []any
	ms      float64
}

func press(name string, on bool) any { return map[string]any{"name": name, "pressed": on} }

// savePlay plays steps as an agent-controlled recording and saves it as
// the play name (replacing it).
func savePlay(t *testing.T, a *agent, name string, steps []step) {
	t.Helper()
	rec := a.call("start_recording", map[string]any{"control": "agent"})
	for i, s := range steps {
		args := map[string]any{"ms": s.ms}
		if s.actions != nil {
			args["actions"] = s.actions
		}
		if out := a.call("step_game", args); out["status"] != "running" {
			t.Fatalf("%s, step %d: %v", name, i, out)
		}
	}
	out := a.call("stop_recording", map[string]any{"op": rec["op"], "saveAs": name, "overwrite": true})
	if out["saved"] == nil {
		t.Fatalf("save %s: %v", name, out)
	}
	t.Logf("saved %v", out["saved"])
}

// runPlays runs `crosscode-mcp test` with args in dir and wants every play
// of the folder to pass.
func runPlays(t *testing.T, dir, playDir string, env []string, args ...string) {
	t.Helper()
	names, _ := filepath.Glob(filepath.Join(playDir, "*.play.json"))
	if len(names) == 0 {
		t.Fatalf("no saved plays in %s (record them with %s=1)", playDir, recordPlaysEnv)
	}
	cmd := command(t, append([]string{"test", "--data", t.TempDir()}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.CombinedOutput()
	t.Logf("crosscode-mcp test %s:\n%s", strings.Join(args, " "), out)
	if err != nil || !strings.Contains(string(out), fmt.Sprintf("%d passed, 0 failed\n", len(names))) {
		t.Fatalf("the example's saved plays: %v", err)
	}
}

// TestExamplePlays: the saved plays each of the repository's examples
// carries (the demo game, examples/phaser-arena in Chromium,
// examples/godot-arena in Godot, examples/csharp-arena under Mono) pass with `crosscode-mcp test`, from the
// repository's root, as its CI runs them.
func TestExamplePlays(t *testing.T) {
	sysdeps.SkipUnderWine(t, "the examples run Linux programs (sh, Chromium, Godot), which Wine cannot start")
	record := os.Getenv(recordPlaysEnv) == "1"
	root := repoRoot(t)
	t.Run("demo-arena", func(t *testing.T) {
		path := "PATH=" + selfOnPath(t)
		config := filepath.Join("examples", "demo-arena", ".crosscode", "capture.json")
		if record {
			a := startAgent(t, "ada", agentOpts{clientName: "claude-code", dir: root, args: []string{"--capture-config", config, "--data", t.TempDir()}, env: []string{path}})
			walk := func(x, y float64) any { return map[string]any{"name": "move", "x": x, "y": y} }
			savePlay(t, a, "boss-fight", []step{
				{[]any{walk(1, 0)}, 1000}, {[]any{walk(1, 0.3)}, 1500}, {[]any{walk(0, 0), press("attack", true)}, 1500},
				{[]any{press("cast", true)}, 300}, {[]any{press("cast", false)}, 1200}, {[]any{press("dodge", true), walk(0, -1)}, 150},
				{[]any{press("dodge", false), walk(0, 0)}, 2000}, {[]any{press("potion", true)}, 100}, {[]any{press("potion", false)}, 2250},
			})
		}
		runPlays(t, root, filepath.Join(root, "examples", "demo-arena", ".crosscode", "plays"), []string{path}, "--capture-config", config)
	})
	t.Run("phaser-arena", func(t *testing.T) {
		sysdeps.Need(t, "chromium")
		buildArena(t)
		config := filepath.Join("examples", "phaser-arena", "capture.json")
		if record {
			a := startAgent(t, "ada", agentOpts{clientName: "claude-code", dir: root, args: []string{"--capture-config", config, "--data", t.TempDir()}})
			aim := func(x, y float64, on bool) any { return map[string]any{"name": "aim", "x": x, "y": y, "pressed": on} }
			savePlay(t, a, "wave-one", []step{
				{[]any{press("move_right", true), press("fire", true)}, 400}, {nil, 400},
				{[]any{press("move_right", false), press("move_down", true)}, 300}, {[]any{aim(560, 80, true)}, 500},
				{[]any{aim(560, 80, false), press("move_down", false), press("move_left", true)}, 600}, {nil, 240},
				{[]any{press("fire", false)}, 200}, {[]any{press("move_left", false), press("move_up", true), press("fire", true)}, 700},
				{nil, 1000}, {[]any{press("move_up", false)}, 1500},
			})
		}
		runPlays(t, root, filepath.Join(root, "examples", "phaser-arena", "plays"), nil, "--capture-config", config)
	})
	t.Run("godot-arena", func(t *testing.T) {
		g, repo, config, path := godotArena(t)
		plays := filepath.Join(repo, "examples", "godot-arena", ".crosscode", "plays")
		if record {
			a := startAgent(t, "ada", agentOpts{clientName: "claude-code", dir: repo, args: []string{"--capture-config", config}, env: []string{path}})
			launchGodot(t, a)
			move := func(x, y float64) any { return map[string]any{"name": "move", "x": x, "y": y} }
			savePlay(t, a, "skirmish", []step{
				{[]any{move(1, 0)}, 500}, {[]any{move(1, 0.5)}, 500}, {[]any{move(0, 0), press("attack", true)}, 250},
				{[]any{press("attack", false), move(-1, 0)}, 750}, {[]any{move(0, -1), press("dodge", true)}, 250},
				{[]any{press("dodge", false), move(0, 0)}, 1000}, {[]any{press("attack", true)}, 250}, {[]any{press("attack", false)}, 1500},
			})
			// Into the repository's example, from the test's copy of it.
			dst := filepath.Join(root, "examples", "godot-arena", ".crosscode", "plays")
			if err := os.RemoveAll(dst); err != nil {
				t.Fatal(err)
			}
			copyDir(t, plays, dst)
		}
		runPlays(t, repo, plays, []string{path, "CROSSCODE_GODOT_TREE=" + g.Tree}, "--capture-config", config)
	})
	t.Run("csharp-arena", func(t *testing.T) {
		m := sysdeps.NeedMono(t)
		repo := gitRepo(t)
		m.Arena(t, repo)
		config := filepath.Join(repo, "examples", "csharp-arena", ".crosscode", "capture.json")
		plays := filepath.Join(repo, "examples", "csharp-arena", ".crosscode", "plays")
		if record {
			a := startAgent(t, "ada", agentOpts{clientName: "claude-code", dir: repo, args: []string{"--capture-config", config}})
			move := func(x, y float64) any { return map[string]any{"name": "move", "x": x, "y": y} }
			savePlay(t, a, "coin-run", []step{
				{[]any{move(1, 0)}, 500}, {[]any{move(1, 0.5)}, 750}, {[]any{move(0, 0), press("attack", true)}, 500},
				{[]any{press("attack", false), map[string]any{"name": "pointer", "x": 100, "y": 60, "pressed": true}}, 1000},
				{[]any{move(-1, 0.5), press("attack", true)}, 500}, {[]any{move(0, 0), press("attack", false)}, 1750},
			})
			dst := filepath.Join(root, "examples", "csharp-arena", ".crosscode", "plays")
			if err := os.RemoveAll(dst); err != nil {
				t.Fatal(err)
			}
			copyDir(t, plays, dst)
		}
		runPlays(t, repo, plays, nil, "--capture-config", config)
	})
}

// copyDir copies the files under src to dst.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}
