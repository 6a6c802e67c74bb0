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
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crosscode/crosscode-mcp/protocol"
)

// Gemini CLI (@google/gemini-cli, pinned in npm/package.json) speaks the
// Gemini API's generateContent: the conversation is posted to
// /v1beta/models/MODEL:streamGenerateContent?alt=sse and answered with
// server-sent events, one GenerateContentResponse per event; its side
// requests (the "auto" model's router, which rates the prompt's
// complexity) go to :generateContent with a JSON schema for the answer.
//
// What it forwards to its model from an MCP tool result (read in the
// bundle, packages/core/src/tools/mcp-tool.ts and
// utils/generateContentResponseUtilities.ts as compiled into
// bundle/chunk-*.js):
//
//   - a result without isError: each text block wrapped in
//     <untrusted_context>...</untrusted_context> (transformTextBlock), each
//     image block as a label "[Tool 'NAME' provided the following image
//     data with mime-type: M]" and the image itself as inlineData
//     (transformImageAudioBlock); structuredContent is left out. The texts
//     are joined with "\n" into functionResponse.response.output; the
//     images go into functionResponse.parts for gemini-3 models (the
//     default, "auto", resolves to one), else they follow the
//     functionResponse as sibling parts (convertToFunctionResponse).
//   - a result with isError: true: no image and no block of its own, but
//     one string in functionResponse.response.error: "MCP tool 'NAME'
//     reported tool error for function call: {name,args} with response:
//     [the whole result as JSON: content, structuredContent, isError]"
//     (DiscoveredMCPToolInvocation.execute). The Gemini API's error key is
//     the wire's error flag; the stream-json tool_result event says
//     status "error" as well.
//   - a single text block longer than 40,000 characters (or 4 x the
//     context left) is cut and saved to a file (truncateOutputIfNeeded).
//   - a tool with an outputSchema must give structuredContent that fits
//     it: a result without one gets the JSON of its first text block as
//     structuredContent (McpComplianceTransport.fixStructuredContent), and
//     the MCP SDK's callTool then checks it against the schema; a result
//     with none (its first text not JSON) or one that does not fit becomes
//     an error ("MCP error -32600: Tool NAME has an output schema but did
//     not return structured content"), and the model gets no text and no
//     image of it.
//   - arguments that do not fit the tool's input schema never reach the
//     server: the CLI validates them (tools.ts, validateToolParams) and
//     answers the model with its own error, such as "params/patterns
//     must be array".
//
// It identifies itself to MCP servers with clientInfo
// {"name":"gemini-cli-mcp-client","version":"0.61.0"}, sets GEMINI_CLI=1
// in their environment and sends _meta {progressToken} on each call: its
// session id (the stream-json init event's session_id) reaches hooks as
// GEMINI_SESSION_ID but no MCP server. Its tool timeout is the server's
// "timeout" setting, 10 minutes by default (MCP_DEFAULT_TIMEOUT_MSEC).
func init() {
	Register(&Client{
		Name:      "gemini",
		Provider:  protocol.ProviderUnknown, // the protocol has no gemini provider
		Mount:     mountGemini,
		Configure: configureGemini,
		Run: func(t *testing.T, w *World, prompt string) *RunResult {
			return runGemini(t, w, prompt)
		},
	})
}

// geminiBin is the gemini launcher in node_modules (bundle/gemini.js, a
// node script).
func geminiBin(t testing.TB) string {
	t.Helper()
	p := filepath.Join(NodeModules(t), "@google", "gemini-cli", "bundle", "gemini.js")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("gemini-cli: %v", err)
	}
	return p
}

// geminiCommand runs the gemini CLI (through node, as its launcher does).
func geminiCommand(ctx context.Context, t testing.TB, w *World, args []string, extra ...string) *exec.Cmd {
	return w.Command(ctx, "node", append([]string{geminiBin(t)}, args...), extra...)
}

// geminiEnv points the CLI at the scripted model: the Gemini API key auth
// with a dummy key and the base URL of w.Model.
func geminiEnv(w *World) []string {
	return []string{"GEMINI_API_KEY=not-a-real-key", "GOOGLE_GEMINI_BASE_URL=" + w.Model.URL}
}

// configureGemini adds crosscode-mcp as the README says (`gemini mcp add`,
// user scope: ~/.gemini/settings.json), then settles what a user settles
// once: the API key sign-in, no usage statistics, telemetry, update checks
// or IDE, and the repository trusted (as answering the CLI's trust
// question does; trustedFolders.json).
func configureGemini(t *testing.T, w *World) {
	t.Helper()
	geminiMCPAdd(t, w, func(server map[string]any) bool { return server["command"] == "crosscode-mcp" }, "crosscode", "crosscode-mcp")
}

