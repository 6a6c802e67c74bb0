package agentclients

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crosscode/crosscode-mcp/bridge/coord"
	"github.com/crosscode/crosscode-mcp/protocol"
)

// Agent hooks in the real clients (issue 18): `crosscode-mcp hooks
// install` in the repository, the policy claim in .crosscode/hooks.json,
// and the scripted model makes the client edit a file another agent holds
// (denied: the file is unchanged and the model got the reason), then write
// a free file (claimed for the agent, then written); after a handoff to
// the agent, its next session's first request carries it in the context.

// hookClient is what the hook play needs of a client beyond Client: its
// file tools and how they name a file's path and content.
type hookClient struct {
	name string
	// read is the tool to read a file first (Claude Code refuses to edit
	// one it has not read), "" for none.
	read string
	// edit makes the call that changes file, write the one that creates it.
	edit, write func(file string) Call
	// allow lets the file tools run in a headless run (the hooks still
	// decide first).
	allow func(t *testing.T, w *World)
	// scope is where hooks install puts them (default project); run, when
	// set, runs the client instead of its Client.Run.
	scope string
	run   func(t *testing.T, w *World, prompt string) *RunResult
}

var hookClients = []hookClient{
	{
		name: "claude-code",
		read: "Read",
		edit: func(file string) Call {
			return Call{Name: "Edit", Args: map[string]any{"file_path": file, "old_string": "Golem King", "new_string": "Stone King"}}
		},
		write: func(file string) Call {
			return Call{Name: "Write", Args: map[string]any{"file_path": file, "content": menuGo}}
		},
		allow: func(t *testing.T, w *World) {
			// -p has no one to ask: the file tools are allowed in the
			// repository's local settings (the hooks run before the
			// permission check and can still deny).
			writeJSON(t, filepath.Join(w.Repo, ".claude", "settings.local.json"), map[string]any{
				"permissions": map[string]any{"allow": []string{"Read", "Edit", "Write"}},
			})
		},
	},
	{
		name: "gemini",
		edit: func(file string) Call {
			return Call{Name: "write_file", Args: map[string]any{"file_path": file, "content": "package game\n\n// Boss is the Stone King.\ntype Boss struct{ HP int }\n"}}
		},
		write: func(file string) Call {
			return Call{Name: "write_file", Args: map[string]any{"file_path": file, "content": menuGo}}
		},
		allow: func(t *testing.T, w *World) {}, // --yolo
	},
	{
		// Codex 0.169.0 offers apply_patch as a freeform (custom) tool,
		// which the scripted Responses endpoint does not play; a patch
		// through its shell tool is applied the same way and goes through
		// PreToolUse with the patch in the command.
		name: "codex",
		edit: func(file string) Call {
			return Call{Name: "exec_command", Args: map[string]any{"cmd": "apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: " + file +
				"\n@@\n-// Boss is the Golem King.\n+// Boss is the Stone King.\n*** End Patch\nEOF\n", "file_path": file}}
		},
		write: func(file string) Call {
			body := "+" + strings.ReplaceAll(strings.TrimSuffix(menuGo, "\n"), "\n", "\n+")
			return Call{Name: "exec_command", Args: map[string]any{"cmd": "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: " + file + "\n" + body + "\n*** End Patch\nEOF\n", "file_path": file}}
		},
		allow: func(t *testing.T, w *World) {}, // --dangerously-bypass-approvals-and-sandbox
		// Configure writes ~/.codex/config.toml anew: the hooks go there
		// after it (a project's .codex/config.toml needs a trusted project).
		scope: "user",
		run:   runCodexHooks,
	},
}

const menuGo = "package game\n\n// Menu is the title menu.\ntype Menu struct{}\n"

// hookPlay is the model's part: read (where needed), edit the held file,
// write the free one, end.
type hookPlay struct {
	hc      hookClient
	boss    string
	menu    string
	calls   []Call
	results map[string]*ToolResult // by call id
	context string                 // the first request's context
	tools   []string
}

