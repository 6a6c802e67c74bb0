package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/tailscale/hujson"

	"github.com/crosscode/crosscode-mcp/bridge/hooks"
	"github.com/crosscode/crosscode-mcp/internal/gitx"
)

// agentClient is an agent client whose MCP configuration doctor reads.
type agentClient struct {
	name string
	// files are its configuration files, user's and project's, each with
	// the servers it configures.
	files func(home, repo string) []clientFile
	// sees is what its model receives from crosscode-mcp's results, as the
	// tests in the real client (internal/testing/agentclients) found it; "" for a
	// client those tests do not run.
	sees string
}

// clientFile is one configuration file of a client.
type clientFile struct {
	path, scope string
	servers     func(b []byte) (map[string]mcpServer, error)
}

// mcpServer is how a client starts an MCP server.
type mcpServer struct {
	command  []string
	disabled bool
}

// agentClients are the clients the README shows how to connect.
var agentClients = []agentClient{
	{name: "Claude Code", sees: "results as JSON, pictures as images", files: func(home, repo string) []clientFile {
		return []clientFile{
			{filepath.Join(home, ".claude.json"), "user and local", claudeServers(repo)},
			{filepath.Join(repo, ".mcp.json"), "project", jsonServers("mcpServers")},
		}
	}},
	{name: "Codex", sees: "results as JSON, pictures as images", files: func(home, repo string) []clientFile {
		return []clientFile{
			{filepath.Join(hooks.CodexHome(home), "config.toml"), "user", codexServers},
			{filepath.Join(repo, ".codex", "config.toml"), "project", codexServers},
		}
	}},
	{name: "Gemini CLI", sees: "results as text, pictures as images", files: func(home, repo string) []clientFile {
		return []clientFile{
			{filepath.Join(home, ".gemini", "settings.json"), "user", jsonServers("mcpServers")},
			{filepath.Join(repo, ".gemini", "settings.json"), "project", jsonServers("mcpServers")},
		}
	}},
	{name: "OpenCode", sees: "results as text, pictures as images", files: func(home, repo string) []clientFile {
		cfg := os.Getenv("XDG_CONFIG_HOME")
		if cfg == "" {
			cfg = filepath.Join(home, ".config")
		}
		var out []clientFile
		for _, dir := range []string{filepath.Join(cfg, "opencode"), repo} {
			scope := map[bool]string{true: "project", false: "user"}[dir == repo]
			for _, name := range []string{"opencode.json", "opencode.jsonc"} {
				out = append(out, clientFile{filepath.Join(dir, name), scope, opencodeServers})
			}
		}
		return out
	}},
	{name: "Cursor", files: func(home, repo string) []clientFile {
		return []clientFile{
			{filepath.Join(home, ".cursor", "mcp.json"), "user", jsonServers("mcpServers")},
			{filepath.Join(repo, ".cursor", "mcp.json"), "project", jsonServers("mcpServers")},
		}
	}},
}

// checkClients lists the agent clients configured to start crosscode-mcp
// for the repository at dir (their user and project configuration files),
// and warns where one would not show the agent pictures or not start it.
func checkClients(ctx context.Context, dir string) []Check {
	home, err := os.UserHomeDir()
	if err != nil {
		return []Check{{"agent clients", "warn", "no home directory: " + err.Error(), ""}}
	}
	repo := dir
	if r, err := gitx.Open(ctx, dir); err == nil {
		repo = r.Top
	}
	var out []Check
	found := map[string][]string{} // client -> the names of its servers that start crosscode-mcp
	for _, c := range agentClients {
		for _, f := range c.files(home, repo) {
			b, err := os.ReadFile(f.path)
			if err != nil {
				continue // not configured there
			}
			servers, err := f.servers(b)
			if err != nil {
				out = append(out, Check{"client: " + c.name, "warn", fmt.Sprintf("%s: %v", f.path, err), "fix the file's syntax; the client cannot read it either"})
				continue
			}
			for _, name := range slices.Sorted(maps.Keys(servers)) {
				if s := servers[name]; startsUs(s.command) {
					out = append(out, clientCheck(c, f, name, s))
					if !s.disabled {
						found[c.name] = append(found[c.name], strings.TrimSuffix(name, " (local)"))
					}
				}
			}
		}
	}
	var plugins []string
	for _, p := range hooks.Packages(hooks.PackageHome{Home: home, Project: repo}, "claude-code") {
		plugins = append(plugins, p.ID)
	}
	if w := wakeCheck(found, plugins); w != nil {
		out = append(out, *w)
	}
	if len(out) == 0 {
		// Not a fault: the agent may be a client doctor does not read, or
		// set up in its own settings screen. Said, with how to add it.
		out = append(out, Check{"agent clients", "ok", "no configuration of Claude Code, Codex, Gemini CLI, OpenCode or Cursor starts crosscode-mcp for " + repo +
			"; to add it, see the README, Connect your agent (for example: claude mcp add crosscode -- npx -y crosscode-mcp)", ""})
	}
	return out
}

