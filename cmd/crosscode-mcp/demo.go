package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/jpeg"
	"image/png"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
)

// runDemo is `crosscode-mcp demo`: a newcomer's tour. In a temporary git
// repository it starts the real stdio server twice (two agents: ada with
// Claude Code, bo with Cursor), drives them as an MCP client would, and
// prints what happens; then one of them runs the demo game's scenario,
// records and replays it, and plays the game itself in steps. It exits
// non-zero when a step does not behave.
func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("crosscode-mcp demo", stderr)
	keep := fs.Bool("keep", false, "keep the temporary repository and its data for inspection")
	outDir := fs.String("out", filepath.Join(os.TempDir(), "crosscode-demo"), "where the demo writes the contact sheet (and the video, with ffmpeg) of its scenario")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	root, err := os.MkdirTemp("", "crosscode-demo-")
	if err != nil {
		return err
	}
	if !*keep {
		defer os.RemoveAll(root)
	}
	// About 10 s on an idle machine; the bound is only against a hang.
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	d := &demo{out: stdout, exe: exe, root: root, start: time.Now(), media: *outDir}
	err = d.run(ctx)
	d.closeAll()
	if *keep {
		where := "in .git/crosscode"
		if !d.hasGit {
			where = "in your user cache dir: git is not installed"
		}
		fmt.Fprintf(stdout, "\nKept %s (the repository; its coordination data is %s).\n", d.repo, where)
	}
	if err != nil {
		fmt.Fprintf(stdout, "\nFAILED: %v\n", err)
		return exitError{code: 1}
	}
	fmt.Fprintf(stdout, "\nEvery step behaved (%.1f s). Connect your own agents: see the README, or run crosscode-mcp doctor.\n", time.Since(d.start).Seconds())
	return nil
}

type demo struct {
	out    io.Writer
	exe    string
	root   string
	repo   string
	media  string // where the contact sheet and video go
	hasGit bool   // the repository is a git repository (git is installed)
	start  time.Time
	agents []*demoAgent
}

type demoAgent struct {
	name, provider string
	c              *mcpclient.Client
	stderr         syncBuffer // written by mcp-go's stderr reader while we read it
}

// syncBuffer is a bytes.Buffer safe for one goroutine's (or a process's)
// writes and another's reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func (d *demo) step(format string, args ...any) { fmt.Fprintf(d.out, "\n"+format+"\n", args...) }
func (d *demo) say(format string, args ...any)  { fmt.Fprintf(d.out, "   "+format+"\n", args...) }

func (d *demo) closeAll() {
	for _, a := range d.agents {
		a.c.Close()
	}
}

func (d *demo) git(args ...string) error {
	cmd := exec.Command("git", args...)
	cmd.Dir = d.repo
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return nil
}

// agent starts one crosscode-mcp stdio server as an agent's client would.
func (d *demo) agent(ctx context.Context, name, client, actor string, extra ...string) (*demoAgent, error) {
	a := &demoAgent{name: name, provider: client}
	args := append([]string{"--actor", actor}, extra...)
	env := append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1", "CLAUDE_CODE_SESSION_ID=", "CROSSCODE_SESSION_REF=")
	c, err := mcpclient.NewStdioMCPClientWithOptions(d.exe, env, args,
		transport.WithCommandFunc(func(ctx context.Context, command string, env []string, args []string) (*exec.Cmd, error) {
			cmd := exec.CommandContext(ctx, command, args...)
			cmd.Env, cmd.Dir = env, d.repo
			return cmd, nil
		}),
		transport.WithCommandStderrWriter(&a.stderr))
	if err != nil {
		return nil, err
	}
	a.c = c
	d.agents = append(d.agents, a)
	if err := c.Start(ctx); err != nil {
		return nil, err
	}
	req := mcpgo.InitializeRequest{}
	req.Params.ProtocolVersion = mcpgo.LATEST_PROTOCOL_VERSION
	req.Params.ClientInfo = mcpgo.Implementation{Name: client, Version: "demo"}
	if _, err := c.Initialize(ctx, req); err != nil {
		return nil, fmt.Errorf("%s: initialize: %v (%s)", name, err, a.stderr.String())
	}
	return a, nil
}

// call runs a tool; a tool error fails the demo.
func (a *demoAgent) call(ctx context.Context, tool string, args map[string]any) (map[string]any, error) {
	out, toolErr, err := callTool(ctx, a.c, tool, args)
	switch {
	case err != nil:
		return nil, fmt.Errorf("%s: %s: %w", a.name, tool, err)
	case toolErr != "":
		return nil, fmt.Errorf("%s: %s: %s", a.name, tool, toolErr)
	}
	return out, nil
}