// geminiMCPAdd runs `gemini mcp add --scope user ARGS...`, checks with ok
// that the crosscode server landed in ~/.gemini/settings.json, and then
// settles the rest (see configureGemini).
func geminiMCPAdd(t *testing.T, w *World, ok func(server map[string]any) bool, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := geminiCommand(ctx, t, w, append([]string{"mcp", "add", "--scope", "user"}, args...), geminiEnv(w)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gemini mcp add: %v\n%s", err, out)
	}
	dir := filepath.Join(w.Home, ".gemini")
	settingsPath := filepath.Join(dir, "settings.json")
	var settings map[string]any
	b, err := os.ReadFile(settingsPath)
	if err != nil {
		t.Fatalf("gemini mcp add wrote no settings: %v", err)
	}
	if err := json.Unmarshal(b, &settings); err != nil {
		t.Fatalf("%s: %v", settingsPath, err)
	}
	server, _ := settings["mcpServers"].(map[string]any)["crosscode"].(map[string]any)
	if !ok(server) {
		t.Fatalf("gemini mcp add: crosscode is not in %s as asked: %s", settingsPath, b)
	}
	prepareGemini(t, w)
}

// prepareGemini points Gemini CLI at the scripted model (API key auth, no
// telemetry or updates, the repository trusted) in ~/.gemini/settings.json,
// keeping what is there.
func prepareGemini(t *testing.T, w *World) {
	t.Helper()
	dir := filepath.Join(w.Home, ".gemini")
	settingsPath := filepath.Join(dir, "settings.json")
	settings := map[string]any{}
	if b, err := os.ReadFile(settingsPath); err == nil {
		if err := json.Unmarshal(b, &settings); err != nil {
			t.Fatalf("%s: %v", settingsPath, err)
		}
	}
	settings["security"] = map[string]any{"auth": map[string]any{"selectedType": "gemini-api-key"}}
	settings["privacy"] = map[string]any{"usageStatisticsEnabled": false}
	settings["telemetry"] = map[string]any{"enabled": false}
	settings["general"] = map[string]any{"enableAutoUpdate": false, "enableAutoUpdateNotification": false}
	settings["ide"] = map[string]any{"enabled": false}
	writeJSON(t, settingsPath, settings)
	writeJSON(t, filepath.Join(dir, "trustedFolders.json"), map[string]any{w.Repo: "TRUST_FOLDER"})
}

func writeJSON(t testing.TB, path string, v any) {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// runGemini runs `gemini -p PROMPT --output-format stream-json --yolo` in
// the repository (yolo: every tool call runs without asking) and reads its
// event stream: init names the session, tool_use and tool_result each
// call by id with its status.
func runGemini(t *testing.T, w *World, prompt string, extra ...string) *RunResult {
	t.Helper()
	res := Exec(t, "gemini", geminiCommand(context.Background(), t, w, []string{"-p", prompt, "--output-format", "stream-json", "--yolo"}, append(geminiEnv(w), extra...)...))
	// Gemini CLI gives its session id to no MCP server (not in their
	// environment, clientInfo or a call's _meta; only hooks get it, as
	// GEMINI_SESSION_ID): crosscode-mcp cannot stamp it.
	res.SessionID, res.ToolErrors = geminiEvents(t, res.Stdout)
	res.SessionPrivate = true
	if res.SessionID == "" {
		t.Errorf("gemini stream-json: no session id in an init event")
	}
	return res
}

// geminiEvent is one line of `--output-format stream-json`.
type geminiEvent struct {
	Type      string `json:"type"`
	SessionID string `json:"session_id"`
	ToolName  string `json:"tool_name"`
	ToolID    string `json:"tool_id"`
	Status    string `json:"status"`
}

// geminiEvents reads the session id and, by call id as the model gave it,
// whether each tool call failed.
func geminiEvents(t *testing.T, stdout string) (string, map[string]bool) {
	t.Helper()
	var session string
	errs := map[string]bool{}
	names := map[string]string{}
	for _, l := range lines(stdout) {
		var e geminiEvent
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Errorf("gemini stream-json: a line is not JSON: %s", tail(l, 300))
			continue
		}
		switch e.Type {
		case "init":
			session = e.SessionID
		case "tool_use":
			names[e.ToolID] = e.ToolName
		case "tool_result":
			errs[geminiCallID(names[e.ToolID], e.ToolID)] = e.Status == "error"
		}
	}
	return session, errs
}

// geminiCallID is the id the model gave a call: the CLI names its calls
// NAME__ID in its event stream (turn.ts, handlePendingFunctionCall); on
// the wire it sends the model's id back.
func geminiCallID(name, id string) string {
	if name != "" {
		return strings.TrimPrefix(id, name+"__")
	}
	return id
}

