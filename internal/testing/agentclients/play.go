package agentclients

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// Prompt is what the user asks every client in the play; the scripted
// model ignores it.
const Prompt = "Claim src/hero.go, try src/boss.go, run the boss_intro scenario and show me its keyframes."

// Play is the standard play every client goes through, one step per
// request of the main conversation:
//
//  1. claim src/hero.go (free: granted, with a claim id)
//  2. claim src/boss.go (held by OtherActor: denied, naming the holder)
//  3. run_scenario boss_intro on the demo game (completes, with a contact
//     sheet)
//  4. get_capture of that run with 3 keyframes
//  5. claim with a bad argument (patterns a number): an error
//  6. run_scenario of a scenario the game does not have: a failed
//     operation, an error
//  7. workspace_status (for the token figures)
//  8. a final text.
//
// Its Script plays the steps; Check checks what the client forwarded.
type Play struct {
	steps []*step
	// Tools are the names the first request offered.
	Tools []string
	op    string // the run_scenario's operation id, from its result
}

// step is one step's call and what came back for it.
type step struct {
	what   string // for messages
	tool   string // crosscode-mcp's tool name
	call   Call   // as made (ID set by the Model)
	result *ToolResult
}

// Script is the play's Script: it plays the next step whenever the
// request brings back the previous one's result.
func (p *Play) Script(r *Request) Reply {
	if len(p.steps) == 0 {
		p.Tools = slices.Clone(r.Tools)
	}
	// The results of the previous step's call, by call id (or, where a
	// client gives results ids of its own, the one call waiting for one).
	for i := range r.Results {
		res := r.Results[i]
		var waiting []*step
		for _, s := range p.steps {
			if s.result == nil {
				waiting = append(waiting, s)
			}
		}
		if k := slices.IndexFunc(waiting, func(s *step) bool { return s.call.ID == res.CallID }); k >= 0 {
			waiting[k].result = &res
		} else if len(waiting) == 1 {
			waiting[0].result = &res
		}
	}
	if n := len(p.steps); n > 0 && p.steps[n-1].result == nil {
		// The client asked again without the result: end the turn rather than call twice.
		return Reply{Text: "The result of my last call did not come back."}
	}
	next := func(what, tool string, args map[string]any) Reply {
		name := r.Tool(tool)
		if name == "" {
			return Reply{Text: "No " + tool + " tool is offered."}
		}
		s := &step{what: what, tool: tool, call: Call{ID: fmt.Sprintf("call_cc%d", len(p.steps)+1), Name: name, Args: args}}
		p.steps = append(p.steps, s)
		return Reply{Calls: []Call{s.call}}
	}
	switch len(p.steps) {
	case 0:
		return next("claim of a free file", "claim", map[string]any{"patterns": []string{"src/hero.go"}, "reason": "fix the hero's HP"})
	case 1:
		return next("claim of a held file", "claim", map[string]any{"patterns": []string{"src/boss.go"}, "reason": "tune the boss"})
	case 2:
		return next("run_scenario", "run_scenario", map[string]any{"scenario": "boss_intro", "parameters": map[string]any{"difficulty": 1}})
	case 3:
		p.op = opOf(p.steps[2].result)
		return next("get_capture with keyframes", "get_capture", map[string]any{"op": p.op, "keyframes": 3, "limit": 5})
	case 4:
		return next("bad argument", "claim", map[string]any{"patterns": 5})
	case 5:
		return next("failed operation", "run_scenario", map[string]any{"scenario": "no_such_scenario"})
	case 6:
		return next("workspace_status", "workspace_status", nil)
	}
	return Reply{Text: "Done: src/hero.go is mine, src/boss.go is Grace's, and the boss fight ran."}
}

// opPattern finds an operation id in a result's text.
var opPattern = regexp.MustCompile(`"op"\s*:\s*"([^"]+)"`)

// opOf is the operation id in a run_scenario result.
func opOf(r *ToolResult) string {
	if r == nil {
		return ""
	}
	if m := opPattern.FindStringSubmatch(r.Text); m != nil {
		return m[1]
	}
	return ""
}

// resultJSON is the JSON of a result's text: all of it when it starts
// with "{", else what follows a header the client put on lines of its own
// before it (Codex forwards "Wall time: 0.0113 seconds\nOutput:\n" and
// then the result); ok is false when the text has no JSON.
func resultJSON(text string) (string, bool) {
	txt := strings.TrimSpace(text)
	if strings.HasPrefix(txt, "{") {
		return txt, true
	}
	if i := strings.Index(txt, "\n{"); i >= 0 {
		return txt[i+1:], true
	}
	return "", false
}

// goJargon are words of Go's type system that must not reach a model.
var goJargon = regexp.MustCompile(`\b(slice|float64|int64|map\[|\[\]string|struct|unmarshal|json:)\b`)

