package agentclients

// OpenCode (opencode-ai 1.18.33), read in the JavaScript its native binary
// embeds (node_modules/opencode-linux-x64/bin/opencode; `strings` shows it):
//
//   - It is an MCP client named "opencode" (initialize: protocolVersion
//     2025-11-25, capabilities {roots: {}}, clientInfo {name: "opencode",
//     version: "1.18.33"}). It lists tools with their outputSchema (left
//     out only when its MCP SDK cannot compile one), and that SDK checks
//     every result of such a tool: one without structuredContent and not
//     isError fails the call ("Tool X has an output schema but did not
//     return structured content"), as does structuredContent that does
//     not match the schema. It calls a tool with {name, arguments} and a
//     progress token in _meta: nothing of its session reaches the server.
//     Once a call's result is in, it sends notifications/cancelled for
//     it (the step's abort signal). The timeout of a call is the
//     server's "timeout" in opencode.json, else experimental.mcp_timeout,
//     else the MCP SDK's 60 s, reset by every progress notification
//     (resetTimeoutOnProgress).
//   - A result with isError is thrown as an Error whose message is the
//     result's text parts joined with "\n" (structuredContent and images
//     dropped); the tool part ends with status "error" and that message.
//   - Otherwise (the session's MCP tool wrapper): the text parts, joined
//     with "\n", are the output (then cut by its truncation, 2000 lines or
//     50 KB); image parts become attachments (data: URLs);
//     structuredContent is used only when content is empty (as its JSON).
//   - To the model (MessageV2.toModelMessages): the output is the tool
//     message's text. Attachments go inside the tool result only for
//     providers whose SDK takes media there (@ai-sdk/anthropic, openai,
//     some bedrock, xai, gemini-3); for others, such as the
//     @ai-sdk/openai-compatible this test configures, they follow as a
//     user message "Attached media from tool result:" with the images,
//     and only when the model's config says it takes image input (else
//     each becomes the text "ERROR: Cannot read ...").
//   - A failed call reaches the model as the tool message's text (the
//     error's message); OpenAI's chat format has no error flag, so the
//     run's JSON event stream (tool_use parts with state.status "error")
//     says which calls failed.
//
// The provider package @ai-sdk/openai-compatible is bundled in the
// binary: nothing is installed at run time. The models.dev catalogue is
// not fetched (OPENCODE_DISABLE_MODELS_FETCH; a snapshot is bundled),
// nor updates (autoupdate false), nor LSP servers; sharing is disabled.

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
	"strings"
	"testing"
	"time"

	"github.com/crosscode/crosscode-mcp/protocol"
)

func init() {
	Register(&Client{
		Name:      "opencode",
		Provider:  protocol.ProviderOpenCode,
		Mount:     mountChatCompletions,
		Configure: configureOpenCode,
		Run: func(t *testing.T, w *World, prompt string) *RunResult {
			return runOpenCode(t, w, prompt)
		},
	})
}

// The provider and model OpenCode is pointed at (our scripted model).
const (
	opencodeProvider = "scripted"
	opencodeModel    = "scripted-model"
)

// opencodeBin is OpenCode's native binary, which its npm launcher runs.
func opencodeBin(t *testing.T) string {
	t.Helper()
	return nativeBinary(t, "opencode", filepath.Join("bin", "opencode"))
}

// opencodeEnv keeps OpenCode on loopback: no models.dev fetch (it has a
// snapshot bundled), no update check, no LSP downloads.
func opencodeEnv() []string {
	return []string{
		"OPENCODE_DISABLE_MODELS_FETCH=1",
		"OPENCODE_DISABLE_AUTOUPDATE=1",
		"OPENCODE_DISABLE_LSP_DOWNLOAD=1",
		"OPENCODE_DISABLE_SHARE=1",
	}
}

