package agentclients

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/crosscode/crosscode-mcp/internal/proctree"
	"github.com/crosscode/crosscode-mcp/internal/testing/storetest"
	"github.com/crosscode/crosscode-mcp/internal/testing/sysdeps"
	"github.com/crosscode/crosscode-mcp/protocol"
)

// Client is one real agent client under test.
type Client struct {
	// Name is the client's name in the README and the tests.
	Name string
	// Provider is the agent.provider crosscode-mcp stamps when this client
	// starts it (derived from the client's clientInfo).
	Provider protocol.Provider
	// Mount serves the client's model API (its wire format) on mux.
	Mount func(mux *http.ServeMux, m *Model)
	// Configure adds crosscode-mcp to the client's configuration in w the
	// way the README says (the client's own `mcp add` where it has one)
	// and points the client at w.Model.
	Configure func(t *testing.T, w *World)
	// Run runs the client headless in w.Repo with prompt until it exits.
	Run func(t *testing.T, w *World, prompt string) *RunResult
}

// RunResult is how a client's headless run ended.
type RunResult struct {
	ExitCode       int
	Stdout, Stderr string
	// ToolErrors is, by call id, whether the client's own event stream
	// reported the tool call as failed; nil when its stream does not say.
	ToolErrors map[string]bool
	// SessionID is the client's own session id, when its output names it
	// (crosscode-mcp's session reference should be it).
	SessionID string
	// SessionPrivate is true when the client gives that id to no MCP
	// server (not in the server's environment, clientInfo or a call's
	// _meta: Gemini CLI): crosscode-mcp cannot stamp it, and the play
	// checks instead that the run's envelopes share one session reference.
	SessionPrivate bool
}

// The actors of the play: the agent in the client, and another agent who
// holds a file.
const (
	Actor      = "ada@example.com"
	OtherActor = "grace@example.com"
)

// World is what a client works in: a temporary HOME with a git repository
// of a game (the demo game, through its capture config), crosscode-mcp on
// PATH, and the scripted model.
type World struct {
	Root  string // the temp dir everything is under
	Home  string // HOME (and XDG dirs) of the client
	Repo  string // the repository the client runs in: $HOME/mygame
	Bin   string // the crosscode-mcp binary (on PATH in Env)
	Model *Model
	// NoBin keeps crosscode-mcp off PATH in Env (no folder of PATH that
	// holds one): the client packages' tests, where npx starts it.
	NoBin bool
	// PathFirst, if set, is a folder put first on PATH in Env.
	PathFirst string
}

// binary is the crosscode-mcp binary BuildBinary made for this test run.
var binary string

// BuildBinary builds cmd/crosscode-mcp into dir (TestMain calls it once).
// CROSSCODE_AGENTCLIENTS_BINARY names a binary to use instead (another
// build, for the before-and-after figures of BENCHMARKS.md).
func BuildBinary(dir string) error {
	if b := os.Getenv("CROSSCODE_AGENTCLIENTS_BINARY"); b != "" {
		binary = b
		return nil
	}
	name := "crosscode-mcp"
	if exeSuffix != "" {
		name += exeSuffix
	}
	out := filepath.Join(dir, name)
	cmd := exec.Command("go", "build", "-o", out, "github.com/crosscode/crosscode-mcp/cmd/crosscode-mcp")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build crosscode-mcp: %v\n%s", err, b)
	}
	binary = out
	return nil
}

const exeSuffix = ""

// clients are the real clients under test, each defined in its own file
// and registered there with Register.
var clients []*Client

// Register adds a client to the tests (from its file's init).
func Register(c *Client) { clients = append(clients, c) }

