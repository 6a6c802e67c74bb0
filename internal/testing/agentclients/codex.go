package agentclients

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
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crosscode/crosscode-mcp/protocol"
)

// Codex 0.169.0 (@openai/codex): a node launcher (bin/codex.js) that
// execs the Rust binary of @openai/codex-linux-x64. It speaks the OpenAI
// Responses API (POST {base_url}/responses, stream: true) to a model
// provider of config.toml, and runs headless as `codex exec --json`, whose
// stdout is a JSONL event stream (thread.started with the thread id,
// item.started/item.completed with mcp_tool_call items that carry a
// status and an error, turn.completed).
//
// What it forwards to its model from an MCP tool result
// (codex-rs/protocol/src/models.rs, CallToolResult::
// as_function_call_output_payload; seen on the wire of 0.169.0): a
// function_call_output whose output starts with "Wall time: 0.0113
// seconds\nOutput:". With structuredContent present, only that JSON after
// it, as one string: every content block is dropped, text and images
// alike. Without structuredContent, a list: input_text with the header,
// then each content block in order, text as input_text and images as
// input_image (a data: URL, detail "original" for gpt-5.5). isError is
// not on the wire (function_call_output has no error flag), so exec's
// mcp_tool_call status ("failed") says whether a call failed. Codex does
// not check structuredContent against the tool's outputSchema (a probe
// server's result of the wrong shape reached the model, status
// completed), nor arguments against its inputSchema.
//
// How it meets crosscode-mcp: clientInfo {name "codex-mcp-client", title
// "Codex", version "0.169.0"}, protocolVersion 2025-06-18; the server
// gets an allowlist of Codex's environment (here HOME, LANG, PATH, TERM,
// TMPDIR: XDG_*, CI and the rest dropped; no session id), and each
// tools/call's _meta has callId (the model's call id), sessionId and
// threadId (exec's thread id, which crosscode-mcp takes as the session
// reference) and x-codex-turn-metadata.
func init() {
	Register(&Client{
		Name:      "codex",
		Provider:  protocol.ProviderCodex,
		Mount:     mountResponses,
		Configure: configureCodex,
		Run: func(t *testing.T, w *World, prompt string) *RunResult {
			return runCodex(t, w, prompt)
		},
	})
}

// codexModel is the model config.toml names, one of Codex's own
// catalogue (a model it does not know runs on fallback metadata, with a
// warning). Every model of 0.169.0's catalogue takes images, and all but
// gpt-5.5 are "code_mode_only": their model gets no MCP tool as a
// function, only a JavaScript `exec` tool whose scripts call
// tools.mcp__crosscode__claim(...), get the whole CallToolResult
// (content, structuredContent, isError) and forward what they pass to
// text() and image(), so what reaches the model is the script's choice.
// gpt-5.5 is offered the MCP tools as functions (deferred behind
// tool_search, see mountResponses) and gets what Codex itself makes of a
// result, which is what this test checks.
const codexModel = "gpt-5.5"

// codexKeyEnv holds the dummy API key of the scripted provider.
const codexKeyEnv = "CROSSCODE_TEST_MODEL_KEY"

// codexBin is the launcher the npm package installs as `codex`.
func codexBin(t *testing.T) string {
	t.Helper()
	p := filepath.Join(NodeModules(t), "@openai", "codex", "bin", "codex.js")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("codex: %v", err)
	}
	return p
}

// codexEnv is the environment codex runs in: CODEX_HOME in the world's
// HOME, the dummy key.
func codexEnv(w *World) []string {
	return []string{"CODEX_HOME=" + filepath.Join(w.Home, ".codex"), codexKeyEnv + "=sk-crosscode-test"}
}

// configureCodex adds crosscode-mcp with `codex mcp add` as the README
// says (with the binary on PATH: `codex mcp add crosscode --
// crosscode-mcp`), then points Codex at the scripted model through a model
// provider of its own and turns off what would leave loopback.
func configureCodex(t *testing.T, w *World) {
	t.Helper()
	codexConfig(t, w)
	codexMCPAdd(t, w, "--", "crosscode-mcp")
}

// codexConfig writes Codex's config.toml: the scripted model, nothing
// that would leave loopback.
func codexConfig(t *testing.T, w *World) { writeCodexConfig(t, w, false) }

