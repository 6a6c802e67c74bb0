package agentclients

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/crosscode/crosscode-mcp/internal/testing/npmtest"
	"github.com/crosscode/crosscode-mcp/internal/testing/sysdeps"
)

// The client packages (issue 25, spec section 16) in the real clients:
// the crosscode plugin installed with Claude Code's and Codex's own
// commands from a marketplace in a copy of the repository, the extension
// with Gemini CLI's. The server starts through `npx -y crosscode-mcp`
// the first time (the npm packages of this checkout, installed offline
// into the world's npm prefix; crosscode-mcp is on no folder of PATH),
// then as the binary that start recorded; the hooks through the
// packages' launcher, which finds the same binary.

// pkgClient is how one client installs and removes the packages.
type pkgClient struct {
	name string
	// prepare points the client at the model with no crosscode in its
	// configuration.
	prepare func(t *testing.T, w *World)
	// install and uninstall run the client's own commands with src, the
	// copy of the repository; handWire adds crosscode-mcp (at bin) by
	// hand, as the README's manual steps do.
	install, uninstall func(t *testing.T, w *World, src string)
	handWire           func(t *testing.T, w *World, bin string)
	// settings are the user's configuration files the packages may touch:
	// each must read the same after uninstall as before install.
	settings func(w *World) []string
	// seed writes the user's own hooks and permissions into settings
	// first, which the packages must leave alone.
	seed func(t *testing.T, w *World)
	// skill is a phrase of the skill (or the extension's context file)
	// that shows in the model's context, or among its tools, once loaded.
	run func(t *testing.T, w *World, prompt string) *RunResult
}

// the skill's description, as clients list skills to their model.
const skillPhrase = "Work on a repository that other coding agents are changing at the same time"

func runIn(t *testing.T, w *World, name string, args []string, extra ...string) string {
	t.Helper()
	return answerIn(t, w, "", name, args, extra...)
}

// answerIn is runIn with answer typed at the command's prompts.
func answerIn(t *testing.T, w *World, answer, name string, args []string, extra ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := w.Command(ctx, name, args, extra...)
	cmd.Stdin = strings.NewReader(answer)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, out)
	}
	return string(out)
}