// Check checks what the client forwarded to its model in the play, and
// how it ended.
func (p *Play) Check(t *testing.T, c *Client, w *World, m *Model, res *RunResult) {
	t.Helper()
	for _, f := range m.Failures() {
		t.Errorf("model endpoint: %s", f)
	}
	if res.ExitCode != 0 {
		t.Errorf("%s exited %d; stderr: %s", c.Name, res.ExitCode, tail(res.Stderr, 2000))
	}
	for _, name := range w.ServerTools(t) {
		if !slices.ContainsFunc(p.Tools, func(o string) bool { return o == name || (&Request{Tools: []string{o}}).Tool(name) != "" }) {
			t.Errorf("tool %s not offered to the model (offered: %v)", name, p.Tools)
		}
	}
	if len(p.steps) < 6 {
		t.Fatalf("the play stopped after %d of 6 steps", len(p.steps))
	}
	for _, s := range p.steps {
		if s.result == nil {
			t.Fatalf("%s: no result reached the model", s.what)
		}
		// Nothing truncated: a result that is JSON is all of it.
		if txt, ok := resultJSON(s.result.Text); ok && !json.Valid([]byte(txt)) {
			t.Errorf("%s: the result's JSON does not parse (truncated?): %s", s.what, tail(txt, 300))
		}
		for i, im := range s.result.Images {
			if im.Width == 0 || im.Height == 0 {
				t.Errorf("%s: image %d (%s, %d bytes) does not decode", s.what, i, im.MIME, len(im.Data))
			}
		}
	}
	isErr := func(s *step) bool {
		if s.result.ErrorFlag {
			return s.result.IsError
		}
		if res.ToolErrors == nil {
			t.Errorf("%s: the wire format has no error flag and the client's event stream said nothing", s.what)
			return false
		}
		return res.ToolErrors[s.call.ID]
	}
	granted, denied, run, capture, bad, failed := p.steps[0], p.steps[1], p.steps[2], p.steps[3], p.steps[4], p.steps[5]
	if txt := granted.result.Text; !strings.Contains(txt, "clm_") || !strings.Contains(txt, "granted") || isErr(granted) {
		t.Errorf("claim of a free file: want granted with a clm_ id, got %s", tail(txt, 500))
	}
	if txt := denied.result.Text; !strings.Contains(txt, OtherActor) || !strings.Contains(txt, "denied") {
		t.Errorf("claim of a held file: want denied naming %s, got %s", OtherActor, tail(txt, 500))
	}
	if txt := run.result.Text; !strings.Contains(txt, "completed") || isErr(run) {
		t.Errorf("run_scenario: want completed, got %s", tail(txt, 500))
	}
	if len(run.result.Images) < 1 {
		t.Errorf("run_scenario: the contact sheet did not reach the model as an image (text: %s)", tail(run.result.Text, 300))
	}
	if p.op == "" {
		t.Errorf("run_scenario: no op id in what the model got")
	}
	if len(capture.result.Images) < 3 {
		t.Errorf("get_capture: %d images reached the model, want 3 keyframes", len(capture.result.Images))
	}
	if !isErr(bad) {
		t.Errorf("bad argument: not marked as an error: %s", tail(bad.result.Text, 300))
	}
	if txt := bad.result.Text; !strings.Contains(txt, "patterns") || goJargon.MatchString(txt) {
		t.Errorf("bad argument: want plain words naming patterns, got %s", tail(txt, 300))
	}
	if !isErr(failed) {
		t.Errorf("failed operation: not marked as an error: %s", tail(failed.result.Text, 300))
	}
	// Identity: every envelope of this client's crosscode-mcp carries its provider.
	n := 0
	var refs []string
	for _, e := range w.Envelopes(t) {
		if e.ActorID != Actor {
			continue
		}
		n++
		if e.Agent.Provider != c.Provider {
			t.Errorf("envelope %s: provider %q, want %q", e.ID, e.Agent.Provider, c.Provider)
		}
		if res.SessionID != "" && !res.SessionPrivate && e.Agent.SessionReference != res.SessionID {
			t.Errorf("envelope %s: sessionReference %q, want the client's session id %q", e.ID, e.Agent.SessionReference, res.SessionID)
		}
		if !slices.Contains(refs, e.Agent.SessionReference) {
			refs = append(refs, e.Agent.SessionReference)
		}
	}
	if n == 0 {
		t.Errorf("no envelope of %s in the workspace log", Actor)
	}
	if res.SessionPrivate && (len(refs) != 1 || refs[0] == "") {
		t.Errorf("sessionReferences %q: want one for the whole run (%s gives its session id to no MCP server)", refs, c.Name)
	}
}

