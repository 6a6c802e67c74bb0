package agentclients

import (
	"bytes"
	"fmt"
	"image"
	_ "image/jpeg" // the pictures tool results carry
	_ "image/png"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// Request is one request a client made to its model, as the script sees
// it: what the wire adapter read out of the client's own format.
type Request struct {
	N    int    // 1-based, in arrival order
	Path string // the URL path the client posted to
	Raw  []byte // the body as sent (for sizes and for what the adapter did not parse)

	// Tools are the names of the functions the client offered its model,
	// as offered (mcp__crosscode__claim, crosscode_claim, ...).
	Tools []string
	// Results are the tool results this request brings back: the outputs
	// of the calls of the model's previous reply, in order.
	Results []ToolResult
	// Context is the rest of the conversation's text as the model would
	// read it (system prompt, user messages, context the client added),
	// joined; hooks' news (issue 18) shows here.
	Context string
	// Side is true for a request outside the conversation the script plays
	// (a title, a summary, a quota check): the adapter answers it with
	// plain text and the script never sees it.
	Side bool
}

// ToolResult is one tool result as the client forwarded it to its model.
type ToolResult struct {
	CallID string // the id of the call it answers, as the model gave it
	Name   string // the function name, when the wire format repeats it
	Text   string // every text part, joined with "\n"
	Images []Image
	// ErrorFlag is whether the wire format has an error flag on a tool
	// result at all (Anthropic's is_error does; OpenAI's formats do not),
	// and IsError its value. Where there is none, the client's own event
	// stream (RunResult.ToolErrors) tells whether the client saw an error.
	ErrorFlag, IsError bool
}

// Image is a picture in a tool result.
type Image struct {
	MIME          string
	Data          []byte // decoded bytes
	Width, Height int    // from decoding Data (0 when it does not decode)
}

// NewImage decodes data enough to know its size.
func NewImage(mime string, data []byte) Image {
	im := Image{MIME: mime, Data: data}
	if cfg, _, err := image.DecodeConfig(bytes.NewReader(data)); err == nil {
		im.Width, im.Height = cfg.Width, cfg.Height
	}
	return im
}

// Call is a tool call the model makes.
type Call struct {
	ID   string         // set by the Model when empty: call_1, call_2, ...
	Name string         // the function name as offered (see Request.Tool)
	Args map[string]any // the arguments, as JSON would decode them
}

// Reply is the model's answer to a request: tool calls, or (when there
// are none) a final text that ends the turn.
type Reply struct {
	Calls []Call
	Text  string
}

// Tool is the offered function name for one of crosscode-mcp's tools
// (claim -> mcp__crosscode__claim in Claude Code, crosscode_claim in
// OpenCode, ...): the offered name that ends in the tool's name and names
// the server. It is "" when the client offered no such function. Of
// several such names the shortest is the tool's own: claim is
// mcp__crosscode__claim, not mcp__crosscode__release_claim, whatever the
// order the client offered them in.
func (r *Request) Tool(name string) string {
	for _, t := range r.Tools {
		if t == name {
			return t
		}
	}
	best := ""
	for _, t := range r.Tools {
		if strings.Contains(strings.ToLower(t), "crosscode") && (strings.HasSuffix(t, "_"+name) || strings.HasSuffix(t, "__"+name) || strings.HasSuffix(t, "."+name)) {
			if best == "" || len(t) < len(best) {
				best = t
			}
		}
	}
	return best
}

// Script plays the model's part of the conversation: given a request,
// the reply. It runs on the Model's lock, one request at a time.
type Script func(r *Request) Reply

// Model is a scripted model endpoint on loopback that records every
// request. A client's wire adapter (Client.Mount) parses each request
// into a Request, asks Answer for the Reply and writes it in the client's
// format (streaming when the client asks).
type Model struct {
	URL string // http://127.0.0.1:PORT, no trailing slash

	t      testing.TB
	srv    *http.Server
	mu     sync.Mutex
	script Script
	reqs   []*Request
	calls  int
	fails  []string
}

// NewModel serves mount's handlers on a loopback port until the test ends.
func NewModel(t testing.TB, mount func(mux *http.ServeMux, m *Model), script Script) *Model {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m := &Model{URL: "http://" + ln.Addr().String(), t: t, script: script}
	mux := http.NewServeMux()
	mount(mux, m)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		m.Fail("unexpected request %s %s", r.Method, r.URL.Path)
		http.Error(w, "not served by the scripted model", http.StatusNotFound)
	})
	m.srv = &http.Server{Handler: mux}
	go m.srv.Serve(ln)
	t.Cleanup(func() { m.srv.Close() })
	return m
}

// Answer records r and, unless it is a side request, asks the script for
// the reply, numbering the calls that have no id.
func (m *Model) Answer(r *Request) Reply {
	m.mu.Lock()
	defer m.mu.Unlock()
	r.N = len(m.reqs) + 1
	m.reqs = append(m.reqs, r)
	if r.Side {
		return Reply{Text: "ok"}
	}
	rep := m.script(r)
	for i := range rep.Calls {
		if rep.Calls[i].ID == "" {
			m.calls++
			rep.Calls[i].ID = fmt.Sprintf("call_%d", m.calls)
		}
		if rep.Calls[i].Args == nil {
			rep.Calls[i].Args = map[string]any{}
		}
	}
	return rep
}

// Requests are the requests recorded so far, side requests included.
func (m *Model) Requests() []*Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]*Request(nil), m.reqs...)
}

// Fail records a problem an adapter saw (a request it could not parse);
// the test reports every one at the end (Failures).
func (m *Model) Fail(format string, args ...any) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.fails = append(m.fails, fmt.Sprintf(format, args...))
}

// Failures are the problems recorded with Fail.
func (m *Model) Failures() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.fails...)
}