var pkgClients = []pkgClient{
	{
		name:    "claude-code",
		prepare: func(t *testing.T, w *World) {},
		install: func(t *testing.T, w *World, src string) {
			// The README's one step: the marketplace is added on the way.
			runIn(t, w, claudeBin(t), []string{"plugin", "install", "crosscode", "--marketplace", src}, claudeEnv(w)...)
		},
		uninstall: func(t *testing.T, w *World, src string) {
			runIn(t, w, claudeBin(t), []string{"plugin", "uninstall", "crosscode@crosscode"}, claudeEnv(w)...)
			runIn(t, w, claudeBin(t), []string{"plugin", "marketplace", "remove", "crosscode"}, claudeEnv(w)...)
		},
		handWire: func(t *testing.T, w *World, bin string) {
			runIn(t, w, claudeBin(t), []string{"mcp", "add", "crosscode", "-s", "user", "--", bin}, claudeEnv(w)...)
			runIn(t, w, bin, []string{"hooks", "install", "--client", "claude-code", "--scope", "user"})
		},
		settings: func(w *World) []string {
			return []string{filepath.Join(w.Home, ".claude", "settings.json")}
		},
		seed: func(t *testing.T, w *World) {
			os.MkdirAll(filepath.Join(w.Home, ".claude"), 0o755)
			writeJSON(t, filepath.Join(w.Home, ".claude", "settings.json"), map[string]any{
				"permissions": map[string]any{"allow": []string{"Read", "Edit", "Write", "Bash(ls:*)"}},
				"hooks":       map[string]any{"Stop": []any{map[string]any{"hooks": []any{map[string]any{"type": "command", "command": "true"}}}}},
			})
		},
		// npx starts the server: on a loaded machine that takes longer than
		// Claude Code's default wait for a server (MCP_TIMEOUT, in ms).
		run: func(t *testing.T, w *World, prompt string) *RunResult {
			return runClaude(t, w, prompt, "MCP_TIMEOUT=120000").RunResult
		},
	},
	{
		name:    "codex",
		prepare: func(t *testing.T, w *World) { writeCodexConfig(t, w, true) },
		install: func(t *testing.T, w *World, src string) {
			runIn(t, w, "node", []string{codexBin(t), "plugin", "marketplace", "add", src}, codexEnv(w)...)
			runIn(t, w, "node", []string{codexBin(t), "plugin", "add", "crosscode@crosscode"}, codexEnv(w)...)
		},
		uninstall: func(t *testing.T, w *World, src string) {
			runIn(t, w, "node", []string{codexBin(t), "plugin", "remove", "crosscode@crosscode"}, codexEnv(w)...)
			runIn(t, w, "node", []string{codexBin(t), "plugin", "marketplace", "remove", "crosscode"}, codexEnv(w)...)
		},
		handWire: func(t *testing.T, w *World, bin string) {
			runIn(t, w, "node", []string{codexBin(t), "mcp", "add", "crosscode", "--", bin}, codexEnv(w)...)
			runIn(t, w, bin, []string{"hooks", "install", "--client", "codex", "--scope", "user"})
		},
		settings: func(w *World) []string { return []string{filepath.Join(w.Home, ".codex", "config.toml")} },
		seed: func(t *testing.T, w *World) {
			f, err := os.OpenFile(filepath.Join(w.Home, ".codex", "config.toml"), os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			f.WriteString("\n[[hooks.Stop]]\n[[hooks.Stop.hooks]]\ntype = \"command\"\ncommand = \"true\"\n")
		},
		run: runCodexHooks,
	},
	{
		name:    "gemini",
		prepare: prepareGemini,
		install: func(t *testing.T, w *World, src string) {
			// A local folder: Gemini CLI asks whether to trust it (the
			// user answers y), --consent acknowledges the extension's risks.
			// A second install is refused by Gemini CLI itself ("already
			// installed"), with nothing changed.
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := w.Command(ctx, "node", append([]string{geminiBin(t)}, "extensions", "install", src, "--consent"), geminiEnv(w)...)
			cmd.Stdin = strings.NewReader("y\n")
			if out, err := cmd.CombinedOutput(); err != nil && !strings.Contains(string(out), "already installed") {
				t.Fatalf("gemini extensions install: %v\n%s", err, out)
			}
		},
		uninstall: func(t *testing.T, w *World, src string) {
			runIn(t, w, "node", append([]string{geminiBin(t)}, "extensions", "uninstall", "crosscode"), geminiEnv(w)...)
		},
		handWire: func(t *testing.T, w *World, bin string) {
			runIn(t, w, "node", append([]string{geminiBin(t)}, "mcp", "add", "--scope", "user", "crosscode", bin), geminiEnv(w)...)
			runIn(t, w, bin, []string{"hooks", "install", "--client", "gemini", "--scope", "user"})
		},
		settings: func(w *World) []string { return []string{filepath.Join(w.Home, ".gemini", "settings.json")} },
		seed: func(t *testing.T, w *World) {
			p := filepath.Join(w.Home, ".gemini", "settings.json")
			var s map[string]any
			b, err := os.ReadFile(p)
			if err == nil {
				err = json.Unmarshal(b, &s)
			}
			if err != nil {
				t.Fatal(err)
			}
			s["hooks"] = map[string]any{"AfterAgent": []any{map[string]any{"hooks": []any{map[string]any{"type": "command", "command": "true", "name": "mine"}}}}}
			writeJSON(t, p, s)
		},
		run: func(t *testing.T, w *World, prompt string) *RunResult { return runGemini(t, w, prompt) },
	},
}

// TestPackagesInClients: install from the checkout through each client's
// own commands (twice: the second changes nothing); a first session starts
// the server through npx, which records its binary; in the next, which
// starts that binary itself, the model is offered every tool once (Codex
// with its default startup wait, no config edit) and gets the skill; an
// Edit of a file another agent holds is stopped by the package's hook,
// with the reason to the model; the hook ran the binary the npx-started
// server recorded. Then beside a hand-wired server and hooks: still each
// tool once and one denial. Then uninstall: the user's settings read as
// before.
func TestPackagesInClients(t *testing.T) {
	sysdeps.Need(t, "node")
	sysdeps.Need(t, "npm")
	pk := npmtest.Pack(t)
	src := checkoutCopy(t)
	for _, pc := range pkgClients {
		c := clients[slices.IndexFunc(clients, func(c *Client) bool { return c.Name == pc.name })]
		hc := hookClients[slices.IndexFunc(hookClients, func(h hookClient) bool { return h.name == pc.name })]
		t.Run(pc.name, func(t *testing.T) {
			t.Parallel()
			w := NewWorld(t)
			w.NoBin = true
			slowNpx(t, w)
			installNpm(t, w, pk)
			boss := filepath.Join(w.Repo, "src", "boss.go")
			before, _ := os.ReadFile(boss)
			other := w.Agent(t, OtherActor, "codex")
			CallTool(t, other, "claim", map[string]any{"patterns": []string{"src/boss.go"}, "reason": "rework the boss fight"})

			w.Model = NewModel(t, c.Mount, func(r *Request) Reply { return Reply{Text: "unused"} })
			pc.prepare(t, w)
			pc.seed(t, w)
			snapshot := readSettings(t, pc.settings(w))
			pc.install(t, w, src)
			once := readSettings(t, pc.settings(w))
			if pc.name == "codex" { // Codex copies the plugin into its cache: only the plugin's folder
				var size int64
				filepath.WalkDir(filepath.Join(w.Home, ".codex", "plugins", "cache"), func(p string, d os.DirEntry, err error) error {
					if fi, e := os.Stat(p); err == nil && e == nil && !d.IsDir() {
						size += fi.Size()
					}
					return nil
				})
				if size == 0 || size > 64<<10 {
					t.Errorf("Codex's plugin cache holds %d bytes; the plugin is a few KB", size)
				}
			}
			pc.install(t, w, src) // again: nothing changes
			if twice := readSettings(t, pc.settings(w)); !reflect.DeepEqual(once, twice) {
				t.Errorf("a second install changed the settings:\nafter one: %v\nafter two: %v", once, twice)
			}

			play := func(label string) (*hookPlay, *RunResult) {
				p := &hookPlay{hc: hc, boss: boss, menu: filepath.Join(w.Repo, "src", "menu.go")}
				w.Model = NewModel(t, c.Mount, p.Script)
				if pc.name == "codex" { // the model's URL is in Codex's config
					rewriteCodexModel(t, w)
				}
				run := pc.run(t, w, "Rework the boss and add a title menu.")
				for _, f := range w.Model.Failures() {
					t.Errorf("%s: model endpoint: %s", label, f)
				}
				if len(p.calls) < 2 {
					t.Fatalf("%s: the play stopped after %d calls (exit %d); stderr:\n%s\nstdout:\n%s", label, len(p.calls), run.ExitCode, tail(run.Stderr, 3000), tail(run.Stdout, 3000))
				}
				if after, _ := os.ReadFile(boss); string(after) != string(before) {
					t.Errorf("%s: %s changed although %s holds it", label, boss, OtherActor)
				}
				denied := p.result(hc.edit(boss).Name, boss)
				if denied == nil || !strings.Contains(denied.Text, OtherActor) || !strings.Contains(denied.Text, "stopped this edit") {
					t.Errorf("%s: the model did not get the hook's reason for the denied edit: %+v", label, denied)
				} else if n := strings.Count(denied.Text, "stopped this edit"); n != 1 {
					t.Errorf("%s: the denial reached the model %d times (two hooks ran?):\n%s", label, n, denied.Text)
				}
				// Every crosscode tool offered, each once.
				for _, name := range []string{"claim", "release_claim", "workspace_status", "run_scenario"} {
					var offered []string
					for _, o := range p.tools {
						if strings.Contains(o, "crosscode") && baseTool(o) == name {
							offered = append(offered, o)
						}
					}
					if len(offered) != 1 {
						t.Errorf("%s: tool %s offered %d times to the model: %v (all: %v)", label, name, len(offered), offered, p.tools)
					}
				}
				return p, run
			}

			// The first session on this machine: crosscode-mcp never ran
			// and is on no PATH, so the package starts it through npx, and
			// the server records its binary. The model answers once the
			// record is there: npx may take longer than the client waits
			// (Codex's turn does not wait), and the client would stop the
			// server before it started.
			// (The other agent's server, the test's own build, recorded
			// itself: forgotten, as on a machine where it never ran.)
			record := filepath.Join(w.Home, ".cache", "crosscode-mcp", "binary")
			if err := os.Remove(record); err != nil {
				t.Fatal(err)
			}
			w.Model = NewModel(t, c.Mount, func(r *Request) Reply {
				for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
					if _, err := os.Stat(record); err == nil {
						break
					}
				}
				return Reply{Text: "Hello."}
			})
			if pc.name == "codex" {
				rewriteCodexModel(t, w)
			}
			pc.run(t, w, "Hello.")
			rec, err := os.ReadFile(record)
			if err != nil || !strings.Contains(string(rec), filepath.Join(w.Home, ".npm-global")) {
				t.Fatalf("the npx-started server did not record its binary: %q %v", rec, err)
			}

			// From then on the package starts that binary itself: Codex,
			// with its default wait of a second, offers the tools at once.
			p, _ := play("plugin")
			if !strings.Contains(p.context, skillPhrase) && !slices.ContainsFunc(p.tools, func(s string) bool {
				return strings.Contains(s, "crosscode") && strings.Contains(strings.ToLower(s), "skill")
			}) {
				t.Errorf("the skill did not reach the model; its first request's context:\n%s", tail(p.context, 4000))
			}

			// Beside crosscode-mcp wired by hand: each tool once, one denial.
			pc.handWire(t, w, w.Bin)
			play("plugin and hand-wired")

			// Uninstall both: the settings read as before.
			pc.uninstall(t, w, src)
			runIn(t, w, w.Bin, []string{"hooks", "uninstall", "--client", clientFlag(pc.name), "--scope", "user"})
			removeHandWired(t, w, pc.name)
			if after := readSettings(t, pc.settings(w)); !reflect.DeepEqual(snapshot, after) {
				t.Errorf("after uninstall the settings are not what they were:\nbefore: %v\nafter:  %v", snapshot, after)
			}
		})
	}
}

