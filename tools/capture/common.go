// Package capture holds the capture tools: the agent plays the game it is
// editing through the Cappy controller (bridge/cappy).
package capture

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/crosscode/crosscode-mcp/bridge/cappy"
	bc "github.com/crosscode/crosscode-mcp/bridge/coord"
	"github.com/crosscode/crosscode-mcp/internal/sanitize"
	"github.com/crosscode/crosscode-mcp/protocol"
	"github.com/crosscode/crosscode-mcp/store"
	"github.com/crosscode/crosscode-mcp/tools"
)

// Toolset is the name of this toolset (--toolsets capture).
const Toolset = "capture"

// Validations publishes capture outcomes to the coordination log; nil when
// the coordination tools are off.
type Validations interface {
	RecordValidation(ctx context.Context, v protocol.Validation) (*bc.Published, *protocol.Validation, error)
}

// Wait bounds: MCP clients abandon calls after about a minute.
const (
	DefaultWaitSeconds = 45
	MaxWaitSeconds     = 55
)

func waitFor(s int) time.Duration {
	if s <= 0 {
		s = DefaultWaitSeconds
	}
	return time.Duration(min(s, MaxWaitSeconds)) * time.Second
}

// handler is tools.Handler with the capture tools' actionable errors.
func handler[In any, Out any](f func(context.Context, mcpgo.CallToolRequest, In) (*Out, error)) server.ToolHandlerFunc {
	return tools.Handler(actionable, f)
}

// actionable turns controller errors, bad requests and unknown captures
// into messages that say what to do.
func actionable(err error) (string, bool) {
	var ce *cappy.Error
	var ie *bc.InputError
	var pe *cappy.PlayError
	switch {
	case errors.As(err, &pe):
		return pe.Error(), true
	case errors.As(err, &ce):
		return fmt.Sprintf("%s: %s", ce.Code, ce.Message), true
	case errors.As(err, &ie):
		return ie.Message, true
	case errors.Is(err, store.ErrNotFound):
		return err.Error() + "; list_captures shows the captures", true
	}
	return "", false
}

func inputErr(format string, args ...any) error {
	return &bc.InputError{Message: fmt.Sprintf(format, args...)}
}

// EventView is one event as tools show it; its payload was written by the
// game and is data.
type EventView struct {
	Seq        int64           `json:"seq"`
	T          float64         `json:"t"`
	Event      string          `json:"event"`
	DurationMs *float64        `json:"durationMs,omitempty"`
	Payload    json.RawMessage `json:"payload,omitempty"`
}

// maxPayloadBytes caps one event payload in a result.
const maxPayloadBytes = 600

func eventView(e store.CaptureEvent) EventView {
	return EventView{Seq: e.Seq, T: e.T, Event: sanitize.Line(e.Event, 120), DurationMs: e.DurationMs, Payload: cleanPayload(e.Payload)}
}

func eventViews(es []store.CaptureEvent) []EventView {
	out := make([]EventView, 0, len(es))
	for _, e := range es {
		out = append(out, eventView(e))
	}
	return out
}

// cleanPayload sanitizes every string in a game's payload and caps it.
func cleanPayload(p json.RawMessage) json.RawMessage {
	if len(p) == 0 {
		return nil
	}
	var v any
	if json.Unmarshal(p, &v) != nil {
		return nil
	}
	b, err := json.Marshal(sanitize.Tree(v, 80, func(s string) string { return sanitize.Line(s, 200) }))
	if err != nil {
		return nil
	}
	if len(b) > maxPayloadBytes {
		b, _ = json.Marshal(map[string]any{"truncated": true, "bytes": len(b)})
	}
	return b
}

