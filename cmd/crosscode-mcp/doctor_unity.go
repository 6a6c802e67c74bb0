package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// What a Unity project needs for an agent to play it (adapters/unity,
// docs/unity.md), each named with its fix: the package in
// Packages/manifest.json, the Input System active (the package presses its
// actions), a supported Unity, and a game command that launches a player
// with graphics, or none (Play mode in the Editor connects by itself).

// unityPackage is the package's name and its git URL.
const (
	unityPackage    = "com.crosscode.cappy"
	unityPackageURL = "https://github.com/crosscode/crosscode-mcp.git?path=adapters/unity"
)

// findUnityProjects returns the Unity projects (folders with
// ProjectSettings/ProjectVersion.txt) at dirs and in their subfolders, two
// levels down, at most three.
func findUnityProjects(dirs ...string) []string {
	var out []string
	seen := map[string]bool{}
	var walk func(dir string, depth int)
	walk = func(dir string, depth int) {
		if len(out) >= 3 || seen[dir] {
			return
		}
		seen[dir] = true
		if _, err := os.Stat(filepath.Join(dir, "ProjectSettings", "ProjectVersion.txt")); err == nil {
			out = append(out, dir)
			return
		}
		if depth == 0 {
			return
		}
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			n := e.Name()
			if e.IsDir() && !strings.HasPrefix(n, ".") && n != "node_modules" && n != "Library" && n != "Temp" {
				walk(filepath.Join(dir, n), depth-1)
			}
		}
	}
	for _, d := range dirs {
		walk(d, 2)
	}
	return out
}

// checkUnity checks each Unity project under the repository (top) and the
// game's folder, with the game command (none: the Editor's Play mode).
func checkUnity(top, gameDir string, game []string, host godotHost) []Check {
	var out []Check
	for _, project := range findUnityProjects(gameDir, top) {
		out = append(out, checkUnityProject(project, game, host)...)
	}
	return out
}

func checkUnityProject(project string, game []string, host godotHost) []Check {
	var out []Check
	name := "unity " + filepath.Base(project)
	var manifest struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	b, err := os.ReadFile(filepath.Join(project, "Packages", "manifest.json"))
	if err == nil {
		err = json.Unmarshal(b, &manifest)
	}
	switch src, ok := manifest.Dependencies[unityPackage]; {
	case err != nil:
		out = append(out, Check{name + " package", "fail", fmt.Sprintf("Packages/manifest.json of %s cannot be read: %v", project, err), "open the project in Unity once, which writes it"})
	case !ok:
		out = append(out, Check{name + " package", "warn", fmt.Sprintf("%s does not have the Cappy package (%s): an agent cannot play it", project, unityPackage),
			fmt.Sprintf(`add "%s": "%s" to the dependencies of Packages/manifest.json (or Window > Package Manager > + > Add package from git URL)`, unityPackage, unityPackageURL)})
	case strings.HasPrefix(src, "file:") && !isDir(filepath.Join(project, "Packages", strings.TrimPrefix(src, "file:"))) && !isDir(strings.TrimPrefix(src, "file:")):
		out = append(out, Check{name + " package", "fail", fmt.Sprintf("%s is installed from %s, which is not a folder", unityPackage, src), "point it at adapters/unity of a clone (relative to Packages/), or use the git URL " + unityPackageURL})
	default:
		out = append(out, Check{name + " package", "ok", unityPackage + " from " + src, ""})
	}

	input := unityInputHandler(project)
	_, hasInput := manifest.Dependencies["com.unity.inputsystem"]
	switch {
	case !hasInput:
		out = append(out, Check{name + " input", "warn", "the project does not use the Input System (com.unity.inputsystem is not in Packages/manifest.json): an agent cannot press the game's input; the old Input Manager cannot be driven",
			"install the Input System (Window > Package Manager) and set Project Settings > Player > Active Input Handling to Input System Package (or Both)"})
	case input == 0:
		out = append(out, Check{name + " input", "warn", "Active Input Handling is the old Input Manager only: the Input System's actions do not run, so an agent cannot press the game's input",
			"set Project Settings > Player > Active Input Handling to Input System Package (or Both)"})
	default:
		out = append(out, Check{name + " input", "ok", "the Input System is active", ""})
	}

	if v := unityVersion(project); v != "" {
		major, minor := versionParts(v)
		if major < 2022 || major == 2022 && minor < 3 {
			out = append(out, Check{name + " version", "warn", "the project is on Unity " + v + "; the package supports 2022.3 LTS and Unity 6", "upgrade the project to Unity 2022.3 LTS or Unity 6"})
		}
	}

	switch {
	case len(game) == 0:
		out = append(out, Check{name + " launch", "ok", "no game command: press Play in the Editor, and the package connects through crosscode-mcp's endpoint file (a fresh scene for each recording)", ""})
	case unityEditorCommand(game):
		out = append(out, Check{name + " launch", "warn", "the game command runs the Unity Editor: a player build is what crosscode-mcp launches (a new process for each recording)",
			`build a player (File > Build Settings) and give its executable in game.command, e.g. ["Builds/Linux/Game.x86_64", "-screen-fullscreen", "0"]; or remove game.command and press Play in the Editor`})
	case contains(game, "-nographics"):
		out = append(out, Check{name + " launch", "warn", "the game command has -nographics: the player draws nothing, so an agent sees no pictures", "remove -nographics (on a machine without a display, run it under xvfb-run -a)"})
	case !host.display && !contains(game, "xvfb-run") && !contains(game, "-batchmode"):
		out = append(out, Check{name + " launch", "warn", "no display here ($DISPLAY and $WAYLAND_DISPLAY are unset): the player cannot open its window", `run it under a virtual display: ["xvfb-run", "-a", "Builds/Linux/Game.x86_64"]`})
	default:
		out = append(out, Check{name + " launch", "ok", "a player build: " + strings.Join(game, " "), ""})
	}
	return out
}

func contains(args []string, s string) bool {
	for _, a := range args {
		if filepath.Base(a) == s || a == s {
			return true
		}
	}
	return false
}

// unityEditorCommand reports whether a game command starts the Unity
// Editor (Unity, Unity.exe, Unity.app) rather than a player build.
func unityEditorCommand(game []string) bool {
	for _, a := range game {
		b := strings.ToLower(filepath.Base(a))
		if b == "unity" || b == "unity.exe" || strings.Contains(strings.ToLower(a), "unity.app/") || b == "unityhub" {
			return true
		}
	}
	return false
}

// unityInputHandler is ProjectSettings.asset's activeInputHandler: 0 the
// old Input Manager, 1 the Input System, 2 both (-1: unknown).
func unityInputHandler(project string) int {
	f, err := os.Open(filepath.Join(project, "ProjectSettings", "ProjectSettings.asset"))
	if err != nil {
		return -1
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "activeInputHandler:"); ok {
			if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
				return n
			}
		}
	}
	return -1
}

// unityVersion is the project's Unity version (ProjectVersion.txt).
func unityVersion(project string) string {
	b, _ := os.ReadFile(filepath.Join(project, "ProjectSettings", "ProjectVersion.txt"))
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "m_EditorVersion:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// versionParts reads "2022.3.10f1" as 2022 and 3 (Unity 6 is 6000.x).
func versionParts(v string) (int, int) {
	parts := strings.SplitN(v, ".", 3)
	major, _ := strconv.Atoi(parts[0])
	minor := 0
	if len(parts) > 1 {
		minor, _ = strconv.Atoi(parts[1])
	}
	return major, minor
}