func (p *hookPlay) Script(r *Request) Reply {
	if p.results == nil {
		p.results = map[string]*ToolResult{}
		p.context, p.tools = r.Context, slices.Clone(r.Tools)
	}
	for i := range r.Results {
		res := r.Results[i]
		id := res.CallID
		if _, ok := p.results[id]; !ok && len(p.calls) > 0 {
			if !slices.ContainsFunc(p.calls, func(c Call) bool { return c.ID == id }) {
				id = p.calls[len(p.calls)-1].ID // a client that numbers results its own way
			}
		}
		p.results[id] = &res
	}
	var plan []Call
	if p.hc.read != "" {
		plan = append(plan, Call{Name: p.hc.read, Args: map[string]any{"file_path": p.boss}})
	}
	plan = append(plan, p.hc.edit(p.boss), p.hc.write(p.menu))
	if len(p.calls) == len(plan) {
		return Reply{Text: "Done."}
	}
	c := plan[len(p.calls)]
	c.ID = fmt.Sprintf("call_hook%d", len(p.calls)+1)
	if name := r.Tool(c.Name); name == "" {
		return Reply{Text: "No " + c.Name + " tool is offered."}
	}
	p.calls = append(p.calls, c)
	return Reply{Calls: []Call{c}}
}

// result is what the model got for the call of tool name on file.
func (p *hookPlay) result(name, file string) *ToolResult {
	for _, c := range p.calls {
		if c.Name == name && c.Args["file_path"] == file {
			return p.results[c.ID]
		}
	}
	return nil
}

// TestHooksInClients: the hook play in Claude Code and Gemini CLI.
func TestHooksInClients(t *testing.T) {
	for _, hc := range hookClients {
		i := slices.IndexFunc(clients, func(c *Client) bool { return c.Name == hc.name })
		if i < 0 {
			t.Fatalf("%s is not registered", hc.name)
		}
		c := clients[i]
		t.Run(hc.name, func(t *testing.T) {
			t.Parallel()
			w := NewWorld(t)
			other := w.Agent(t, OtherActor, "codex")
			CallTool(t, other, "claim", map[string]any{"patterns": []string{"src/boss.go"}, "reason": "rework the boss fight"})
			boss, menu := filepath.Join(w.Repo, "src", "boss.go"), filepath.Join(w.Repo, "src", "menu.go")
			before, err := os.ReadFile(boss)
			if err != nil {
				t.Fatal(err)
			}
			p := &hookPlay{hc: hc, boss: boss, menu: menu}
			w.Model = NewModel(t, c.Mount, p.Script)
			if hc.scope != "user" {
				installHooks(t, w, hc.name, "project")
			}
			c.Configure(t, w)
			if hc.scope == "user" {
				installHooks(t, w, hc.name, "user")
			}
			hc.allow(t, w)
			runIt := c.Run
			if hc.run != nil {
				runIt = hc.run
			}
			run := runIt(t, w, "Rework the boss and add a title menu.")
			for _, f := range w.Model.Failures() {
				t.Errorf("model endpoint: %s", f)
			}
			if len(p.calls) < 2 {
				t.Fatalf("the play stopped after %d calls (exit %d); stderr:\n%s\nstdout:\n%s", len(p.calls), run.ExitCode, tail(run.Stderr, 3000), tail(run.Stdout, 3000))
			}

			// The held file: denied before it ran, the reason to the model.
			if after, _ := os.ReadFile(boss); string(after) != string(before) {
				t.Errorf("%s changed although %s holds it:\n%s", boss, OtherActor, after)
			}
			denied := p.result(hc.edit(boss).Name, boss)
			if denied == nil || !strings.Contains(denied.Text, OtherActor) || !strings.Contains(denied.Text, "src/boss.go") || !strings.Contains(denied.Text, "stopped this edit") {
				t.Errorf("the model did not get the hook's reason for the denied edit: %+v", denied)
			} else if denied.ErrorFlag && !denied.IsError {
				t.Errorf("the denied edit's result is not flagged as an error: %+v", denied)
			}
			if id, ok := run.ToolErrors[p.calls[len(p.calls)-2].ID]; ok && !id {
				t.Errorf("the client's own events do not report the denied edit as failed")
			}

			// The free file: claimed for the agent, then written.
			if b, err := os.ReadFile(menu); err != nil || string(b) != menuGo {
				t.Errorf("the free file was not written: %v %q; its result: %+v", err, b, p.result(hc.write(menu).Name, menu))
			}
			var claim *protocol.Envelope
			for _, e := range w.Envelopes(t) {
				if cl, ok := e.Payload.(*protocol.Claim); ok && e.Type == protocol.EventClaimCreated && slices.Equal(cl.Patterns, []string{"src/menu.go"}) {
					claim = e
				}
			}
			switch {
			case claim == nil:
				t.Errorf("no claim of src/menu.go in the log")
			case claim.ActorID != Actor || !claim.Payload.(*protocol.Claim).Exclusive || claim.Payload.(*protocol.Claim).Reason != coord.HookClaimReason:
				t.Errorf("the hook's claim: actor %s, %+v", claim.ActorID, claim.Payload)
			case run.SessionID != "" && (claim.Agent == nil || claim.Agent.SessionReference != run.SessionID):
				t.Errorf("the hook's claim is not stamped with the client's session id %s: %+v", run.SessionID, claim.Agent)
			}

			// A handoff to the agent: its next session's first request has it.
			h := CallTool(t, other, "request_handoff", map[string]any{"toActor": Actor, "summary": "take over the boss fight, the golem is yours"})
			hid, _ := h["handoff"].(map[string]any)["handoffId"].(string)
			next := &hookPlay{hc: hc, boss: boss, menu: menu}
			next.calls = make([]Call, 3) // nothing to call: answer at once
			w.Model = NewModel(t, c.Mount, func(r *Request) Reply {
				if next.results == nil {
					next.results = map[string]*ToolResult{}
					next.context = r.Context
				}
				return Reply{Text: "Noted."}
			})
			if hc.scope == "user" { // the model's URL is in Codex's config
				c.Configure(t, w)
				installHooks(t, w, hc.name, "user")
			} // (the others take it from their environment)
			runIt(t, w, "What is new?")
			if !strings.Contains(next.context, "take over the boss fight") || !strings.Contains(next.context, hid) || !strings.Contains(next.context, OtherActor) {
				t.Errorf("the next session's first request does not carry the handoff %s in its context:\n%s", hid, tail(next.context, 4000))
			}
		})
	}
}