// writeCodexConfig writes Codex's config.toml with its plugins on or off
// (the client packages' tests install the crosscode plugin from a local
// marketplace; OpenAI's own marketplaces stay off: they sync from
// github.com).
//
// A turn offers an MCP server's tools only if the server is ready within
// mcp_optional_startup_grace_ms of the turn's start (1 s by default). The
// packages' tests keep the default, as a user who installs the plugin
// does: the plugin's server must start in time by itself. The other tests
// wait for the server (their subject is what a result shows, and a loaded
// machine may take a second to start even the binary).
func writeCodexConfig(t *testing.T, w *World, plugins bool) {
	t.Helper()
	home := filepath.Join(w.Home, ".codex")
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	grace := "mcp_optional_startup_grace_ms = 30000\n"
	if plugins {
		grace = ""
	}
	config := `model = "` + codexModel + `"
model_provider = "scripted"
check_for_update_on_startup = false
web_search = "disabled"
` + grace + `
[model_providers.scripted]
name = "scripted model of the crosscode tests"
base_url = "` + w.Model.URL + `/v1"
wire_api = "responses"
env_key = "` + codexKeyEnv + `"
request_max_retries = 0
stream_max_retries = 0

[analytics]
enabled = false

[feedback]
enabled = false

[otel]
exporter = "none"
metrics_exporter = "none"
trace_exporter = "none"
log_user_prompt = false

[history]
persistence = "none"

# Plugins sync OpenAI's marketplace with git from github.com, apps and
# remote plugins ask ChatGPT's backend: nothing here leaves loopback.
[features]
plugins = ` + fmt.Sprint(plugins) + `
remote_plugin = false
apps = false
`
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
}

// codexMCPAdd runs `codex mcp add crosscode ARGS...` and checks that it
// landed in config.toml.
func codexMCPAdd(t *testing.T, w *World, args ...string) {
	t.Helper()
	home := filepath.Join(w.Home, ".codex")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := w.Command(ctx, "node", append([]string{codexBin(t), "mcp", "add", "crosscode"}, args...), codexEnv(w)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("codex mcp add: %v\n%s", err, out)
	}
	b, err := os.ReadFile(filepath.Join(home, "config.toml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "[mcp_servers.crosscode]") {
		t.Fatalf("codex mcp add did not write [mcp_servers.crosscode]:\n%s", b)
	}
}

// runCodex runs `codex exec --json` in the repository. Approvals and the
// sandbox are off (--dangerously-bypass-approvals-and-sandbox): Codex
// asks before an MCP tool call whose annotations do not say it is
// read-only unless it runs with full access (core/src/mcp_tool_call.rs,
// maybe_request_mcp_tool_approval), and exec has no one to ask, so a
// headless agent is run that way; the test's HOME is its sandbox.
func runCodex(t *testing.T, w *World, prompt string, extra ...string) *RunResult {
	t.Helper()
	args := []string{codexBin(t), "exec", "--json", "--skip-git-repo-check",
		"--dangerously-bypass-approvals-and-sandbox", "--color", "never", "-C", w.Repo, prompt}
	res := Exec(t, "codex", w.Command(context.Background(), "node", args, append(codexEnv(w), extra...)...))
	res.ToolErrors, res.SessionID = codexEvents(t, res.Stdout, codexCalls(w.Model))
	w.Dump(t, res, nil)
	return res
}

// codexEvents reads exec's JSONL event stream: the thread id, and
// whether each crosscode MCP call failed, by the model's call id. Exec's
// mcp_tool_call items do not carry the model's call id (they are item_0,
// item_1, ...), so they are matched to the model's calls of crosscode
// tools in order, the order both were made in (one call per reply in the
// plays), and each pair must name the same tool.
func codexEvents(t *testing.T, stdout string, calls []codexCall) (map[string]bool, string) {
	t.Helper()
	errs := map[string]bool{}
	var thread string
	var items []codexCall
	sc := bufio.NewScanner(strings.NewReader(stdout))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(line, "{") {
			continue
		}
		var ev struct {
			Type     string `json:"type"`
			ThreadID string `json:"thread_id"`
			Item     struct {
				ID     string          `json:"id"`
				Type   string          `json:"type"`
				Server string          `json:"server"`
				Tool   string          `json:"tool"`
				Status string          `json:"status"`
				Error  json.RawMessage `json:"error"`
			} `json:"item"`
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Errorf("codex --json: a line that does not parse: %v: %s", err, tail(line, 300))
			continue
		}
		switch {
		case ev.Type == "thread.started":
			thread = ev.ThreadID
		case ev.Type == "item.completed" && ev.Item.Type == "mcp_tool_call" && ev.Item.Server == "crosscode":
			failed := ev.Item.Status == "failed" || (len(ev.Item.Error) > 0 && string(ev.Item.Error) != "null")
			items = append(items, codexCall{tool: ev.Item.Tool, failed: failed})
		}
	}
	if len(items) != len(calls) {
		t.Errorf("codex --json: %d crosscode mcp_tool_call items, the model made %d calls of crosscode tools", len(items), len(calls))
	}
	for i := range min(len(items), len(calls)) {
		if items[i].tool != calls[i].tool {
			t.Errorf("codex --json: mcp_tool_call %d is of %s, the model's call %s of %s", i, items[i].tool, calls[i].id, calls[i].tool)
			continue
		}
		errs[calls[i].id] = items[i].failed
	}
	return errs, thread
}