func clientFlag(name string) string { return name }

// baseTool is an offered tool's own name without its client's server
// prefix (mcp__plugin_crosscode_crosscode__claim, mcp_crosscode_claim,
// crosscode_claim: claim).
func baseTool(offered string) string {
	if i := strings.LastIndex(offered, "__"); i >= 0 {
		return offered[i+2:]
	}
	return strings.TrimPrefix(strings.TrimPrefix(offered, "mcp_"), "crosscode_")
}

// readSettings decodes each settings file (JSON or TOML) into a value to
// compare: what a client reads, not how it is formatted.
func readSettings(t *testing.T, paths []string) map[string]any {
	t.Helper()
	out := map[string]any{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if os.IsNotExist(err) {
			out[p] = nil
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		var v map[string]any
		if strings.HasSuffix(p, ".toml") {
			_, err = toml.Decode(string(b), &v)
		} else {
			err = json.Unmarshal(b, &v)
		}
		if err != nil {
			t.Fatalf("%s: %v\n%s", p, err, b)
		}
		dropEmpty(v)
		out[p] = v
	}
	return out
}

// dropEmpty removes empty objects and lists (a client may leave
// "enabledPlugins": {} behind; it reads the same as none), and the
// model's base_url, which the test itself moves between runs.
func dropEmpty(m map[string]any) {
	delete(m, "base_url")
	for k, v := range m {
		switch x := v.(type) {
		case map[string]any:
			dropEmpty(x)
			if len(x) == 0 {
				delete(m, k)
			}
		case []any:
			if len(x) == 0 {
				delete(m, k)
			}
		case []map[string]any:
			if len(x) == 0 {
				delete(m, k)
			}
		}
	}
}

// checkoutCopy copies the repository's files (tracked, and new ones not
// ignored: what a clone of this commit has) into a fresh git repository,
// as `marketplace add` of a clone sees it.
func checkoutCopy(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	dst := filepath.Join(t.TempDir(), "crosscode-mcp")
	for _, rel := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		from := filepath.Join(root, filepath.FromSlash(rel))
		fi, err := os.Lstat(from)
		if err != nil || !fi.Mode().IsRegular() {
			continue // deleted in the work tree, or a link
		}
		b, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		to := filepath.Join(dst, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to, b, fi.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "."}, {"-c", "user.email=ci@example.com", "-c", "user.name=ci", "commit", "-qm", "checkout"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dst
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_CONFIG_NOSYSTEM=1")
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, b)
		}
	}
	return dst
}

