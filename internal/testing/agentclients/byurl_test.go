package agentclients

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/crosscode/crosscode-mcp/protocol"
)

// Agents in the cloud (issue 26): a real client connects to the
// coordination service's /mcp by URL, with the workspace token taken from
// an environment variable (never written into its configuration), claims
// a file, is denied one another agent holds, and the other agent then
// cannot take the file it claimed.

// service is a running `crosscode-mcp serve` and a workspace token.
type service struct {
	URL, Token string
}

// startService starts `serve` on loopback in the world.
func startService(t *testing.T, w *World) *service {
	t.Helper()
	data := filepath.Join(w.Root, "hub")
	out, err := exec.Command(w.Bin, "token", "create", "--data", data, "--workspace", "mygame").Output()
	if err != nil {
		t.Fatalf("token create: %v", err)
	}
	s := &service{Token: strings.TrimSpace(string(out))}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, w.Bin, "serve", "--listen", "127.0.0.1:0", "--data", data)
	cmd.Env = w.Env()
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		cmd.Wait()
	})
	line, err := bufio.NewReader(pipe).ReadString('\n')
	u, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on ")
	if err != nil || !ok {
		t.Fatalf("serve: %q %v", line, err)
	}
	s.URL = u
	return s
}

// events reads the workspace log.
func (s *service) events(t *testing.T) []*protocol.Envelope {
	t.Helper()
	req, _ := http.NewRequest("GET", s.URL+"/v1/events?protocolVersion=2&limit=1000", nil)
	req.Header.Set("Authorization", "Bearer "+s.Token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	p, err := protocol.DecodePageResponse(b)
	if err != nil || p.Page == nil {
		t.Fatalf("GET /v1/events: %v %s", err, b)
	}
	return p.Page.Items
}

// httpAgent connects an agent of ours to the service's /mcp as actor.
func (s *service) httpAgent(t *testing.T, actor string) *mcpclient.Client {
	t.Helper()
	c, err := mcpclient.NewStreamableHttpClient(s.URL+"/mcp", transport.WithHTTPHeaders(map[string]string{
		"Authorization": "Bearer " + s.Token, "X-Crosscode-Actor": actor}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	init := mcpgo.InitializeRequest{}
	init.Params.ClientInfo = mcpgo.Implementation{Name: "agentclients-test", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	return c
}

// claimPlay is the play by URL: claim src/hero.go (granted), claim
// src/boss.go (held by OtherActor: denied), a final text.
type claimPlay struct {
	results []ToolResult
	tools   []string
}

func (p *claimPlay) Script(r *Request) Reply {
	p.results = append(p.results, r.Results...)
	if p.tools == nil {
		p.tools = r.Tools
	}
	switch len(p.results) {
	case 0:
		return Reply{Calls: []Call{{Name: r.Tool("claim"), Args: map[string]any{"patterns": []string{"src/hero.go"}, "reason": "hero rework"}}}}
	case 1:
		return Reply{Calls: []Call{{Name: r.Tool("claim"), Args: map[string]any{"patterns": []string{"src/boss.go"}}}}}
	}
	return Reply{Text: "Claimed src/hero.go; src/boss.go is held by someone else."}
}

// docURL is the service URL the configuration lines of the guide name.
const docURL = "https://coord.example.com/mcp"

// docLine returns the configuration line of docs/agents-in-the-cloud.md
// that starts with prefix, split into words as a shell would (quotes
// removed), with the guide's URL replaced by url: the tests run the lines
// users copy.
func docLine(t *testing.T, prefix, url string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "agents-in-the-cloud.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		var words []string
		for _, w := range regexp.MustCompile(`'[^']*'|"[^"]*"|\S+`).FindAllString(line, -1) {
			w = strings.Trim(w, `'"`)
			if w == docURL {
				w = url
			}
			words = append(words, w)
		}
		return words
	}
	t.Fatalf("docs/agents-in-the-cloud.md has no line starting %q", prefix)
	return nil
}

// byURL is how each client is pointed at the service: the configuration
// line of docs/agents-in-the-cloud.md, and its run with the token in
// CROSSCODE_TOKEN.
var byURL = []struct {
	client    string
	actor     string // the actor the service stamps (the client's name unless a header says)
	configure func(t *testing.T, w *World, url string) string
	run       func(t *testing.T, w *World, token string) *RunResult
}{
	{
		client: "claude-code", actor: "you@example.com", // the guide's X-Crosscode-Actor
		configure: func(t *testing.T, w *World, url string) string {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := w.Command(ctx, claudeBin(t), docLine(t, "claude mcp add", url)[1:], claudeEnv(w)...)
			cmd.Stdin = strings.NewReader("")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("claude mcp add --transport http: %v\n%s", err, out)
			}
			return filepath.Join(w.Home, ".claude.json")
		},
		run: func(t *testing.T, w *World, token string) *RunResult {
			return runClaude(t, w, "Claim src/hero.go and src/boss.go.", "CROSSCODE_TOKEN="+token).RunResult
		},
	},
	{
		client: "codex", actor: "codex-mcp-client",
		configure: func(t *testing.T, w *World, url string) string {
			codexConfig(t, w)
			line := docLine(t, "codex mcp add crosscode", url)
			codexMCPAdd(t, w, line[4:]...)
			return filepath.Join(w.Home, ".codex", "config.toml")
		},
		run: func(t *testing.T, w *World, token string) *RunResult {
			return runCodex(t, w, "Claim src/hero.go and src/boss.go.", "CROSSCODE_TOKEN="+token)
		},
	},
	{
		client: "gemini", actor: "you@example.com",
		configure: func(t *testing.T, w *World, url string) string {
			line := docLine(t, "gemini mcp add", url)
			// The guide's line has --transport http -s user; the helper
			// adds the scope itself.
			var args []string
			for i := 3; i < len(line); i++ {
				if line[i] == "-s" {
					i++
					continue
				}
				args = append(args, line[i])
			}
			geminiMCPAdd(t, w, func(server map[string]any) bool { return server["httpUrl"] == url || server["url"] == url }, args...)
			return filepath.Join(w.Home, ".gemini", "settings.json")
		},
		run: func(t *testing.T, w *World, token string) *RunResult {
			return runGemini(t, w, "Claim src/hero.go and src/boss.go.", "CROSSCODE_TOKEN="+token)
		},
	},
	{
		client: "opencode", actor: "you@example.com",
		configure: func(t *testing.T, w *World, url string) string {
			configureOpenCode(t, w)
			// The project's opencode.json: the guide's block in place of the
			// local server.
			var cfg map[string]any
			if err := json.Unmarshal([]byte(strings.ReplaceAll(docBlock(t, "**OpenCode**"), docURL, url)), &cfg); err != nil {
				t.Fatalf("the guide's OpenCode block: %v", err)
			}
			path := filepath.Join(w.Repo, "opencode.json")
			opencodeWriteJSON(t, path, cfg)
			return path
		},
		run: func(t *testing.T, w *World, token string) *RunResult {
			return runOpenCode(t, w, "Claim src/hero.go and src/boss.go.", "CROSSCODE_TOKEN="+token)
		},
	},
}

// docBlock returns the first fenced block after the line of
// docs/agents-in-the-cloud.md that starts with heading.
func docBlock(t *testing.T, heading string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "agents-in-the-cloud.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(b), "\n"+heading)
	_, after, ok2 := strings.Cut(after, "```json\n")
	block, _, ok3 := strings.Cut(after, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatalf("docs/agents-in-the-cloud.md has no json block after %q", heading)
	}
	return block
}

// TestByURL: Claude Code, Codex, Gemini CLI and OpenCode connect to /mcp
// by URL with the token from the environment (configured with the guide's
// own lines), claim, are denied, and hold their claim against another
// agent.
func TestByURL(t *testing.T) {
	for _, tc := range byURL {
		t.Run(tc.client, func(t *testing.T) {
			t.Parallel()
			w := NewWorld(t)
			svc := startService(t, w)
			other := svc.httpAgent(t, OtherActor)
			CallTool(t, other, "claim", map[string]any{"patterns": []string{"src/boss.go"}, "reason": "rework the boss fight"})
			p := &claimPlay{}
			var c *Client
			for _, cl := range clients {
				if cl.Name == tc.client {
					c = cl
				}
			}
			w.Model = NewModel(t, c.Mount, p.Script)
			cfg := tc.configure(t, w, svc.URL+"/mcp")
			if b, err := os.ReadFile(cfg); err != nil || strings.Contains(string(b), svc.Token) || !strings.Contains(string(b), "/mcp") {
				t.Fatalf("%s: the configuration must name the URL and not hold the token (%v):\n%s", cfg, err, b)
			}
			res := tc.run(t, w, svc.Token)
			if len(p.results) != 2 {
				t.Fatalf("%s forwarded %d tool results, want 2 (exit %d)\nstderr: %s", tc.client, len(p.results), res.ExitCode, tail(res.Stderr, 2000))
			}
			if got := p.results[0].Text; !strings.Contains(got, `"granted"`) {
				t.Fatalf("the claim of src/hero.go reached the model as %s", tail(got, 600))
			}
			if got := p.results[1].Text; !strings.Contains(got, `"denied"`) || !strings.Contains(got, OtherActor) {
				t.Fatalf("the claim of src/boss.go reached the model as %s", tail(got, 600))
			}
			// The other agent cannot take the file the client claimed.
			denied := CallTool(t, other, "claim", map[string]any{"patterns": []string{"src/hero.go"}})
			if denied["status"] != "denied" || !strings.Contains(denied["next"].(string), tc.actor) {
				t.Fatalf("the other agent's claim of src/hero.go: %v", denied)
			}
			// The client's claim is stamped with its provider.
			var stamped *protocol.Envelope
			for _, e := range svc.events(t) {
				if cl := e.Claim(); cl != nil && e.Type == protocol.EventClaimCreated && cl.Patterns[0] == "src/hero.go" && stamped == nil {
					stamped = e // the client's; the other agent's denied one came after
				}
			}
			if e := stamped; e == nil || e.Agent == nil || e.Agent.Provider != c.Provider || e.ActorID != tc.actor || e.Agent.SessionReference == "" {
				b, _ := json.Marshal(e)
				t.Fatalf("the %s agent's claim is not stamped with its provider, actor and session: %s", c.Provider, b)
			}
		})
	}
}