// NewWorld makes a world: the repository has src/hero.go and src/boss.go
// and a capture config that launches the demo game (with gameArgs after
// `crosscode-mcp demo-game`, such as "-pace", "0.75").
func NewWorld(t *testing.T, gameArgs ...string) *World {
	t.Helper()
	sysdeps.SkipUnderWine(t, "the agent clients are installed for Linux here (npm packages of this machine's platform)")
	if binary == "" {
		t.Fatal("agentclients: BuildBinary was not called (TestMain)")
	}
	root := t.TempDir()
	w := &World{Root: root, Home: filepath.Join(root, "home"), Bin: binary}
	w.Repo = filepath.Join(w.Home, "mygame")
	files := map[string]string{
		"src/hero.go":             "package game\n\n// Hero is the player.\ntype Hero struct{ HP int }\n",
		"src/boss.go":             "package game\n\n// Boss is the Golem King.\ntype Boss struct{ HP int }\n",
		"README.md":               "# mygame\n",
		".crosscode/capture.json": captureConfig(w.Bin, gameArgs),
		"../.gitconfig":           "[user]\n\temail = " + Actor + "\n\tname = Ada\n[init]\n\tdefaultBranch = main\n",
	}
	for _, dir := range []string{".config", ".cache", filepath.Join(".local", "share"), filepath.Join(".local", "state"), "tmp"} {
		if err := os.MkdirAll(filepath.Join(w.Home, dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for rel, body := range files {
		p := filepath.Join(w.Repo, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "."}, {"commit", "-qm", "init"}} {
		w.git(t, args...)
	}
	return w
}

// captureConfig launches the demo game.
func captureConfig(bin string, gameArgs []string) string {
	cmd, _ := json.Marshal(append([]string{bin, "demo-game"}, gameArgs...))
	return `{"game": {"command": ` + string(cmd) + "}}\n"
}

func (w *World) git(t *testing.T, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = w.Repo
	cmd.Env = w.Env()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v %s", args, err, out)
	}
}

// Env is the environment of a process in the world: this machine's PATH
// after crosscode-mcp's folder, HOME and the XDG folders in the world,
// nothing of the test's own crosscode settings; then extra.
func (w *World) Env(extra ...string) []string {
	keep := []string{"PATH", "LANG", "LC_ALL", "TERM", "SYSTEMROOT", "WINDIR"}
	var env []string
	for _, k := range keep {
		if v, ok := os.LookupEnv(k); ok {
			if k == "PATH" && w.NoBin {
				var dirs []string
				for _, d := range filepath.SplitList(v) {
					if _, err := os.Stat(filepath.Join(d, "crosscode-mcp"+exeSuffix)); err != nil {
						dirs = append(dirs, d)
					}
				}
				v = strings.Join(dirs, string(os.PathListSeparator))
			} else if k == "PATH" {
				v = filepath.Dir(w.Bin) + string(os.PathListSeparator) + v
			}
			if k == "PATH" && w.PathFirst != "" {
				v = w.PathFirst + string(os.PathListSeparator) + v
			}
			env = append(env, k+"="+v)
		}
	}
	env = append(env,
		"HOME="+w.Home, "USERPROFILE="+w.Home,
		"XDG_CONFIG_HOME="+filepath.Join(w.Home, ".config"),
		"XDG_CACHE_HOME="+filepath.Join(w.Home, ".cache"),
		"XDG_DATA_HOME="+filepath.Join(w.Home, ".local", "share"),
		"XDG_STATE_HOME="+filepath.Join(w.Home, ".local", "state"),
		"TMPDIR="+filepath.Join(w.Home, "tmp"),
		"GIT_CONFIG_NOSYSTEM=1",
		"NO_COLOR=1", "CI=1",
	)
	return append(env, extra...)
}

// Command is a command in the world (its dir the repository, its env
// Env(extra...)) that is killed with the test's context.
func (w *World) Command(ctx context.Context, name string, args []string, extra ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = w.Repo
	cmd.Env = w.Env(extra...)
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// Agent starts crosscode-mcp in the repository as another agent (an
// MCP client of ours, not a real one) and returns its client; it stops
// with the test.
func (w *World) Agent(t *testing.T, actor string, provider protocol.Provider) *mcpclient.Client {
	t.Helper()
	c, err := mcpclient.NewStdioMCPClient(w.Bin, w.Env(), "--repo", w.Repo, "--actor", actor, "--provider", string(provider))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	init := mcpgo.InitializeRequest{}
	init.Params.ProtocolVersion = mcpgo.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcpgo.Implementation{Name: "agentclients-test", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	return c
}

// CallTool calls a tool as an Agent and decodes its structured result.
func CallTool(t *testing.T, c *mcpclient.Client, tool string, args map[string]any) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req := mcpgo.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = args
	res, err := c.CallTool(ctx, req)
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	var out map[string]any
	b, _ := json.Marshal(res.StructuredContent)
	json.Unmarshal(b, &out)
	if res.IsError {
		t.Fatalf("%s: tool error: %v", tool, res.Content)
	}
	return out
}

// ServerTools are the names of the tools crosscode-mcp lists in this
// world.
func (w *World) ServerTools(t *testing.T) []string {
	t.Helper()
	c := w.Agent(t, "lister@example.com", protocol.ProviderUnknown)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := c.ListTools(ctx, mcpgo.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	return names
}

// Envelopes are the envelopes of the repository's local workspace log
// (local mode), in server order.
func (w *World) Envelopes(t *testing.T) []*protocol.Envelope {
	t.Helper()
	return storetest.ReadLog(t, filepath.Join(w.Repo, ".git", "crosscode", "workspace.db"), "mygame")
}

// tail is the last n bytes of s, for failure messages.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}

// lines splits text into non-empty lines.
func lines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out
}

// RunTimeout bounds a client's headless run.
const RunTimeout = 5 * time.Minute

// Exec runs a client's command (made with Command) to its end, at most
// RunTimeout, as a process tree that is killed whole at the end: whatever
// the client started and left (crosscode-mcp, the game) ends with it. It
// returns the exit code and output; name is for messages.
func Exec(t *testing.T, name string, cmd *exec.Cmd) *RunResult {
	t.Helper()
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if cmd.Stdin == nil {
		cmd.Stdin = strings.NewReader("")
	}
	proctree.Prepare(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	tree, err := proctree.Attach(cmd)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var werr error
	select {
	case werr = <-done:
	case <-time.After(RunTimeout):
		tree.Kill()
		werr = <-done
		t.Errorf("%s did not end in %v: killed", name, RunTimeout)
	}
	tree.Kill()
	tree.Close()
	res := &RunResult{Stdout: stdout.String(), Stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case werr == nil:
	case errors.As(werr, &exit):
		res.ExitCode = exit.ExitCode()
	default:
		t.Fatalf("%s: %v", name, werr)
	}
	return res
}

// Dump writes a run's output, the extra files and every request the client
// sent its model under CROSSCODE_AGENTCLIENTS_DUMP/<test name>/, when that
// is set: for looking at what a client really sent.
func (w *World) Dump(t *testing.T, res *RunResult, extra map[string]string) {
	root := os.Getenv("CROSSCODE_AGENTCLIENTS_DUMP")
	if root == "" {
		return
	}
	dir := filepath.Join(root, strings.ReplaceAll(t.Name(), "/", "_"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Logf("dump: %v", err)
		return
	}
	files := map[string]string{"stdout": res.Stdout, "stderr": res.Stderr}
	for name, body := range extra {
		files[name] = body
	}
	for _, r := range w.Model.Requests() {
		files[fmt.Sprintf("req%02d.json", r.N)] = string(r.Raw)
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Logf("dump: %v", err)
		}
	}
}
