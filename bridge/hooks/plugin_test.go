package hooks

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPackageHooksCommitted: the hooks files of the plugin and the
// extension are what PackageHooks makes (UPDATE_PACKAGES=true writes them).
func TestPackageHooksCommitted(t *testing.T) {
	for kind, file := range map[string]string{"plugin": PluginHooksFile, "extension": ExtensionHooksFile} {
		want, err := PackageHooks(kind)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join("..", "..", filepath.FromSlash(file))
		if os.Getenv("UPDATE_PACKAGES") == "true" {
			if err := os.WriteFile(path, want, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%s: %v (UPDATE_PACKAGES=true go test ./bridge/hooks writes it)", file, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is stale: run UPDATE_PACKAGES=true go test ./bridge/hooks\nwant:\n%s", file, want)
		}
		// Every command starts the launcher, never npx, for this client.
		var doc struct {
			Hooks map[string][]struct {
				Matcher string `json:"matcher"`
				Hooks   []struct{ Command string }
			}
		}
		if err := json.Unmarshal(want, &doc); err != nil {
			t.Fatal(err)
		}
		client := map[string]string{"plugin": "claude-code", "extension": "gemini"}[kind]
		if len(doc.Hooks) != len(hookEvents[client]) {
			t.Errorf("%s: %d events, want %d", file, len(doc.Hooks), len(hookEvents[client]))
		}
		for ev, groups := range doc.Hooks {
			c := groups[0].Hooks[0].Command
			if !strings.Contains(c, "crosscode-hook.cmd\" "+client+" "+ev) || strings.Contains(c, "npx") {
				t.Errorf("%s %s: command %q", file, ev, c)
			}
		}
	}
	if _, err := PackageHooks("nope"); err == nil {
		t.Error("an unknown kind was accepted")
	}
}

func TestRunningClient(t *testing.T) {
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	for _, c := range []struct {
		client string
		env    func(string) string
		want   string
	}{
		{"claude-code", env("CLAUDECODE", "1", "CLAUDE_PLUGIN_ROOT", "/p"), "claude-code"},
		{"claude-code", env("CLAUDE_PLUGIN_ROOT", "/p", "PLUGIN_ROOT", "/p"), "codex"}, // Codex runs the plugin's hooks
		{"claude-code", env(), "claude-code"},
		{"gemini", env("PLUGIN_ROOT", "/p"), "gemini"},
		{"codex", env("PLUGIN_ROOT", "/p"), "codex"},
	} {
		if got := RunningClient(c.client, c.env); got != c.want {
			t.Errorf("RunningClient(%s) = %s, want %s", c.client, got, c.want)
		}
	}
}

