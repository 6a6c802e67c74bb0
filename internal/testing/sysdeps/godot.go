package sysdeps

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// SkipGodotEnv, set to 1 by hand, skips the tests that run the real Godot
// engine. CI never sets it: there a missing Godot tree is built.
const SkipGodotEnv = "CROSSCODE_SKIP_GODOT"

// Godot is the Debian unstable tree with Godot 4 that scripts/godot-tree
// builds, and the launcher that runs Godot in it.
type Godot struct {
	// Repo is the repository's root.
	Repo string
	// Tree is the tree's directory.
	Tree string
	// Launcher is scripts/godot-chroot: it takes Godot's arguments and
	// runs Godot in the tree, in the current directory.
	Launcher string
	// Version is the engine's version, as the tree's stamp names it.
	Version string
}

// NeedGodot returns the Godot tree, building it first when it is missing
// (scripts/godot-tree: a few minutes, once per machine). It skips t only
// when CROSSCODE_SKIP_GODOT=1; a tree that cannot be built fails t.
func NeedGodot(t testing.TB) Godot {
	t.Helper()
	SkipUnderWine(t, "Godot runs in a Debian chroot (scripts/godot-chroot), which Wine cannot start")
	if os.Getenv(SkipGodotEnv) == "1" {
		t.Skip(SkipGodotEnv + "=1: not running the real Godot engine")
	}
	repo, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, filepath.Join(repo, "scripts", "godot-tree"))
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("scripts/godot-tree could not build the Godot tree: %v\n%s", err, stderr.String())
	}
	g := Godot{Repo: repo, Tree: strings.TrimSpace(string(out)), Launcher: filepath.Join(repo, "scripts", "godot-chroot")}
	stamp, err := os.ReadFile(filepath.Join(g.Tree, ".crosscode-tree"))
	if err != nil {
		t.Fatalf("the Godot tree %s has no stamp: %v", g.Tree, err)
	}
	for _, line := range strings.Split(string(stamp), "\n") {
		if v, ok := strings.CutPrefix(line, "godot "); ok {
			g.Version = v
		}
	}
	return g
}

// BinDir returns a directory holding `godot`, a link to the launcher: put
// it first on PATH and a capture config's ["godot", ...] runs Godot in
// the tree.
func (g Godot) BinDir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Symlink(g.Launcher, filepath.Join(dir, "godot")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Project copies a Godot project of the repository (rel, e.g.
// "examples/godot-arena") to dst, with the Cappy addon as it is in
// adapters/godot, so a test runs it (and Godot writes its .godot cache)
// outside the repository. It returns dst.
func (g Godot) Project(t testing.TB, rel, dst string) string {
	t.Helper()
	if err := copyTree(filepath.Join(g.Repo, rel), dst, ".godot"); err != nil {
		t.Fatal(err)
	}
	addon := filepath.Join(dst, "addons", "cappy")
	if err := os.RemoveAll(addon); err != nil {
		t.Fatal(err)
	}
	if err := copyTree(filepath.Join(g.Repo, "adapters", "godot", "addons", "cappy"), addon, ".godot"); err != nil {
		t.Fatal(err)
	}
	return dst
}

// copyTree copies the files and directories under src to dst, keeping
// the files' modes, less the folders named skip (a cache, a build).
func copyTree(src, dst string, skip ...string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		if d.IsDir() && p != src && slices.Contains(skip, d.Name()) {
			return filepath.SkipDir
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, info.Mode().Perm())
	})
}

// repoRoot is the directory above the working directory holding go.mod.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("sysdeps: no go.mod above the working directory")
		}
		dir = parent
	}
}
