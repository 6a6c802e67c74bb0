package hooks

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

const testCommand = `'/opt/cc/crosscode-mcp' hook --actor 'ada@example.com'`

// settingsCases are settings files as users keep them: empty, with hooks
// of their own, with comments where the format allows them (Gemini CLI's
// settings.json; Codex's config.toml), CRLF line ends, tabs.
var settingsCases = map[string][]struct{ name, text string }{
	"claude-code": {
		{"no file", ""},
		{"empty object", "{}\n"},
		{"empty object with space", "{ }"},
		{"other settings", "{\n  \"model\": \"opus\",\n  \"permissions\": {\"allow\": [\"Bash(go test:*)\"]}\n}\n"},
		{"other hooks", `{
    "hooks": {
        "PreToolUse": [
            {
                "matcher": "Bash",
                "hooks": [{"type": "command", "command": "jq -r .tool_input.command >> ~/.claude/bash.log"}]
            }
        ],
        "Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]
    },
    "env": {"FOO": "bar"}
}
`},
		{"empty hook arrays", "{\"hooks\": {\"PreToolUse\": [], \"SessionStart\": []}}"},
		{"tabs and CRLF", "{\r\n\t\"hooks\": {\r\n\t\t\"UserPromptSubmit\": [\r\n\t\t\t{\"hooks\": [{\"type\": \"command\", \"command\": \"echo hi\"}]}\r\n\t\t]\r\n\t}\r\n}\r\n"},
	},
	"gemini": {
		{"no file", ""},
		{"comments", `// my Gemini settings
{
  /* the theme */
  "ui": {"theme": "GitHub"}, // dark is too dark
  "hooks": {
    // format on save
    "AfterTool": [
      {"matcher": "write_file", "hooks": [{"type": "command", "command": "prettier --write \"$FILE\""}]}
    ],
    "BeforeTool": [
      /* nothing yet */
    ]
  }
}
`},
		{"hooksConfig only", "{\"hooksConfig\": {\"enabled\": true}}\n"},
	},
	"codex": {
		{"no file", ""},
		{"comments and other hooks", `# my codex config
model = "gpt-5-codex" # the default
approval_policy = "on-request"

[hooks]
[[hooks.PostToolUse]]
matcher = "apply_patch"
[[hooks.PostToolUse.hooks]]
type = "command"
command = "cargo fmt" # format after edits
`},
		{"no final newline", "model = \"o3\""},
	},
}

// TestInstallUninstallByteIdentical: install adds the entries and nothing
// else changes (a second install changes nothing); uninstall gives back
// the file byte for byte, or no file when there was none.
func TestInstallUninstallByteIdentical(t *testing.T) {
	for client, cases := range settingsCases {
		for _, tc := range cases {
			t.Run(client+"/"+tc.name, func(t *testing.T) {
				cfg := InstallConfig{Client: client, Top: t.TempDir(), Command: testCommand, StateDir: t.TempDir()}
				path, _ := SettingsPath(cfg)
				if tc.text != "" {
					os.MkdirAll(filepath.Dir(path), 0o755)
					os.WriteFile(path, []byte(tc.text), 0o600)
				}
				_, changed, err := Install(cfg)
				if err != nil || !changed {
					t.Fatalf("install: %v %v", changed, err)
				}
				after, _ := os.ReadFile(path)
				checkInstalled(t, client, path, after)
				// (Windows has no such modes: every file reads as 0666.)
				if fi, _ := os.Stat(path); tc.text != "" && runtime.GOOS != "windows" && fi.Mode().Perm() != 0o600 {
					t.Errorf("install changed the file's mode to %v", fi.Mode())
				}
				if _, changed, err := Install(cfg); err != nil || changed {
					t.Fatalf("second install: changed %v, %v", changed, err)
				}
				if again, _ := os.ReadFile(path); !bytes.Equal(again, after) {
					t.Fatalf("second install changed the file:\n%s", again)
				}
				if _, changed, err := Uninstall(cfg); err != nil || !changed {
					t.Fatalf("uninstall: %v %v", changed, err)
				}
				back, err := os.ReadFile(path)
				if tc.text == "" {
					if !os.IsNotExist(err) {
						t.Fatalf("uninstall left the file install created: %q", back)
					}
					return
				}
				if string(back) != tc.text {
					t.Fatalf("uninstall did not give the file back:\nbefore %q\nafter  %q", tc.text, back)
				}
				if _, changed, err := Uninstall(cfg); err != nil || changed {
					t.Fatalf("second uninstall: %v %v", changed, err)
				}
			})
		}
	}
}

