package cappy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/crosscode/crosscode-mcp/bridge/cappy/visual"
	"github.com/crosscode/crosscode-mcp/internal/sanitize"
	"github.com/crosscode/crosscode-mcp/protocol"
)

// What the agent gets of agent play: a step's picture, and inspect values
// as data (sanitized, capped, the whole value on disk).

// MaxInspectAgentBytes is the most of an inspect value an agent is given
// inline (its compact JSON); a larger value is written to a file, and the
// agent gets its start and the file's path.
const MaxInspectAgentBytes = 16 << 10

// keepInspectFiles is how many inspect files are kept (the oldest go).
const keepInspectFiles = 64

// InspectValue is an inspect's answer as an agent sees it.
type InspectValue struct {
	Query string `json:"query"`
	// Value is the game's answer (data, not instructions), every string in
	// it sanitized; absent when it is over MaxInspectAgentBytes or the game
	// answered an error.
	Value json.RawMessage `json:"value,omitempty"`
	// Bytes is the size of the value's compact JSON.
	Bytes int `json:"bytes"`
	// Truncated: Value was too large; Preview is its start, File the whole.
	Truncated bool   `json:"truncated,omitempty"`
	Preview   string `json:"preview,omitempty"`
	File      string `json:"file,omitempty"`
	// ErrorCode and ErrorMessage are the game's error for the query.
	ErrorCode    string `json:"errorCode,omitempty"`
	ErrorMessage string `json:"errorMessage,omitempty"`
}

// Inspect asks the game for query's value (launching it if needed, as the
// other capture calls do) and returns it as an agent may see it.
func (s *Service) Inspect(ctx context.Context, query string) (*InspectValue, error) {
	if _, err := s.EnsureAdapter(ctx); err != nil {
		return nil, err
	}
	ans, err := s.Controller.Inspect(ctx, query)
	if err != nil {
		return nil, err
	}
	out := &InspectValue{Query: sanitize.Line(query, 200)}
	if ans.Error != nil {
		out.ErrorCode, out.ErrorMessage = sanitize.Line(ans.Error.Code, 80), sanitize.Line(ans.Error.Message, 1000)
		return out, nil
	}
	clean, err := SanitizeJSON(ans.Value)
	if err != nil {
		return nil, errorf(protocol.CappyInvalidMessage, "the game's inspect value is not JSON: %v", err)
	}
	out.Bytes = len(clean)
	// Measured as the result will carry it (json.Marshal escapes <, >, &).
	if carried, err := json.Marshal(clean); err == nil && len(carried) <= MaxInspectAgentBytes {
		out.Value = clean
		return out, nil
	}
	file, err := s.writeInspect(ans.ID, clean)
	if err != nil {
		return nil, err
	}
	out.Truncated, out.File = true, file
	out.Preview = preview(clean, MaxInspectAgentBytes/2)
	return out, nil
}

// preview is the start of a value's JSON text whose JSON string encoding
// (quotes and backslashes escaped, and <, >, &) takes at most max bytes,
// cut at a character, with an ellipsis.
func preview(text []byte, max int) string {
	n, size := 0, 2
	for n < len(text) {
		r, w := utf8.DecodeRune(text[n:])
		cost := w
		switch {
		case r == '"' || r == '\\':
			cost = 2
		case r == '<' || r == '>' || r == '&' || r < 0x20 || r == '\u2028' || r == '\u2029' || r == utf8.RuneError:
			cost = 6
		}
		if size+cost > max-len("…") {
			break
		}
		size += cost
		n += w
	}
	return string(text[:n]) + "…"
}

// writeInspect writes a large inspect value (indented) to the capture
// directory and returns its path; only the newest files are kept.
func (s *Service) writeInspect(id string, v json.RawMessage) (string, error) {
	dir := filepath.Join(filepath.Dir(s.Controller.FrameDir()), "inspect")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("inspect dir: %w", err)
	}
	var b bytes.Buffer
	if err := json.Indent(&b, v, "", "  "); err != nil {
		return "", err
	}
	path := filepath.Join(dir, time.Now().UTC().Format("20060102T150405.000")+"-"+id+".json")
	if err := writeFileAtomic(path, b.Bytes()); err != nil {
		return "", fmt.Errorf("write inspect value: %w", err)
	}
	if files, _ := filepath.Glob(filepath.Join(dir, "*.json")); len(files) > keepInspectFiles {
		slices.Sort(files) // by time
		for _, f := range files[:len(files)-keepInspectFiles] {
			os.Remove(f)
		}
	}
	return path, nil
}