// callTool runs a tool and decodes its JSON result. A tool error (an
// isError result) is returned as its text in toolErr, not as err.
// checkResult, when set (by the tests), checks every tool result as a
// strict client would: its structuredContent against the tool's output
// schema.
var checkResult func(ctx context.Context, c *mcpclient.Client, tool string, res *mcpgo.CallToolResult) error

func callTool(ctx context.Context, c *mcpclient.Client, tool string, args map[string]any) (out map[string]any, toolErr string, err error) {
	req := mcpgo.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = tool, args
	res, err := c.CallTool(ctx, req)
	if err != nil {
		return nil, "", err
	}
	if checkResult != nil {
		if err := checkResult(ctx, c, tool, res); err != nil {
			return nil, "", err
		}
	}
	text := ""
	if len(res.Content) > 0 {
		if tc, ok := res.Content[0].(mcpgo.TextContent); ok {
			text = tc.Text
		}
	}
	if res.IsError {
		if text == "" {
			text = "a tool error without text"
		}
		// A failed operation is an error with its whole result as JSON.
		if json.Unmarshal([]byte(text), &out) != nil {
			out = nil
		}
		return out, text, nil
	}
	if err := json.Unmarshal([]byte(text), &out); err != nil {
		return nil, "", fmt.Errorf("result is not JSON: %v: %s", err, text)
	}
	return out, "", nil
}

func field(m map[string]any, path ...string) any {
	var v any = m
	for _, p := range path {
		mm, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = mm[p]
	}
	return v
}

func str(m map[string]any, path ...string) string { s, _ := field(m, path...).(string); return s }

func list(m map[string]any, path ...string) []map[string]any {
	var out []map[string]any
	l, _ := field(m, path...).([]any)
	for _, x := range l {
		if mm, ok := x.(map[string]any); ok {
			out = append(out, mm)
		}
	}
	return out
}

func expect(cond bool, format string, args ...any) error {
	if !cond {
		return fmt.Errorf(format, args...)
	}
	return nil
}

// handoffOf reads request_handoff's answer: the handoff's id and how many
// claims it moves.
func handoffOf(ho map[string]any) (id string, claims int, err error) {
	id = str(ho, "handoff", "handoffId")
	ids, ok := field(ho, "handoff", "claimIds").([]any)
	if id == "" || !ok {
		return "", 0, fmt.Errorf("request_handoff answered without handoff.handoffId and handoff.claimIds: %v", ho)
	}
	return id, len(ids), nil
}

func (d *demo) news(name string, out map[string]any) {
	items := list(out, "news", "items")
	if len(items) == 0 {
		return
	}
	d.say("%s's news:", name)
	for _, it := range items {
		mark := ""
		if it["forYou"] == true {
			mark = " [for you]"
		}
		d.say("  - %s (%s): %s%s", str(it, "actor"), str(it, "provider"), str(it, "text"), mark)
	}
}