// installNpm installs the checkout's npm packages (the launcher and the
// host's platform package) into the world's npm prefix, offline, and
// leaves an .npmrc in its HOME that keeps npm (and npx) offline there, so
// `npx -y crosscode-mcp` runs them.
func installNpm(t *testing.T, w *World, pk *npmtest.Packages) {
	t.Helper()
	prefix := filepath.Join(w.Home, ".npm-global")
	rc := strings.Join([]string{
		"prefix=" + prefix, "cache=" + filepath.Join(w.Root, "npm-cache"), "offline=true",
		"registry=http://127.0.0.1:9/", "audit=false", "fund=false", "update-notifier=false", "loglevel=warn",
	}, "\n") + "\n"
	if err := os.WriteFile(filepath.Join(w.Home, ".npmrc"), []byte(rc), 0o644); err != nil {
		t.Fatal(err)
	}
	runIn(t, w, "npm", []string{"install", "-g", pk.Launcher, pk.Platform})
	if _, err := os.Stat(filepath.Join(prefix, "bin", "crosscode-mcp")); err != nil {
		t.Fatalf("npm install -g put no crosscode-mcp in %s: %v", prefix, err)
	}
	if out := runIn(t, w, "npx", []string{"-y", "crosscode-mcp", "version"}); !strings.Contains(out, npmtest.Version) {
		t.Fatalf("npx -y crosscode-mcp version in the world: %s", out)
	}
}