// wakeCheck says which of the clients found can be woken while their
// agent idles, and how: Claude Code, through its channels (spec section
// 21), launched with the development flag naming the plugin (plugins:
// their ids, name@marketplace) or a server wired by hand (found, by
// client); nil when no client was found.
func wakeCheck(found map[string][]string, plugins []string) *Check {
	var launch, others []string
	for _, id := range plugins {
		launch = append(launch, "claude --dangerously-load-development-channels plugin:"+id)
	}
	for _, name := range found["Claude Code"] {
		launch = append(launch, "claude --dangerously-load-development-channels server:"+name)
	}
	for _, c := range agentClients {
		if c.name != "Claude Code" && len(found[c.name]) > 0 {
			others = append(others, c.name)
		}
	}
	if len(launch) == 0 && len(others) == 0 {
		return nil
	}
	detail := ""
	if len(launch) > 0 {
		detail = "an idle Claude Code session gets a new turn when news needs it (a grant, a handoff, a task, a failed validation) if started with: " +
			strings.Join(slices.Compact(launch), ", or ") + " (a Claude Code research preview that needs a claude.ai login; interactive sessions only, not claude -p)"
	}
	if len(others) > 0 {
		detail = strings.TrimPrefix(detail+"; ", "; ") + strings.Join(others, ", ") + " cannot be woken while idle (only Claude Code can): news reaches them in their next tool result and at their next prompt"
	}
	return &Check{"wake", "ok", detail, ""}
}

// clientCheck is the finding for one configured server.
func clientCheck(c agentClient, f clientFile, name string, s mcpServer) Check {
	line := strings.Join(s.command, " ")
	detail := fmt.Sprintf("server %q in %s (%s): %s", name, f.path, f.scope, line)
	switch {
	case s.disabled:
		return Check{"client: " + c.name, "warn", detail + "; it is disabled", "enable it in that file"}
	case runtime.GOOS == "windows" && len(s.command) > 0 && slices.Contains([]string{"npx", "npm"}, strings.ToLower(s.command[0])):
		return Check{"client: " + c.name, "warn", detail + "; on Windows npx is a batch file, which a client that starts programs without a shell cannot start",
			"start it with cmd /c: " + strings.Join(append([]string{"cmd", "/c"}, s.command...), " ")}
	case noCapture(s.command):
		return Check{"client: " + c.name, "warn", detail + "; without the capture toolset the agent gets no pictures of the game", "drop --toolsets, or add capture to it"}
	case c.sees == "":
		return Check{"client: " + c.name, "ok", detail + "; what its model receives is not tested here (the tests run Claude Code, Codex, Gemini CLI and OpenCode)", ""}
	}
	return Check{"client: " + c.name, "ok", detail + "; its model gets " + c.sees, ""}
}

// startsUs is whether a command line starts crosscode-mcp (the binary, a
// path to it, or npx with the npm package).
func startsUs(cmd []string) bool {
	for _, a := range cmd {
		base := strings.TrimSuffix(strings.ToLower(filepath.Base(filepath.ToSlash(a))), ".exe")
		if base == "crosscode-mcp" || strings.HasPrefix(base, "crosscode-mcp@") {
			return true
		}
	}
	return false
}

// noCapture is whether a command line leaves the capture tools out.
func noCapture(cmd []string) bool {
	for i, a := range cmd {
		v, ok := strings.CutPrefix(a, "--toolsets=")
		if !ok && a == "--toolsets" && i+1 < len(cmd) {
			v, ok = cmd[i+1], true
		}
		if ok && !slices.Contains(parseToolsets(v), "capture") {
			return true
		}
	}
	return false
}

// jsonEntry is a server entry of the JSON configuration files.
type jsonEntry struct {
	Command  json.RawMessage `json:"command"` // a string, or OpenCode's list
	Args     []string        `json:"args"`
	Disabled bool            `json:"disabled"`
	Enabled  *bool           `json:"enabled"`
}

