// Package sysdeps finds the system programs that some tests need (ffmpeg,
// Chromium, PostgreSQL, the Godot tree). A missing one fails the test with
// the command that installs it: tests are never skipped for want of a part
// that scripts/deps provides. The one exception is the Windows pass under
// Wine (scripts/wine-test): Wine runs Windows programs only, so a test that
// needs a Linux program (git, ffmpeg, Chromium, PostgreSQL, Godot) skips
// there, saying so (SkipUnderWine).
package sysdeps

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Need returns the path of the program name on PATH, or fails t with how to
// install it.
func Need(t testing.TB, name string) string {
	t.Helper()
	SkipUnderWine(t, name+" is a Linux program, which Wine cannot start")
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s is not installed: run scripts/deps (or scripts/test, which runs it) to install what the tests need", name)
	}
	return p
}

// WineSkipPrefix starts the reason of every test skipped under Wine, so
// scripts/wine-test can count them apart from other skips.
const WineSkipPrefix = "under Wine: "

// SkipUnderWine skips t when it runs under Wine, where why (for example
// "git is a Linux program, which Wine cannot start") keeps it from running.
func SkipUnderWine(t testing.TB, why string) {
	t.Helper()
	if UnderWine() {
		t.Skip(WineSkipPrefix + why)
	}
}

// PinnedDir is where a scripts/ installer (agent-clients, mcp-sdk) puts
// the npm packages the lock file pins: one folder per version of the lock
// under CROSSCODE_CACHE (default ~/.cache/crosscode)/kind, so a change of
// the pins installs anew and an unchanged one is reused.
func PinnedDir(kind, lock string) (string, error) {
	b, err := os.ReadFile(lock)
	if err != nil {
		return "", fmt.Errorf("read the lock file of %s: %w", kind, err)
	}
	sum := sha256.Sum256(b)
	cache := os.Getenv("CROSSCODE_CACHE")
	if cache == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", err
		}
		cache = filepath.Join(home, ".cache", "crosscode")
	}
	return filepath.Join(cache, kind, hex.EncodeToString(sum[:6])), nil
}