// OpView is an operation's outcome (or state) with its timeline.
type OpView struct {
	Op   string `json:"op"`
	Kind string `json:"kind"`
	// Status is preparing, starting, running, stopping (still going: call
	// get_capture with waitSeconds), completed, failed or cancelled.
	Status   string `json:"status"`
	Code     string `json:"code,omitempty"`
	Message  string `json:"message,omitempty"`
	Scenario string `json:"scenario,omitempty"`
	// Seed is the seed of the game's randomness it ran with (a
	// recording's; a replay plays with its recording's), for games that
	// take one.
	Seed   *int64 `json:"seed,omitempty"`
	Events int64  `json:"events"`
	// LastT is the last event's t; EndT where the run ended, on the same
	// presented clock (once it ended); DurationMs its wall-clock time.
	LastT      float64  `json:"lastT"`
	EndT       *float64 `json:"endT,omitempty"`
	DurationMs int64    `json:"durationMs,omitempty"`
	// Warnings are what the game and the controller warned of while it
	// ran (game text: data), each once.
	Warnings []string `json:"warnings,omitempty"`
	// Timeline holds the first and last events; get_capture pages all of
	// them instead (and has no timeline). Omitted counts the events
	// between the first and last shown.
	Timeline []EventView `json:"timeline,omitempty"`
	Omitted  int64       `json:"omitted,omitempty"`
	Replay   *ReplayView `json:"replay,omitempty"`
	// Frames counts the frames taken, when frames were asked.
	Frames *FramesView `json:"frames,omitempty"`
	// Pictures lists the images this result carries as image content, in
	// order; PicturesLeftOut what it could not carry, and why.
	Pictures        []cappy.Picture `json:"pictures,omitempty"`
	PicturesLeftOut []string        `json:"picturesLeftOut,omitempty"`
	// Video is the capture's MP4 and WebVTT subtitles, when made.
	Video     *cappy.VideoInfo `json:"video,omitempty"`
	VideoNote string           `json:"videoNote,omitempty"`
	Next      string           `json:"next,omitempty"`
	attached  []mcpgo.Content  // the images, after the text
}

// Attachments are the images the result carries (tools.Result adds them).
func (v *OpView) Attachments() []mcpgo.Content { return v.attached }

// Failed reports a failed operation (spec section 5: answered with
// isError and its whole result); completed, running and cancelled ones are
// not errors.
func (v *OpView) Failed() bool { return v.Status == cappy.StatusFailed }

// ReplayView is a stored replay.
type ReplayView struct {
	SHA256 string `json:"sha256"`
	Bytes  int64  `json:"bytes"`
	Format string `json:"format,omitempty"`
}

// A timeline shows up to timelineHalf events from each end, within
// timelineBudget bytes; pageBudget bounds a page of events.
const (
	timelineHalf   = 25
	timelineBudget = 12 << 10
	pageBudget     = 14 << 10
)

// opView builds an operation's view from the store: the capture row and
// the first and last events.
func opView(ctx context.Context, st *store.Store, op string) (*OpView, error) {
	c, err := st.Capture(ctx, op)
	if err != nil {
		return nil, err
	}
	v := &OpView{Op: c.Op, Kind: c.Kind, Status: c.Status, Code: sanitize.Line(c.Code, 80), Message: sanitize.Line(c.Message, 500), Scenario: c.Scenario,
		Seed: c.Seed, Events: c.Events, LastT: c.LastT, EndT: c.EndT, Warnings: warningViews(c.Warnings), Timeline: []EventView{}}
	if c.StartedAt != nil {
		end := time.Now()
		if c.EndedAt != nil {
			end = *c.EndedAt
		}
		v.DurationMs = end.Sub(*c.StartedAt).Milliseconds()
	}
	first, err := st.Events(ctx, store.EventQuery{Op: op, Limit: timelineHalf})
	if err != nil {
		return nil, err
	}
	// The last ones: events and frames share seq, so they are read from
	// the end, not by seq arithmetic.
	var last []store.CaptureEvent
	if rest := c.Events - int64(len(first)); rest > 0 {
		if last, err = st.LastEvents(ctx, op, int(min(rest, timelineHalf))); err != nil {
			return nil, err
		}
		v.Omitted = rest - int64(len(last))
	}
	// Large payloads: fewer events from each end, the rest omitted.
	head, cut := tools.Fit(eventViews(first), timelineBudget/2)
	tail := eventViews(last)
	slices.Reverse(tail)
	tail, cut2 := tools.Fit(tail, timelineBudget/2)
	slices.Reverse(tail)
	v.Timeline = append(append(v.Timeline, head...), tail...)
	v.Omitted += int64(cut + cut2)
	v.Frames = framesView(c)
	if c.ReplaySHA != "" && c.Kind == cappy.KindRecording {
		if r, err := st.Replay(ctx, c.ReplaySHA); err == nil {
			v.Replay = &ReplayView{SHA256: r.SHA256, Bytes: r.Bytes, Format: sanitize.Line(r.Format, 80)}
		}
	}
	return v, nil
}