// codexCall is a call of a crosscode tool: as the model made it (id,
// tool) or as exec reported it (tool, failed).
type codexCall struct {
	id, tool string
	failed   bool
}

// codexCalls are the model's calls of crosscode tools in the order it
// made them, from the function_call items of the requests Codex sent.
func codexCalls(m *Model) []codexCall {
	var calls []codexCall
	seen := map[string]bool{}
	for _, r := range m.Requests() {
		var body responsesRequest
		if json.Unmarshal(r.Raw, &body) != nil {
			continue
		}
		for _, raw := range body.Input {
			var it struct {
				Type      string `json:"type"`
				CallID    string `json:"call_id"`
				Name      string `json:"name"`
				Namespace string `json:"namespace"`
			}
			if json.Unmarshal(raw, &it) != nil || it.Type != "function_call" || seen[it.CallID] {
				continue
			}
			seen[it.CallID] = true
			if strings.TrimSuffix(it.Namespace, "__") == "mcp__crosscode" {
				calls = append(calls, codexCall{id: it.CallID, tool: it.Name})
			}
		}
	}
	return calls
}

// The OpenAI Responses API as Codex speaks it.

// responsesRequest is the part of a Responses request the adapter reads.
type responsesRequest struct {
	Model        string            `json:"model"`
	Instructions string            `json:"instructions"`
	Input        []json.RawMessage `json:"input"`
	Tools        []json.RawMessage `json:"tools"`
	Stream       bool              `json:"stream"`
}

// responsesItem is an input item: a message, a function call, a function
// call's output, or another kind the adapter passes over.
type responsesItem struct {
	Type    string          `json:"type"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	CallID  string          `json:"call_id"`
	Name    string          `json:"name"`
	Output  json.RawMessage `json:"output"`
	// Tools are a tool_search_output's (or additional_tools') tools.
	Tools []json.RawMessage `json:"tools"`
}

// responsesPart is a content part of a message or a function call output.
type responsesPart struct {
	Type     string          `json:"type"`
	Text     string          `json:"text"`
	ImageURL json.RawMessage `json:"image_url"`
	FileID   string          `json:"file_id"`
}

// mountResponses serves POST /v1/responses. Codex sends the whole
// conversation each time (store: false), so the results a request brings
// back are the function_call_outputs no earlier request brought.
//
// Codex defers MCP tools (for gpt-5.5): the request offers a tool_search
// tool and names the deferred namespaces (mcp__crosscode) in its
// developer text, and the model gets the tools' definitions by calling
// tool_search (a tool_search_call item, execution "client"), which the
// next request answers with a tool_search_output item carrying them. The
// adapter plays that search as a model does before it plays the script:
// a request that has tool_search but no crosscode function yet is a side
// request, answered with a search for the crosscode tools.
func mountResponses(mux *http.ServeMux, m *Model) {
	var mu sync.Mutex
	seen := map[string]bool{}       // function_call_output call ids already brought back
	names := map[string][2]string{} // offered name -> namespace, name on the wire
	n := 0
	mux.HandleFunc("POST /v1/responses", func(w http.ResponseWriter, hr *http.Request) {
		raw, err := io.ReadAll(hr.Body)
		if err != nil {
			m.Fail("read a request: %v", err)
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		req := &Request{Path: hr.URL.Path, Raw: raw}
		var body responsesRequest
		if err := json.Unmarshal(raw, &body); err != nil {
			m.Fail("a request that does not parse as a Responses request: %v: %s", err, tail(string(raw), 300))
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var context []string
		if body.Instructions != "" {
			context = append(context, body.Instructions)
		}
		mu.Lock()
		req.Tools = responsesTools(m, body.Tools, "", names)
		searched := false
		for _, rawItem := range body.Input {
			var it responsesItem
			if err := json.Unmarshal(rawItem, &it); err != nil {
				m.Fail("an input item that does not parse: %v: %s", err, tail(string(rawItem), 300))
				continue
			}
			switch it.Type {
			case "message", "":
				if txt := responsesText(m, it.Content); txt != "" {
					context = append(context, txt)
				}
			case "function_call_output", "custom_tool_call_output":
				if seen[it.CallID] {
					continue
				}
				seen[it.CallID] = true
				req.Results = append(req.Results, responsesResult(m, it))
			case "tool_search_output", "additional_tools":
				searched = searched || it.Type == "tool_search_output"
				req.Tools = append(req.Tools, responsesTools(m, it.Tools, "", names)...)
			}
		}
		n++
		id := fmt.Sprintf("resp_%d", n)
		mu.Unlock()
		req.Context = strings.Join(context, "\n")
		search := !searched && hasToolType(body.Tools, "tool_search") && !slices.ContainsFunc(req.Tools, func(t string) bool { return strings.Contains(t, "crosscode") })
		// A request without tools is not the agent's conversation (Codex
		// asks its model for a title or a summary that way).
		req.Side = len(body.Tools) == 0 || search
		rep := m.Answer(req)
		var items []map[string]any
		if search {
			items = append(items, map[string]any{"type": "tool_search_call", "id": "ts_" + id, "call_id": "search_" + id, "execution": "client", "status": "completed",
				"arguments": map[string]any{"query": "crosscode", "limit": 100}})
			rep = Reply{}
		}
		mu.Lock()
		for i, c := range rep.Calls {
			nn, ok := names[c.Name]
			if !ok {
				m.Fail("a call of %s, which was never offered", c.Name)
				nn = [2]string{"", c.Name}
			}
			args, _ := json.Marshal(c.Args)
			it := map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_%s_%d", id, i), "call_id": c.ID, "name": nn[1], "arguments": string(args), "status": "completed"}
			if nn[0] != "" {
				it["namespace"] = nn[0]
			}
			items = append(items, it)
		}
		mu.Unlock()
		if len(items) == 0 {
			items = append(items, map[string]any{"type": "message", "id": "msg_" + id, "role": "assistant", "status": "completed",
				"content": []map[string]any{{"type": "output_text", "text": rep.Text, "annotations": []any{}}}})
		}
		writeResponses(w, id, body.Model, body.Stream, items)
	})
	// Codex may ask its provider for the models it serves.
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, hr *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"object":"list","data":[{"id":%q,"object":"model","owned_by":"crosscode-tests"}]}`, codexModel)
	})
}