func (d *demo) run(ctx context.Context) error {
	fmt.Fprintln(d.out, "crosscode-mcp demo: two coding agents share one repository, then one of them plays the game.")
	d.repo = filepath.Join(d.root, "mygame")
	if err := os.MkdirAll(filepath.Join(d.repo, "src", "game"), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(d.repo, "src", "game", "boss.gd"), []byte("extends Node\nvar phase2_damage = 40\n"), 0o644); err != nil {
		return err
	}
	// The game as a capture config names it: a list of arguments, so a
	// path with spaces (C:\Users\Jo Smith\...) stays one.
	if err := os.MkdirAll(filepath.Join(d.repo, ".crosscode"), 0o755); err != nil {
		return err
	}
	capture, _ := json.Marshal(map[string]any{"game": map[string]any{"command": []string{d.exe, "demo-game"}}})
	if err := os.WriteFile(filepath.Join(d.repo, ".crosscode", "capture.json"), capture, 0o644); err != nil {
		return err
	}
	if _, err := exec.LookPath("git"); err == nil {
		d.hasGit = true
		for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "."}, {"-c", "user.email=demo@example.com", "-c", "user.name=demo", "commit", "-qm", "init"}} {
			if err := d.git(args...); err != nil {
				return err
			}
		}
		d.say("repository %s (local mode: no server; the agents share .git/crosscode/workspace.db)", d.repo)
	} else {
		d.say("folder %s (local mode: no server; git is not installed, so the agents share a database kept for this folder in your user cache dir; with git, every worktree of a clone shares one)", d.repo)
	}

	d.step("1. Two agents start crosscode-mcp, as their MCP config says.")
	ada, err := d.agent(ctx, "ada", "claude-code", "ada@example.com")
	if err != nil {
		return err
	}
	bo, err := d.agent(ctx, "bo", "cursor", "bo@example.com")
	if err != nil {
		return err
	}
	for _, a := range []*demoAgent{ada, bo} {
		st, err := a.call(ctx, "workspace_status", nil)
		if err != nil {
			return err
		}
		d.say("%-3s via %-11s actor %s, workspace %s, %s mode", a.name, str(st, "you", "provider"), str(st, "you", "actor"), str(st, "workspace"), str(st, "mode"))
		if err := expect(str(st, "you", "provider") == a.provider, "%s is stamped as %q, not %q", a.name, str(st, "you", "provider"), a.provider); err != nil {
			return err
		}
	}

	d.step("2. ada announces her work and claims the files.")
	in, err := ada.call(ctx, "publish_intent", map[string]any{"summary": "Rebalance the boss fight: lower phase-2 damage", "paths": []string{"src/game/**"}})
	if err != nil {
		return err
	}
	d.say("publish_intent -> %s at serverSequence %v", str(in, "write", "status"), field(in, "write", "serverSequence"))
	cl, err := ada.call(ctx, "claim", map[string]any{"patterns": []string{"src/game/**"}, "reason": "phase-2 damage"})
	if err != nil {
		return err
	}
	d.say("claim src/game/** -> %s until %s", str(cl, "status"), str(cl, "expiresAt"))
	if err := expect(str(cl, "status") == "granted", "ada's claim was %s", str(cl, "status")); err != nil {
		return err
	}

	d.step("3. bo wants the same file: the claim is denied, naming the holder.")
	den, err := bo.call(ctx, "claim", map[string]any{"patterns": []string{"src/game/boss.gd"}, "reason": "VFX pass"})
	if err != nil {
		return err
	}
	d.say("claim src/game/boss.gd -> %s", str(den, "status"))
	d.say("next: %s", str(den, "next"))
	if err := expect(str(den, "status") == "denied" && strings.Contains(str(den, "next"), "ada@example.com"), "bo's claim was not denied naming ada: %v", den); err != nil {
		return err
	}
	d.news("bo", den)

	d.step("4. ada hands the work over; bo accepts and the claim moves.")
	ho, err := ada.call(ctx, "request_handoff", map[string]any{"toActor": "bo@example.com", "summary": "Damage curve done; needs the VFX pass", "notes": "Try boss_intro at difficulty 3."})
	if err != nil {
		return err
	}
	hoID, claims, err := handoffOf(ho)
	if err != nil {
		return err
	}
	d.say("request_handoff -> %s with %d claim(s)", hoID, claims)
	st, err := bo.call(ctx, "workspace_status", nil)
	if err != nil {
		return err
	}
	d.news("bo", st)
	if err := expect(len(list(st, "handoffsForYou")) == 1, "bo does not see the handoff"); err != nil {
		return err
	}
	acc, err := bo.call(ctx, "respond_handoff", map[string]any{"handoffId": hoID, "response": "accept", "note": "On it"})
	if err != nil {
		return err
	}
	d.say("respond_handoff accept -> %s. %s", str(acc, "handoff", "status"), str(acc, "next"))
	st, err = bo.call(ctx, "workspace_status", nil)
	if err != nil {
		return err
	}
	mine := list(st, "yourClaims")
	if err := expect(len(mine) == 1, "the claim did not move to bo"); err != nil {
		return err
	}
	d.say("bo now holds %v", field(mine[0], "patterns"))
	back, err := ada.call(ctx, "check_conflicts", map[string]any{"paths": []string{"src/game/boss.gd"}})
	if err != nil {
		return err
	}
	d.say("ada's check_conflicts on src/game/boss.gd -> clear=%v (bo holds it now)", back["clear"])
	d.news("ada", back)

	d.step("5. bo plays the game it is editing (the demo game, launched on demand).")
	sc, err := bo.call(ctx, "list_scenarios", nil)
	if err != nil {
		return err
	}
	var names []string
	for _, s := range list(sc, "scenarios") {
		names = append(names, str(s, "id"))
	}
	d.say("game %s, scenarios: %s", str(sc, "game"), strings.Join(names, ", "))
	run, err := bo.call(ctx, "run_scenario", map[string]any{"scenario": "boss_intro", "parameters": map[string]any{"difficulty": 3}, "publishValidation": true})
	if err != nil {
		return err
	}
	d.say("run_scenario boss_intro difficulty=3 -> %s, %v events over %v ms of game time", str(run, "status"), field(run, "events"), field(run, "lastT"))
	d.timeline(list(run, "timeline"), 6)
	if err := expect(str(run, "status") == "completed", "the scenario ended %s", str(run, "status")); err != nil {
		return err
	}
	if err := d.pictures(ctx, bo, str(run, "op")); err != nil {
		return err
	}

	d.step("6. bo records a stretch of free play, then replays it at half speed.")
	rec, err := bo.call(ctx, "start_recording", nil)
	if err != nil {
		return err
	}
	time.Sleep(500 * time.Millisecond)
	stop, err := bo.call(ctx, "stop_recording", map[string]any{"op": rec["op"]})
	if err != nil {
		return err
	}
	d.say("recording %s -> %s, %v events, replay sha256 %.12s… stored", str(stop, "op"), str(stop, "status"), field(stop, "events"), str(stop, "replay", "sha256"))
	if err := expect(str(stop, "status") == "completed", "the recording ended %s", str(stop, "status")); err != nil {
		return err
	}
	rp, err := bo.call(ctx, "replay", map[string]any{"op": rec["op"], "presentation": map[string]any{"timeScale": 0.5}})
	if err != nil {
		return err
	}
	d.say("replay at timeScale 0.5 -> %s; %s", str(rp, "status"), str(rp, "next"))
	d.say("last event at t=%v ms (the recording's: %v ms)", field(rp, "lastT"), field(stop, "lastT"))
	if err := expect(field(rp, "divergence", "identical") == true, "the replay diverged: %v", field(rp, "divergence")); err != nil {
		return err
	}
	if err := expect(field(rp, "visualDivergence", "identical") == true, "the replay's pictures differ: %v", field(rp, "visualDivergence")); err != nil {
		return err
	}
	feed, err := ada.call(ctx, "read_feed", map[string]any{"kind": "validation"})
	if err != nil {
		return err
	}
	for _, it := range list(feed, "items") {
		d.say("ada sees bo's result in the feed: %s", str(it, "text"))
	}
	if err := expect(len(list(feed, "items")) == 1, "the scenario's validation did not reach ada"); err != nil {
		return err
	}
	return d.playGame(ctx, bo)
}

