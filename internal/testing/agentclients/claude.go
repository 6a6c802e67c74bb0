package agentclients

// Claude Code (@anthropic-ai/claude-code 2.1.328), read in the JavaScript
// its native binary embeds (@anthropic-ai/claude-code-linux-x64/claude;
// `strings` shows it, minified: the function names below are the
// bundle's) and seen on the wire (its requests to this endpoint, and
// stdio captures of crosscode-mcp and of a stand-in server):
//
//   - MCP handshake: with a stdio server it probes server/discover and,
//     when the server offers 2026-07-28 (crosscode-mcp does), connects on
//     it: no initialize; every request carries _meta
//     io.modelcontextprotocol/protocolVersion, clientInfo {name
//     "claude-code", title "Claude Code", version "2.1.328", ...} and
//     clientCapabilities. MCP_PROTOCOL_NEGOTIATION=legacy (function Mi)
//     makes it initialize with 2025-11-25 and the same clientInfo. A
//     tools/call's _meta has claudecode/toolUseId (the model's call id)
//     and a progressToken. The server's environment has
//     CLAUDE_CODE_SESSION_ID, the session id of its stream-json init
//     event (crosscode-mcp's session reference), and CLAUDECODE=1.
//   - Tool timeout (function ii): the server's "timeout" in its config
//     (>= 1 s), else MCP_TOOL_TIMEOUT, else 1e8 ms (27.8 h); progress does
//     not extend it. There is also an idle timeout, 30 min for a stdio
//     server (CLAUDE_CODE_MCP_TOOL_IDLE_TIMEOUT; function Kl).
//   - What the model gets of a result (function yg, then Sg):
//     with structuredContent, each non-text block (an image) and then one
//     text block, JSON.stringify(structuredContent): the result's own text
//     blocks are dropped; without it, the content blocks in order. Every
//     image is followed by a text block "[Image: source: PATH]" (Claude
//     Code saves it under ~/.claude/projects/...) and is scaled down to
//     fit 2000 px on its long edge (smaller ones pass as they are). A
//     result with isError reaches the model as a tool_result with
//     is_error true whose content is its text blocks only (images and
//     structuredContent dropped). A result over MAX_MCP_OUTPUT_TOKENS
//     (default 25000) is saved to a file and cut.
//   - Under 2026-07-28 it checks results against the tool's outputSchema
//     (a result without structuredContent, or with structuredContent the
//     schema rejects, becomes an error: "Tool X has an output schema but
//     did not return structured content"); under 2025-11-25 it does not.
//   - Tool search is on by default: see mountMessages.
//
// It needs no onboarding or trust state for -p. Nothing leaves loopback:
// CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC turns off telemetry, error
// reports, feature flags and update checks; -p makes no title or quota
// requests (count_tokens and tool-less requests would be side requests).

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crosscode/crosscode-mcp/protocol"
)

func init() {
	Register(&Client{
		Name:      "claude-code",
		Provider:  protocol.ProviderClaude,
		Mount:     mountMessages,
		Configure: configureClaude,
		Run: func(t *testing.T, w *World, prompt string) *RunResult {
			return runClaude(t, w, prompt).RunResult
		},
	})
}

// claudeBin is Claude Code's native binary (what its launcher runs).
func claudeBin(t testing.TB) string {
	return nativeBinary(t, "@anthropic-ai/claude-code", "claude")
}

// claudeEnv is the environment Claude Code runs with: the scripted model
// with a dummy key, and nothing that would leave loopback (no telemetry,
// error reports, update checks, feature flags, feedback surveys).
func claudeEnv(w *World, extra ...string) []string {
	env := []string{
		"ANTHROPIC_BASE_URL=" + w.Model.URL,
		"ANTHROPIC_API_KEY=sk-ant-crosscode-test",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_AUTOUPDATER=1",
		"DISABLE_TELEMETRY=1",
		"DISABLE_ERROR_REPORTING=1",
		"DISABLE_BUG_COMMAND=1",
		"CLAUDE_CODE_ENABLE_TELEMETRY=0",
	}
	return append(env, extra...)
}

