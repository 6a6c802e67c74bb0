package cappy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crosscode/crosscode-mcp/protocol"
)

// TestResolveWebGame: a web game's config resolves against the
// repository as the launcher runs it, relative paths included (the
// README's "dist", ".", a cwd), and its name is never empty: the served
// folder's when it says something, else the first folder above it that
// does, up to the repository's.
func TestResolveWebGame(t *testing.T) {
	repo := filepath.Join(t.TempDir(), "space-raiders")
	root := filepath.VolumeName(repo) + string(filepath.Separator) // "/", or "C:\" on Windows
	for _, tc := range []struct {
		game        GameConfig
		serve, id   string
		dir, config string
	}{
		{game: GameConfig{Serve: "dist", Adapter: "page"}, serve: filepath.Join(repo, "dist"), id: "space-raiders"},
		{game: GameConfig{Serve: "."}, serve: repo, id: "space-raiders"},
		{game: GameConfig{Serve: "./"}, serve: repo, id: "space-raiders"},
		{game: GameConfig{Cwd: "web", Serve: "dist"}, serve: filepath.Join(repo, "web", "dist"), id: "space-raiders"},
		{game: GameConfig{Cwd: "games/tetris", Serve: "build"}, serve: filepath.Join(repo, "games", "tetris", "build"), id: "tetris"},
		{game: GameConfig{Serve: "dist", URL: "/index-debug.html"}, serve: filepath.Join(repo, "dist"), id: "space-raiders"},
		{game: GameConfig{Serve: "Public"}, serve: filepath.Join(repo, "Public"), id: "space-raiders"},
		{game: GameConfig{Serve: "pickup"}, serve: filepath.Join(repo, "pickup"), id: "pickup"},
		{game: GameConfig{Serve: filepath.Join(root, "srv", "arcade", "dist")}, serve: filepath.Join(root, "srv", "arcade", "dist"), id: "arcade"},
		{game: GameConfig{Serve: filepath.Join(root, "dist")}, serve: filepath.Join(root, "dist"), id: "space-raiders"},
		{game: GameConfig{URL: "http://127.0.0.1:5173/", Command: []string{"npm", "run", "dev"}}, id: "space-raiders"},
		{game: GameConfig{URL: "http://127.0.0.1:5173/", Cwd: "client"}, id: "space-raiders"},
		{game: GameConfig{URL: "http://localhost:8080/snake.html"}, id: "snake"},
		{game: GameConfig{Serve: "bad\x1b[31mname\u202e"}, serve: filepath.Join(repo, "bad\x1b[31mname\u202e"), id: "bad[31mname"},
	} {
		w := ResolveWebGame(&tc.game, repo)
		if w.Serve != tc.serve || w.ID != tc.id {
			t.Errorf("%+v: serve %q id %q, want %q %q", tc.game, w.Serve, w.ID, tc.serve, tc.id)
		}
	}
	// A repository whose name says nothing still names the game; the
	// root of the file system names it "web-game".
	if w := ResolveWebGame(&GameConfig{Serve: "."}, filepath.Join(root, "tmp", "dist")); w.ID != "dist" {
		t.Errorf("a repository named dist: %q", w.ID)
	}
	if w := ResolveWebGame(&GameConfig{Serve: "."}, root); w.ID != "web-game" {
		t.Errorf("the root: %q", w.ID)
	}
}