// pictures shows what the agent saw of a run: keyframes at its boss
// phases, and a contact sheet (and a video, with ffmpeg) written for the
// human to open.
func (d *demo) pictures(ctx context.Context, a *demoAgent, op string) error {
	got, err := a.call(ctx, "get_capture", map[string]any{"op": op, "limit": 1, "keyframesAtEvents": []string{"BOSS_PHASE"}, "contactSheet": true, "video": true})
	if err != nil {
		return err
	}
	d.say("get_capture keyframes at BOSS_PHASE and a contact sheet -> %d pictures as image content (frames in the temporary repository; --keep keeps them):", len(list(got, "pictures")))
	var sheet string
	for _, p := range list(got, "pictures") {
		if str(p, "kind") == "contact_sheet" {
			sheet = str(p, "file")
			continue
		}
		d.say("  t=%-6v %-12s %s", p["t"], str(p, "event"), str(p, "file"))
	}
	if err := expect(sheet != "" && len(list(got, "pictures")) >= 2, "the agent got no keyframes or contact sheet: %v %v", got["pictures"], got["picturesLeftOut"]); err != nil {
		return err
	}
	if err := os.MkdirAll(d.media, 0o755); err != nil {
		return err
	}
	png := filepath.Join(d.media, "contact-sheet.png")
	if err := jpegToPNG(sheet, png); err != nil {
		return err
	}
	d.say("the whole run on one contact sheet: %s", png)
	if mp4 := str(got, "video", "mp4"); mp4 != "" {
		for _, f := range []string{mp4, str(got, "video", "vtt")} {
			dst := filepath.Join(d.media, "boss_intro"+filepath.Ext(f))
			if err := copyFile(f, dst); err != nil {
				return err
			}
			if filepath.Ext(f) == ".mp4" {
				d.say("and as a video with the events as subtitles: %s (+ .vtt)", dst)
			}
		}
	} else {
		d.say("(%s)", str(got, "videoNote"))
	}
	return nil
}

func jpegToPNG(src, dst string) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	img, err := jpeg.Decode(f)
	if err != nil {
		return fmt.Errorf("contact sheet %s: %w", src, err)
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		return err
	}
	return os.WriteFile(dst, b.Bytes(), 0o644)
}

func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o644)
}

func (d *demo) timeline(events []map[string]any, n int) {
	for i, e := range events {
		if i == n {
			d.say("  … (get_capture pages them all)")
			return
		}
		payload, _ := json.Marshal(e["payload"])
		d.say("  t=%-6v %-14s %s", e["t"], str(e, "event"), payload)
	}
}
