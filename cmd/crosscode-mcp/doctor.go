package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/crosscode/crosscode-mcp/bridge/cappy"
	"github.com/crosscode/crosscode-mcp/bridge/hooks"
	"github.com/crosscode/crosscode-mcp/internal/gitx"
	"github.com/crosscode/crosscode-mcp/internal/identity"
	"github.com/crosscode/crosscode-mcp/mcp"
	"github.com/crosscode/crosscode-mcp/pgstore"
	"github.com/crosscode/crosscode-mcp/protocol"
	"github.com/crosscode/crosscode-mcp/store"
	capturetools "github.com/crosscode/crosscode-mcp/tools/capture"
)

// Check is one doctor finding.
type Check struct {
	Name   string `json:"name"`
	Status string `json:"status"` // ok, info (advice), warn, fail
	Detail string `json:"detail"`
	Fix    string `json:"fix,omitempty"`
}

// runDoctor checks, with the server's flags and config, what breaks real
// setups, and says how to fix each. It exits 1 when a check fails.
func runDoctor(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("crosscode-mcp doctor", stderr)
	cfg, toolsets, _ := serverFlags(fs)
	asJSON := fs.Bool("json", false, "print the checks as JSON")
	db := fs.String("db", "", "check the coordination service's PostgreSQL database at this URL instead (reachable, version, migrations, durability)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	cfg.Toolsets = parseToolsets(*toolsets)
	var checks []Check
	if *db != "" {
		checks = checkHubDB(ctx, *db)
	} else {
		checks = doctor(ctx, *cfg)
		dir := cfg.Repo
		if dir == "" {
			dir, _ = os.Getwd()
		}
		checks = append(checks, checkClients(ctx, dir)...)
		checks = append(checks, checkHooks(ctx, dir)...)
	}
	failed := false
	for _, c := range checks {
		failed = failed || c.Status == "fail"
	}
	if *asJSON {
		b, _ := json.MarshalIndent(map[string]any{"ok": !failed, "checks": checks}, "", "  ")
		fmt.Fprintln(stdout, string(b))
	} else {
		fmt.Fprintln(stdout, "crosscode-mcp doctor")
		mark := map[string]string{"ok": "ok  ", "info": "note", "warn": "warn", "fail": "FAIL"}
		for _, c := range checks {
			fmt.Fprintf(stdout, "  %s  %-20s %s\n", mark[c.Status], c.Name, c.Detail)
			if c.Fix != "" && c.Status != "ok" {
				fmt.Fprintf(stdout, "        fix: %s\n", c.Fix)
			}
		}
	}
	if failed {
		return exitError{code: 1}
	}
	return nil
}

// checkHubDB checks the service's PostgreSQL database: that it can be
// reached, its server's version, its schema against this binary's, and
// that commits are durable.
func checkHubDB(ctx context.Context, db string) []Check {
	info, err := pgstore.Inspect(ctx, db)
	if err != nil {
		return []Check{{"database", "fail", err.Error(), "check the URL (postgres://USER:PASSWORD@HOST:PORT/DB), that PostgreSQL runs there and that the database exists (createdb)"}}
	}
	out := []Check{{"database", "ok", redactURL(db) + " reachable", ""}}
	major, minor := info.ServerVersion/10000, info.ServerVersion%10000
	if major < pgstore.MinServerVersion {
		out = append(out, Check{"postgresql version", "fail", fmt.Sprintf("%d.%d; the service needs %d or newer", major, minor, pgstore.MinServerVersion), "upgrade PostgreSQL"})
	} else {
		out = append(out, Check{"postgresql version", "ok", fmt.Sprintf("%d.%d", major, minor), ""})
	}
	switch v := info.Schema; {
	case v == pgstore.SchemaVersion:
		out = append(out, Check{"migrations", "ok", fmt.Sprintf("schema %d, up to date", v), ""})
	case v == 0:
		out = append(out, Check{"migrations", "ok", "a new database: `serve --db` creates the schema on its first start", ""})
	case v < pgstore.SchemaVersion:
		out = append(out, Check{"migrations", "warn", fmt.Sprintf("schema %d, this binary's is %d", v, pgstore.SchemaVersion), "the next `serve --db` applies the missing migrations (in one transaction) before it serves"})
	default:
		out = append(out, Check{"migrations", "fail", fmt.Sprintf("schema %d is newer than this binary's %d", v, pgstore.SchemaVersion), "upgrade crosscode-mcp on this host"})
	}
	if info.Fsync != "on" {
		out = append(out, Check{"durability", "fail", "the server runs with fsync " + info.Fsync + ": a crash can lose acknowledged envelopes", "set fsync = on in postgresql.conf"})
	} else {
		out = append(out, Check{"durability", "ok", "fsync on; the service's sessions commit with synchronous_commit " + info.Synchronous, ""})
	}
	return out
}

// doctor runs every check in order; later ones use what earlier ones found.
func doctor(ctx context.Context, cfg mcp.Config) []Check {
	var out []Check
	add := func(c Check) { out = append(out, c) }
	dir := cfg.Repo
	if dir == "" {
		dir, _ = os.Getwd()
	}

	// Git repository and worktree.
	repo, err := gitx.Open(ctx, dir)
	switch {
	case errors.Is(err, gitx.ErrNotRepo):
		repo = nil
		add(Check{"git repository", "warn", dir + " is not in a git repository", "run the agent inside the repository it edits (or pass --repo); outside git, state is per folder and share_changes cannot work"})
	case errors.Is(err, gitx.ErrNoGit):
		repo = nil
		add(Check{"git repository", "warn", "git is not installed (not on PATH): state is per folder, worktrees do not share it, share_changes and the commit guard cannot work", "install Git (on Windows, Git for Windows: winget install Git.Git) and open a new terminal"})
	case err != nil:
		add(Check{"git repository", "fail", err.Error(), "is git installed and on PATH?"})
	case repo.IsWorktree:
		add(Check{"git repository", "ok", fmt.Sprintf("%s, a linked worktree of %s", repo.Top, filepath.Dir(repo.CommonDir)), ""})
	default:
		add(Check{"git repository", "ok", repo.Top, ""})
	}
	// Data directory.
	workspace, data, err := identity.Locate(repo, dir, cfg.Workspace, cfg.Data)
	if err != nil {
		add(Check{"data directory", "fail", err.Error(), "pass --data DIR"})
		return out
	}
	out = append(out, checkDataDir(data))
	if out[len(out)-1].Status == "fail" {
		return out
	}

	// Workspace database.
	dbPath := identity.DatabasePath(data, cfg.Service, workspace)
	var db *store.Store
	if _, err := os.Stat(dbPath); errors.Is(err, os.ErrNotExist) {
		add(Check{"workspace database", "ok", dbPath + " (created on first start)", ""})
	} else if db, err = store.Open(ctx, dbPath, &store.Options{Projections: true}); err != nil {
		add(Check{"workspace database", "fail", err.Error(), "if it is damaged, move it aside; local mode starts a fresh log (remote mode re-reads the service)"})
	} else {
		defer db.Close()
		ok, err := db.IntegrityCheck(ctx)
		v, _ := db.Version(ctx)
		switch {
		case err != nil || ok != "ok":
			add(Check{"workspace database", "fail", fmt.Sprintf("%s: integrity check: %v %s", dbPath, err, ok), "move the file aside and restart; see the README's troubleshooting"})
		default:
			head, _ := db.Head(ctx, workspace)
			add(Check{"workspace database", "ok", fmt.Sprintf("%s: healthy, schema %d, workspace %q at serverSequence %d", dbPath, v, workspace, head), ""})
		}
	}

	// The coordination service.
	if cfg.Service == "" {
		add(Check{"coordination", "ok", "local mode: agents on this machine share " + dbPath, ""})
	} else {
		out = append(out, checkService(ctx, cfg, workspace, db)...)
	}

	// Capture, when the server serves it.
	top := dir
	if repo != nil {
		top = repo.Top
	}
	toolsets := cfg.Toolsets
	if len(toolsets) == 0 {
		toolsets = mcp.Toolsets
	}
	var unknown []string
	for _, t := range toolsets {
		if !slices.Contains(mcp.Toolsets, t) {
			unknown = append(unknown, t)
		}
	}
	switch {
	case len(unknown) > 0:
		add(Check{"toolsets", "fail", fmt.Sprintf("unknown toolset(s) %s: the server refuses to start", strings.Join(unknown, ", ")), "--toolsets takes coord, capture or coord,capture"})
	case !slices.Contains(toolsets, capturetools.Toolset):
		add(Check{"capture", "ok", fmt.Sprintf("off (--toolsets %s): the capture config, game command and Cappy port are not used, so not checked", strings.Join(toolsets, ",")), ""})
	default:
		out = append(out, checkCapture(cfg, top, data)...)
	}

	// Identity.
	actor, source := cfg.Actor, "--actor"
	if actor == "" {
		actor, source = identity.DefaultActor(ctx, repo), "git user.email, else the OS user"
	}
	replica := "a new id, kept in the git dir"
	rdir := data
	if repo != nil {
		rdir = repo.GitDir
	}
	if b, err := os.ReadFile(filepath.Join(rdir, "crosscode-replica")); err == nil {
		replica = strings.TrimSpace(string(b))
	}
	provider := cfg.Provider
	if provider == "" {
		provider = "from the MCP client's name (claude-code, cursor, codex, opencode, devin-like, else unknown)"
	} else if !protocol.Provider(provider).Valid() {
		add(Check{"identity", "fail", fmt.Sprintf("--provider %q is not one of %v", provider, protocol.Providers), "drop --provider or use a listed value"})
		return out
	}
	ref := "the agent's own session id (Claude Code's CLAUDE_CODE_SESSION_ID, Codex's sessionId in each call), else a new id per session"
	if cfg.SessionRef != "" {
		ref = cfg.SessionRef
	}
	add(Check{"identity", "ok", fmt.Sprintf("actor %s (%s); replica %s; workspace %s; provider %s; session reference: %s", actor, source, replica, workspace, provider, ref), ""})
	return out
}

// checkCapture checks the capture config, the game command (resolved as the
// launcher will run it) and the Cappy listen address.
func checkCapture(cfg mcp.Config, top, data string) []Check {
	var out []Check
	add := func(c Check) { out = append(out, c) }
	ccPath, optional := cfg.CaptureConfig, false
	if ccPath == "" {
		ccPath, optional = filepath.Join(top, ".crosscode", "capture.json"), true
	}
	cc, err := cappy.LoadConfig(ccPath, optional)
	switch {
	case err != nil:
		add(Check{"capture config", "fail", err.Error(), "fix the file; its fields are game{command,cwd,env,url,serve,browser,headed,adapter,actions}, listen, requiredCapabilities, presets, allowedOrigins, frames, events"})
		cc = &cappy.CaptureConfig{}
	case optional && cc.Game == nil && cc.Presets == nil:
		add(Check{"capture config", "ok", "none (" + ccPath + " is optional)", ""})
	default:
		add(Check{"capture config", "ok", ccPath, ""})
	}
	// As cappy.NewService: --game-cmd runs in the repository; the config's
	// game.command in its game.cwd, relative to the repository.
	game, gameDir, fromConfig := strings.Fields(cfg.GameCmd), top, false
	if len(game) == 0 && cc.Game != nil {
		game, gameDir, fromConfig = cc.Game.Command, cc.Game.Dir(top), true
	}
	fix := "install it, or give its full path in game.command / --game-cmd"
	if fromConfig {
		fix = "install it, or give its full path (or one relative to game.cwd) in game.command"
	}
	web := len(cfg.GameCmd) == 0 && cc.Game.Web()
	if web {
		out = append(out, checkWebGame(cc, top, cfg.Version)...)
	}
	switch {
	case len(game) == 0 && web:
		// A web game without a dev server: nothing to run but the browser.
	case len(game) == 0:
		add(Check{"game command", "warn", "none: the capture tools wait for a game you start yourself", "set game.command in .crosscode/capture.json or pass --game-cmd; a game you start reads its endpoint from " + filepath.Join(data, "cappy-endpoint.json")})
	case !isDir(gameDir):
		add(Check{"game command", "fail", fmt.Sprintf("it runs in %s, which is not a directory", gameDir), "fix game.cwd in the capture config (relative to the repository)"})
	default:
		p, err := lookGameCommand(game[0], gameDir)
		if err != nil {
			add(Check{"game command", "fail", fmt.Sprintf("%q: %v", game[0], err), fix})
			break
		}
		add(Check{"game command", "ok", strings.Join(append([]string{p}, game[1:]...), " ") + " (in " + gameDir + ")", ""})
		out = append(out, checkGodot(game, gameDir, hostForGodot())...)
	}
	if !web {
		out = append(out, checkUnity(top, gameDir, game, hostForGodot())...)
	}
	listen := cfg.CappyListen
	if listen == "" {
		listen = cc.Listen
	}
	if listen == "" {
		listen = "127.0.0.1:0"
	}
	add(checkListen(listen))
	return out
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// checkWebGame checks a web game as the launcher resolves its config
// (cappy.ResolveWebGame, from the repository's root top): the browser,
// the page it will open, and the page driver's hello, which the
// controller must take.
func checkWebGame(cc *cappy.CaptureConfig, top, version string) []Check {
	g := cc.Game
	var out []Check
	exe, err := cappy.FindBrowser(g.Browser)
	if err != nil {
		out = append(out, Check{"browser", "fail", err.Error(), "install Chromium (Debian/Ubuntu: apt-get install chromium; macOS: brew install --cask chromium) or give its path in game.browser"})
	} else {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		v, err := exec.CommandContext(ctx, exe, "--version").Output()
		mode := "headless"
		if g.Headed {
			mode = "headed"
		}
		if err != nil {
			out = append(out, Check{"browser", "fail", fmt.Sprintf("%s --version: %v", exe, err), "reinstall the browser, or give another in game.browser"})
		} else {
			out = append(out, Check{"browser", "ok", fmt.Sprintf("%s (%s), %s", exe, strings.TrimSpace(string(v)), mode), ""})
		}
	}
	w := cappy.ResolveWebGame(g, top)
	dir := ""
	if w.Serve != "" {
		page := w.PageFile()
		rel, _ := filepath.Rel(w.Serve, page)
		switch fi, err := os.Stat(page); {
		case page == "":
			out = append(out, Check{"game files", "ok", "serves " + w.Serve + "; the page is " + g.URL, ""})
			dir = w.Serve
		case err != nil || fi.IsDir():
			out = append(out, Check{"game files", "warn", fmt.Sprintf("%s has no %s yet (the page the game opens)", w.Serve, rel),
				"build the game (e.g. npm run build) before the first capture, or point game.url at its page (a path under game.serve)"})
		default:
			out = append(out, Check{"game files", "ok", fmt.Sprintf("serves %s; opens %s", w.Serve, rel), ""})
			dir = w.Serve
		}
	}
	out = append(out, checkPageDriver(cc, w, version))
	return append(out, checkWebAdapter(g, dir))
}

// checkPageDriver checks the page driver's hello as the launcher sends it
// for this config, against the controller's handshake.
func checkPageDriver(cc *cappy.CaptureConfig, w *cappy.WebGame, version string) Check {
	actions := "every key and the pointer"
	if cc.Game.Actions != nil {
		actions = "game.actions: " + strings.Join(cc.Game.Actions, ", ")
	}
	err := cappy.CheckPageDriver(w, cc, version)
	switch {
	case err == nil:
		return Check{"page driver", "ok", fmt.Sprintf("says hello as the game %q, offering %s", w.ID, actions), ""}
	case cc.Game.AdapterMode() == cappy.AdapterPage:
		return Check{"page driver", "fail", "the controller would refuse crosscode-mcp's page driver, so every capture call would fail: " + err.Error(), "change the capture config as the message says"}
	}
	return Check{"page driver", "warn", "if the page's own adapter does not say hello within 5 s of its load, the controller refuses crosscode-mcp's page driver: " + err.Error(), "change the capture config as the message says, or make sure the page's adapter connects"}
}

// checkWebAdapter says who will drive a web game: the page driver (no
// adapter code) or the page's own adapter, from game.adapter and, for
// "auto", the served files (dir, "" when not known).
func checkWebAdapter(g *cappy.GameConfig, dir string) Check {
	const driver = "crosscode-mcp drives the page itself (keys, pointer, frames, recordings and exact replays on virtual time)"
	adapterFile, stateFile := "", ""
	if dir != "" {
		adapterFile, stateFile = scanWebGame(dir)
	}
	state := ""
	switch {
	case dir != "" && stateFile == "":
		state = "; no served file defines window.render_game_to_text(), so inspect_game can only list \"\""
	case stateFile != "":
		state = "; inspect_game reads window.render_game_to_text() (" + stateFile + ")"
	}
	switch {
	case g.AdapterMode() == cappy.AdapterPage:
		return Check{"web adapter", "ok", "page: " + driver + state, ""}
	case adapterFile != "":
		return Check{"web adapter", "ok", "auto: the page's own Cappy adapter (" + adapterFile + " loads it); if it says no hello within 5 s of the load, " + driver, ""}
	case dir != "":
		return Check{"web adapter", "ok", "auto: no served file loads the Cappy adapter, so " + driver + state, ""}
	}
	return Check{"web adapter", "ok", "auto: the page's own Cappy adapter if one says hello within 5 s of the load, else " + driver, ""}
}

// scanWebGame looks through a served directory's scripts and pages (a
// bounded number of bytes) for the Cappy JavaScript adapter and for
// window.render_game_to_text, and names the first file of each.
func scanWebGame(dir string) (adapter, state string) {
	budget := int64(64 << 20)
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || budget <= 0 || (adapter != "" && state != "") {
			return filepath.SkipDir
		}
		if d.IsDir() {
			if d.Name() == "node_modules" {
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(p) {
		case ".js", ".mjs", ".html", ".htm":
		default:
			return nil
		}
		fi, err := d.Info()
		if err != nil || !fi.Mode().IsRegular() || fi.Size() > 16<<20 {
			return nil
		}
		budget -= fi.Size()
		b, err := os.ReadFile(p)
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		if adapter == "" && bytes.Contains(b, []byte("cappy-endpoint")) {
			adapter = rel
		}
		if state == "" && bytes.Contains(b, []byte("render_game_to_text")) {
			state = rel
		}
		return nil
	})
	return adapter, state
}

// lookGameCommand finds the game's program as the launcher's exec.Command
// with Dir will: a bare name on PATH, a path with a separator as is, or,
// when relative, from the directory the game runs in.
func lookGameCommand(name, dir string) (string, error) {
	if filepath.Base(name) != name && !filepath.IsAbs(name) {
		name = filepath.Join(dir, name)
	}
	return exec.LookPath(name)
}

func checkDataDir(data string) Check {
	if err := os.MkdirAll(data, 0o700); err != nil {
		return Check{"data directory", "fail", fmt.Sprintf("%s: %v", data, err), "pass --data with a directory you can write"}
	}
	f, err := os.CreateTemp(data, ".doctor-*")
	if err != nil {
		return Check{"data directory", "fail", fmt.Sprintf("%s is not writable: %v", data, err), "pass --data with a directory you can write"}
	}
	f.Close()
	os.Remove(f.Name())
	if name, ok := networkFS(data); ok {
		return Check{"data directory", "fail", fmt.Sprintf("%s is on %s: SQLite's locks are unreliable there, and agents could corrupt the shared log", data, name), "pass --data with a directory on a local disk"}
	}
	return Check{"data directory", "ok", data + " (local disk, writable)", ""}
}

func checkListen(addr string) Check {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return Check{"cappy listen", "fail", fmt.Sprintf("%q: %v", addr, err), "use host:port, e.g. 127.0.0.1:0"}
	}
	ip := net.ParseIP(host)
	if host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return Check{"cappy listen", "fail", addr + " is not a loopback address; the controller binds loopback only", "use 127.0.0.1:PORT (or 0 for any free port)"}
	}
	if port == "0" {
		return Check{"cappy listen", "ok", addr + " (any free port)", ""}
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return Check{"cappy listen", "fail", fmt.Sprintf("%s is taken: %v", addr, err), "stop what uses it, or use port 0"}
	}
	l.Close()
	return Check{"cappy listen", "ok", addr + " is free", ""}
}

