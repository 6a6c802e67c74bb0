package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crosscode/crosscode-mcp/internal/testing/sysdeps"
)

// TestGuardRefusesCommitsOnOthersClaims: with the pre-commit hook
// installed, a commit touching a path another actor claimed exclusively is
// refused with who holds it; other commits pass.
func TestGuardRefusesCommitsOnOthersClaims(t *testing.T) {
	sysdeps.Need(t, "git")
	repo := gitRepo(t)
	wt := filepath.Join(t.TempDir(), "mygame-bo")
	if out, err := exec.Command("git", "-C", repo, "worktree", "add", "-q", "-b", "bo", wt).CombinedOutput(); err != nil {
		t.Fatalf("worktree: %v %s", err, out)
	}
	ada := startAgent(t, "ada", agentOpts{clientName: "claude-code", dir: repo, args: []string{"--actor", "ada@example.com"}})
	if c := ada.call("claim", map[string]any{"patterns": []string{"src/game/**"}}); c["status"] != "granted" {
		t.Fatalf("claim: %v", c)
	}
	out, errOut, code := runCLI(t, "guard", "install", "--repo", wt)
	if code != 0 || !strings.Contains(out, "pre-commit") {
		t.Fatalf("guard install: %d %s %s", code, out, errOut)
	}
	commit := func(dir, email, file string) (string, error) {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, file)), 0o755)
		os.WriteFile(filepath.Join(dir, file), []byte("changed by "+email+"\n"), 0o644)
		add := exec.Command("git", "add", file)
		add.Dir = dir
		if out, err := add.CombinedOutput(); err != nil {
			t.Fatalf("git add: %v %s", err, out)
		}
		cmd := exec.Command("git", "-c", "user.email="+email, "-c", "user.name=x", "commit", "-qm", "change "+file)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), mainEnv+"=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1", "CROSSCODE_ACTOR=")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := commit(wt, "bo@example.com", "src/game/boss.gd")
	if err == nil || !strings.Contains(out, "ada@example.com") || !strings.Contains(out, "src/game/boss.gd") || !strings.Contains(out, "--no-verify") {
		t.Fatalf("bo's commit on ada's claim was not refused: %v\n%s", err, out)
	}
	// Unstage the refused change: what is left to commit is free.
	if out, err := exec.Command("git", "-C", wt, "restore", "--staged", "src/game/boss.gd").CombinedOutput(); err != nil {
		t.Fatalf("unstage: %v %s", err, out)
	}
	if out, err := commit(wt, "bo@example.com", "docs/notes.md"); err != nil {
		t.Fatalf("bo's commit elsewhere was refused: %v\n%s", err, out)
	}
	if out, err := commit(repo, "ada@example.com", "src/game/boss.gd"); err != nil {
		t.Fatalf("ada's commit on her own claim was refused: %v\n%s", err, out)
	}
	// A foreign hook is not overwritten; uninstall removes only ours.
	if out, _, code := runCLI(t, "guard", "uninstall", "--repo", repo); code != 0 || !strings.Contains(out, "removed") {
		t.Fatalf("uninstall: %d %s", code, out)
	}
	hook := filepath.Join(repo, ".git", "hooks", "pre-commit")
	os.WriteFile(hook, []byte("#!/bin/sh\necho mine\n"), 0o755)
	if _, errOut, code := runCLI(t, "guard", "install", "--repo", repo); code == 0 || !strings.Contains(errOut, "--force") {
		t.Fatalf("install over a foreign hook: %d %s", code, errOut)
	}
}