// The Gemini API's request and response, as far as the play reads and
// writes them.
type (
	gemContent struct {
		Role  string    `json:"role,omitempty"`
		Parts []gemPart `json:"parts"`
	}
	gemPart struct {
		Text             *string          `json:"text,omitempty"`
		Thought          bool             `json:"thought,omitempty"`
		InlineData       *gemBlob         `json:"inlineData,omitempty"`
		FunctionCall     *gemFuncCall     `json:"functionCall,omitempty"`
		FunctionResponse *gemFuncResponse `json:"functionResponse,omitempty"`
	}
	gemBlob struct {
		MIMEType string `json:"mimeType"`
		Data     string `json:"data"`
	}
	gemFuncCall struct {
		ID   string         `json:"id,omitempty"`
		Name string         `json:"name"`
		Args map[string]any `json:"args"`
	}
	gemFuncResponse struct {
		ID       string         `json:"id"`
		Name     string         `json:"name"`
		Response map[string]any `json:"response"`
		Parts    []gemPart      `json:"parts"`
	}
	gemRequest struct {
		Contents          []gemContent `json:"contents"`
		SystemInstruction *gemContent  `json:"systemInstruction"`
		Tools             []struct {
			FunctionDeclarations []struct {
				Name string `json:"name"`
			} `json:"functionDeclarations"`
		} `json:"tools"`
		GenerationConfig struct {
			ResponseMIMEType   string         `json:"responseMimeType"`
			ResponseJSONSchema map[string]any `json:"responseJsonSchema"`
			ResponseSchema     map[string]any `json:"responseSchema"`
		} `json:"generationConfig"`
	}
)