// TestWebGamePageFile: the file the page's URL opens under the served
// folder, as the static server answers it.
func TestWebGamePageFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "dist", "levels"), 0o755); err != nil {
		t.Fatal(err)
	}
	for url, want := range map[string]string{
		"":                       filepath.Join(dir, "dist", "index.html"),
		"/":                      filepath.Join(dir, "dist", "index.html"),
		"/?autopilot=1":          filepath.Join(dir, "dist", "index.html"),
		"/index-debug.html":      filepath.Join(dir, "dist", "index-debug.html"),
		"index-debug.html?x=1#y": filepath.Join(dir, "dist", "index-debug.html"),
		"/levels":                filepath.Join(dir, "dist", "levels", "index.html"),
		"/levels/":               filepath.Join(dir, "dist", "levels", "index.html"),
		"/../../etc/passwd":      filepath.Join(dir, "dist", "etc", "passwd"),
		"http://127.0.0.1:5173/": "",
	} {
		w := ResolveWebGame(&GameConfig{Serve: "dist", URL: url}, dir)
		if got := w.PageFile(); got != want {
			t.Errorf("url %q: %q, want %q", url, got, want)
		}
	}
	if got := ResolveWebGame(&GameConfig{URL: "http://127.0.0.1:5173/"}, dir).PageFile(); got != "" {
		t.Errorf("nothing served: %q", got)
	}
}

// TestPageActionsConfig: game.actions names keys by KeyboardEvent.code
// and the pointer; the config is refused, with the nearest names, for
// one that is not, for a name given twice, an empty list, and actions on
// a game that is not a web game. The driver offers what it names.
func TestPageActionsConfig(t *testing.T) {
	load := func(game string) error {
		p := filepath.Join(t.TempDir(), "capture.json")
		if err := os.WriteFile(p, []byte(`{"game": `+game+`}`), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := LoadConfig(p, false)
		return err
	}
	if err := load(`{"serve": "dist", "actions": ["ArrowLeft", "Space", "NumpadEnter", "MetaRight", "CapsLock", "IntlBackslash", "F24", "pointer"]}`); err != nil {
		t.Fatal(err)
	}
	for game, want := range map[string]string{
		`{"serve": "dist", "actions": ["ArrowLeft", "Spcae"]}`: `"Spcae" is not a key the page driver offers (did you mean Space?)`,
		`{"serve": "dist", "actions": ["arrowleft"]}`:          `did you mean ArrowLeft?`,
		`{"serve": "dist", "actions": ["Numpad_Enter"]}`:       `did you mean NumpadEnter`,
		`{"serve": "dist", "actions": ["Left"]}`:               `did you mean`,
		`{"serve": "dist", "actions": ["Space", "Space"]}`:     `"Space" is named twice`,
		`{"serve": "dist", "actions": []}`:                     `name at least one key`,
		`{"serve": "dist", "actions": ["BrowserBack"]}`:        `is not a key the page driver offers`,
		`{"command": ["./game"], "actions": ["Space"]}`:        `game.actions are for a web game`,
		`{"serve": "dist", "actions": ["x\u202e\u0000y"]}`:     `"xy" is not a key`,
	} {
		if err := load(game); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", game, err, want)
		}
	}
	names := []string{}
	for _, a := range pageActions([]string{"Space", "pointer", "ArrowLeft"}) {
		names = append(names, a.Name+":"+a.Kind)
	}
	if strings.Join(names, " ") != "Space:button pointer:pointer ArrowLeft:button" {
		t.Fatalf("the actions offered: %v", names)
	}
	if n := len(pageActions(nil)); n != len(pageKeyList())+1 || n > protocol.MaxActions {
		t.Fatalf("every key and the pointer: %d", n)
	}
}

// TestCompactNames: runs of names that count up are written first..last.
func TestCompactNames(t *testing.T) {
	in := []string{"Backquote", "Digit0", "Digit1", "Digit2", "KeyA", "KeyB", "KeyC", "KeyD", "Minus", "F1", "F2", "F9", "F10", "F11", "F12",
		"Lang1", "Lang2", "ShiftLeft", "ShiftRight", "Numpad0", "Numpad1", "Numpad2", "NumpadAdd", "A", "B", "C", "x1", "x2", "x3"}
	want := "Backquote Digit0..Digit2 KeyA..KeyD Minus F1 F2 F9..F12 Lang1 Lang2 ShiftLeft ShiftRight Numpad0..Numpad2 NumpadAdd A B C x1..x3"
	if got := strings.Join(compactNames(in), " "); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}
