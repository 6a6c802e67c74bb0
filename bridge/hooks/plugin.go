package hooks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/crosscode/crosscode-mcp/bridge/hooks/wire"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/tailscale/hujson"
)

// The client packages (the Claude Code and Codex plugin, the Gemini CLI
// extension; spec section 16) bring the hooks of this package with them.
// Their hooks start plugins/crosscode/bin/crosscode-hook.cmd, a launcher
// that finds the binary and runs `crosscode-mcp hook CLIENT EVENT`: it
// reads the path that the MCP server records at every start (so a server
// started by npx is found too, without npx on the path of an edit), and
// marks the run as the package's (ViaEnv).

// PluginName is the name of the plugin and of the extension.
const PluginName = "crosscode"

// ViaEnv is set to "plugin" by the packages' launcher: the run is the
// package's hook, not one that `hooks install` wrote.
const ViaEnv = wire.ViaEnv

// BinaryRecord is where the MCP server records the path of its binary:
// <user cache dir>/crosscode-mcp/binary (the launcher reads the same
// place: $XDG_CACHE_HOME or ~/.cache, ~/Library/Caches, %LOCALAPPDATA%).
func BinaryRecord() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "crosscode-mcp", "binary"), nil
}

// RecordBinary writes exe (the running binary, its links resolved) to
// BinaryRecord when it holds something else, atomically: the launchers
// of the packages' hooks start it. Cheap when nothing changed (one read).
// A binary in the temp dir (`go run`, a test build) is not recorded: it
// is gone soon, and the user's own binary stays the hooks' one. Nor is a
// Go test binary (name.test) that runs as the server: the packages' server
// entry starts the recorded binary, and a test binary started so would run
// its tests.
func RecordBinary(exe string) error {
	if resolved, err := filepath.EvalSymlinks(exe); err == nil {
		exe = resolved
	}
	if abs, err := filepath.Abs(exe); err == nil {
		exe = abs
	}
	if within(exe, os.TempDir()) || strings.HasSuffix(strings.TrimSuffix(filepath.Base(exe), ".exe"), ".test") {
		return nil
	}
	path, err := BinaryRecord()
	if err != nil {
		return fmt.Errorf("record binary: %w", err)
	}
	if b, err := os.ReadFile(path); err == nil && strings.TrimSpace(string(b)) == exe {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("record binary: %w", err)
	}
	if err := writeFileAtomic(path, []byte(exe+"\n")); err != nil {
		return fmt.Errorf("record binary: %w", err)
	}
	return nil
}

