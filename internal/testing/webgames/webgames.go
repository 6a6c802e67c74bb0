// Package webgames holds small web games with no adapter code, for the
// tests of the page driver (crosscode-mcp drives a page itself, spec
// section 17): pickup/ is a canvas game with a requestAnimationFrame loop,
// the keyboard, seeded pickups and window.render_game_to_text(), and the
// faults its keys provoke; audio/ is a page that loads and plays sounds
// as games do (Web Audio and an <audio> element), and holds the sound
// files the other games play; phaser/ is a Phaser game (its phaser.min.js
// is copied beside it by the test, from examples/phaser-arena's npm
// packages), with sounds when its page asks; melon/ is a melonJS game with
// sounds (melonJS pinned in npm/, installed by MelonJS).
package webgames

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"

	"github.com/crosscode/crosscode-mcp/internal/testing/sysdeps"
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

// Sounds are the sound files of audio/ the games play.
var Sounds = []string{"blip.ogg", "blip.mp3", "theme.ogg", "theme.mp3"}

// Site makes a web game's folder for a test: files maps each path of the
// site to the file it is a copy of.
func Site(t testing.TB, files map[string]string) string {
	t.Helper()
	site := t.TempDir()
	for to, from := range files {
		if err := copyFile(from, filepath.Join(site, filepath.FromSlash(to))); err != nil {
			t.Fatal(err)
		}
	}
	return site
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o644)
}

// WithSounds adds the sound files to a site's files, under sounds/.
func WithSounds(t testing.TB, files map[string]string) map[string]string {
	t.Helper()
	for _, s := range Sounds {
		files["sounds/"+s] = filepath.Join(Dir(t, "audio"), s)
	}
	return files
}

var installMu sync.Mutex

// MelonJS is the file of melonJS's ES module, at the version npm/ pins:
// installed with npm ci on first use (11 MB), into the tests' cache
// (sysdeps.PinnedDir), and reused while the pins stay the same.
func MelonJS(t testing.TB) string {
	t.Helper()
	return filepath.Join(engines(t), "node_modules", "melonjs", "build", "index.js")
}

// engines installs npm/'s packages, once per version of its lock.
func engines(t testing.TB) string {
	t.Helper()
	sysdeps.Need(t, "npm")
	src := Dir(t, "npm")
	dir, err := sysdeps.PinnedDir("web-game-engines", filepath.Join(src, "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	installMu.Lock()
	defer installMu.Unlock()
	if _, err := os.Stat(filepath.Join(dir, ".installed")); err == nil {
		return dir
	}
	// Into a folder of its own, then renamed: another test process may
	// be installing the same pins.
	tmp := dir + ".tmp" + strconv.Itoa(os.Getpid())
	os.RemoveAll(tmp)
	defer os.RemoveAll(tmp)
	for _, f := range []string{"package.json", "package-lock.json"} {
		if err := copyFile(filepath.Join(src, f), filepath.Join(tmp, f)); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error")
	cmd.Dir = tmp
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm ci of %s: %v\n%s", src, err, out)
	}
	if err := os.WriteFile(filepath.Join(tmp, ".installed"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, serr := os.Stat(filepath.Join(dir, ".installed")); serr != nil {
			t.Fatalf("install %s: %v", src, err)
		}
	}
	return dir
}