// configureClaude adds crosscode-mcp the way the README says, with the
// binary on PATH (`claude mcp add crosscode -s user -- crosscode-mcp`),
// and checks that it landed in ~/.claude.json.
func configureClaude(t *testing.T, w *World) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := w.Command(ctx, claudeBin(t), []string{"mcp", "add", "crosscode", "-s", "user", "--", "crosscode-mcp"}, claudeEnv(w)...)
	cmd.Stdin = strings.NewReader("")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("claude mcp add: %v\n%s", err, out)
	}
	b, err := os.ReadFile(filepath.Join(w.Home, ".claude.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		MCPServers map[string]struct {
			Type    string   `json:"type"`
			Command string   `json:"command"`
			Args    []string `json:"args"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatalf("~/.claude.json: %v", err)
	}
	if s, ok := cfg.MCPServers["crosscode"]; !ok || s.Command != "crosscode-mcp" {
		t.Fatalf("claude mcp add did not add crosscode-mcp to ~/.claude.json:\n%s", b)
	}
}

// claudeRun is a run of Claude Code and what its debug log says of the
// MCP connection.
type claudeRun struct {
	*RunResult
	// Negotiated is the MCP protocol revision Claude Code connected to
	// crosscode-mcp with, from its debug log.
	Negotiated string
	// Debug is the debug log.
	Debug string
}

// runClaude runs `claude -p PROMPT --output-format stream-json --verbose`
// in the repository with crosscode-mcp's tools allowed (--allowedTools
// mcp__crosscode: every tool of the server, no prompt; anything else
// would be denied, as -p has no one to ask) and its debug log in the
// world (--debug-file), with extra in its environment.
func runClaude(t *testing.T, w *World, prompt string, extra ...string) *claudeRun {
	t.Helper()
	return runClaudeArgs(t, w, prompt, nil, extra...)
}

// runClaudeArgs is runClaude with more arguments on Claude Code's command
// line.
func runClaudeArgs(t *testing.T, w *World, prompt string, more []string, extra ...string) *claudeRun {
	t.Helper()
	debug := filepath.Join(w.Root, "claude-debug.log")
	args := append([]string{"-p", prompt, "--output-format", "stream-json", "--verbose",
		"--allowedTools", "mcp__crosscode", "--debug-file", debug}, more...)
	res := Exec(t, "claude", w.Command(context.Background(), claudeBin(t), args, claudeEnv(w, extra...)...))
	res.SessionID, res.ToolErrors = claudeEvents(t, res.Stdout)
	run := &claudeRun{RunResult: res}
	if b, err := os.ReadFile(debug); err == nil {
		run.Debug = string(b)
		if m := claudeNegotiated.FindStringSubmatch(run.Debug); m != nil {
			run.Negotiated = m[1]
		}
	}
	t.Logf("claude-code session %s, MCP protocol %s", res.SessionID, run.Negotiated)
	w.Dump(t, run.RunResult, map[string]string{"debug.log": run.Debug})
	return run
}

// claudeNegotiated finds the revision in the debug log's "Connection
// established with capabilities: {...}" line.
var claudeNegotiated = regexp.MustCompile(`"negotiatedProtocolVersion":"([^"]+)"`)

// claudeEvent is a line of --output-format stream-json: system init (the
// session id), assistant and user messages (the user's carry the
// tool_result blocks, with is_error), the result.
type claudeEvent struct {
	Type      string `json:"type"`
	Subtype   string `json:"subtype"`
	SessionID string `json:"session_id"`
	Message   *struct {
		Content json.RawMessage `json:"content"`
	} `json:"message"`
}