// mountGemini serves the Gemini API's model methods.
func mountGemini(mux *http.ServeMux, m *Model) {
	mux.HandleFunc("POST /v1beta/models/{method}", func(w http.ResponseWriter, r *http.Request) {
		method := r.PathValue("method") // MODEL:streamGenerateContent
		_, verb, _ := strings.Cut(method, ":")
		body, err := io.ReadAll(r.Body)
		if err != nil {
			m.Fail("%s: %v", r.URL.Path, err)
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var req gemRequest
		if err := json.Unmarshal(body, &req); err != nil {
			m.Fail("%s: the request does not parse: %v: %s", r.URL.Path, err, tail(string(body), 300))
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		switch verb {
		case "countTokens":
			m.Answer(&Request{Path: r.URL.Path, Raw: body, Side: true})
			writeJSONResponse(w, map[string]any{"totalTokens": len(body) / 4})
			return
		case "generateContent", "streamGenerateContent":
		default:
			m.Fail("unexpected Gemini API method %s", method)
			http.Error(w, "unknown method", http.StatusNotFound)
			return
		}
		rq := parseGeminiRequest(m, r.URL.Path, body, &req)
		schema := req.GenerationConfig.ResponseJSONSchema
		if schema == nil {
			schema = req.GenerationConfig.ResponseSchema
		}
		// The conversation streams and offers tools; the rest (the
		// router's complexity score, ...) is outside it.
		rq.Side = verb != "streamGenerateContent" || schema != nil || req.GenerationConfig.ResponseMIMEType == "application/json"
		rep := m.Answer(rq)
		var parts []map[string]any
		switch {
		case rq.Side && schema != nil:
			b, _ := json.Marshal(schemaExample(schema))
			parts = append(parts, map[string]any{"text": string(b)})
		case len(rep.Calls) > 0:
			for _, c := range rep.Calls {
				parts = append(parts, map[string]any{"functionCall": map[string]any{"id": c.ID, "name": c.Name, "args": c.Args}})
			}
		default:
			parts = append(parts, map[string]any{"text": rep.Text})
		}
		resp := map[string]any{
			"candidates": []any{map[string]any{
				"content":      map[string]any{"role": "model", "parts": parts},
				"finishReason": "STOP",
				"index":        0,
			}},
			"usageMetadata": map[string]any{"promptTokenCount": len(body) / 4, "candidatesTokenCount": 10, "totalTokenCount": len(body)/4 + 10},
			"modelVersion":  strings.TrimSuffix(method, ":"+verb),
		}
		if verb == "generateContent" {
			writeJSONResponse(w, resp)
			return
		}
		b, _ := json.Marshal(resp)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		bw := bufio.NewWriter(w)
		fmt.Fprintf(bw, "data: %s\r\n\r\n", b)
		bw.Flush()
	})
}

func writeJSONResponse(w http.ResponseWriter, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
}

// parseGeminiRequest reads a generateContent request: the functions
// offered, the tool results of the last turn (functionResponse parts and
// the images with them), and the rest of the text as context.
func parseGeminiRequest(m *Model, path string, body []byte, req *gemRequest) *Request {
	rq := &Request{Path: path, Raw: body}
	for _, t := range req.Tools {
		for _, f := range t.FunctionDeclarations {
			rq.Tools = append(rq.Tools, f.Name)
		}
	}
	var texts []string
	if req.SystemInstruction != nil {
		for _, p := range req.SystemInstruction.Parts {
			if p.Text != nil {
				texts = append(texts, *p.Text)
			}
		}
	}
	var sent []int // the bytes of each result's output or error as sent
	for i, c := range req.Contents {
		last := i == len(req.Contents)-1
		var cur *ToolResult
		for _, p := range c.Parts {
			switch {
			case p.FunctionResponse != nil:
				if !last {
					cur = nil
					continue
				}
				res, n := geminiResult(m, p.FunctionResponse)
				rq.Results = append(rq.Results, res)
				sent = append(sent, n)
				cur = &rq.Results[len(rq.Results)-1]
			case p.InlineData != nil && cur != nil:
				// An image following its functionResponse (models
				// without multimodal function responses).
				cur.Images = append(cur.Images, geminiImage(m, p.InlineData))
			case p.Text != nil && c.Role == "user" && !p.Thought:
				texts = append(texts, *p.Text)
			}
		}
	}
	rq.Context = strings.Join(texts, "\n")
	for i, r := range rq.Results {
		m.t.Logf("gemini: %s: the model got %s (%s): %d bytes of text (%d with the CLI's tags and labels)%s", path, r.CallID, r.Name, len(r.Text), sent[i], imageSizes(r.Images))
	}
	return rq
}

// geminiResult is one functionResponse as the model reads it: the text of
// its output (or error), the images in its parts; and the bytes of the
// output (or error) as sent.
func geminiResult(m *Model, fr *gemFuncResponse) (ToolResult, int) {
	res := ToolResult{CallID: geminiCallID(fr.Name, fr.ID), Name: fr.Name, ErrorFlag: true}
	var text string
	if e, ok := fr.Response["error"]; ok {
		res.IsError = true
		text = jsonText(e)
	} else if o, ok := fr.Response["output"]; ok {
		text = jsonText(o)
	} else {
		text = jsonText(fr.Response)
	}
	res.Text = untrustedBlocks(text)
	for _, p := range fr.Parts {
		if p.InlineData != nil {
			res.Images = append(res.Images, geminiImage(m, p.InlineData))
		}
	}
	return res, len(text)
}

// imageSizes describes images for the log: sizes and bytes.
func imageSizes(ims []Image) string {
	var s strings.Builder
	for _, im := range ims {
		fmt.Fprintf(&s, ", %s %dx%d (%d bytes)", im.MIME, im.Width, im.Height, len(im.Data))
	}
	return s.String()
}

func geminiImage(m *Model, b *gemBlob) Image {
	data, err := base64.StdEncoding.DecodeString(b.Data)
	if err != nil {
		m.Fail("an inlineData part's data is not base64: %v", err)
	}
	return NewImage(b.MIMEType, data)
}

// jsonText is a string as it is, anything else as JSON.
func jsonText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// untrustedBlocks are the texts of the tool's text blocks in an output
// the CLI made: it wraps each in <untrusted_context> tags (escaping the
// closing tag inside) and adds a label of its own for each image, outside
// them. A text without the tags (an error string) is returned as it is; a
// block cut short (the CLI truncates long outputs) is returned as far as
// it goes.
func untrustedBlocks(s string) string {
	const open, end = "<untrusted_context>\n", "\n</untrusted_context>"
	if !strings.Contains(s, open) {
		return s
	}
	var blocks []string
	rest := s
	for {
		i := strings.Index(rest, open)
		if i < 0 {
			break
		}
		rest = rest[i+len(open):]
		j := strings.Index(rest, end)
		if j < 0 {
			blocks = append(blocks, rest)
			break
		}
		blocks = append(blocks, rest[:j])
		rest = rest[j+len(end):]
	}
	for i, b := range blocks {
		blocks[i] = strings.ReplaceAll(b, "&lt;/untrusted_context&gt;", "</untrusted_context>")
	}
	return strings.Join(blocks, "\n")
}

// schemaExample is a value that fits a response schema (OpenAPI or JSON
// Schema types, either case): the side requests' answers, such as the
// router's {"complexity_reasoning": "...", "complexity_score": 1}.
func schemaExample(schema map[string]any) any {
	if enum, ok := schema["enum"].([]any); ok && len(enum) > 0 {
		for _, e := range enum {
			if e == "user" { // the next-speaker check: the user speaks next
				return e
			}
		}
		return enum[0]
	}
	typ, _ := schema["type"].(string)
	switch strings.ToLower(typ) {
	case "object":
		out := map[string]any{}
		props, _ := schema["properties"].(map[string]any)
		for k, p := range props {
			if ps, ok := p.(map[string]any); ok {
				out[k] = schemaExample(ps)
			}
		}
		return out
	case "array":
		return []any{}
	case "integer", "number":
		return 1
	case "boolean":
		return false
	}
	return "ok"
}
