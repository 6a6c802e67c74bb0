package main

import (
	"os"
	"strings"
	"testing"
)

// TestDemo runs `crosscode-mcp demo` end to end and checks its transcript
// and exit status.
func TestDemo(t *testing.T) {
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
		"Every step behaved",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("transcript lacks %q", want)
		}
	}
	// In order: the story is told step by step.
	last := -1
	for _, step := range []string{"\n1. ", "\n2. ", "\n3. ", "\n4. ", "\n5. ", "\n6. "} {
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
	out, _, code := runCLI(t, "demo", "--keep")
	if code != 0 || !strings.Contains(out, "Kept ") {
		t.Fatalf("demo --keep: %d\n%s", code, out)
	}
	dir := strings.Fields(out[strings.Index(out, "Kept ")+5:])[0]
	t.Cleanup(func() { os.RemoveAll(dir) })
	if !fileExists(dir) || !fileExists(dir+"/.git/crosscode/workspace.db") {
		t.Fatalf("--keep did not keep %s", dir)
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