// claudeEvents reads the session id and, by call id, whether each tool
// call failed.
func claudeEvents(t *testing.T, stdout string) (string, map[string]bool) {
	t.Helper()
	var session string
	errs := map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(stdout))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(line, "{") {
			continue
		}
		var ev claudeEvent
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Errorf("claude's event stream: %v: %s", err, tail(line, 300))
			continue
		}
		if ev.Type == "system" && ev.Subtype == "init" {
			session = ev.SessionID
		}
		if ev.Type != "user" || ev.Message == nil {
			continue
		}
		blocks, _ := claudeBlocks(ev.Message.Content)
		for _, b := range blocks {
			if b.Type == "tool_result" {
				errs[b.ToolUseID] = b.IsError != nil && *b.IsError
			}
		}
	}
	return session, errs
}

// The Anthropic Messages API as Claude Code speaks it.

// messagesRequest is the part of a Messages request the adapter reads.
type messagesRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	System json.RawMessage `json:"system"`
	Tools  []struct {
		Name string `json:"name"`
	} `json:"tools"`
	Stream bool `json:"stream"`

	deferred map[string]bool // the deferred tools the request names
	loaded   []string        // the tools a ToolSearch result it carries loaded
}

// messagesBlock is a content block of a message (text, image, tool_use,
// tool_result and what else the API has: read as needed).
type messagesBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	ToolUseID string          `json:"tool_use_id"`
	ToolName  string          `json:"tool_name"` // a tool_reference's
	Content   json.RawMessage `json:"content"`
	IsError   *bool           `json:"is_error"`
	Source    *struct {
		Type      string `json:"type"`
		MediaType string `json:"media_type"`
		Data      string `json:"data"`
	} `json:"source"`
}

// claudeBlocks reads content that is a string or a list of blocks.
func claudeBlocks(raw json.RawMessage) ([]messagesBlock, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []messagesBlock{{Type: "text", Text: s}}, nil
	}
	var blocks []messagesBlock
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return nil, err
	}
	return blocks, nil
}

// mountMessages serves POST /v1/messages (streaming or not) and
// /v1/messages/count_tokens.
//
// Claude Code defers tools by default (tool search): the first request
// offers a dozen tools in full and names the rest, crosscode-mcp's among
// them, in a system message ("The following deferred tools are now
// available via ToolSearch ..."), to be loaded with the ToolSearch tool
// before use. The adapter plays that part as a model does: the deferred
// names count as offered (Request.Tools), and before the script's first
// call of a deferred tool it calls ToolSearch with "select:" and the
// tool's name, then makes the script's calls once the tools' schemas came
// back (tool_reference blocks; that request is recorded as a side
// request).
func mountMessages(mux *http.ServeMux, m *Model) {
	var (
		mu       sync.Mutex
		loaded   = map[string]bool{} // deferred tools ToolSearch loaded
		held     *Reply              // the script's reply, waiting for its ToolSearch
		searchID string              // the id of that ToolSearch call
		searches int
	)
	mux.HandleFunc("POST /v1/messages/count_tokens", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		m.Answer(&Request{Path: r.URL.Path, Raw: body, Side: true})
		writeJSONBody(w, map[string]any{"input_tokens": len(body)/4 + 1})
	})
	mux.HandleFunc("POST /v1/messages", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			m.Fail("read %s: %v", r.URL.Path, err)
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		req, mr, err := parseMessagesRequest(r.URL.Path, body, searchID)
		if err != nil {
			m.Fail("%s: %v: %s", r.URL.Path, err, tail(string(body), 500))
			req = &Request{Path: r.URL.Path, Raw: body, Side: true}
		}
		if held != nil && !req.Side {
			// The result of the adapter's ToolSearch: the schemas of the
			// tools the script is about to call, then its calls.
			rep := *held
			held, searchID = nil, ""
			for _, c := range rep.Calls {
				if mr.deferred[c.Name] && !slices.Contains(mr.loaded, c.Name) {
					m.Fail("ToolSearch did not load %s (it loaded %v)", c.Name, mr.loaded)
				}
				loaded[c.Name] = true
			}
			req.Side = true
			m.Answer(req)
			writeMessages(w, mr.Model, mr.Stream, len(body), rep)
			return
		}
		rep := m.Answer(req)
		var load []string
		for _, c := range rep.Calls {
			if mr.deferred[c.Name] && !loaded[c.Name] && !slices.Contains(load, c.Name) {
				load = append(load, c.Name)
			}
		}
		if len(load) > 0 {
			if !slices.Contains(req.Tools, "ToolSearch") {
				m.Fail("deferred tools %v but no ToolSearch tool offered", load)
			}
			searches++
			searchID = fmt.Sprintf("toolu_search_%d", searches)
			script := rep
			held = &script
			rep = Reply{Calls: []Call{{ID: searchID, Name: "ToolSearch", Args: map[string]any{
				"query": "select:" + strings.Join(load, ","), "max_results": len(load)}}}}
		}
		writeMessages(w, mr.Model, mr.Stream, len(body), rep)
	})
}