// checkInstalled: the file is valid for its client and holds an entry of
// ours for each event, with the command and (PreToolUse/BeforeTool) the
// edit tools' matcher.
func checkInstalled(t *testing.T, client, path string, b []byte) {
	t.Helper()
	events, err := Installed(client, path)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, e := range hookEvents[client] {
		want = append(want, e.event)
	}
	slices.Sort(events)
	slices.Sort(want)
	if !slices.Equal(events, want) {
		t.Fatalf("installed events %v, want %v in:\n%s", events, want, b)
	}
	switch client {
	case "claude-code": // plain JSON: Claude Code skips a file with comments
		var v struct {
			Hooks map[string][]struct {
				Matcher string `json:"matcher"`
				Hooks   []struct {
					Type, Command string
					Timeout       int
				} `json:"hooks"`
			} `json:"hooks"`
		}
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, b)
		}
		g := v.Hooks["PreToolUse"][len(v.Hooks["PreToolUse"])-1]
		if g.Matcher != "Edit|Write|MultiEdit|NotebookEdit" || g.Hooks[0].Command != testCommand+" claude-code PreToolUse" || g.Hooks[0].Type != "command" {
			t.Fatalf("PreToolUse entry: %+v", g)
		}
	case "gemini":
		if _, err := parseJSONC(b); err != nil {
			t.Fatalf("not JSON with comments: %v\n%s", err, b)
		}
		if !strings.Contains(string(b), `"matcher": "write_file|replace"`) {
			t.Fatalf("no BeforeTool matcher:\n%s", b)
		}
	case "codex":
		if !strings.Contains(string(b), "[[hooks.PreToolUse.hooks]]\ntype = \"command\"\ncommand = \"'/opt/cc/crosscode-mcp' hook --actor 'ada@example.com' codex PreToolUse\"") {
			t.Fatalf("no PreToolUse entry:\n%s", b)
		}
	}
}

// TestUninstallAfterEdits: the user changed the file after install (or
// the record is gone): uninstall still removes exactly crosscode-mcp's
// entries and keeps theirs, old and new.
func TestUninstallAfterEdits(t *testing.T) {
	for _, client := range []string{"claude-code", "gemini", "codex"} {
		t.Run(client, func(t *testing.T) { uninstallAfterEdits(t, client, testCommand) })
		// The hook client, as install writes it when it is next to
		// crosscode-mcp.
		t.Run(client+"/crosscode-hook", func(t *testing.T) {
			uninstallAfterEdits(t, client, `'/opt/cc/crosscode-hook' --actor 'ada@example.com'`)
		})
	}
}