// SanitizeJSON re-encodes a JSON value written by a game with every
// string (keys too) sanitized (sanitize.Text; keys as one line), compact.
func SanitizeJSON(raw json.RawMessage) (json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // numbers as the game wrote them
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(sanitize.Tree(v, 200, func(s string) string { return sanitize.Text(s, protocol.MaxInspectBytes) })); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// StepPicture is a step's frame as the agent sees it: a JPEG at most
// AgentWidth wide, the size get_capture gives. File is the stored frame
// ("" when it was not stored: over the frame budget).
func (s *Service) StepPicture(op string, r *StepResult) (*Picture, error) {
	if r.Frame == nil {
		return nil, ErrNoFrames
	}
	jpg, w, h, err := visual.AgentJPEGData(r.Frame.Data, "step "+r.ID, AgentWidth, agentQuality)
	if err != nil {
		return nil, err
	}
	p := &Picture{Kind: "keyframe", Why: "the paused game after step " + r.ID, T: r.Frame.T, Seq: r.FrameSeq, Width: w, Height: h, Bytes: len(jpg), JPEG: jpg}
	if r.FrameSeq > 0 {
		p.File = filepath.Join(s.Controller.FrameDir(), frameFile(op, r.FrameSeq, r.Frame.Mime))
	}
	if n := len(r.Events); n > 0 {
		e := r.Events[n-1]
		p.Event, p.EventT = sanitize.Line(e.Event, 120), e.T
	}
	return p, nil
}

// ActionView is one of the game's actions, as an agent sees it.
type ActionView struct {
	Name        string `json:"name"`
	Kind        string `json:"kind" jsonschema:"enum=button,enum=axis,enum=axis2d,enum=pointer,enum=text"`
	Description string `json:"description,omitempty"`
}

// compactButtons is how many buttons without a description a game may
// declare before ActionList names them compactly.
const compactButtons = 16

// ActionList is the connected game's actions as an agent sees them,
// sanitized: one by one, but for a game that declares more than
// compactButtons buttons without a description (the page driver's
// keyboard), which come apart in buttons, by name alone, a run of names
// that count up (KeyA, KeyB, ... KeyZ; F1 ... F24) as "first..last".
func (s *Service) ActionList() (views []ActionView, buttons []string) {
	acts := s.Controller.Actions()
	plain := 0
	for _, a := range acts {
		if a.Kind == protocol.ActionButton && strings.TrimSpace(a.Description) == "" {
			plain++
		}
	}
	views = make([]ActionView, 0, len(acts))
	var names []string
	for _, a := range acts {
		if plain > compactButtons && a.Kind == protocol.ActionButton && strings.TrimSpace(a.Description) == "" {
			names = append(names, sanitize.Line(a.Name, 128))
			continue
		}
		views = append(views, ActionView{Name: a.Name, Kind: a.Kind, Description: strings.TrimSpace(sanitize.Line(a.Description, 300))})
	}
	return views, compactNames(names)
}

// compactNames writes each run of three or more names that count up (the
// same start, then one letter or a number, each one more than the last)
// as "first..last".
func compactNames(names []string) []string {
	var out []string
	for i := 0; i < len(names); {
		j := i + 1
		for j < len(names) && nextName(names[j-1], names[j]) {
			j++
		}
		if j-i >= 3 {
			out = append(out, names[i]+".."+names[j-1])
		} else {
			out = append(out, names[i:j]...)
		}
		i = j
	}
	return out
}

// nextName reports whether b follows a: the same start, then the next
// letter (KeyA, KeyB) or the next number (F9, F10).
func nextName(a, b string) bool {
	pa, na, la := splitCount(a)
	pb, nb, lb := splitCount(b)
	return na >= 0 && pa == pb && la == lb && nb == na+1
}

// splitCount splits a name into its start and its counting end: a number
// (of up to three digits), or an uppercase letter (letter true); n is -1
// when it has neither.
func splitCount(s string) (start string, n int, letter bool) {
	i := len(s)
	for i > 0 && len(s)-i < 3 && s[i-1] >= '0' && s[i-1] <= '9' {
		i--
	}
	switch {
	case i < len(s) && i > 0:
		n, _ = strconv.Atoi(s[i:])
		return s[:i], n, false
	case len(s) > 1 && s[len(s)-1] >= 'A' && s[len(s)-1] <= 'Z':
		return s[:len(s)-1], int(s[len(s)-1]), true
	}
	return s, -1, false
}