// checkService checks the service's reachability, the token, the
// protocol, and the local cursor against its retention.
func checkService(ctx context.Context, cfg mcp.Config, workspace string, db *store.Store) []Check {
	client := &http.Client{Timeout: 5 * time.Second}
	base := strings.TrimRight(cfg.Service, "/")
	resp, err := client.Get(base + "/healthz")
	if err != nil {
		return []Check{{"coordination", "fail", fmt.Sprintf("%s is unreachable: %v", base, err), "is `crosscode-mcp serve` running there? Until it is, writes queue locally and land when it is back"}}
	}
	var health struct {
		ProtocolVersion int `json:"protocolVersion"`
	}
	json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&health)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || health.ProtocolVersion < protocol.ProtocolVersion {
		return []Check{{"coordination", "fail", fmt.Sprintf("%s answered /healthz with HTTP %d, protocolVersion %d; need %d", base, resp.StatusCode, health.ProtocolVersion, protocol.ProtocolVersion), "point --service at a crosscode coordination service of this version or newer"}}
	}
	if cfg.Token == "" {
		return []Check{{"coordination", "fail", "--service without --token", "create one on the service host: crosscode-mcp token create --workspace " + workspace}}
	}
	cursor := int64(0)
	if db != nil {
		cursor, _ = db.Cursor(ctx, "remote:"+workspace)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s/v1/events?protocolVersion=2&limit=1&afterSequence=%d&workspaceId=%s", base, cursor, url.QueryEscape(workspace)), nil)
	req.Header.Set("Authorization", "Bearer "+cfg.Token)
	resp, err = client.Do(req)
	if err != nil {
		return []Check{{"coordination", "fail", err.Error(), "check the network to " + base}}
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusUnauthorized:
		return []Check{{"coordination", "fail", "the service does not know this token", "create one: crosscode-mcp token create --workspace " + workspace}}
	case http.StatusForbidden:
		return []Check{{"coordination", "fail", fmt.Sprintf("the token belongs to another workspace than %q", workspace), "pass --workspace with the token's workspace, or create a token for " + workspace}}
	default:
		return []Check{{"coordination", "fail", fmt.Sprintf("HTTP %d: %.200s", resp.StatusCode, body), ""}}
	}
	checks := []Check{{"coordination", "ok", fmt.Sprintf("%s reachable, token valid for workspace %q, protocol %d", base, workspace, health.ProtocolVersion), ""}}
	page, err := protocol.DecodePageResponse(body)
	switch {
	case err != nil:
		checks = append(checks, Check{"cursor", "fail", "unreadable page: " + err.Error(), ""})
	case page.TooOld != nil:
		checks = append(checks, Check{"cursor", "warn", fmt.Sprintf("this replica read up to serverSequence %d, but the service's retention (%g days) deleted history up to %d", cursor, page.TooOld.RetentionDays, page.TooOld.ResyncFrom),
			"nothing to do: the next start resyncs from there and tells the agent; what it never read is lost (git stays the source of truth)"})
	default:
		checks = append(checks, Check{"cursor", "ok", fmt.Sprintf("serverSequence %d, within the service's history", cursor), ""})
	}
	return checks
}

