// Package webgames holds small web games with no adapter code, for the
// tests of the page driver (crosscode-mcp drives a page itself, spec
// section 17): pickup/ is a canvas game with a requestAnimationFrame loop,
// the keyboard, seeded pickups and window.render_game_to_text(), and the
// faults its keys provoke; phaser/ is a Phaser game (its phaser.min.js
// is copied beside it by the test, from examples/phaser-arena's npm
// packages).
package webgames

import (
	"path/filepath"
	"runtime"
	"testing"
)

// Dir is the absolute directory of the web game name.
func Dir(t testing.TB, name string) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("webgames: no caller")
	}
	return filepath.Join(filepath.Dir(file), name)
}