// claudeDeferred finds the list of deferred tools in Claude Code's system
// message: the names after "...deferred tools are now available via
// ToolSearch...:", one a line, up to a blank line.
var claudeDeferred = regexp.MustCompile(`deferred tools are now available via ToolSearch[^\n]*:\n((?:[^\n]+\n)+)`)

// parseMessagesRequest reads a Messages request: the tools offered (the
// deferred ones by name), the tool results after the model's last turn
// (the result of the adapter's ToolSearch call searchID apart), the rest
// as context. A request that offers no tools is a side request (a title,
// a summary, a quota check): the conversation the play plays offers the
// client's tools in every request.
func parseMessagesRequest(path string, body []byte, searchID string) (*Request, *messagesRequest, error) {
	mr := &messagesRequest{deferred: map[string]bool{}}
	if err := json.Unmarshal(body, mr); err != nil {
		return nil, mr, err
	}
	req := &Request{Path: path, Raw: body, Side: len(mr.Tools) == 0}
	for _, tool := range mr.Tools {
		if tool.Name != "" && !slices.Contains(req.Tools, tool.Name) {
			req.Tools = append(req.Tools, tool.Name)
		}
	}
	var context []string
	sys, err := claudeBlocks(mr.System)
	if err != nil {
		return nil, mr, fmt.Errorf("system: %w", err)
	}
	for _, b := range sys {
		if b.Type == "text" {
			context = append(context, b.Text)
		}
	}
	// The results this request brings back are the tool_result blocks
	// after the model's last turn (Claude Code may follow them with a
	// message of its own, such as a system message).
	last := -1
	for i, msg := range mr.Messages {
		if msg.Role == "assistant" {
			last = i
		}
	}
	for i, msg := range mr.Messages {
		blocks, err := claudeBlocks(msg.Content)
		if err != nil {
			return nil, mr, fmt.Errorf("message %d: %w", i, err)
		}
		for _, b := range blocks {
			switch {
			case b.Type == "text" && msg.Role != "assistant":
				context = append(context, b.Text)
				if m := claudeDeferred.FindStringSubmatch(b.Text); m != nil {
					for _, name := range lines(m[1]) {
						name = strings.TrimSpace(name)
						mr.deferred[name] = true
						if !slices.Contains(req.Tools, name) {
							req.Tools = append(req.Tools, name)
						}
					}
				}
			case b.Type == "tool_result" && i > last && msg.Role == "user" && searchID != "" && b.ToolUseID == searchID:
				refs, err := claudeBlocks(b.Content)
				if err != nil {
					return nil, mr, fmt.Errorf("ToolSearch result: %w", err)
				}
				for _, r := range refs {
					if r.Type == "tool_reference" {
						mr.loaded = append(mr.loaded, r.ToolName)
					}
				}
			case b.Type == "tool_result" && i > last && msg.Role == "user":
				res, err := claudeResult(b)
				if err != nil {
					return nil, mr, fmt.Errorf("tool_result %s: %w", b.ToolUseID, err)
				}
				req.Results = append(req.Results, res)
			}
		}
	}
	req.Context = strings.Join(context, "\n")
	return req, mr, nil
}