// configureOpenCode adds crosscode-mcp in the repository's opencode.json,
// as the README says (with the binary: "command": ["crosscode-mcp"]), and
// in the user's config (~/.config/opencode/opencode.json) the scripted
// model as an OpenAI-compatible provider, which a user of a model of
// their own writes the same way.
func configureOpenCode(t *testing.T, w *World) {
	t.Helper()
	project := map[string]any{
		"$schema": "https://opencode.ai/config.json",
		"mcp": map[string]any{
			"crosscode": map[string]any{"type": "local", "command": []string{"crosscode-mcp"}, "enabled": true},
		},
	}
	user := map[string]any{
		"$schema":           "https://opencode.ai/config.json",
		"autoupdate":        false,
		"share":             "disabled",
		"enabled_providers": []string{opencodeProvider},
		"model":             opencodeProvider + "/" + opencodeModel,
		"small_model":       opencodeProvider + "/" + opencodeModel,
		"provider": map[string]any{
			opencodeProvider: map[string]any{
				"npm":  "@ai-sdk/openai-compatible",
				"name": "Scripted model",
				"options": map[string]any{
					"baseURL": w.Model.URL + "/v1",
					"apiKey":  "sk-scripted-test-key",
				},
				"models": map[string]any{
					opencodeModel: map[string]any{
						"name":       "Scripted model",
						"tool_call":  true,
						"attachment": true,
						"modalities": map[string]any{"input": []string{"text", "image"}, "output": []string{"text"}},
						"limit":      map[string]any{"context": 200000, "output": 8192},
					},
				},
			},
		},
		// Every crosscode-mcp tool without a prompt (a headless run
		// rejects what would ask).
		"permission": map[string]any{"crosscode_*": "allow"},
	}
	dir := filepath.Join(w.Home, ".config", "opencode")
	opencodeWriteJSON(t, filepath.Join(w.Repo, "opencode.json"), project)
	opencodeWriteJSON(t, filepath.Join(dir, "opencode.json"), user)
	// OpenCode installs its plugin SDK (@opencode-ai/plugin, for the
	// user's own plugins and tools) from registry.npmjs.org into every
	// config folder it can write (Npm.install, in the background at each
	// start) unless the folder has node_modules and a package-lock.json
	// that lists it: the world's says so, as after an install, and nothing
	// leaves loopback (no plugin of the user's would import it).
	const plugin = "@opencode-ai/plugin"
	opencodeWriteJSON(t, filepath.Join(dir, "package.json"), map[string]any{"dependencies": map[string]string{plugin: "1.18.33"}})
	opencodeWriteJSON(t, filepath.Join(dir, "package-lock.json"), map[string]any{
		"lockfileVersion": 3,
		"packages":        map[string]any{"": map[string]any{"dependencies": map[string]string{plugin: "1.18.33"}}},
	})
	if err := os.MkdirAll(filepath.Join(dir, "node_modules"), 0o755); err != nil {
		t.Fatal(err)
	}
}

func opencodeWriteJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

// runOpenCode runs `opencode run --format json` in the repository: its
// stdout is one JSON event a line.
func runOpenCode(t *testing.T, w *World, prompt string, extra ...string) *RunResult {
	t.Helper()
	args := []string{"run", "--format", "json", "-m", opencodeProvider + "/" + opencodeModel, prompt}
	res := Exec(t, "opencode", w.Command(context.Background(), opencodeBin(t), args, append(opencodeEnv(), extra...)...))
	// OpenCode's session id (ses_..., in every event) is left out of the
	// result: OpenCode never tells an MCP server its session (a call's
	// _meta has only the progress token, and one server serves all the
	// sessions of an OpenCode instance, so its environment cannot say),
	// so crosscode-mcp cannot stamp it: its envelopes carry its own
	// session id.
	var session string
	res.ToolErrors, session = opencodeEvents(t, res.Stdout)
	t.Logf("opencode session %s", session)
	return res
}

// opencodeEvent is a line of `opencode run --format json`: {type,
// timestamp, sessionID, part} (part a message part: for "tool_use", a
// tool part whose state ended "completed" or "error").
type opencodeEvent struct {
	Type      string `json:"type"`
	SessionID string `json:"sessionID"`
	Part      struct {
		Type   string `json:"type"`
		CallID string `json:"callID"`
		Tool   string `json:"tool"`
		State  struct {
			Status string `json:"status"`
			Error  string `json:"error"`
		} `json:"state"`
	} `json:"part"`
}

