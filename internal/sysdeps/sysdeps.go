// Package sysdeps finds the system programs that some tests need (ffmpeg,
// Chromium, PostgreSQL, the Godot tree). A missing one fails the test with
// the command that installs it: tests are never skipped for want of a part
// that scripts/deps provides.
package sysdeps

import (
	"os/exec"
	"testing"
)

// Need returns the path of the program name on PATH, or fails t with how to
// install it.
func Need(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s is not installed: run scripts/deps (or scripts/test, which runs it) to install what the tests need", name)
	}
	return p
}