// checkHooks reports the agent hooks `hooks install` put in the clients'
// settings (project and user scope) and the repository's hook policy.
func checkHooks(ctx context.Context, dir string) []Check {
	var out []Check
	top := ""
	if repo, err := gitx.Open(ctx, dir); err == nil {
		top = repo.Top
	}
	home, _ := os.UserHomeDir()
	for _, client := range hooks.Clients {
		for _, scope := range hooks.Scopes {
			if (scope == "project" && top == "") || (scope == "user" && home == "") {
				continue
			}
			path, err := hooks.SettingsPath(hooks.InstallConfig{Client: client, Scope: scope, Top: top, Home: home})
			if err != nil {
				continue
			}
			events, err := hooks.Installed(client, path)
			name := "hooks " + client
			switch {
			case err != nil:
				out = append(out, Check{name, "warn", fmt.Sprintf("%s (%s): cannot read it: %v", path, scope, err), "fix the file; " + client + " may skip it too"})
			case len(events) > 0:
				out = append(out, Check{name, "ok", fmt.Sprintf("%s (%s): %s", path, scope, strings.Join(events, ", ")), ""})
			}
		}
	}
	// The plugin (Claude Code, Codex) and the extension (Gemini CLI) bring
	// their own hooks: installed that way, no hooks are missing.
	handWired := map[string]bool{}
	for _, c := range out {
		handWired[strings.TrimPrefix(c.Name, "hooks ")] = c.Status == "ok"
	}
	if home != "" {
		for _, p := range hooks.Packages(hooks.PackageHome{Home: home, CodexHome: os.Getenv("CODEX_HOME"), Project: top}, "") {
			kind := map[string]string{"gemini": "extension"}[p.Client]
			if kind == "" {
				kind = "plugin"
			}
			detail := fmt.Sprintf("the crosscode %s (%s) is enabled in %s: it brings the server (the binary its hooks run, else npx -y crosscode-mcp), the hooks and the skill", kind, p.ID, p.Where)
			status, fix := "ok", ""
			switch bin := hooks.RecordedBinary(); {
			case handWired[p.Client]:
				detail += "; hooks wired by hand for " + p.Client + " run instead of its own, and a server wired by hand serves the tools instead of its one (nothing runs twice)"
			case bin == "":
				status, fix = "warn", "start the agent once (its server records the binary the hooks run), or put crosscode-mcp on PATH"
				detail += "; its hooks find no crosscode-mcp binary yet, so they allow every edit"
			default:
				if _, err := os.Stat(bin); err != nil {
					status, fix = "warn", "start the agent once more: the server records its binary again"
					detail += "; its hooks would run " + bin + ", which is gone"
				} else if client := hookClientBeside(bin); client != "" {
					detail += "; its hooks run " + client + ", the hook client next to " + bin + " (the running MCP server answers it)"
				} else {
					detail += "; its hooks run " + bin
				}
			}
			if p.Client == "codex" && !packageBinaryFound() {
				if config, ms := codexStartupGrace(home); ms < codexGraceWanted {
					status = "warn"
					detail += fmt.Sprintf("; Codex offers the server's tools only if it started within %d ms of a turn, and with no binary to start the plugin starts it through npx, which can take longer", ms)
					wait := "put mcp_optional_startup_grace_ms = 30000 at the top of " + config + " (Codex then waits for the server)"
					if fix != "" {
						wait = fix + "; or " + wait
					}
					fix = wait
				}
			}
			out = append(out, Check{"package " + p.Client, status, detail, fix})
		}
	}
	if len(out) == 0 {
		out = append(out, Check{"hooks", "ok", "none installed (optional: they stop edits of files another agent claimed and bring news at each prompt; the crosscode plugin or extension brings them in one step)", ""})
	}
	if top != "" {
		if p, err := hooks.LoadPolicy(top, ""); err != nil {
			out = append(out, Check{"hook policy", "fail", err.Error(), "hooks allow every edit while the policy cannot be read; fix " + filepath.ToSlash(hooks.PolicyFile)})
		} else if _, err := os.Stat(filepath.Join(top, hooks.PolicyFile)); err == nil {
			out = append(out, Check{"hook policy", "ok", fmt.Sprintf("%s: %s", filepath.ToSlash(hooks.PolicyFile), p.Policy), ""})
		}
	}
	return out
}

// packageBinaryFound reports whether the packages' server entry finds a
// binary to start itself (the recorded one, or crosscode-mcp on PATH)
// rather than going through npx.
func packageBinaryFound() bool {
	if bin := hooks.RecordedBinary(); bin != "" {
		if _, err := os.Stat(bin); err == nil {
			return true
		}
	}
	_, err := exec.LookPath("crosscode-mcp")
	return err == nil
}

// codexGraceWanted is the least startup grace (ms) that leaves Codex time
// for the plugin's server to start through npx.
const codexGraceWanted = 10000

// codexStartupGrace returns Codex's config file and how long a turn waits
// for an optional MCP server to start (mcp_optional_startup_grace_ms;
// 1 s when unset, Codex 0.169's default): a server not ready by then has
// no tools in that turn.
func codexStartupGrace(home string) (config string, ms int64) {
	config = filepath.Join(hooks.CodexHome(home), "config.toml")
	var c struct {
		Grace *int64 `toml:"mcp_optional_startup_grace_ms"`
	}
	if _, err := toml.DecodeFile(config, &c); err == nil && c.Grace != nil {
		return config, *c.Grace
	}
	return config, 1000
}