// slowNpx puts first on the world's PATH an npx that waits 2 s, then runs
// npm's: the world's npm is offline, with the package installed, where a
// user's npx asks the registry first (and downloads the package the first
// time), which takes a second or more. A client that does not wait that
// long for a server (Codex) shows it.
func slowNpx(t *testing.T, w *World) {
	t.Helper()
	npx, err := exec.LookPath("npx")
	if err != nil {
		t.Fatal(err)
	}
	w.PathFirst = filepath.Join(w.Root, "slow-npx")
	if err := os.MkdirAll(w.PathFirst, 0o755); err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\nsleep 2\nexec '" + npx + "' \"$@\"\n"
	if err := os.WriteFile(filepath.Join(w.PathFirst, "npx"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
}

// removeHandWired removes the server handWire added, with the client's
// own command.
func removeHandWired(t *testing.T, w *World, client string) {
	t.Helper()
	switch client {
	case "claude-code":
		runIn(t, w, claudeBin(t), []string{"mcp", "remove", "crosscode", "-s", "user"}, claudeEnv(w)...)
	case "codex":
		runIn(t, w, "node", []string{codexBin(t), "mcp", "remove", "crosscode"}, codexEnv(w)...)
	case "gemini":
		runIn(t, w, "node", append([]string{geminiBin(t)}, "mcp", "remove", "--scope", "user", "crosscode"), geminiEnv(w)...)
	}
}

// rewriteCodexModel points Codex's config at the world's current model,
// keeping the rest of the file.
func rewriteCodexModel(t *testing.T, w *World) {
	t.Helper()
	p := filepath.Join(w.Home, ".codex", "config.toml")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "base_url = ") {
			lines[i] = `base_url = "` + w.Model.URL + `/v1"`
		}
	}
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestPackageValidate: the clients' own validators accept the packages:
// `claude plugin validate` the marketplace and the plugin, `gemini
// extensions validate` the extension.
func TestPackageValidate(t *testing.T) {
	sysdeps.Need(t, "node")
	src := checkoutCopy(t)
	w := NewWorld(t)
	w.Model = NewModel(t, mountMessages, func(r *Request) Reply { return Reply{Text: "unused"} })
	for _, target := range []string{filepath.Join(src, ".claude-plugin", "marketplace.json"), filepath.Join(src, "plugins", "crosscode")} {
		out := runIn(t, w, claudeBin(t), []string{"plugin", "validate", target}, claudeEnv(w)...)
		if !strings.Contains(out, "Validation passed") {
			t.Errorf("claude plugin validate %s:\n%s", target, out)
		}
		if strings.Contains(out, "hooks.json") && strings.Contains(out, "BeforeTool") {
			t.Errorf("claude plugin validate %s read the extension's (Gemini's) hooks:\n%s", target, out)
		}
	}
	out := runIn(t, w, "node", []string{geminiBin(t), "extensions", "validate", src}, geminiEnv(w)...)
	if !strings.Contains(out, "successfully validated") {
		t.Errorf("gemini extensions validate:\n%s", out)
	}
}

// TestOpenCodeSkill: OpenCode has no package format for what the plugin
// brings; its MCP entry is the README's opencode.json (TestPlay), and
// `crosscode-mcp skill install --client opencode` puts the skill where
// OpenCode reads skills: its model is told of it.
func TestOpenCodeSkill(t *testing.T) {
	c := clients[slices.IndexFunc(clients, func(c *Client) bool { return c.Name == "opencode" })]
	w := NewWorld(t)
	var first *Request
	w.Model = NewModel(t, c.Mount, func(r *Request) Reply {
		if first == nil {
			first = r
		}
		return Reply{Text: "Noted."}
	})
	c.Configure(t, w)
	out := runIn(t, w, w.Bin, []string{"skill", "install", "--client", "opencode"})
	if !strings.Contains(out, filepath.Join(w.Home, ".config", "opencode", "skills", "crosscode")) {
		t.Fatalf("skill install: %s", out)
	}
	run := c.Run(t, w, "What do you know about working beside other agents here?")
	if first == nil {
		t.Fatalf("opencode sent no request (exit %d):\n%s", run.ExitCode, tail(run.Stderr, 3000))
	}
	if !strings.Contains(string(first.Raw), skillPhrase) {
		t.Errorf("the crosscode skill is not in OpenCode's first request to its model:\n%s", tail(string(first.Raw), 3000))
	}
	out = runIn(t, w, w.Bin, []string{"skill", "uninstall", "--client", "opencode"})
	if _, err := os.Stat(filepath.Join(w.Home, ".config", "opencode", "skills", "crosscode")); !os.IsNotExist(err) {
		t.Errorf("skill uninstall left the folder: %v\n%s", err, out)
	}
}