func (e jsonEntry) server() mcpServer {
	var cmd []string
	var one string
	if json.Unmarshal(e.Command, &one) == nil {
		cmd = append([]string{one}, e.Args...)
	} else if json.Unmarshal(e.Command, &cmd) == nil {
		cmd = append(cmd, e.Args...)
	}
	return mcpServer{command: cmd, disabled: e.Disabled || e.Enabled != nil && !*e.Enabled}
}

// decodeJSONC decodes JSON that may hold comments and trailing commas
// (Gemini CLI's and OpenCode's files allow them).
func decodeJSONC(b []byte, v any) error {
	std, err := hujson.Standardize(b)
	if err != nil {
		return err
	}
	return json.Unmarshal(std, v)
}

// jsonServers reads the servers under key of a JSON file.
func jsonServers(key string) func(b []byte) (map[string]mcpServer, error) {
	return func(b []byte) (map[string]mcpServer, error) {
		var doc map[string]json.RawMessage
		if err := decodeJSONC(b, &doc); err != nil {
			return nil, err
		}
		return entries(doc[key])
	}
}

func entries(raw json.RawMessage) (map[string]mcpServer, error) {
	out := map[string]mcpServer{}
	if len(raw) == 0 {
		return out, nil
	}
	var m map[string]jsonEntry
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	for name, e := range m {
		out[name] = e.server()
	}
	return out, nil
}

// claudeServers reads ~/.claude.json: the user's servers and those of
// the repository's local scope (projects[repo].mcpServers).
func claudeServers(repo string) func(b []byte) (map[string]mcpServer, error) {
	return func(b []byte) (map[string]mcpServer, error) {
		var doc struct {
			MCPServers json.RawMessage `json:"mcpServers"`
			Projects   map[string]struct {
				MCPServers json.RawMessage `json:"mcpServers"`
			} `json:"projects"`
		}
		if err := json.Unmarshal(b, &doc); err != nil {
			return nil, err
		}
		out, err := entries(doc.MCPServers)
		if err != nil {
			return nil, err
		}
		for path, p := range doc.Projects {
			if filepath.Clean(path) != filepath.Clean(repo) {
				continue
			}
			local, err := entries(p.MCPServers)
			if err != nil {
				return nil, err
			}
			for name, s := range local {
				out[name+" (local)"] = s
			}
		}
		return out, nil
	}
}

// codexServers reads Codex's config.toml ([mcp_servers.NAME]).
func codexServers(b []byte) (map[string]mcpServer, error) {
	var doc struct {
		MCPServers map[string]struct {
			Command string   `toml:"command"`
			Args    []string `toml:"args"`
			Enabled *bool    `toml:"enabled"`
		} `toml:"mcp_servers"`
	}
	if err := toml.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	out := map[string]mcpServer{}
	for name, s := range doc.MCPServers {
		out[name] = mcpServer{command: append([]string{s.Command}, s.Args...), disabled: s.Enabled != nil && !*s.Enabled}
	}
	return out, nil
}

// opencodeServers reads opencode.json(c) ("mcp": {NAME: {"command": [...]}}).
func opencodeServers(b []byte) (map[string]mcpServer, error) {
	var doc map[string]json.RawMessage
	if err := decodeJSONC(b, &doc); err != nil {
		return nil, err
	}
	return entries(doc["mcp"])
}

// clientOf names the agentClient whose MCP client calls itself name in
// its initialize request ("" for one doctor does not read).
func clientOf(name string) string {
	n := strings.ToLower(name)
	switch {
	case strings.Contains(n, "gemini"):
		return "Gemini CLI"
	case strings.Contains(n, "claude"):
		return "Claude Code"
	case strings.Contains(n, "codex"):
		return "Codex"
	case strings.Contains(n, "opencode"):
		return "OpenCode"
	case strings.Contains(n, "cursor"):
		return "Cursor"
	}
	return ""
}

// handWired is mcp.Config.Yield for a server that a client package
// started: the first enabled crosscode-mcp server that the calling client
// is configured, by hand, to start for the repository, as "server NAME in
// FILE"; "" for none. It reads the client's files once it is known.
func handWired(home, repo string) func(clientName string) string {
	return func(clientName string) string {
		want := clientOf(clientName)
		for _, c := range agentClients {
			if c.name != want {
				continue
			}
			for _, f := range c.files(home, repo) {
				b, err := os.ReadFile(f.path)
				if err != nil {
					continue
				}
				servers, err := f.servers(b)
				if err != nil {
					continue
				}
				for _, name := range slices.Sorted(maps.Keys(servers)) {
					if s := servers[name]; startsUs(s.command) && !s.disabled {
						return fmt.Sprintf("server %q in %s", name, f.path)
					}
				}
			}
		}
		return ""
	}
}
