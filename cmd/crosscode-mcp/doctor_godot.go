package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// What a Godot game meets first on a new machine, each named with its fix:
// a project never imported (its textures and sounds are missing, so the
// pictures are blank and nothing says why), no fixed frame step (steps and
// replays are not exact), and a game command that opens a sound card or a
// window the machine does not have.

// godotHost is what this machine offers a Godot game (see hostForGodot).
type godotHost struct {
	display  bool
	audio    bool
	audioWhy string // what was looked for, when there is no audio
}

// godotAssetExts are the files Godot imports (into .godot/imported).
var godotAssetExts = []string{".png", ".jpg", ".jpeg", ".webp", ".svg", ".bmp", ".tga", ".exr", ".hdr",
	".wav", ".ogg", ".mp3", ".ttf", ".otf", ".woff", ".woff2", ".glb", ".gltf", ".obj", ".fbx", ".blend", ".dae"}

// godotCommand is what a game command says about the Godot it runs.
type godotCommand struct {
	project  string // the project's directory (holding project.godot)
	headless bool
	audio    bool // an audio driver is chosen
	display  bool // a virtual display is provided (xvfb-run, godot-chroot --xvfb)
	fixed    bool // --fixed-fps (or --write-movie, which implies it)
}

// readGodotCommand reads a game command that runs Godot on a project (a
// program named like Godot, and a project.godot where it runs or at its
// --path); ok is false for any other command.
func readGodotCommand(game []string, gameDir string) (godotCommand, bool) {
	var g godotCommand
	named := false
	project := gameDir
	for i, a := range game {
		base := strings.ToLower(filepath.Base(a))
		switch {
		case strings.Contains(base, "godot"):
			named = true
		case a == "--headless":
			g.headless = true
		case a == "--display-driver" && i+1 < len(game) && game[i+1] == "headless":
			g.headless = true
		case a == "--audio-driver":
			g.audio = true
		case a == "--xvfb" || base == "xvfb-run":
			g.display = true
		case a == "--fixed-fps" || a == "--write-movie":
			g.fixed = true
		case (a == "--path" || a == "--main-pack") && i+1 < len(game):
			project = game[i+1]
			if !filepath.IsAbs(project) {
				project = filepath.Join(gameDir, project)
			}
		}
	}
	g.project = project
	if _, err := os.Stat(filepath.Join(project, "project.godot")); err != nil || !named {
		return g, false
	}
	return g, true
}

// checkGodot checks a Godot game command, when the game command is one.
func checkGodot(game []string, gameDir string, host godotHost) []Check {
	g, ok := readGodotCommand(game, gameDir)
	if !ok {
		return nil
	}
	var out []Check
	if c, ok := checkGodotImport(g.project); !ok {
		out = append(out, c)
	}
	tps := godotPhysicsTicks(g.project)
	if !g.fixed {
		out = append(out, Check{"godot frame step", "warn",
			"the game command has no --fixed-fps: Godot's _process, Timer nodes and Tweens then run on the wall clock's frame times, so an agent's steps do not run exactly their time and replays may differ from their recordings",
			fmt.Sprintf(`add "--fixed-fps", "%d" (the project's physics ticks per second) to game.command`, tps)})
	}
	if !g.headless && !g.audio && !host.audio {
		out = append(out, Check{"godot audio", "warn",
			"this machine has no audio device (" + host.audioWhy + "): Godot fails to open one at every launch, and its errors fill the game's log (and the end of it that errors show)",
			`add "--audio-driver", "Dummy" to game.command`})
	}
	if !g.headless && !g.display && !host.display {
		out = append(out, Check{"godot display", "warn",
			"no display here ($DISPLAY and $WAYLAND_DISPLAY are unset): Godot cannot open its window, so the game does not start",
			`run it under a virtual display, e.g. ["xvfb-run", "-a", "godot", "--rendering-driver", "opengl3", "--path", "."], or add "--headless" (then it draws no pictures)`})
	}
	if len(out) == 0 {
		out = append(out, Check{"godot", "ok", fmt.Sprintf("project %s imported, --fixed-fps, sound and display as this machine has them", g.project), ""})
	}
	return out
}

// checkGodotImport checks that the project was imported: .godot/ exists
// and each asset has its imported file.
func checkGodotImport(project string) (Check, bool) {
	fix := fmt.Sprintf("import it once, and again after adding assets: godot --headless --import --path %s", project)
	if !isDir(filepath.Join(project, ".godot")) {
		return Check{"godot import", "warn", fmt.Sprintf("the Godot project in %s was never imported (no .godot/): its textures, sounds and fonts are missing when it runs (blank pictures, and nothing says why), and its global class names are unknown", project), fix}, false
	}
	imported, _ := os.ReadDir(filepath.Join(project, ".godot", "imported"))
	have := map[string]bool{}
	for _, e := range imported {
		if name, _, ok := strings.Cut(e.Name(), "-"); ok {
			have[strings.ToLower(name)] = true
		}
	}
	var missing []string
	filepath.WalkDir(project, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() && (d.Name() == ".godot" || d.Name() == "addons" || strings.HasPrefix(d.Name(), ".")) && p != project {
			return filepath.SkipDir
		}
		if !d.IsDir() && slices.Contains(godotAssetExts, strings.ToLower(filepath.Ext(p))) && !have[strings.ToLower(d.Name())] {
			rel, _ := filepath.Rel(project, p)
			missing = append(missing, rel)
		}
		if len(missing) > 3 {
			return filepath.SkipAll
		}
		return nil
	})
	if len(missing) > 0 {
		more := ""
		if len(missing) > 3 {
			missing, more = missing[:3], " and more"
		}
		return Check{"godot import", "warn", fmt.Sprintf("assets of the Godot project in %s were never imported (%s%s): they are missing when the game runs", project, strings.Join(missing, ", "), more), fix}, false
	}
	return Check{}, true
}

// godotPhysicsTicks is the project's physics ticks per second (60 unless
// project.godot says otherwise).
func godotPhysicsTicks(project string) int {
	f, err := os.Open(filepath.Join(project, "project.godot"))
	if err != nil {
		return 60
	}
	defer f.Close()
	section := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "[") {
			section = strings.Trim(line, "[]")
			continue
		}
		if k, v, ok := strings.Cut(line, "="); ok && section == "physics" && strings.TrimSpace(k) == "common/physics_ticks_per_second" {
			if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n > 0 {
				return n
			}
		}
	}
	return 60
}