// opencodeEvents reads the run's event stream: by call id, whether the
// tool call ended in an error; and the session's id.
func opencodeEvents(t *testing.T, stdout string) (map[string]bool, string) {
	t.Helper()
	errs := map[string]bool{}
	session := ""
	for _, l := range lines(stdout) {
		var e opencodeEvent
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Errorf("opencode: a line of its JSON events does not parse: %v: %s", err, tail(l, 300))
			continue
		}
		if e.SessionID != "" {
			session = e.SessionID
		}
		if e.Type == "tool_use" && e.Part.CallID != "" {
			errs[e.Part.CallID] = e.Part.State.Status == "error"
		}
	}
	return errs, session
}

// chatRequest is an OpenAI chat completions request, as far as the test
// reads it.
type chatRequest struct {
	Model    string        `json:"model"`
	Stream   bool          `json:"stream"`
	Messages []chatMessage `json:"messages"`
	Tools    []struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
}

type chatMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"` // a string, or an array of parts, or null
	ToolCallID string          `json:"tool_call_id"`
	ToolCalls  []struct {
		ID       string `json:"id"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

// chatPart is a part of a message's content array.
type chatPart struct {
	Type     string          `json:"type"`
	Text     string          `json:"text"`
	ImageURL json.RawMessage `json:"image_url"` // {"url": ...} (or, loosely, the URL)
}

// chatContent is a message's text parts joined with "\n", and its images.
func chatContent(raw json.RawMessage) (string, []Image, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil, nil
	}
	var parts []chatPart
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", nil, fmt.Errorf("content is neither a string nor parts: %v", err)
	}
	var texts []string
	var images []Image
	for _, p := range parts {
		switch p.Type {
		case "text":
			texts = append(texts, p.Text)
		case "image_url":
			var u struct {
				URL string `json:"url"`
			}
			if err := json.Unmarshal(p.ImageURL, &u); err != nil || u.URL == "" {
				json.Unmarshal(p.ImageURL, &u.URL)
			}
			im, err := chatDataImage(u.URL)
			if err != nil {
				return "", nil, err
			}
			images = append(images, im)
		default:
			return "", nil, fmt.Errorf("a content part of type %q", p.Type)
		}
	}
	return strings.Join(texts, "\n"), images, nil
}

// chatDataImage decodes a data: URL of an image.
func chatDataImage(url string) (Image, error) {
	rest, ok := strings.CutPrefix(url, "data:")
	meta, data, ok2 := strings.Cut(rest, ",")
	if !ok || !ok2 || !strings.HasSuffix(meta, ";base64") {
		return Image{}, fmt.Errorf("an image that is not a base64 data URL: %s", tail(url, 80))
	}
	b, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		return Image{}, fmt.Errorf("an image's base64: %v", err)
	}
	return NewImage(strings.TrimSuffix(meta, ";base64"), b), nil
}

// opencodeMediaNote is the text of the user message OpenCode adds after
// tool results whose images its provider cannot take inside them.
const opencodeMediaNote = "Attached media from tool result:"

// parseChatRequest reads a request into the script's terms: the results
// are the tool messages after the last assistant message (with the
// images of OpenCode's "Attached media" message after them).
func parseChatRequest(m *Model, path string, body []byte) (*Request, *chatRequest, error) {
	var cr chatRequest
	if err := json.Unmarshal(body, &cr); err != nil {
		return nil, nil, err
	}
	r := &Request{Path: path, Raw: body}
	for _, tl := range cr.Tools {
		r.Tools = append(r.Tools, tl.Function.Name)
	}
	last := -1
	for i, msg := range cr.Messages {
		if msg.Role == "assistant" {
			last = i
		}
	}
	names := map[string]string{} // call id -> function name
	var context []string
	for i, msg := range cr.Messages {
		text, images, err := chatContent(msg.Content)
		if err != nil {
			return nil, nil, fmt.Errorf("message %d (%s): %v", i, msg.Role, err)
		}
		for _, c := range msg.ToolCalls {
			names[c.ID] = c.Function.Name
		}
		switch {
		case msg.Role == "tool" && i > last:
			r.Results = append(r.Results, ToolResult{CallID: msg.ToolCallID, Name: names[msg.ToolCallID], Text: text, Images: images})
		case msg.Role == "user" && i > last && len(r.Results) > 0 && strings.HasPrefix(text, opencodeMediaNote):
			// The images of the results before it. OpenCode does not say
			// whose: with one call a step, they are the last result's.
			if rest := strings.TrimSpace(strings.TrimPrefix(text, opencodeMediaNote)); rest != "" {
				return nil, nil, fmt.Errorf("message %d: text besides the attached media: %s", i, tail(rest, 200))
			}
			res := &r.Results[len(r.Results)-1]
			res.Images = append(res.Images, images...)
		case msg.Role == "system" || msg.Role == "user":
			context = append(context, text)
			if len(images) > 0 && i > last {
				m.Fail("request to %s: images in a %s message that is not OpenCode's attached media", path, msg.Role)
			}
		}
	}
	r.Context = strings.Join(context, "\n")
	// OpenCode's title of a new session: a request of its own, no tools.
	r.Side = len(cr.Tools) == 0 && strings.Contains(r.Context, "title generator")
	return r, &cr, nil
}

// mountChatCompletions serves the OpenAI chat completions API
// (@ai-sdk/openai-compatible posts to baseURL + /chat/completions).
func mountChatCompletions(mux *http.ServeMux, m *Model) {
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, hr *http.Request) {
		body, err := io.ReadAll(hr.Body)
		if err != nil {
			m.Fail("read a request: %v", err)
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r, cr, err := parseChatRequest(m, hr.URL.Path, body)
		if err != nil {
			m.Fail("a chat completions request the test cannot read: %v: %s", err, tail(string(body), 500))
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		rep := m.Answer(r)
		writeChat(w, cr.Model, cr.Stream, rep)
	})
}

// writeChat writes the reply as a chat completion, streamed as SSE chunks
// when the request asked (data: {chunk} ... data: [DONE]).
func writeChat(w http.ResponseWriter, model string, stream bool, rep Reply) {
	id := fmt.Sprintf("chatcmpl-%d", time.Now().UnixNano())
	created := time.Now().Unix()
	finish := "stop"
	var calls []map[string]any
	for i, c := range rep.Calls {
		args, _ := json.Marshal(c.Args)
		calls = append(calls, map[string]any{
			"index": i, "id": c.ID, "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": string(args)},
		})
	}
	if len(calls) > 0 {
		finish = "tool_calls"
	}
	usage := map[string]any{"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}
	if !stream {
		msg := map[string]any{"role": "assistant", "content": rep.Text}
		if len(calls) > 0 {
			msg["content"] = nil
			msg["tool_calls"] = calls
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"id": id, "object": "chat.completion", "created": created, "model": model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
			"usage":   usage,
		})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	bw := bufio.NewWriter(w)
	chunk := func(delta map[string]any, finish any, extra map[string]any) {
		c := map[string]any{
			"id": id, "object": "chat.completion.chunk", "created": created, "model": model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}},
		}
		for k, v := range extra {
			c[k] = v
		}
		b, _ := json.Marshal(c)
		fmt.Fprintf(bw, "data: %s\n\n", b)
	}
	chunk(map[string]any{"role": "assistant", "content": ""}, nil, nil)
	if rep.Text != "" {
		chunk(map[string]any{"content": rep.Text}, nil, nil)
	}
	for _, c := range calls {
		chunk(map[string]any{"tool_calls": []any{c}}, nil, nil)
	}
	chunk(map[string]any{}, finish, map[string]any{"usage": usage})
	fmt.Fprint(bw, "data: [DONE]\n\n")
	bw.Flush()
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}
