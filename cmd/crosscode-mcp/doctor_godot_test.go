package main

import (
	"bytes"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/crosscode/crosscode-mcp/internal/testing/sysdeps"
)

// godotProject writes a small Godot project (project.godot at 120 physics
// ticks a second, a texture, a font whose name has a dash, and a folder
// Godot ignores) in dir; imported adds what an import leaves: the .import
// files beside the assets and what they name in .godot/imported.
func godotProject(t *testing.T, dir string, imported bool) {
	t.Helper()
	files := map[string]string{
		"project.godot":              "config_version=5\n\n[application]\n\nconfig/name=\"G\"\n\n[physics]\n\ncommon/physics_ticks_per_second=120\n",
		"art/hero.png":               "\x89PNG",
		"fonts/Xolonium-Regular.ttf": "\x00\x01\x00\x00",
		"raw/.gdignore":              "",
		"raw/source.png":             "\x89PNG", // under .gdignore: never imported
		"addons/x/icon.svg":          "<svg/>",  // the addon's own: not the game's to import
	}
	if imported {
		for asset, made := range map[string]string{"art/hero.png": "hero.png-3ce0342989715633383046bcbc7b428d.ctex",
			"fonts/Xolonium-Regular.ttf": "Xolonium-Regular.ttf-bc2981e3069cff4c34dd7c8e2bb73fba.fontdata"} {
			files[asset+".import"] = importFile(asset, made)
			files[".godot/imported/"+made] = "x"
		}
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

// importFile is the .import file Godot 4.6 writes beside an asset whose
// import made .godot/imported/made.
func importFile(asset, made string) string {
	return "[remap]\n\nimporter=\"texture\"\ntype=\"CompressedTexture2D\"\nuid=\"uid://bktmeybc18d05\"\npath=\"res://.godot/imported/" + made +
		"\"\n\n[deps]\n\nsource_file=\"res://" + asset + "\"\ndest_files=[\"res://.godot/imported/" + made + "\"]\n\n[params]\n\ncompress/mode=0\n"
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
	stale := func() string {
		d := t.TempDir()
		godotProject(t, d, true)
		os.Remove(filepath.Join(d, ".godot", "imported", "Xolonium-Regular.ttf-bc2981e3069cff4c34dd7c8e2bb73fba.fontdata"))
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
			map[string]string{"godot audio": `"--audio-driver", "Dummy"`, "godot display": `["xvfb-run","-a","godot","--rendering-driver","opengl3","--audio-driver","Dummy","--path",".","--fixed-fps","120"]`}, false},
		{"the display's fix keeps the command's flags", []string{"godot", "--fixed-fps", "60", "--audio-driver", "Dummy", "--path", "."}, done, server,
			map[string]string{"godot display": `["xvfb-run","-a","godot","--rendering-driver","opengl3","--fixed-fps","60","--audio-driver","Dummy","--path","."]`}, false},
		{"what .import names is gone", []string{"godot", "--fixed-fps", "120"}, stale, desktop,
			map[string]string{"godot import": "--import"}, false},
		{"imported, dashes in names", []string{"godot", "--fixed-fps", "120"}, done, desktop, nil, false},
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
			if imp := checkNamed(checks, "godot import"); imp != nil && strings.Contains(imp.Detail, "raw/") {
				t.Fatalf("a folder with .gdignore is Godot's to ignore: %+v", imp)
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

// A `godot` on PATH that is a script bringing its own display (as the
// guide's wrapper around scripts/godot-chroot --xvfb) is no missing
// display; a script that names none is advice, not an alarm, and its fix
// keeps the command's flags.
func TestDoctorGodotWrapper(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("shell scripts stand for godot")
	}
	project := t.TempDir()
	godotProject(t, project, true)
	bin := t.TempDir()
	withX := filepath.Join(bin, "godot")
	os.WriteFile(withX, []byte("#!/bin/sh\nexec /opt/crosscode-mcp/scripts/godot-chroot --xvfb \"$@\"\n"), 0o755)
	plain := filepath.Join(bin, "godot-plain")
	os.WriteFile(plain, []byte("#!/bin/sh\nexec /opt/godot/Godot_v4.6 \"$@\"\n"), 0o755)
	server := godotHost{audioWhy: "no sound card in /dev/snd"}
	game := []string{"--fixed-fps", "120", "--audio-driver", "Dummy", "--path", "."}

	checks := checkGodot(append([]string{withX}, game...), project, server)
	if len(checks) != 1 || checks[0].Status != "ok" {
		t.Fatalf("a wrapper that brings Xvfb: %+v", checks)
	}
	checks = checkGodot(append([]string{plain}, game...), project, server)
	d := checkNamed(checks, "godot display")
	want := `["xvfb-run","-a","` + plain + `","--rendering-driver","opengl3","--fixed-fps","120","--audio-driver","Dummy","--path","."]`
	if d == nil || d.Status != "info" || !strings.Contains(d.Detail, plain) || !strings.Contains(d.Fix, want) || checkNamed(checks, "godot") == nil {
		t.Fatalf("a wrapper that names no display: %+v", checks)
	}
}

// What a real import leaves (Godot 4.6 in its tree) passes the import
// check: names with dashes, a folder with .gdignore; before the import it
// is named, and importing clears it.
func TestDoctorGodotRealImport(t *testing.T) {
	g := sysdeps.NeedGodot(t)
	project := t.TempDir()
	godotProject(t, project, false)
	// Real assets: Godot refuses the stand-ins' bytes.
	writePNG := func(name string) {
		var b bytes.Buffer
		png.Encode(&b, image.NewRGBA(image.Rect(0, 0, 4, 4)))
		os.WriteFile(filepath.Join(project, name), b.Bytes(), 0o644)
	}
	writePNG("art/hero.png")
	writePNG("art/hero-big.png")
	writePNG("raw/source.png")
	os.Remove(filepath.Join(project, "fonts", "Xolonium-Regular.ttf"))
	wav := []byte("RIFF\x24\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x01\x00\x01\x00\x44\xac\x00\x00\x88\x58\x01\x00\x02\x00\x10\x00data\x00\x00\x00\x00")
	os.WriteFile(filepath.Join(project, "art", "jump-1.wav"), wav, 0o644)
	os.MkdirAll(filepath.Join(project, ".godot"), 0o755) // as a run without an import leaves it
	if c, ok := checkGodotImport(project); ok || !strings.Contains(c.Detail, "art/hero-big.png") {
		t.Fatalf("before the import: %+v", c)
	}
	cmd := exec.Command(g.Launcher, "--import", "--path", ".")
	cmd.Dir = project
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("godot --import: %v\n%s", err, out)
	}
	if c, ok := checkGodotImport(project); !ok {
		t.Fatalf("after a good import: %+v", c)
	}
}