// RecordedBinary is the binary the MCP server last recorded, "" for none.
func RecordedBinary() string {
	path, err := BinaryRecord()
	if err != nil {
		return ""
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// RunningClient is the client that runs a hook configured for client:
// Codex installs Claude Code plugins and runs their hooks (with
// PLUGIN_ROOT set, which Claude Code does not set, and without Claude
// Code's CLAUDECODE), so the plugin's claude-code hook is Codex's there.
func RunningClient(client string, getenv func(string) string) string {
	if client == "claude-code" && getenv("CLAUDECODE") == "" && getenv("PLUGIN_ROOT") != "" {
		return "codex"
	}
	return client
}

// PackageInstall is an install of the crosscode plugin or extension in a
// client's configuration.
type PackageInstall struct {
	Client string // claude-code, codex or gemini
	ID     string // the client's id of it (crosscode@marketplace, or the extension's name)
	Where  string // the file that says it is installed
}

// PackageHome is where a client keeps its configuration, for Packages.
type PackageHome struct {
	Home      string // the user's home directory
	CodexHome string // CODEX_HOME, "" for ~/.codex
	Project   string // the repository's top-level folder, "" for none
}

// Packages lists the installs of the crosscode plugin (Claude Code,
// Codex) and extension (Gemini CLI) that are enabled for client ("" for
// every client). Unreadable files count as no install.
func Packages(h PackageHome, client string) []PackageInstall {
	var out []PackageInstall
	if client == "" || client == "claude-code" {
		files := []string{filepath.Join(h.Home, ".claude", "settings.json")}
		if h.Project != "" {
			files = append(files, filepath.Join(h.Project, ".claude", "settings.json"), filepath.Join(h.Project, ".claude", "settings.local.json"))
		}
		for _, f := range files {
			for _, id := range claudeEnabledPlugins(f) {
				out = append(out, PackageInstall{Client: "claude-code", ID: id, Where: f})
			}
		}
	}
	if client == "" || client == "codex" {
		f := filepath.Join(CodexHome(h.Home), "config.toml")
		if h.CodexHome != "" {
			f = filepath.Join(h.CodexHome, "config.toml")
		}
		for _, id := range codexEnabledPlugins(f) {
			out = append(out, PackageInstall{Client: "codex", ID: id, Where: f})
		}
	}
	if client == "" || client == "gemini" {
		f := filepath.Join(h.Home, ".gemini", "extensions", PluginName, "gemini-extension.json")
		if geminiExtensionEnabled(h.Home, f) {
			out = append(out, PackageInstall{Client: "gemini", ID: PluginName, Where: f})
		}
	}
	return out
}

// isOurs reports whether a plugin id (name@marketplace) is the crosscode plugin.
func isOurs(id string) bool {
	name, _, _ := strings.Cut(id, "@")
	return name == PluginName
}

// claudeEnabledPlugins reads enabledPlugins of a Claude Code settings file.
func claudeEnabledPlugins(path string) []string {
	b, err := os.ReadFile(path)
	if err != nil || !bytes.Contains(b, []byte(PluginName)) {
		return nil
	}
	var s struct {
		EnabledPlugins map[string]any `json:"enabledPlugins"`
	}
	if json.Unmarshal(standardize(b), &s) != nil {
		return nil
	}
	var out []string
	for id, on := range s.EnabledPlugins {
		if isOurs(id) && on == true {
			out = append(out, id)
		}
	}
	return out
}

// codexEnabledPlugins reads the [plugins."name@marketplace"] tables of
// Codex's config.toml.
func codexEnabledPlugins(path string) []string {
	b, err := os.ReadFile(path)
	if err != nil || !bytes.Contains(b, []byte(PluginName)) {
		return nil
	}
	var c struct {
		Plugins map[string]struct {
			Enabled *bool `toml:"enabled"`
		} `toml:"plugins"`
	}
	if _, err := toml.Decode(string(b), &c); err != nil {
		return nil
	}
	var out []string
	for id, p := range c.Plugins {
		if isOurs(id) && (p.Enabled == nil || *p.Enabled) {
			out = append(out, id)
		}
	}
	return out
}

// geminiExtensionEnabled reports whether the crosscode extension is
// installed for the user and not disabled in Gemini CLI's enablement file
// (~/.gemini/extensions/extension-enablement.json; an extension without
// an entry there is enabled).
func geminiExtensionEnabled(home, manifest string) bool {
	if _, err := os.Stat(manifest); err != nil {
		return false
	}
	b, err := os.ReadFile(filepath.Join(home, ".gemini", "extensions", "extension-enablement.json"))
	if errors.Is(err, os.ErrNotExist) {
		return true
	}
	if err != nil {
		return true
	}
	var en map[string]struct {
		Overrides []string `json:"overrides"`
	}
	if json.Unmarshal(b, &en) != nil {
		return true
	}
	e, ok := en[PluginName]
	if !ok {
		return true
	}
	// Overrides are glob-like paths, "!" in front for disabled ones; a
	// disabled user-wide entry ("!<home>/*") turns it off.
	for _, o := range e.Overrides {
		if strings.HasPrefix(o, "!") && strings.TrimSuffix(strings.TrimSuffix(o[1:], "*"), "/") == strings.TrimSuffix(home, "/") {
			return false
		}
	}
	return true
}

// standardize turns JSON with comments and trailing commas (which Claude
// Code's settings files may hold) into JSON; b itself when it is not.
func standardize(b []byte) []byte {
	if s, err := hujson.Standardize(bytes.Clone(b)); err == nil {
		return s
	}
	return b
}

// yieldsToHandWired reports whether a run of the packages' launcher
// should leave the event to hooks that `hooks install` wrote for the same
// client (in the user's or the project's settings), which run beside it:
// one check and one news delivery per event, never two, and what the user
// wired by hand (with its flags) wins.
func yieldsToHandWired(cfg Config, in *Input) bool {
	home := cfg.Getenv("HOME")
	if home == "" {
		home = cfg.Getenv("USERPROFILE")
	}
	var tops []string
	for _, d := range []string{cfg.Getenv("CLAUDE_PROJECT_DIR"), cfg.Getenv("GEMINI_PROJECT_DIR"), in.Cwd} {
		if d != "" && !slices.Contains(tops, d) {
			tops = append(tops, d)
		}
	}
	var paths []string
	if home != "" {
		if p, err := SettingsPath(InstallConfig{Client: cfg.Client, Scope: "user", Home: home}); err == nil {
			paths = append(paths, p)
		}
	}
	for _, top := range tops {
		if p, err := SettingsPath(InstallConfig{Client: cfg.Client, Scope: "project", Top: top}); err == nil {
			paths = append(paths, p)
		}
	}
	for _, p := range paths {
		if events, _ := Installed(cfg.Client, p); slices.Contains(events, cfg.Event) {
			return true
		}
	}
	return false
}

// The hooks files of the client packages, made by PackageHooks from the
// same events as `hooks install` writes (hookEvents), and committed:
// plugins/crosscode/hooks/hooks.json (the plugin, Claude Code's format,
// which Codex runs too) and hooks/hooks.json at the repository's root
// (the extension, Gemini CLI's format). The two live apart: Claude Code
// reads hooks/hooks.json of a plugin's root, and must never run Gemini's.
const (
	PluginHooksFile    = "plugins/crosscode/hooks/hooks.json"
	ExtensionHooksFile = "hooks/hooks.json"
	// Launcher is the hooks' launcher, relative to the repository's root.
	Launcher = "plugins/crosscode/bin/crosscode-hook.cmd"
)

// pluginEditMatcher is the plugin's PreToolUse matcher: Claude Code's
// file tools and the tools through which Codex edits files.
const pluginEditMatcher = "Edit|Write|MultiEdit|NotebookEdit|apply_patch|Bash|shell|exec_command|local_shell"

// PackageHooks returns a package's hooks file: for "plugin" (Claude
// Code's format, its commands starting the launcher in the plugin's own
// folder, ${CLAUDE_PLUGIN_ROOT}) or "extension" (Gemini CLI's format;
// Gemini runs a hook's command with bash, or PowerShell on Windows, so
// it dot-invokes the launcher, which both take, with its arguments).
func PackageHooks(kind string) ([]byte, error) {
	var client, command string
	switch kind {
	case "plugin":
		client, command = "claude-code", `"${CLAUDE_PLUGIN_ROOT}/bin/crosscode-hook.cmd" claude-code `
	case "extension":
		client, command = "gemini", `. "${extensionPath}${/}plugins${/}crosscode${/}bin${/}crosscode-hook.cmd" gemini `
	default:
		return nil, fmt.Errorf("package hooks: unknown kind %q (plugin, extension)", kind)
	}
	hooks := map[string]any{}
	for _, e := range hookEvents[client] {
		cfg := InstallConfig{Client: client, Command: strings.TrimSuffix(command, " "+client+" ")}
		g := entry(cfg, e.event, e.matcher)
		h := g["hooks"].([]any)[0].(map[string]any)
		h["command"] = command + e.event
		if kind == "plugin" && e.event == "PreToolUse" {
			g["matcher"] = pluginEditMatcher
		}
		hooks[e.event] = []any{g}
	}
	doc := map[string]any{
		"description": "crosscode: an edit of a file another agent has claimed is stopped with the holder's name; news of other agents at the start of a session and before each prompt.",
		"hooks":       hooks,
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// within reports whether path is dir or inside it (links of dir resolved).
func within(path, dir string) bool {
	if d, err := filepath.EvalSymlinks(dir); err == nil {
		dir = d
	}
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}