// hasToolType is whether tools has one of type typ.
func hasToolType(tools []json.RawMessage, typ string) bool {
	for _, raw := range tools {
		var tool struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(raw, &tool) == nil && tool.Type == typ {
			return true
		}
	}
	return false
}

// responsesTools are the names of the functions offered: function tools
// by their name, and the functions of a namespace tool (Codex offers an
// MCP server's tools as the namespace mcp__SERVER) as NAMESPACE__NAME; a
// call of one names the namespace and the function apart
// (ResponseItem::FunctionCall's namespace and name), which names records.
func responsesTools(m *Model, tools []json.RawMessage, namespace string, names map[string][2]string) []string {
	var out []string
	for _, raw := range tools {
		var tool struct {
			Type  string            `json:"type"`
			Name  string            `json:"name"`
			Tools []json.RawMessage `json:"tools"`
		}
		if err := json.Unmarshal(raw, &tool); err != nil {
			m.Fail("a tool that does not parse: %v: %s", err, tail(string(raw), 300))
			continue
		}
		switch {
		case tool.Type == "namespace":
			out = append(out, responsesTools(m, tool.Tools, tool.Name, names)...)
		case tool.Name != "":
			full := tool.Name
			if namespace != "" {
				full = strings.TrimSuffix(namespace, "__") + "__" + tool.Name
			}
			names[full] = [2]string{namespace, tool.Name}
			out = append(out, full)
		}
	}
	return out
}

// responsesText is the text of a message's content (a string or parts).
func responsesText(m *Model, content json.RawMessage) string {
	if len(content) == 0 || string(content) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(content, &s) == nil {
		return s
	}
	var parts []responsesPart
	if err := json.Unmarshal(content, &parts); err != nil {
		m.Fail("message content that does not parse: %v: %s", err, tail(string(content), 300))
		return ""
	}
	var out []string
	for _, p := range parts {
		if p.Text != "" {
			out = append(out, p.Text)
		}
	}
	return strings.Join(out, "\n")
}