// LongPlay is a scenario that outlasts 45 s of wall time (the demo game
// paced at LongPace of real time): run_scenario answers a running handle
// and get_capture follows it to the end, every call inside the client's
// own tool timeout.
//
//  1. run_scenario boss_intro (difficulty 3: 41 s of game time) waiting
//     at most 10 s: running, with its op
//  2. get_capture of the op waiting 25 s, again until it completed (at
//     most 8 times)
//  3. a final text.
type LongPlay struct {
	steps []*step
	op    string
	first time.Time // when the model called run_scenario
	done  time.Time // when the completed get_capture's result came back
}

// LongPace is the demo game's pace in the long play: 41 s of game time
// take about 55 s.
const LongPace = 0.75

// Script is the long play's Script.
func (p *LongPlay) Script(r *Request) Reply {
	for i := range r.Results {
		res := r.Results[i]
		for _, s := range p.steps {
			if s.result == nil && (s.call.ID == res.CallID || s == p.steps[len(p.steps)-1]) {
				s.result = &res
				break
			}
		}
	}
	if n := len(p.steps); n > 0 {
		last := p.steps[n-1]
		if last.result == nil {
			return Reply{Text: "The result of my last call did not come back."}
		}
		if n == 1 {
			p.op = opOf(last.result)
		}
		if strings.Contains(last.result.Text, `"completed"`) {
			p.done = time.Now()
			return Reply{Text: "The long fight completed."}
		}
		if n > 8 || p.op == "" {
			return Reply{Text: "Giving up on the long fight."}
		}
	}
	what, tool, args := "get_capture", "get_capture", map[string]any{"op": p.op, "waitSeconds": 25, "limit": 3}
	if len(p.steps) == 0 {
		what, tool, args = "run_scenario (long)", "run_scenario", map[string]any{"scenario": "boss_intro", "parameters": map[string]any{"difficulty": 3}, "waitSeconds": 10}
	}
	name := r.Tool(tool)
	if name == "" {
		return Reply{Text: "No " + tool + " tool is offered."}
	}
	s := &step{what: what, tool: tool, call: Call{ID: fmt.Sprintf("call_long%d", len(p.steps)+1), Name: name, Args: args}}
	if len(p.steps) == 0 {
		p.first = time.Now()
	}
	p.steps = append(p.steps, s)
	return Reply{Calls: []Call{s.call}}
}

// Check checks the long play: a running handle first, then get_capture
// until completed, more than 45 s after it started, no call an error.
func (p *LongPlay) Check(t *testing.T, c *Client, res *RunResult) {
	t.Helper()
	if res.ExitCode != 0 {
		t.Errorf("%s exited %d; stderr: %s", c.Name, res.ExitCode, tail(res.Stderr, 2000))
	}
	if len(p.steps) < 2 || p.steps[0].result == nil {
		t.Fatalf("the long play stopped after %d steps", len(p.steps))
	}
	if txt := p.steps[0].result.Text; !strings.Contains(txt, `"running"`) || p.op == "" {
		t.Errorf("run_scenario (long): want a running handle with its op, got %s", tail(txt, 400))
	}
	for _, s := range p.steps {
		if s.result != nil && (s.result.ErrorFlag && s.result.IsError || res.ToolErrors[s.call.ID]) {
			t.Errorf("%s: an error: %s", s.what, tail(s.result.Text, 400))
		}
	}
	if p.done.IsZero() {
		t.Fatalf("the long scenario never completed in what the model got (%d calls)", len(p.steps))
	}
	// Wall time, not a timing assertion on our code: the point is that
	// the play outlasted 45 s (a shorter one would not test the timeouts),
	// from the model's run_scenario call to the completed result: the
	// scenario's whole run (about 55 s), of which run_scenario's own wait
	// (10 s) is part.
	if d := p.done.Sub(p.first); d < 45*time.Second {
		t.Errorf("the long scenario took %v from the run_scenario call to its completed result; the demo game's pace (LongPace) must make it outlast 45 s", d)
	}
}

// Tokens is what the model received for one tool result, in tokens as
// BENCHMARKS.md counts them: text bytes / 4, and width x height / 750 for
// each image.
type Tokens struct {
	Tool              string
	TextBytes, Images int
	Tokens            int
}

// Tokens are the play's figures for workspace_status, claim, run_scenario,
// get_capture with 3 keyframes and a failed run_scenario, in that order
// (the steps that did not come back are left out).
func (p *Play) Tokens() []Tokens {
	var out []Tokens
	for _, i := range []int{6, 0, 2, 3, 5} {
		if i >= len(p.steps) || p.steps[i].result == nil {
			continue
		}
		r := p.steps[i].result
		tool := p.steps[i].tool
		if i == 5 {
			tool += " (failed)"
		}
		tk := Tokens{Tool: tool, TextBytes: len(r.Text), Images: len(r.Images), Tokens: len(r.Text) / 4}
		for _, im := range r.Images {
			tk.Tokens += im.Width * im.Height / 750
		}
		out = append(out, tk)
	}
	return out
}
