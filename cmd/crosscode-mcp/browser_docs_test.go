package main

import (
	"encoding/json"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crosscode/crosscode-mcp/internal/testing/sysdeps"
	"github.com/crosscode/crosscode-mcp/internal/testing/webgames"
)

// docWebConfig is a web game's capture config as a guide shows it.
type docWebConfig struct {
	where string // file:line
	raw   []byte // as written
	game  struct {
		Serve, Cwd, URL  string
		Command, Actions []string
	}
}

// docWebConfigs are the web games' capture configs of the README and the
// guides, each once.
func docWebConfigs(t *testing.T) []docWebConfig {
	t.Helper()
	var out []docWebConfig
	seen := map[string]bool{}
	for _, blk := range docBlocks(t, "json") {
		var c struct {
			Game *struct {
				Serve, Cwd, URL  string
				Command, Actions []string
			} `json:"game"`
		}
		if json.Unmarshal([]byte(blk.Text), &c) != nil || c.Game == nil || (c.Game.Serve == "" && c.Game.URL == "") {
			continue
		}
		key := strings.Join(strings.Fields(blk.Text), " ")
		if seen[key] {
			continue
		}
		seen[key] = true
		d := docWebConfig{where: blk.where, raw: []byte(blk.Text)}
		d.game.Serve, d.game.Cwd, d.game.URL, d.game.Command, d.game.Actions = c.Game.Serve, c.Game.Cwd, c.Game.URL, c.Game.Command, c.Game.Actions
		out = append(out, d)
	}
	return out
}

// TestBrowserDocumentedWebConfigs: every web game's capture config that
// the README and the guides show is run as written (relative paths and
// all) from the root of a repository laid out as the guide says, through
// the real stdio server and real Chromium, with nothing on the command
// line but the toolset: the page opens, the driver's hello names the game
// (the repository's name when the served folder's is dist, build, public
// or .), and the agent plays a step and sees its picture, also with
// frames 0 (frames are the recording's rate; a step always has its
// picture), among the actions game.actions names when it names some.
func TestBrowserDocumentedWebConfigs(t *testing.T) {
	sysdeps.Need(t, "chromium")
	sysdeps.Need(t, "git")
	configs := docWebConfigs(t)
	if len(configs) < 4 {
		t.Fatalf("found %d web configs in the README and docs/; the extraction is broken", len(configs))
	}
	page, err := os.ReadFile(filepath.Join(webgames.Dir(t, "pickup"), "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range configs {
		t.Run(c.where, func(t *testing.T) {
			if c.game.Serve == "" {
				t.Fatalf("%s: a web config without game.serve (a dev server's url): lay its game out in this test", c.where)
			}
			repo := gitRepo(t)
			served := filepath.Join(repo, filepath.FromSlash(c.game.Cwd), filepath.FromSlash(c.game.Serve))
			// The page the config opens: its url's path under the served
			// folder, else its index.
			file := "index.html"
			if c.game.URL != "" {
				u, err := url.Parse(c.game.URL)
				if err != nil {
					t.Fatal(err)
				}
				if p := path.Clean("/" + u.Path); p != "/" {
					file = strings.TrimPrefix(p, "/")
				}
			}
			for name, data := range map[string][]byte{filepath.Join(served, filepath.FromSlash(file)): page, filepath.Join(repo, ".crosscode", "capture.json"): c.raw} {
				if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(name, data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			a := withSchemas(t, startAgent(t, "ada", agentOpts{clientName: "claude-code", dir: repo, args: []string{"--toolsets", "capture"}}))
			res, rec := a.callFull("start_recording", map[string]any{"control": "agent", "frames": 0})
			for i := 0; i < 3 && res.IsError && strings.Contains(resultText(res), "did not connect within"); i++ {
				res, rec = a.callFull("start_recording", map[string]any{"control": "agent", "frames": 0})
			}
			if res.IsError || rec["status"] != "running" {
				t.Fatalf("%s\n%s: start_recording: %v %s", c.raw, c.where, rec, resultText(res))
			}
			if pics := images(res); len(pics) != 1 || pixelVariance(t, pics[0]) < 10 {
				t.Fatalf("start_recording with frames 0: %d pictures, or a blank one", len(pics))
			}
			// game.actions: those alone, one by one; else the pointer, and
			// every key compactly.
			var names []string
			for _, x := range rec["actions"].([]any) {
				names = append(names, x.(map[string]any)["name"].(string))
			}
			if c.game.Actions != nil && (strings.Join(names, " ") != strings.Join(c.game.Actions, " ") || rec["buttons"] != nil) ||
				c.game.Actions == nil && (strings.Join(names, " ") != "pointer" || len(rec["buttons"].([]any)) < 50) {
				t.Fatalf("the actions %v and buttons %v, for game.actions %v", names, rec["buttons"], c.game.Actions)
			}
			status := a.callS("capture_status", nil)
			if id := field(status, "adapter", "game"); field(status, "adapter", "name") != "crosscode-page" || id != "mygame" {
				t.Fatalf("capture_status: the page driver's game is %q, not the repository's name: %v", id, status)
			}
			res, out := a.callFull("step_game", map[string]any{"actions": []any{map[string]any{"name": "ArrowRight", "pressed": true}}, "ms": 250})
			if res.IsError || out["simT"] != 250.0 || len(images(res)) != 1 {
				t.Fatalf("step_game with frames 0: %v %s", out, resultText(res))
			}
			if stopped := a.callS("stop_recording", map[string]any{"op": rec["op"]}); stopped["status"] != "completed" {
				t.Fatalf("stop_recording: %v", stopped)
			}
		})
	}
}

// TestBrowserPageDriverRefused: a capture config the page driver cannot
// satisfy (requiredCapabilities names one it does not offer) fails the
// first capture call with the controller's code and a message that names
// crosscode-mcp's page driver, not the game, and says what to change;
// the next calls answer the same at once, without launching the browser
// again.
func TestBrowserPageDriverRefused(t *testing.T) {
	sysdeps.Need(t, "chromium")
	sysdeps.Need(t, "git")
	repo := gitRepo(t)
	page, err := os.ReadFile(filepath.Join(webgames.Dir(t, "pickup"), "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{"index.html": string(page),
		filepath.Join(".crosscode", "capture.json"): `{"game": {"serve": ".", "adapter": "page"}, "requiredCapabilities": ["scenarios"]}`} {
		os.MkdirAll(filepath.Dir(filepath.Join(repo, name)), 0o755)
		if err := os.WriteFile(filepath.Join(repo, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	a := withSchemas(t, startAgent(t, "ada", agentOpts{clientName: "claude-code", dir: repo, args: []string{"--toolsets", "capture"}}))
	for i := range 3 {
		res, out := a.callFull("start_recording", map[string]any{"control": "agent"})
		text := resultText(res)
		if !res.IsError || !strings.Contains(text, "CAPABILITY_MISSING") || !strings.Contains(text, "page driver") || !strings.Contains(text, "requiredCapabilities") {
			t.Fatalf("call %d: %v %s", i+1, out, text)
		}
	}
	if launches := field(a.callS("capture_status", nil), "game", "launches"); launches != 1.0 {
		t.Fatalf("the browser was launched %v times for a refusal that cannot change", launches)
	}
}