// responsesResult is a function_call_output as a ToolResult: its output
// is a string or a list of input_text / input_image parts. The wire has no
// error flag.
func responsesResult(m *Model, it responsesItem) ToolResult {
	res := ToolResult{CallID: it.CallID, Name: it.Name}
	var s string
	if json.Unmarshal(it.Output, &s) == nil {
		res.Text = s
		return res
	}
	var parts []responsesPart
	if err := json.Unmarshal(it.Output, &parts); err != nil {
		m.Fail("function_call_output %s: output that does not parse: %v: %s", it.CallID, err, tail(string(it.Output), 300))
		return res
	}
	var texts []string
	for _, p := range parts {
		switch p.Type {
		case "input_text", "output_text", "text":
			texts = append(texts, p.Text)
		case "input_image":
			var url string
			if err := json.Unmarshal(p.ImageURL, &url); err != nil {
				var obj struct {
					URL string `json:"url"`
				}
				json.Unmarshal(p.ImageURL, &obj)
				url = obj.URL
			}
			im, err := dataURLImage(url)
			if err != nil {
				m.Fail("function_call_output %s: an image that is not a data URL (%v): %s", it.CallID, err, tail(url+p.FileID, 100))
				continue
			}
			res.Images = append(res.Images, im)
		default:
			m.Fail("function_call_output %s: a part of type %q", it.CallID, p.Type)
		}
	}
	res.Text = strings.Join(texts, "\n")
	return res
}

// dataURLImage decodes data:MIME;base64,DATA.
func dataURLImage(url string) (Image, error) {
	rest, ok := strings.CutPrefix(url, "data:")
	if !ok {
		return Image{}, fmt.Errorf("no data: prefix")
	}
	meta, data, ok := strings.Cut(rest, ",")
	if !ok || !strings.HasSuffix(meta, ";base64") {
		return Image{}, fmt.Errorf("not base64")
	}
	b, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		return Image{}, err
	}
	return NewImage(strings.TrimSuffix(meta, ";base64"), b), nil
}

// writeResponses writes the reply as a Responses API response: an SSE
// stream (response.created, output items added and done, text deltas,
// response.completed with usage) when the client asked to stream, else
// the response object.
func writeResponses(w http.ResponseWriter, id, model string, stream bool, items []map[string]any) {
	usage := map[string]any{"input_tokens": 100, "input_tokens_details": map[string]any{"cached_tokens": 0},
		"output_tokens": 10, "output_tokens_details": map[string]any{"reasoning_tokens": 0}, "total_tokens": 110}
	response := map[string]any{"id": id, "object": "response", "created_at": time.Now().Unix(), "model": model, "status": "completed", "output": items, "usage": usage}
	if !stream {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(response)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	flusher, _ := w.(http.Flusher)
	seq := 0
	send := func(typ string, fields map[string]any) {
		fields["type"] = typ
		fields["sequence_number"] = seq
		seq++
		b, _ := json.Marshal(fields)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, b)
		if flusher != nil {
			flusher.Flush()
		}
	}
	inProgress := map[string]any{"id": id, "object": "response", "created_at": response["created_at"], "model": model, "status": "in_progress", "output": []any{}}
	send("response.created", map[string]any{"response": inProgress})
	send("response.in_progress", map[string]any{"response": inProgress})
	for i, it := range items {
		added := map[string]any{}
		for k, v := range it {
			added[k] = v
		}
		added["status"] = "in_progress"
		switch it["type"] {
		case "function_call":
			added["arguments"] = ""
		case "message":
			added["content"] = []any{}
		}
		send("response.output_item.added", map[string]any{"output_index": i, "item": added})
		switch it["type"] {
		case "function_call":
			send("response.function_call_arguments.delta", map[string]any{"output_index": i, "item_id": it["id"], "delta": it["arguments"]})
			send("response.function_call_arguments.done", map[string]any{"output_index": i, "item_id": it["id"], "arguments": it["arguments"]})
		case "message":
			text := it["content"].([]map[string]any)[0]["text"]
			part := map[string]any{"type": "output_text", "text": "", "annotations": []any{}}
			send("response.content_part.added", map[string]any{"output_index": i, "item_id": it["id"], "content_index": 0, "part": part})
			send("response.output_text.delta", map[string]any{"output_index": i, "item_id": it["id"], "content_index": 0, "delta": text})
			send("response.output_text.done", map[string]any{"output_index": i, "item_id": it["id"], "content_index": 0, "text": text})
			part["text"] = text
			send("response.content_part.done", map[string]any{"output_index": i, "item_id": it["id"], "content_index": 0, "part": part})
		}
		send("response.output_item.done", map[string]any{"output_index": i, "item": it})
	}
	send("response.completed", map[string]any{"response": response})
}