func uninstallAfterEdits(t *testing.T, client, command string) {
	cfg := InstallConfig{Client: client, Top: t.TempDir(), Command: command, StateDir: t.TempDir()}
	path, _ := SettingsPath(cfg)
	orig := settingsCases[client][1].text
	if client == "claude-code" {
		orig = settingsCases[client][4].text
	}
	os.MkdirAll(filepath.Dir(path), 0o755)
	os.WriteFile(path, []byte(orig), 0o644)
	if _, _, err := Install(cfg); err != nil {
		t.Fatal(err)
	}
	if ev, err := Installed(client, path); err != nil || len(ev) != 3 {
		t.Fatalf("installed: %v %v", ev, err)
	}
	b, _ := os.ReadFile(path)
	// The user adds a setting of their own at the top.
	edited := strings.Replace(string(b), "{", "{\n  \"added\": true,", 1)
	if client == "codex" {
		edited = "added = true\n" + string(b)
	}
	os.WriteFile(path, []byte(edited), 0o644)
	if _, changed, err := Uninstall(cfg); err != nil || !changed {
		t.Fatalf("uninstall: %v %v", changed, err)
	}
	out, _ := os.ReadFile(path)
	if strings.Contains(string(out), " --actor") || !strings.Contains(string(out), "added") {
		t.Fatalf("after uninstall:\n%s", out)
	}
	if ev, err := Installed(client, path); err != nil || len(ev) != 0 {
		t.Fatalf("still installed: %v %v", ev, err)
	}
	for _, keep := range []string{"jq -r", "say done", "prettier", "cargo fmt"} {
		if strings.Contains(orig, keep) && !strings.Contains(string(out), keep) {
			t.Fatalf("uninstall removed the user's %q:\n%s", keep, out)
		}
	}
}

// TestInstallRefusesWhatItCannotRead: a settings file that is not JSON (or
// whose hooks are not an object) is left alone with an error.
func TestInstallRefusesWhatItCannotRead(t *testing.T) {
	for _, text := range []string{"{\"hooks\": [1, 2]}", "{\"model\": ", "[]", "{} {}"} {
		cfg := InstallConfig{Client: "claude-code", Top: t.TempDir(), Command: testCommand, StateDir: t.TempDir()}
		path, _ := SettingsPath(cfg)
		os.MkdirAll(filepath.Dir(path), 0o755)
		os.WriteFile(path, []byte(text), 0o644)
		if _, _, err := Install(cfg); err == nil {
			t.Errorf("install into %q: no error", text)
		}
		if b, _ := os.ReadFile(path); string(b) != text {
			t.Errorf("install changed %q to %q", text, b)
		}
	}
}

// TestInstallCodexKeepsTOMLValid: a config.toml whose hooks are inline
// arrays (where appended [[hooks.PreToolUse]] tables would be a
// redefinition) is left alone with an error, not broken.
func TestInstallCodexKeepsTOMLValid(t *testing.T) {
	cfg := InstallConfig{Client: "codex", Top: t.TempDir(), Command: testCommand, StateDir: t.TempDir()}
	path, _ := SettingsPath(cfg)
	os.MkdirAll(filepath.Dir(path), 0o755)
	text := "[hooks]\nPreToolUse = [{ hooks = [{ type = \"command\", command = \"echo hi\" }] }]\n"
	os.WriteFile(path, []byte(text), 0o644)
	if _, _, err := Install(cfg); err == nil || !strings.Contains(err.Error(), "invalid TOML") {
		t.Fatalf("install: %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != text {
		t.Fatalf("install changed the file: %q", b)
	}
}

// TestSettingsPathCodexHome: Codex's user configuration is where Codex
// reads it, CODEX_HOME when set, as doctor looks for it; a project's is
// in the repository whatever CODEX_HOME says.
func TestSettingsPathCodexHome(t *testing.T) {
	home, codexHome, top := t.TempDir(), t.TempDir(), t.TempDir()
	t.Setenv("CODEX_HOME", "")
	if p, err := SettingsPath(InstallConfig{Client: "codex", Scope: "user", Home: home}); err != nil || p != filepath.Join(home, ".codex", "config.toml") {
		t.Fatalf("user scope: %s %v", p, err)
	}
	t.Setenv("CODEX_HOME", codexHome)
	if p, err := SettingsPath(InstallConfig{Client: "codex", Scope: "user", Home: home}); err != nil || p != filepath.Join(codexHome, "config.toml") {
		t.Fatalf("user scope with CODEX_HOME: %s %v", p, err)
	}
	if p, err := SettingsPath(InstallConfig{Client: "codex", Scope: "project", Top: top}); err != nil || p != filepath.Join(top, ".codex", "config.toml") {
		t.Fatalf("project scope with CODEX_HOME: %s %v", p, err)
	}
}
