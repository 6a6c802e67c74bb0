package hooks

import (
	"bytes"
	"encoding/json"
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
