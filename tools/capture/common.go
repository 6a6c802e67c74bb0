// Package capture holds the capture tools: the agent plays the game it is
// editing through the Cappy controller (bridge/cappy).
package capture

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
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

// handler binds arguments strictly and turns controller errors into tool
// errors that say what to do.
func handler[In any, Out any](f func(context.Context, mcpgo.CallToolRequest, In) (*Out, error)) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		in, err := tools.Bind[In](req)
		if err != nil {
			return tools.Error(err.Error() + "; see the tool's input schema"), nil
		}
		out, err := f(ctx, req, in)
		var ce *cappy.Error
		var ie *inputError
		switch {
		case errors.As(err, &ce):
			return tools.Error(fmt.Sprintf("%s: %s", ce.Code, ce.Message)), nil
		case errors.As(err, &ie):
			return tools.Error(ie.msg), nil
		case errors.Is(err, store.ErrNotFound):
			return tools.Error(err.Error() + "; list_captures shows the captures"), nil
		case err != nil:
			return nil, err
		}
		return tools.Result(out), nil
	}
}

type inputError struct{ msg string }

func (e *inputError) Error() string { return e.msg }

func inputErr(format string, args ...any) error { return &inputError{fmt.Sprintf(format, args...)} }

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

// cleanPayload sanitizes every string in a game's payload and caps it.
func cleanPayload(p json.RawMessage) json.RawMessage {
	if len(p) == 0 {
		return nil
	}
	var v any
	if json.Unmarshal(p, &v) != nil {
		return nil
	}
	var walk func(any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case string:
			return sanitize.Line(x, 200)
		case map[string]any:
			out := make(map[string]any, len(x))
			for k, e := range x {
				out[sanitize.Line(k, 80)] = walk(e)
			}
			return out
		case []any:
			for i, e := range x {
				x[i] = walk(e)
			}
			return x
		}
		return v
	}
	b, err := json.Marshal(walk(v))
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
	Op         string      `json:"op"`
	Kind       string      `json:"kind"`
	Status     string      `json:"status" jsonschema_description:"preparing, starting, running, stopping (still going: call get_capture with waitSeconds), completed, failed or cancelled."`
	Code       string      `json:"code,omitempty"`
	Message    string      `json:"message,omitempty"`
	Scenario   string      `json:"scenario,omitempty"`
	Events     int64       `json:"events"`
	LastT      float64     `json:"lastT"`
	DurationMs int64       `json:"durationMs,omitempty"`
	Timeline   []EventView `json:"timeline" jsonschema_description:"The first and last events; get_capture pages all of them."`
	Omitted    int64       `json:"omitted,omitempty" jsonschema_description:"Events between the first and last shown."`
	Replay     *ReplayView `json:"replay,omitempty"`
	Next       string      `json:"next,omitempty"`
}

// ReplayView is a stored replay.
type ReplayView struct {
	SHA256 string `json:"sha256"`
	Bytes  int64  `json:"bytes"`
	Format string `json:"format,omitempty"`
}

const timelineHalf = 25

// opView builds an operation's view from the store: the capture row and
// the first and last events.
func opView(ctx context.Context, st *store.Store, op string) (*OpView, error) {
	c, err := st.Capture(ctx, op)
	if err != nil {
		return nil, err
	}
	v := &OpView{Op: c.Op, Kind: c.Kind, Status: c.Status, Code: sanitize.Line(c.Code, 80), Message: sanitize.Line(c.Message, 500), Scenario: c.Scenario,
		Events: c.Events, LastT: c.LastT, Timeline: []EventView{}}
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
	for _, e := range first {
		v.Timeline = append(v.Timeline, eventView(e))
	}
	if c.Events > 2*timelineHalf {
		last, err := st.Events(ctx, store.EventQuery{Op: op, AfterSeq: c.Events - timelineHalf, Limit: timelineHalf})
		if err != nil {
			return nil, err
		}
		v.Omitted = c.Events - int64(len(first)) - int64(len(last))
		for _, e := range last {
			v.Timeline = append(v.Timeline, eventView(e))
		}
	} else if c.Events > int64(len(first)) {
		rest, err := st.Events(ctx, store.EventQuery{Op: op, AfterSeq: int64(len(first)), Limit: timelineHalf})
		if err != nil {
			return nil, err
		}
		for _, e := range rest {
			v.Timeline = append(v.Timeline, eventView(e))
		}
	}
	if c.ReplaySHA != "" && c.Kind == cappy.KindRecording {
		if r, err := st.Replay(ctx, c.ReplaySHA); err == nil {
			v.Replay = &ReplayView{SHA256: r.SHA256, Bytes: r.Bytes, Format: sanitize.Line(r.Format, 80)}
		}
	}
	return v, nil
}

// progress returns a listener that sends each event as an MCP progress
// notification (at most 50 a second) when the call asked for progress, or
// nil.
func progress(ctx context.Context, req mcpgo.CallToolRequest) func(store.CaptureEvent) {
	if req.Params.Meta == nil || req.Params.Meta.ProgressToken == nil {
		return nil
	}
	token := req.Params.Meta.ProgressToken
	srv := server.ServerFromContext(ctx)
	if srv == nil {
		return nil
	}
	var mu sync.Mutex
	var last time.Time
	return func(e store.CaptureEvent) {
		mu.Lock()
		if time.Since(last) < 20*time.Millisecond {
			mu.Unlock()
			return
		}
		last = time.Now()
		mu.Unlock()
		srv.SendNotificationToClient(ctx, "notifications/progress", map[string]any{
			"progressToken": token, "progress": e.Seq,
			"message": fmt.Sprintf("%s at t=%gms", sanitize.Line(e.Event, 80), e.T),
		})
	}
}

// await waits for op up to wait, sending events as progress notifications
// (listen, unless the operation was started with the listener already),
// and cancels the operation if the tool call is cancelled.
func await(ctx context.Context, req mcpgo.CallToolRequest, ctrl *cappy.Controller, op *cappy.Operation, wait time.Duration, listen bool) {
	if f := progress(ctx, req); f != nil && listen {
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
