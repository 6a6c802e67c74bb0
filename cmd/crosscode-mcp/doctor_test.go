package main

import (
	"database/sql"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/crosscode/crosscode-mcp/internal/testing/sysdeps"
)

type doctorReport struct {
	OK     bool    `json:"ok"`
	Checks []Check `json:"checks"`
}

// runDoctorJSON runs `doctor --json` with args and returns its report and
// exit status.
func runDoctorJSON(t *testing.T, args ...string) (doctorReport, int) {
	t.Helper()
	out, errOut, code := runCLI(t, append([]string{"doctor", "--json"}, args...)...)
	var r doctorReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("doctor --json output: %v\n%s\n%s", err, out, errOut)
	}
	return r, code
}

func (r doctorReport) check(t *testing.T, name string) Check {
	t.Helper()
	for _, c := range r.Checks {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no check %q in %+v", name, r.Checks)
	return Check{}
}

func TestDoctorHealthySetup(t *testing.T) {
	repo := gitRepo(t)
	game := "git --version"
	if sysdeps.UnderWine() {
		game = os.Args[0] + " -test.run=^$" // any program that is there
	}
	r, code := runDoctorJSON(t, "--repo", repo, "--game-cmd", game)
	if code != 0 || !r.OK {
		t.Fatalf("healthy setup fails: %d %+v", code, r.Checks)
	}
	for _, c := range r.Checks {
		if c.Name == "git repository" && c.Status == "warn" && strings.Contains(c.Detail, "git is not installed") && sysdeps.UnderWine() {
			continue // the one warning a setup without git has
		}
		if c.Status != "ok" {
			t.Errorf("%s: %s %s", c.Name, c.Status, c.Detail)
		}
	}
	if id := r.check(t, "identity"); !strings.Contains(id.Detail, "workspace mygame") {
		t.Errorf("identity: %s", id.Detail)
	}
	out, _, code := runCLI(t, "doctor", "--repo", repo, "--game-cmd", game)
	if code != 0 || !strings.Contains(out, "git repository") || strings.Contains(out, "FAIL") {
		t.Fatalf("doctor: %d\n%s", code, out)
	}
}

// Each broken setup is diagnosed by its check, with a fix, and fails the run.
func TestDoctorDiagnoses(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	cases := []struct {
		name, check, want string
		setup             func(t *testing.T, repo string) []string
	}{
		{"not a git repository (a warning)", "git repository", "not in a git repository", func(t *testing.T, _ string) []string {
			return []string{"--repo", t.TempDir(), "--data", t.TempDir()}
		}},
		{"data dir not writable", "data directory", "", func(t *testing.T, repo string) []string {
			file := filepath.Join(t.TempDir(), "file")
			os.WriteFile(file, nil, 0o644)
			return []string{"--repo", repo, "--data", filepath.Join(file, "sub")}
		}},
		{"damaged database", "workspace database", "", func(t *testing.T, repo string) []string {
			data := t.TempDir()
			os.WriteFile(filepath.Join(data, "workspace.db"), []byte(strings.Repeat("this is not a database. ", 200)), 0o644)
			return []string{"--repo", repo, "--data", data}
		}},
		{"database from a newer version", "workspace database", "newer", func(t *testing.T, repo string) []string {
			data := t.TempDir()
			db, _ := sql.Open("sqlite", filepath.Join(data, "workspace.db"))
			db.Exec("PRAGMA user_version = 99")
			db.Close()
			return []string{"--repo", repo, "--data", data}
		}},
		{"service unreachable", "coordination", "unreachable", func(t *testing.T, repo string) []string {
			return []string{"--repo", repo, "--service", "http://127.0.0.1:1", "--token", "x"}
		}},
		{"bad token", "coordination", "does not know this token", func(t *testing.T, repo string) []string {
			hub := t.TempDir()
			createToken(t, hub, "mygame")
			svc := startServe(t, hub)
			return []string{"--repo", repo, "--service", svc.URL, "--token", "ccm_wrong"}
		}},
		{"token of another workspace", "coordination", "another workspace", func(t *testing.T, repo string) []string {
			hub := t.TempDir()
			tok := createToken(t, hub, "othergame")
			svc := startServe(t, hub)
			return []string{"--repo", repo, "--service", svc.URL, "--token", tok}
		}},
		{"invalid capture config", "capture config", "", func(t *testing.T, repo string) []string {
			os.MkdirAll(filepath.Join(repo, ".crosscode"), 0o755)
			os.WriteFile(filepath.Join(repo, ".crosscode", "capture.json"), []byte(`{"game":{"command":[]},"colour":1}`), 0o644)
			return []string{"--repo", repo}
		}},
		{"game command not found", "game command", "not found", func(t *testing.T, repo string) []string {
			return []string{"--repo", repo, "--game-cmd", "no-such-game-xyz --fullscreen"}
		}},
		{"cappy port taken", "cappy listen", "taken", func(t *testing.T, repo string) []string {
			return []string{"--repo", repo, "--cappy-listen", busy.Addr().String()}
		}},
		{"cappy on all interfaces", "cappy listen", "not a loopback", func(t *testing.T, repo string) []string {
			return []string{"--repo", repo, "--cappy-listen", "0.0.0.0:0"}
		}},
		{"unknown provider", "identity", "not one of", func(t *testing.T, repo string) []string {
			return []string{"--repo", repo, "--provider", "chatgpt"}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.check == "git repository" {
				sysdeps.Need(t, "git")
			}
			r, code := runDoctorJSON(t, tc.setup(t, gitRepo(t))...)
			c := r.check(t, tc.check)
			wantStatus := "fail"
			if strings.Contains(tc.name, "warning") {
				wantStatus = "warn"
			}
			if c.Status != wantStatus || !strings.Contains(c.Detail, tc.want) || c.Fix == "" {
				t.Fatalf("%s: %+v", tc.check, c)
			}
			if wantStatus == "fail" && (code != 1 || r.OK) {
				t.Fatalf("a failed check must fail the run: exit %d ok %v", code, r.OK)
			}
		})
	}
}

// The cursor check: a replica whose cursor points into deleted history is warned.
func TestDoctorCursorTooOld(t *testing.T) {
	hub := t.TempDir()
	tok := createToken(t, hub, "mygame")
	svc := startServe(t, hub, "--retention", "50ms", "--sweep-every", "20ms")
	repo := gitRepo(t)
	a := startAgent(t, "ada", agentOpts{clientName: "codex", dir: repo, args: []string{"--actor", "ada@example.com", "--service", svc.URL, "--token", tok, "--toolsets", "coord"}})
	a.call("publish_intent", map[string]any{"summary": "x", "paths": []string{"a/**"}})
	a.c.Close()
	// Others log more; retention deletes everything old, including what this replica never read.
	b := startAgent(t, "bo", agentOpts{clientName: "cursor", dir: gitRepo(t), args: []string{"--actor", "bo@example.com", "--service", svc.URL, "--token", tok, "--toolsets", "coord"}})
	for range 3 {
		b.call("publish_intent", map[string]any{"summary": "more", "paths": []string{"b/**"}})
	}
	waitFor(t, "retention to pass ada's cursor", func() bool {
		r, _ := runDoctorJSON(t, "--repo", repo, "--service", svc.URL, "--token", tok)
		for _, ch := range r.Checks {
			if ch.Name == "cursor" && ch.Status == "warn" {
				return true
			}
		}
		return false
	})
}

// TestDoctorToolsets: with --toolsets coord the server never reads the
// capture config nor launches a game, so doctor does not check them, and
// says so; an unknown toolset fails.
func TestDoctorToolsets(t *testing.T) {
	repo := gitRepo(t)
	args := []string{"--repo", repo, "--toolsets", "coord", "--capture-config", "/nonexistent.json", "--game-cmd", "no-such-game-xyz", "--cappy-listen", "0.0.0.0:1"}
	r, code := runDoctorJSON(t, args...)
	if code != 0 || !r.OK {
		t.Fatalf("doctor --toolsets coord fails on capture it does not serve: exit %d %+v", code, r.Checks)
	}
	if c := r.check(t, "capture"); c.Status != "ok" || !strings.Contains(c.Detail, "off") || !strings.Contains(c.Detail, "not checked") {
		t.Fatalf("capture: %+v", c)
	}
	for _, c := range r.Checks {
		if c.Name == "capture config" || c.Name == "game command" || c.Name == "cappy listen" {
			t.Errorf("%s checked although capture is off: %+v", c.Name, c)
		}
	}
	out, _, code := runCLI(t, append([]string{"doctor"}, args...)...)
	if code != 0 || !strings.Contains(out, "capture") || !strings.Contains(out, "not checked") {
		t.Fatalf("doctor --toolsets coord: %d\n%s", code, out)
	}

	// Both toolsets, spelled out: the capture checks run (and this config fails).
	r, code = runDoctorJSON(t, "--repo", repo, "--toolsets", "coord,capture", "--capture-config", "/nonexistent.json")
	if c := r.check(t, "capture config"); c.Status != "fail" || code != 1 {
		t.Fatalf("capture config with --toolsets coord,capture: exit %d %+v", code, c)
	}

	r, code = runDoctorJSON(t, "--repo", repo, "--toolsets", "coord,vision")
	if c := r.check(t, "toolsets"); c.Status != "fail" || !strings.Contains(c.Detail, "vision") || c.Fix == "" || code != 1 {
		t.Fatalf("unknown toolset: exit %d %+v", code, c)
	}
}

// TestDoctorGameCommandInGameCwd: a relative game.command is found where
// the launcher runs it, in game.cwd (relative to the repository), not in
// doctor's working directory.
func TestDoctorGameCommandInGameCwd(t *testing.T) {
	capture := func(t *testing.T, repo, config string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(repo, ".crosscode"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(repo, ".crosscode", "capture.json"), []byte(config), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	repo := gitRepo(t)
	if err := os.MkdirAll(filepath.Join(repo, "game", "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A script the OS runs by its name: run-game (sh), run-game.bat on
	// Windows, where a command names it without its extension.
	script, body := "run-game", "#!/bin/sh\nexit 0\n"
	if runtime.GOOS == "windows" {
		script, body = "run-game.bat", "@exit /b 0\r\n"
	}
	if err := os.WriteFile(filepath.Join(repo, "game", "bin", script), []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	found := filepath.Join(repo, "game", "bin", script)
	absCwd, _ := json.Marshal(filepath.Join(repo, "game"))
	for _, tc := range []struct {
		name, config, status, want string
	}{
		{"relative to game.cwd", `{"game":{"command":["./bin/run-game","--demo"],"cwd":"game"}}`, "ok", found + " --demo"},
		{"absolute game.cwd", `{"game":{"command":["bin/run-game"],"cwd":` + string(absCwd) + `}}`, "ok", found},
		{"relative to the repository without game.cwd", `{"game":{"command":["game/bin/run-game"]}}`, "ok", found},
		{"not in game.cwd", `{"game":{"command":["./game/bin/run-game"],"cwd":"game"}}`, "fail", "./game/bin/run-game"},
		{"game.cwd missing", `{"game":{"command":["./bin/run-game"],"cwd":"no-such-dir"}}`, "fail", "not a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			capture(t, repo, tc.config)
			r, code := runDoctorJSON(t, "--repo", repo)
			c := r.check(t, "game command")
			if c.Status != tc.status || !strings.Contains(c.Detail, tc.want) {
				t.Fatalf("game command: %+v, want %s naming %q", c, tc.status, tc.want)
			}
			if tc.status == "fail" && (code != 1 || c.Fix == "") {
				t.Fatalf("a failed check must fail the run with a fix: exit %d %+v", code, c)
			}
		})
	}
}

func TestDoctorWebGame(t *testing.T) {
	sysdeps.Need(t, "chromium")
	repo := gitRepo(t)
	if err := os.MkdirAll(filepath.Join(repo, ".crosscode"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(repo, "web", "dist"), 0o755)
	for _, tc := range []struct {
		name, config, check, status, want string
	}{
		{"browser on PATH", `{"game":{"serve":"dist","cwd":"web"}}`, "browser", "ok", "Chromium"},
		{"browser missing", `{"game":{"serve":"dist","cwd":"web","browser":"/no/such/chrome"}}`, "browser", "fail", "/no/such/chrome"},
		{"not built yet", `{"game":{"serve":"dist","cwd":"web"}}`, "game files", "warn", "no index.html"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			os.WriteFile(filepath.Join(repo, ".crosscode", "capture.json"), []byte(tc.config), 0o644)
			r, _ := runDoctorJSON(t, "--repo", repo)
			c := r.check(t, tc.check)
			if c.Status != tc.status || !strings.Contains(c.Detail, tc.want) || (c.Status != "ok" && c.Fix == "") {
				t.Fatalf("%s: %+v, want %s naming %q (with a fix unless ok)", tc.check, c, tc.status, tc.want)
			}
		})
	}
	os.WriteFile(filepath.Join(repo, "web", "dist", "index.html"), []byte("<!doctype html>"), 0o644)
	r, _ := runDoctorJSON(t, "--repo", repo)
	if c := r.check(t, "game files"); c.Status != "ok" {
		t.Fatalf("game files after the build: %+v", c)
	}
	// Who drives the game: the page driver for a page without the adapter,
	// the page's own adapter when a served file loads it, the page driver
	// always with game.adapter "page".
	os.WriteFile(filepath.Join(repo, "web", "dist", "game.js"), []byte("window.render_game_to_text = () => '{}';"), 0o644)
	for _, tc := range []struct{ config, file, want string }{
		{`{"game":{"serve":"dist","cwd":"web"}}`, "", "auto: no served file loads the Cappy adapter, so crosscode-mcp drives the page itself"},
		{`{"game":{"serve":"dist","cwd":"web"}}`, "cappy.js", "auto: the page's own Cappy adapter (cappy.js loads it)"},
		{`{"game":{"serve":"dist","cwd":"web","adapter":"page"}}`, "cappy.js", "page: crosscode-mcp drives the page itself"},
	} {
		os.Remove(filepath.Join(repo, "web", "dist", "cappy.js"))
		if tc.file != "" {
			os.WriteFile(filepath.Join(repo, "web", "dist", tc.file), []byte("q.get('cappy-endpoint')"), 0o644)
		}
		os.WriteFile(filepath.Join(repo, ".crosscode", "capture.json"), []byte(tc.config), 0o644)
		r, _ := runDoctorJSON(t, "--repo", repo)
		if c := r.check(t, "web adapter"); c.Status != "ok" || !strings.Contains(c.Detail, tc.want) || (tc.file == "" && !strings.Contains(c.Detail, "render_game_to_text() (game.js)")) {
			t.Fatalf("%s: web adapter %+v, want %q", tc.config, c, tc.want)
		}
	}
	os.WriteFile(filepath.Join(repo, ".crosscode", "capture.json"), []byte(`{"game":{"serve":"dist","cwd":"web","adapter":"puppet"}}`), 0o644)
	if c := func() Check { r, _ := runDoctorJSON(t, "--repo", repo); return r.check(t, "capture config") }(); c.Status != "fail" || !strings.Contains(c.Detail, "game.adapter") {
		t.Fatalf("a bad game.adapter: %+v", c)
	}
}

// TestDoctorWebGameAsLaunched: doctor reads a web game's config as the
// launcher does: it checks the page game.url opens (not always
// index.html), and the page driver's hello (its game's name from the
// served folder resolved against the repository, the controller's
// handshake with the config's requiredCapabilities), which it fails when
// every capture call would be refused; a misspelled game.actions is
// refused with the nearest names.
func TestDoctorWebGameAsLaunched(t *testing.T) {
	sysdeps.Need(t, "chromium")
	repo := gitRepo(t)
	os.MkdirAll(filepath.Join(repo, ".crosscode"), 0o755)
	os.MkdirAll(filepath.Join(repo, "dist"), 0o755)
	os.WriteFile(filepath.Join(repo, "dist", "index-debug.html"), []byte("<!doctype html>"), 0o644)
	doctorWith := func(config string) (doctorReport, int) {
		t.Helper()
		os.WriteFile(filepath.Join(repo, ".crosscode", "capture.json"), []byte(config), 0o644)
		return runDoctorJSON(t, "--repo", repo)
	}
	r, _ := doctorWith(`{"game": {"serve": "dist", "url": "/index-debug.html", "adapter": "page"}}`)
	if c := r.check(t, "game files"); c.Status != "ok" || !strings.Contains(c.Detail, "opens index-debug.html") {
		t.Fatalf("a url naming another page: %+v", c)
	}
	if c := r.check(t, "page driver"); c.Status != "ok" || !strings.Contains(c.Detail, `the game "mygame"`) || !strings.Contains(c.Detail, "every key and the pointer") {
		t.Fatalf("the page driver of the README's config: %+v", c)
	}
	r, _ = doctorWith(`{"game": {"serve": "dist", "url": "/levels/one.html?x=1"}}`)
	if c := r.check(t, "game files"); c.Status != "warn" || !strings.Contains(c.Detail, filepath.Join("levels", "one.html")) || c.Fix == "" {
		t.Fatalf("a url naming a page not there: %+v", c)
	}
	r, code := doctorWith(`{"game": {"serve": ".", "adapter": "page", "actions": ["ArrowLeft", "Space"]}, "requiredCapabilities": ["scenarios"]}`)
	if c := r.check(t, "page driver"); c.Status != "fail" || code != 1 || !strings.Contains(c.Detail, "CAPABILITY_MISSING") || !strings.Contains(c.Detail, "requiredCapabilities") {
		t.Fatalf("a page driver the controller refuses: exit %d %+v", code, c)
	}
	r, _ = doctorWith(`{"game": {"serve": "."}, "requiredCapabilities": ["scenarios"]}`)
	if c := r.check(t, "page driver"); c.Status != "warn" {
		t.Fatalf("auto, where the page's adapter may drive: %+v", c)
	}
	r, _ = doctorWith(`{"game": {"serve": "dist", "actions": ["ArrowLeft", "Spacebar"]}}`)
	if c := r.check(t, "capture config"); c.Status != "fail" || !strings.Contains(c.Detail, "did you mean Space") {
		t.Fatalf("a misspelled key: %+v", c)
	}
}
