package main

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// unityProject writes a small Unity project in dir: its version, its
// manifest's dependencies, and its Active Input Handling (0 old, 1 new, 2
// both).
func unityProject(t *testing.T, dir, version string, deps map[string]string, inputHandler int) {
	t.Helper()
	var d []string
	for k, v := range deps {
		d = append(d, `"`+k+`": "`+v+`"`)
	}
	files := map[string]string{
		"ProjectSettings/ProjectVersion.txt":    "m_EditorVersion: " + version + "\nm_EditorVersionWithRevision: " + version + " (abc)\n",
		"ProjectSettings/ProjectSettings.asset": "PlayerSettings:\n  productName: Arena\n  activeInputHandler: " + string(rune('0'+inputHandler)) + "\n",
		"Packages/manifest.json":                `{"dependencies": {` + strings.Join(d, ", ") + `}}`,
		"Assets/Main.unity":                     "%YAML 1.1\n",
	}
	writeFiles(t, dir, files)
}

// What a Unity project meets first, each with its fix: the package
// missing, no Input System (or the old Input Manager only), an old
// Unity, a game command that runs the Editor, draws nothing, or opens a
// window the machine does not have; and a sound setup, for a player and
// for the Editor's Play mode.
func TestDoctorUnityChecks(t *testing.T) {
	good := map[string]string{unityPackage: unityPackageURL, "com.unity.inputsystem": "1.8.2"}
	desktop := godotHost{display: true, audio: true}
	server := godotHost{}
	cases := []struct {
		name    string
		version string
		deps    map[string]string
		input   int
		game    []string
		host    godotHost
		warn    map[string]string // check (after "unity <project> ") -> what its fix says
	}{
		{"a sound player build", "2022.3.10f1", good, 1, []string{"Builds/Linux/Arena.x86_64", "-screen-fullscreen", "0"}, desktop, nil},
		{"the Editor's Play mode", "6000.0.23f1", good, 2, nil, server, nil},
		{"no package", "2022.3.10f1", map[string]string{"com.unity.inputsystem": "1.7.0"}, 1, nil, desktop, map[string]string{"package": unityPackageURL}},
		{"no Input System", "2022.3.10f1", map[string]string{unityPackage: unityPackageURL}, 0, nil, desktop, map[string]string{"input": "Active Input Handling"}},
		{"the old Input Manager only", "2022.3.10f1", good, 0, nil, desktop, map[string]string{"input": "Input System Package"}},
		{"an old Unity", "2021.3.2f1", good, 1, nil, desktop, map[string]string{"version": "2022.3"}},
		{"the Editor as the game", "2022.3.10f1", good, 1, []string{"/opt/Unity/Editor/Unity", "-projectPath", "."}, desktop, map[string]string{"launch": "build a player"}},
		{"no graphics", "2022.3.10f1", good, 1, []string{"./Arena.x86_64", "-batchmode", "-nographics"}, desktop, map[string]string{"launch": "remove -nographics"}},
		{"no display", "2022.3.10f1", good, 1, []string{"./Arena.x86_64"}, server, map[string]string{"launch": "xvfb-run"}},
		{"a local package that is gone", "2022.3.10f1", map[string]string{unityPackage: "file:../../nowhere", "com.unity.inputsystem": "1.8.2"}, 1, nil, desktop, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "Arena")
			unityProject(t, dir, tc.version, tc.deps, tc.input)
			checks := checkUnity(filepath.Dir(dir), filepath.Dir(dir), tc.game, tc.host)
			if tc.name == "a local package that is gone" {
				if c := checkNamed(checks, "unity Arena package"); c == nil || c.Status != "fail" || !strings.Contains(c.Fix, "adapters/unity") {
					t.Fatalf("%+v", checks)
				}
				return
			}
			for name, fix := range tc.warn {
				c := checkNamed(checks, "unity Arena "+name)
				if c == nil || c.Status != "warn" || !strings.Contains(c.Fix, fix) || c.Detail == "" {
					t.Fatalf("%s: %+v, want a warning whose fix says %q", name, checks, fix)
				}
			}
			for _, c := range checks {
				if _, warned := tc.warn[strings.TrimPrefix(c.Name, "unity Arena ")]; c.Status != "ok" && !warned {
					t.Fatalf("unexpected %+v", c)
				}
			}
		})
	}
	if got := checkUnity(t.TempDir(), t.TempDir(), nil, desktop); len(got) != 0 {
		t.Fatalf("no Unity project, no checks: %+v", got)
	}
}

// doctor finds a Unity project in a subfolder of the repository and
// checks it with the capture config's game command.
func TestDoctorUnityProject(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("a shell script stands for the player")
	}
	repo := gitRepo(t)
	unityProject(t, filepath.Join(repo, "game", "Arena"), "2022.3.10f1", map[string]string{"com.unity.inputsystem": "1.8.2"}, 1)
	os.MkdirAll(filepath.Join(repo, ".crosscode"), 0o755)
	os.WriteFile(filepath.Join(repo, ".crosscode", "capture.json"), []byte(`{"events": {"Player/Health:onDied": "PLAYER_DIED"}}`), 0o644)
	r, code := runDoctorJSON(t, "--repo", repo)
	if c := r.check(t, "unity Arena package"); c.Status != "warn" || !strings.Contains(c.Fix, unityPackageURL) {
		t.Fatalf("unity package: %+v", c)
	}
	if c := r.check(t, "unity Arena launch"); c.Status != "ok" || !strings.Contains(c.Detail, "press Play") {
		t.Fatalf("unity launch: %+v", c)
	}
	if code != 0 {
		t.Fatalf("warnings fail the run: %d %+v", code, r.Checks)
	}
}
