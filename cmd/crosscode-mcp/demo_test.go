package main

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDemo runs `crosscode-mcp demo` end to end and checks its transcript
// and exit status.
func TestDemo(t *testing.T) {
	t.Parallel() // mostly waiting on its processes: overlaps the package's other tests
	out, errOut, code := runCLI(t, "demo")
	if code != 0 {
		t.Fatalf("demo exited %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	for _, want := range []string{
		"ada via claude-code", "bo  via cursor",
		"claim src/game/** -> granted",
		"claim src/game/boss.gd -> denied", "ada@example.com holds src/game/**",
		"bo's news:", "[for you]",
		"respond_handoff accept -> accepted", "bo now holds [src/game/**]",
		"run_scenario boss_intro difficulty=3 -> completed",
		"replay at timeScale 0.5 -> completed", "identical",
		"ada sees bo's result in the feed",
		"start_recording control=agent -> ", "the game's actions: move (axis2d), attack (button)",
		"(in reach: strike)", "inspect_game boss -> {", "events identical: true", "pictures identical: true",
		"Every step behaved",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("transcript lacks %q", want)
		}
	}
	// In order: the story is told step by step.
	last := -1
	for _, step := range []string{"\n1. ", "\n2. ", "\n3. ", "\n4. ", "\n5. ", "\n6. ", "\n7. "} {
		i := strings.Index(out, step)
		if i < last {
			t.Errorf("step %q out of order", step)
		}
		last = i
	}
	if t.Failed() {
		t.Logf("transcript:\n%s", out)
	}
	// It cleans up after itself.
	if i := strings.Index(out, "repository "); i >= 0 {
		dir := strings.Fields(out[i+len("repository "):])[0]
		if fileExists(dir) {
			t.Errorf("demo left %s behind", dir)
		}
	}
}

func TestDemoKeep(t *testing.T) {
	t.Parallel() // mostly waiting on its processes: overlaps the package's other tests
	out, _, code := runCLI(t, "demo", "--keep")
	if code != 0 || !strings.Contains(out, "Kept ") {
		t.Fatalf("demo --keep: %d\n%s", code, out)
	}
	dir := strings.Fields(out[strings.Index(out, "Kept ")+5:])[0]
	t.Cleanup(func() { os.RemoveAll(dir) })
	_, noGit := exec.LookPath("git")
	if !fileExists(dir) || (noGit == nil && !fileExists(dir+"/.git/crosscode/workspace.db")) {
		t.Fatalf("--keep did not keep %s", dir)
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// TestDemoAgentStartFailureShowsStderr: when an agent's server does not
// start, the demo explains it with the server's stderr, read while mcp-go
// may still be copying more of it in (under -race, a plain buffer fails).
func TestDemoAgentStartFailureShowsStderr(t *testing.T) {
	dir := t.TempDir()
	// The test binary as a server that never answers initialize, and keeps
	// complaining (TestMain).
	t.Setenv(brokenServerEnv, "1")
	d := &demo{out: io.Discard, exe: os.Args[0], root: dir, repo: dir}
	defer d.closeAll()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if _, err := d.agent(ctx, "ada", "claude-code", "ada@example.com"); err == nil || !strings.Contains(err.Error(), "server broke: no database") {
		t.Fatalf("agent start: %v, want the server's stderr", err)
	}
}

// TestDemoHandoffAnswer: an answer without the expected fields fails the
// step with a message; it does not panic.
func TestDemoHandoffAnswer(t *testing.T) {
	good := map[string]any{"handoff": map[string]any{"handoffId": "hof_1", "claimIds": []any{"clm_1", "clm_2"}}}
	if id, n, err := handoffOf(good); err != nil || id != "hof_1" || n != 2 {
		t.Fatalf("handoffOf(%v) = %q, %d, %v", good, id, n, err)
	}
	for _, bad := range []map[string]any{
		{},
		{"handoff": map[string]any{"handoffId": "hof_1"}},
		{"handoff": map[string]any{"handoffId": "hof_1", "claimIds": "clm_1"}},
		{"handoff": map[string]any{"claimIds": []any{}}},
		{"handoff": "hof_1"},
	} {
		if _, _, err := handoffOf(bad); err == nil || !strings.Contains(err.Error(), "request_handoff") {
			t.Errorf("handoffOf(%v): %v, want an error naming request_handoff", bad, err)
		}
	}
}

// TestDemoSetupWriteError: a failure to write the demo repository's file
// stops the demo with that error.
func TestDemoSetupWriteError(t *testing.T) {
	root := t.TempDir()
	// A directory where the demo writes src/game/boss.gd.
	if err := os.MkdirAll(filepath.Join(root, "mygame", "src", "game", "boss.gd"), 0o755); err != nil {
		t.Fatal(err)
	}
	d := &demo{out: io.Discard, exe: "/nonexistent", root: root}
	defer d.closeAll()
	if err := d.run(context.Background()); err == nil || !strings.Contains(err.Error(), "boss.gd") {
		t.Fatalf("run: %v, want the error writing boss.gd", err)
	}
}
