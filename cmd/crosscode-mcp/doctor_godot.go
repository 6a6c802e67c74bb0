package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/crosscode/crosscode-mcp/bridge/cappy"
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
	// wrapper is the script the command runs, when it runs one (a
	// `godot` on PATH that starts Godot its own way); wrapperDisplay
	// whether that script brings a display of its own (or runs headless).
	wrapper        string
	wrapperDisplay bool
	godotAt        int // the index of the program named like Godot
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
		case strings.Contains(base, "godot") && !named:
			named, g.godotAt = true, i
		case a == "--headless":
			g.headless = true
		case a == "--display-driver" && i+1 < len(game) && game[i+1] == "headless":
			g.headless = true
		case a == "--audio-driver":
			g.audio = true
		case a == "--xvfb" || base == "xvfb-run":
			g.display = true
		case cappy.GodotFixedStepFlag(a):
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
	if len(game) > 0 {
		if p, err := lookGameCommand(game[0], gameDir); err == nil {
			g.wrapper, g.wrapperDisplay = readWrapper(p)
		}
	}
	return g, true
}

// readWrapper reports whether the program at p is a script (a wrapper
// that starts Godot its own way, e.g. in a container) and whether it
// brings its own display (it runs Xvfb or xvfb-run) or runs Godot
// headless, by what it says.
func readWrapper(p string) (script string, display bool) {
	f, err := os.Open(p)
	if err != nil {
		return "", false
	}
	defer f.Close()
	b := make([]byte, 64<<10)
	n, _ := io.ReadFull(f, b)
	b = b[:n]
	if !bytes.HasPrefix(b, []byte("#!")) {
		return "", false
	}
	text := strings.ToLower(string(b))
	return p, strings.Contains(text, "xvfb") || strings.Contains(text, "--headless")
}

// godotFixed is the game command with every fix the checks name applied,
// and nothing of it lost: --fixed-fps, an audio driver, a virtual display.
func godotFixed(game []string, g godotCommand, host godotHost, tps int) []string {
	out := slices.Clone(game)
	if !g.fixed {
		out = slices.Insert(out, g.godotAt+1, "--fixed-fps", strconv.Itoa(tps))
	}
	if !g.headless && !g.audio && !host.audio {
		out = slices.Insert(out, g.godotAt+1, "--audio-driver", "Dummy")
	}
	if g.needsDisplay(host) {
		if !slices.Contains(game, "--rendering-driver") {
			out = slices.Insert(out, g.godotAt+1, "--rendering-driver", "opengl3")
		}
		out = append([]string{"xvfb-run", "-a"}, out...)
	}
	return out
}

// needsDisplay reports whether Godot would open a window that this
// machine cannot show, as far as the command itself says.
func (g godotCommand) needsDisplay(host godotHost) bool {
	return !g.headless && !g.display && !host.display && !g.wrapperDisplay
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
	whole, _ := json.Marshal(godotFixed(game, g, host, tps))
	switch {
	case !g.needsDisplay(host):
	case g.wrapper != "":
		// A script may start its own display in ways not read here.
		out = append(out, Check{"godot display", "info",
			fmt.Sprintf("no display here ($DISPLAY and $WAYLAND_DISPLAY are unset), and the game command runs the script %s, which names no Xvfb: if it does not bring a display of its own, Godot cannot open its window", g.wrapper),
			fmt.Sprintf(`if the game does not start, run it under a virtual display: "command": %s`, whole)})
	default:
		out = append(out, Check{"godot display", "warn",
			"no display here ($DISPLAY and $WAYLAND_DISPLAY are unset): Godot cannot open its window, so the game does not start",
			fmt.Sprintf(`run it under a virtual display: "command": %s; or add "--headless" (then it draws no pictures)`, whole)})
	}
	if !slices.ContainsFunc(out, func(c Check) bool { return c.Status == "warn" }) {
		out = append(out, Check{"godot", "ok", fmt.Sprintf("project %s imported, --fixed-fps, sound and display as this machine has them", g.project), ""})
	}
	return out
}

// checkGodotImport checks that the project was imported as Godot imports
// it: every asset Godot would import (not in a hidden folder, nor under a
// folder holding .gdignore) has its .import file beside it, and the files
// that .import names in .godot/imported are there. Imported files are
// named after the asset and a hash (Xolonium-Regular.ttf-<md5>.fontdata),
// so they are found through .import, never by their names.
func checkGodotImport(project string) (Check, bool) {
	fix := fmt.Sprintf("import it once, and again after adding assets: godot --headless --import --path %s", project)
	if !isDir(filepath.Join(project, ".godot")) {
		return Check{"godot import", "warn", fmt.Sprintf("the Godot project in %s was never imported (no .godot/): its textures, sounds and fonts are missing when it runs (blank pictures, and nothing says why), and its global class names are unknown", project), fix}, false
	}
	var missing []string
	filepath.WalkDir(project, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() {
			if p == project {
				return nil
			}
			if d.Name() == "addons" || strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(p, ".gdignore")); err == nil {
				return filepath.SkipDir // Godot ignores the folder
			}
			return nil
		}
		if !slices.Contains(godotAssetExts, strings.ToLower(filepath.Ext(p))) || godotImported(project, p) {
			return nil
		}
		rel, _ := filepath.Rel(project, p)
		if missing = append(missing, filepath.ToSlash(rel)); len(missing) > 3 {
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

// godotImported reports whether the asset at p was imported: its .import
// file says what the import made (dest_files, else the remap's path
// keys), and each of those files exists; an asset kept as it is
// (importer "keep" or "skip") needs nothing more.
func godotImported(project, p string) bool {
	b, err := os.ReadFile(p + ".import")
	if err != nil {
		return false
	}
	var dest, paths []string
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), "=")
		if !ok {
			continue
		}
		switch k = strings.TrimSpace(k); {
		case k == "importer" && (v == `"keep"` || v == `"skip"`):
			return true
		case k == "valid" && v == "false":
			return false // Godot tried and failed
		case k == "dest_files":
			dest = resPaths(v)
		case k == "path" || strings.HasPrefix(k, "path."):
			paths = append(paths, resPaths(v)...)
		}
	}
	if len(dest) == 0 {
		dest = paths
	}
	for _, r := range dest {
		if _, err := os.Stat(filepath.Join(project, filepath.FromSlash(r))); err != nil {
			return false
		}
	}
	return len(dest) > 0
}

// resPaths are the res:// paths quoted in a value of a .import file, as
// paths relative to the project.
func resPaths(v string) []string {
	var out []string
	for _, part := range strings.Split(v, `"`) {
		if rel, ok := strings.CutPrefix(part, "res://"); ok {
			out = append(out, rel)
		}
	}
	return out
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
