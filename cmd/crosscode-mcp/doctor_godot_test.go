package main

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// godotProject writes a small Godot project (project.godot at 120 physics
// ticks a second, a texture) in dir; imported adds the .godot/ an import
// leaves.
func godotProject(t *testing.T, dir string, imported bool) {
	t.Helper()
	files := map[string]string{
		"project.godot":     "config_version=5\n\n[application]\n\nconfig/name=\"G\"\n\n[physics]\n\ncommon/physics_ticks_per_second=120\n",
		"art/hero.png":      "\x89PNG",
		"addons/x/icon.svg": "<svg/>", // the addon's own: not the game's to import
	}
	if imported {
		files[".godot/imported/hero.png-0123abcd.ctex"] = "x"
	}
	writeFiles(t, dir, files)
}

// writeFiles writes each file (a slash path under dir) with its text.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func checkNamed(checks []Check, name string) *Check {
	for i := range checks {
		if checks[i].Name == name {
			return &checks[i]
		}
	}
	return nil
}

// What a Godot game meets first on a machine, each with its fix: a project
// never imported, assets not imported, no fixed frame step, sound or a
// window the machine does not have; a command that is not Godot's is not
// looked at.
func TestDoctorGodotChecks(t *testing.T) {
	bare := func() string { d := t.TempDir(); godotProject(t, d, false); return d }()
	done := func() string { d := t.TempDir(); godotProject(t, d, true); return d }()
	assetsLeft := func() string {
		d := t.TempDir()
		godotProject(t, d, true)
		os.WriteFile(filepath.Join(d, "art", "coin.ogg"), []byte("OggS"), 0o644)
		return d
	}()
	desktop := godotHost{display: true, audio: true}
	server := godotHost{audioWhy: "no sound card in /dev/snd"}
	cases := []struct {
		name     string
		game     []string
		dir      string
		host     godotHost
		warn     map[string]string // check -> what its fix says
		noChecks bool
	}{
		{"never imported", []string{"godot", "--path", ".", "--fixed-fps", "120"}, bare, desktop,
			map[string]string{"godot import": "godot --headless --import --path " + bare}, false},
		{"an asset not imported", []string{"godot", "--fixed-fps", "120"}, assetsLeft, desktop,
			map[string]string{"godot import": "--import"}, false},
		{"no fixed frame step", []string{"/opt/Godot_v4.6-stable_linux.x86_64", "--path", done}, t.TempDir(), desktop,
			map[string]string{"godot frame step": `"--fixed-fps", "120"`}, false},
		{"no sound, no display", []string{"godot", "--path", ".", "--fixed-fps", "120"}, done, server,
			map[string]string{"godot audio": `"--audio-driver", "Dummy"`, "godot display": "xvfb-run"}, false},
		{"headless needs neither", []string{"godot", "--headless", "--path", ".", "--fixed-fps", "120"}, done, server, nil, false},
		{"xvfb and Dummy", []string{"xvfb-run", "-a", "godot", "--audio-driver", "Dummy", "--path", ".", "--fixed-fps", "120"}, done, server, nil, false},
		{"not Godot", []string{"go", "run", "./cmd/game"}, done, server, nil, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			checks := checkGodot(tc.game, tc.dir, tc.host)
			if tc.noChecks {
				if len(checks) != 0 {
					t.Fatalf("a command that is not Godot's: %+v", checks)
				}
				return
			}
			for name, fix := range tc.warn {
				c := checkNamed(checks, name)
				if c == nil || c.Status != "warn" || !strings.Contains(c.Fix, fix) || c.Detail == "" {
					t.Fatalf("%s: %+v, want a warning whose fix says %q", name, checks, fix)
				}
			}
			if len(tc.warn) == 0 && (len(checks) != 1 || checks[0].Status != "ok") {
				t.Fatalf("a sound Godot setup: %+v", checks)
			}
			if len(tc.warn) > 0 && len(checks) != len(tc.warn) {
				t.Fatalf("%d checks, expected only %v: %+v", len(checks), tc.warn, checks)
			}
		})
	}
}

// doctor looks at a Godot game command from the capture config.
func TestDoctorGodotGame(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("a shell script stands for godot")
	}
	repo := gitRepo(t)
	godotProject(t, filepath.Join(repo, "game"), false)
	bin := t.TempDir()
	os.WriteFile(filepath.Join(bin, "godot"), []byte("#!/bin/sh\nexit 0\n"), 0o755)
	os.MkdirAll(filepath.Join(repo, ".crosscode"), 0o755)
	os.WriteFile(filepath.Join(repo, ".crosscode", "capture.json"), []byte(`{"game":{"command":["`+filepath.Join(bin, "godot")+`","--path","."],"cwd":"game"}}`), 0o644)
	r, code := runDoctorJSON(t, "--repo", repo)
	if imp := r.check(t, "godot import"); imp.Status != "warn" || !strings.Contains(imp.Fix, "--import") {
		t.Fatalf("godot import: %+v", imp)
	}
	if fs := r.check(t, "godot frame step"); fs.Status != "warn" || !strings.Contains(fs.Fix, `"--fixed-fps", "120"`) {
		t.Fatalf("godot frame step: %+v", fs)
	}
	if code != 0 {
		t.Fatalf("warnings fail the run: %d %+v", code, r.Checks)
	}
}