// claudeResult is a tool_result block as the model reads it: its text
// blocks, its images (base64), its is_error.
func claudeResult(b messagesBlock) (ToolResult, error) {
	res := ToolResult{CallID: b.ToolUseID, ErrorFlag: true, IsError: b.IsError != nil && *b.IsError}
	parts, err := claudeBlocks(b.Content)
	if err != nil {
		return res, err
	}
	var texts []string
	for _, p := range parts {
		switch p.Type {
		case "text":
			texts = append(texts, p.Text)
		case "image":
			if p.Source == nil || p.Source.Type != "base64" {
				return res, fmt.Errorf("an image that is not base64: %s", p.Type)
			}
			data, err := base64.StdEncoding.DecodeString(p.Source.Data)
			if err != nil {
				return res, fmt.Errorf("image: %w", err)
			}
			res.Images = append(res.Images, NewImage(p.Source.MediaType, data))
		default:
			return res, fmt.Errorf("a %q block in a tool result", p.Type)
		}
	}
	res.Text = strings.Join(texts, "\n")
	return res, nil
}

// writeJSONBody writes v as a JSON response.
func writeJSONBody(w http.ResponseWriter, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
}

// claudeMessages numbers the messages the adapters write.
var claudeMessages atomic.Int64

// writeMessages writes the reply as a Messages response: a message with a
// text block or tool_use blocks, streamed as server-sent events
// (message_start, content_block_start/delta/stop, message_delta with the
// stop reason, message_stop) when the client asked for a stream.
func writeMessages(w http.ResponseWriter, model string, stream bool, inputBytes int, rep Reply) {
	id := fmt.Sprintf("msg_%d", claudeMessages.Add(1)) // unique: Claude Code joins turns of one id
	usage := map[string]any{"input_tokens": inputBytes/4 + 1, "output_tokens": 1}
	stop := "end_turn"
	var blocks []map[string]any
	if len(rep.Calls) > 0 {
		stop = "tool_use"
		for _, c := range rep.Calls {
			blocks = append(blocks, map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": c.Args})
		}
	} else {
		blocks = append(blocks, map[string]any{"type": "text", "text": rep.Text})
	}
	if !stream {
		writeJSONBody(w, map[string]any{"id": id, "type": "message", "role": "assistant", "model": model,
			"content": blocks, "stop_reason": stop, "stop_sequence": nil, "usage": usage})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	flusher, _ := w.(http.Flusher)
	event := func(name string, v map[string]any) {
		v["type"] = name
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
		if flusher != nil {
			flusher.Flush()
		}
	}
	event("message_start", map[string]any{"message": map[string]any{"id": id, "type": "message", "role": "assistant",
		"model": model, "content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": usage}})
	for i, b := range blocks {
		switch b["type"] {
		case "text":
			event("content_block_start", map[string]any{"index": i, "content_block": map[string]any{"type": "text", "text": ""}})
			event("content_block_delta", map[string]any{"index": i, "delta": map[string]any{"type": "text_delta", "text": b["text"]}})
		case "tool_use":
			event("content_block_start", map[string]any{"index": i, "content_block": map[string]any{"type": "tool_use",
				"id": b["id"], "name": b["name"], "input": map[string]any{}}})
			args, _ := json.Marshal(b["input"])
			// The arguments in two deltas, as a model streams them.
			half := len(args) / 2
			for _, part := range []string{string(args[:half]), string(args[half:])} {
				event("content_block_delta", map[string]any{"index": i, "delta": map[string]any{"type": "input_json_delta", "partial_json": part}})
			}
		}
		event("content_block_stop", map[string]any{"index": i})
	}
	event("message_delta", map[string]any{"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": 1}})
	event("message_stop", map[string]any{})
}
