package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/crosscode/crosscode-mcp/adapters/godot"
)

// runGodot is `crosscode-mcp godot install-addon [DIR]`: the Cappy addon,
// which this binary carries, written into the Godot project in DIR (the
// working directory by default), so that a user who installed with npm or
// from a release has it without a clone of the repository.
func runGodot(_ context.Context, args []string, stdout, stderr io.Writer) error {
	const use = "usage: crosscode-mcp godot install-addon [DIR]   (DIR: the Godot project's folder, holding project.godot; default: here)"
	if len(args) == 0 || args[0] != "install-addon" {
		return usageError{msg: use}
	}
	fl := newFlagSet("crosscode-mcp godot install-addon", stderr)
	if err := parseFlags(fl, args[1:]); err != nil {
		return err
	}
	dir := "."
	switch fl.NArg() {
	case 0:
	case 1:
		dir = fl.Arg(0)
	default:
		return usageError{msg: use}
	}
	project, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	settings, err := os.ReadFile(filepath.Join(project, "project.godot"))
	if err != nil {
		return fmt.Errorf("godot install-addon: %s is not a Godot project (no project.godot there): give the project's folder", project)
	}
	written, same, err := installAddon(project)
	if err != nil {
		return fmt.Errorf("godot install-addon: %w", err)
	}
	target := filepath.Join(project, filepath.FromSlash(godot.AddonDir))
	switch {
	case len(written) == 0:
		fmt.Fprintf(stdout, "the Cappy addon in %s is this version's already (%d files)\n", target, same)
	default:
		fmt.Fprintf(stdout, "wrote the Cappy addon to %s: %s (%d files unchanged)\n", target, strings.Join(written, ", "), same)
	}
	if autoloaded(settings) {
		fmt.Fprintln(stdout, "project.godot enables its autoload Cappy already: crosscode-mcp plays the game once its capture config launches it (docs/godot.md)")
		return nil
	}
	fmt.Fprint(stdout, `next: enable it in Godot (Project > Project Settings > Plugins > Cappy), or add to project.godot, first among its autoloads:

[autoload]

Cappy="*res://addons/cappy/cappy.gd"

then import the project once (godot --headless --import --path .) and write its capture config (docs/godot.md)
`)
	return nil
}

// installAddon writes the embedded addon into project/addons/cappy: each
// file whose bytes differ, or that is missing (what the project has there
// besides, such as Godot's .uid files, stays). It returns the files it
// wrote and how many were the same already.
func installAddon(project string) (written []string, same int, err error) {
	err = fs.WalkDir(godot.Addon, godot.AddonDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		target := filepath.Join(project, filepath.FromSlash(p))
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		want, err := godot.Addon.ReadFile(p)
		if err != nil {
			return err
		}
		if have, err := os.ReadFile(target); err == nil && bytes.Equal(have, want) {
			same++
			return nil
		}
		if err := os.WriteFile(target, want, 0o644); err != nil {
			return err
		}
		written = append(written, strings.TrimPrefix(p, godot.AddonDir+"/"))
		return nil
	})
	return written, same, err
}

// autoloaded reports whether project.godot registers the addon's autoload.
func autoloaded(settings []byte) bool {
	section := ""
	for _, line := range strings.Split(string(settings), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "[") {
			section = line
			continue
		}
		if k, v, ok := strings.Cut(line, "="); ok && section == "[autoload]" && strings.TrimSpace(k) == "Cappy" && strings.Contains(v, "res://addons/cappy/cappy.gd") {
			return true
		}
	}
	return false
}