// TestPackageManifests: the plugin, its marketplace entry, the extension,
// the skill and every package.json name the LICENSE's SPDX id; the
// plugin's and the extension's servers start the same command, marked as
// theirs; the skill is named and described as the Agent Skills format asks.
func TestPackageManifests(t *testing.T) {
	root := filepath.Join("..", "..")
	lic, err := os.ReadFile(filepath.Join(root, "LICENSE"))
	if err != nil || !strings.Contains(string(lic), "Apache License") || !strings.Contains(string(lic), "Version 2.0") {
		t.Fatalf("LICENSE is not the Apache License 2.0: %v", err)
	}
	const spdx = "Apache-2.0"
	read := func(rel string) map[string]any {
		t.Helper()
		var m map[string]any
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
		if err == nil {
			err = json.Unmarshal(b, &m)
		}
		if err != nil {
			t.Fatalf("%s: %v", rel, err)
		}
		return m
	}
	for _, rel := range []string{"plugins/crosscode/.claude-plugin/plugin.json", "gemini-extension.json", "npm/crosscode-mcp/package.json",
		"npm/platform/package.json", "adapters/js/package.json", "examples/phaser-arena/package.json"} {
		if m := read(rel); m["license"] != spdx {
			t.Errorf("%s: license %v, want %s", rel, m["license"], spdx)
		}
	}
	market := read(".claude-plugin/marketplace.json")
	plugins, _ := market["plugins"].([]any)
	if len(plugins) != 1 {
		t.Fatalf("marketplace.json lists %d plugins, want 1", len(plugins))
	}
	entry := plugins[0].(map[string]any)
	if entry["name"] != PluginName || entry["source"] != "./plugins/crosscode" || entry["license"] != spdx {
		t.Errorf("marketplace entry %v", entry)
	}
	if read("plugins/crosscode/.claude-plugin/plugin.json")["name"] != PluginName || read("gemini-extension.json")["name"] != PluginName {
		t.Error("the plugin and the extension are not both named " + PluginName)
	}
	// Both start the same command with the via mark (TestPackageServerCommand
	// runs it); the plugin's gives Codex a minute to start it (a first npx
	// run downloads the package; Codex's default is 10 s; Claude Code
	// ignores the field).
	server := func(file string) map[string]any {
		s, _ := read(file)["mcpServers"].(map[string]any)[PluginName].(map[string]any)
		return s
	}
	plugin, ext := server("plugins/crosscode/.mcp.json"), server("gemini-extension.json")
	if plugin["startup_timeout_sec"] != 60.0 {
		t.Errorf("the plugin's server: startup_timeout_sec %v, want 60", plugin["startup_timeout_sec"])
	}
	delete(plugin, "startup_timeout_sec")
	if a, b := fmt.Sprint(plugin), fmt.Sprint(ext); a != b || plugin["command"] != "node" || fmt.Sprint(plugin["env"]) != "map[CROSSCODE_VIA:plugin]" {
		t.Errorf("the plugin's server is %s, the extension's %s: want the same node command, marked as theirs", a, b)
	}
	skill, err := os.ReadFile(filepath.Join(root, "plugins", "crosscode", "skills", "crosscode", "SKILL.md"))
	if err != nil {
		t.Fatal(err)
	}
	front, body, ok := strings.Cut(strings.TrimPrefix(string(skill), "---\n"), "\n---\n")
	if !ok || !strings.Contains(front, "\nname: crosscode\n") && !strings.HasPrefix(front, "name: crosscode\n") || !strings.Contains(front, "\ndescription: ") || !strings.Contains(front, "license: "+spdx) {
		t.Errorf("SKILL.md's front matter:\n%s", front)
	}
	if n := len(strings.Fields(body)); n < 200 || n > 800 {
		t.Errorf("SKILL.md's body has %d words; the working rules fit in a few hundred", n)
	}
	for _, tool := range []string{"claim", "release_claim", "waitSeconds", "respond_handoff", "record_validation", "run_scenario", "step_game"} {
		if !strings.Contains(body, "`"+tool) {
			t.Errorf("SKILL.md does not mention %s", tool)
		}
	}
	if ext := read("gemini-extension.json"); ext["contextFileName"] != "plugins/crosscode/skills/crosscode/SKILL.md" {
		t.Errorf("the extension's context file is %v, want the skill", ext["contextFileName"])
	}
}

// TestPackagesInReleaseArchives: every file of the packages is in the
// release archives' list (.goreleaser.yaml), so an unpacked archive
// installs like a clone.
func TestPackagesInReleaseArchives(t *testing.T) {
	root := filepath.Join("..", "..")
	cfg, err := os.ReadFile(filepath.Join(root, ".goreleaser.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"server.json", "gemini-extension.json", ExtensionHooksFile, ".claude-plugin/marketplace.json"}
	filepath.WalkDir(filepath.Join(root, "plugins", "crosscode"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(root, p)
			want = append(want, filepath.ToSlash(rel))
		}
		return err
	})
	for _, f := range want {
		if !strings.Contains(string(cfg), "\n      - "+f+"\n") {
			t.Errorf("%s is not in the release archives' files (.goreleaser.yaml)", f)
		}
	}
}