// installHooks runs `crosscode-mcp hooks install` for client in the
// repository, with the policy claim in .crosscode/hooks.json.
func installHooks(t *testing.T, w *World, client, scope string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := w.Command(ctx, w.Bin, []string{"hooks", "install", "--client", client, "--scope", scope})
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("hooks install: %v\n%s", err, out)
	}
	os.MkdirAll(filepath.Join(w.Repo, ".crosscode"), 0o755)
	if err := os.WriteFile(filepath.Join(w.Repo, ".crosscode", "hooks.json"), []byte(`{"policy": "claim"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// runCodexHooks runs `codex exec --json` as runCodex does, and with
// --dangerously-bypass-hook-trust: Codex runs a hook of the user's config
// only once the user reviewed it (/hooks in its TUI), which a headless
// test cannot; the flag stands for that review. The session id is exec's
// thread id.
func runCodexHooks(t *testing.T, w *World, prompt string) *RunResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	args := []string{codexBin(t), "exec", "--json", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox",
		"--dangerously-bypass-hook-trust", "--color", "never", "-C", w.Repo, prompt}
	cmd := w.Command(ctx, "node", args, codexEnv(w)...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Stdin = strings.NewReader("")
	err := cmd.Run()
	res := &RunResult{Stdout: stdout.String(), Stderr: stderr.String()}
	if cmd.ProcessState != nil {
		res.ExitCode = cmd.ProcessState.ExitCode()
	} else if err != nil {
		t.Fatalf("codex: %v", err)
	}
	for _, l := range lines(res.Stdout) {
		var ev struct {
			Type     string `json:"type"`
			ThreadID string `json:"thread_id"`
		}
		if json.Unmarshal([]byte(l), &ev) == nil && ev.Type == "thread.started" {
			res.SessionID = ev.ThreadID
		}
	}
	return res
}