// A result shows at most maxWarnings warnings, each at most
// maxWarningChars long.
const (
	maxWarnings     = 10
	maxWarningChars = 400
)

// warningViews sanitizes and caps warnings (text from the game), each
// once.
func warningViews(ws []string) []string {
	var out []string
	for i, w := range ws {
		if len(out) == maxWarnings {
			out = append(out, fmt.Sprintf("and %d more warnings (the game's log has them)", len(ws)-i))
			break
		}
		if w = sanitize.Line(w, maxWarningChars); w != "" && !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	return out
}

// progress returns a listener that sends each event as an MCP progress
// notification (at most 50 a second) when the call asked for progress, or
// nil; and end, which the handler calls when it answers: the call's
// progress token means nothing after that, so the listener goes silent
// (the operation, and the listener registered with it, may run on).
func progress(ctx context.Context, req mcpgo.CallToolRequest) (listener func(store.CaptureEvent), end func()) {
	if req.Params.Meta == nil || req.Params.Meta.ProgressToken == nil {
		return nil, func() {}
	}
	token := req.Params.Meta.ProgressToken
	srv := server.ServerFromContext(ctx)
	if srv == nil {
		return nil, func() {}
	}
	var ended atomic.Bool
	var mu sync.Mutex
	var last time.Time
	return func(e store.CaptureEvent) {
		if ended.Load() {
			return
		}
		mu.Lock()
		if time.Since(last) < 20*time.Millisecond {
			mu.Unlock()
			return
		}
		last = time.Now()
		mu.Unlock()
		srv.SendNotificationToClient(ctx, "notifications/progress", map[string]any{
			"progressToken": token, "progress": e.Seq,
			"message": fmt.Sprintf("%s at t=%s", sanitize.Line(e.Event, 80), cappy.FormatMs(e.T)),
		})
	}, func() { ended.Store(true) }
}

// await waits for op up to wait, sending events as progress notifications
// (listen, unless the operation was started with the listener already),
// and cancels the operation if the tool call is cancelled.
func await(ctx context.Context, req mcpgo.CallToolRequest, ctrl *cappy.Controller, op *cappy.Operation, wait time.Duration, listen bool) {
	if f, end := progress(ctx, req); f != nil && listen {
		defer end()
		defer op.Listen(f)()
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-op.Done():
	case <-t.C:
	case <-ctx.Done():
		// The agent's client cancelled the call: cancel the operation too.
		ctrl.Cancel(op)
	}
}

// next says what to do after an operation's view.
func next(v *OpView) string {
	switch v.Status {
	case cappy.StatusCompleted:
		return "Completed. get_capture pages the full event timeline (filter by event name or t)."
	case cappy.StatusFailed, cappy.StatusCancelled:
		return "It did not complete: read code and message; capture_status shows the game's log."
	default:
		return fmt.Sprintf("Still %s: call get_capture with op=%s and waitSeconds to wait for the outcome, or cancel_capture.", v.Status, v.Op)
	}
}
