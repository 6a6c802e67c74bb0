package main

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestDoctorClients: doctor finds crosscode-mcp in each client's user and
// project configuration (comments and trailing commas where the format
// allows them), says what each client's model receives, ignores other
// servers, and warns where a client would show no pictures (capture left
// out), has it disabled, or cannot read its file.
func TestDoctorClients(t *testing.T) {
	home, repo := t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("USERPROFILE", home)
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Setenv("CODEX_HOME", "")
	write := func(path, body string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got := checkClients(context.Background(), repo); len(got) != 1 || got[0].Status != "ok" || !strings.Contains(got[0].Detail, "no configuration of Claude Code") {
		t.Fatalf("nothing configured: %+v", got)
	}
	write(filepath.Join(home, ".claude.json"), `{"mcpServers": {"crosscode": {"type": "stdio", "command": "npx", "args": ["-y", "crosscode-mcp"]}, "other": {"command": "other-mcp"}},
		"projects": {`+jsonString(repo)+`: {"mcpServers": {"cc": {"command": "/opt/bin/crosscode-mcp", "args": ["--toolsets", "coord"]}}}, "/elsewhere": {"mcpServers": {"x": {"command": "crosscode-mcp"}}}}}`)
	write(filepath.Join(home, ".codex", "config.toml"), "# mine\nmodel = \"gpt-5\"\n\n[mcp_servers.crosscode]\ncommand = \"crosscode-mcp\" # the binary\nargs = []\n\n[mcp_servers.off]\ncommand = \"crosscode-mcp\"\nenabled = false\n")
	write(filepath.Join(repo, ".gemini", "settings.json"), "{\n  // ours\n  \"mcpServers\": {\"crosscode\": {\"command\": \"crosscode-mcp\", \"args\": [\"--toolsets=coord,capture\"],},},\n}\n")
	write(filepath.Join(repo, "opencode.jsonc"), `{"mcp": {"crosscode": {"type": "local", "command": ["npx", "-y", "crosscode-mcp@latest"], "enabled": true}}}`)
	write(filepath.Join(home, ".cursor", "mcp.json"), `{"mcpServers": {"crosscode": {"command": "crosscode-mcp.exe"}}}`)
	write(filepath.Join(repo, ".cursor", "mcp.json"), `{"mcpServers": `)
	got := map[string][]Check{}
	for _, c := range checkClients(context.Background(), repo) {
		got[c.Name] = append(got[c.Name], c)
	}
	// npx, a batch file on Windows, is warned of there.
	npx, npxSays := "ok", "; its model gets results as JSON, pictures as images"
	if runtime.GOOS == "windows" {
		npx, npxSays = "warn", "; on Windows npx is a batch file"
	}
	want := []struct {
		client string
		status string
		says   string
	}{
		{"Claude Code", npx, `server "crosscode" in ` + filepath.Join(home, ".claude.json") + " (user and local): npx -y crosscode-mcp" + npxSays},
		{"Claude Code", "warn", `server "cc (local)"`},
		{"Codex", "ok", `server "crosscode"`},
		{"Codex", "warn", "disabled"},
		{"Gemini CLI", "ok", "results as text, pictures as images"},
		{"OpenCode", npx, "npx -y crosscode-mcp@latest"},
		{"Cursor", "ok", "not tested here"},
		{"Cursor", "warn", "mcp.json"},
	}
	for _, w := range want {
		found := false
		for _, c := range got["client: "+w.client] {
			found = found || c.Status == w.status && strings.Contains(c.Detail, w.says)
		}
		if !found {
			t.Errorf("%s: no %s check saying %q in %+v", w.client, w.status, w.says, got["client: "+w.client])
		}
	}
	for _, c := range got["client: Claude Code"] {
		if strings.Contains(c.Detail, "other-mcp") || strings.Contains(c.Detail, `"x"`) {
			t.Errorf("a server that is not crosscode-mcp, or another repository's: %+v", c)
		}
		if strings.Contains(c.Detail, "cc (local)") && !strings.Contains(c.Detail, "no pictures") {
			t.Errorf("--toolsets coord: want the no-pictures warning, got %+v", c)
		}
	}
	if n := len(got["client: Claude Code"]) + len(got["client: Codex"]) + len(got["client: Gemini CLI"]) + len(got["client: OpenCode"]) + len(got["client: Cursor"]); n != len(want) {
		t.Errorf("%d client checks, want %d: %+v", n, len(want), got)
	}
	// Which can be woken while idle, and how: Claude Code's servers
	// (the launch line names each) and plugin; the others cannot.
	write(filepath.Join(home, ".claude", "settings.json"), `{"enabledPlugins": {"crosscode@crosscode": true}}`)
	got = map[string][]Check{}
	for _, c := range checkClients(context.Background(), repo) {
		got[c.Name] = append(got[c.Name], c)
	}
	if w := got["wake"]; len(w) != 1 || w[0].Status != "ok" ||
		!strings.Contains(w[0].Detail, "claude --dangerously-load-development-channels plugin:crosscode@crosscode") ||
		!strings.Contains(w[0].Detail, "server:crosscode") || !strings.Contains(w[0].Detail, "server:cc,") ||
		!strings.Contains(w[0].Detail, "claude.ai login") || !strings.Contains(w[0].Detail, "Codex, Gemini CLI, OpenCode, Cursor cannot be woken") {
		t.Errorf("the wake check: %+v", w)
	}
}

// TestDoctorWakeOthersOnly: with no Claude Code set up, doctor says the
// clients found cannot be woken.
func TestDoctorWakeOthersOnly(t *testing.T) {
	if w := wakeCheck(map[string][]string{"Codex": {"crosscode"}}, nil); w == nil || !strings.HasPrefix(w.Detail, "Codex cannot be woken") {
		t.Errorf("Codex alone: %+v", w)
	}
	if w := wakeCheck(map[string][]string{}, nil); w != nil {
		t.Errorf("nothing found: %+v", w)
	}
}

func jsonString(s string) string {
	return `"` + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), `"`, `\"`) + `"`
}
