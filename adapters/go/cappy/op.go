package cappy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"sync"

	"github.com/crosscode/crosscode-mcp/protocol"
)

type opKind int

const (
	kindScenario opKind = iota
	kindReplay
	kindRecord
)

// Op is one operation the controller asked for: the game emits its events
// through it. Its methods are safe for concurrent use; events are sent in
// the order Emit is called.
type Op struct {
	id       string
	kind     opKind
	ctx      context.Context
	cancel   context.CancelCauseFunc
	stopped  chan struct{}
	stopped1 sync.Once
	done     chan struct{} // closed when the operation is over

	// Dispatcher-only state.
	launched, cancelled bool
	scenario            string
	params              map[string]any
	pres                protocol.Presentation
	replay              *protocol.ReplayPayload

	fr   *framer    // nil when no frames were asked
	play *playState // nil unless the agent controls it
	log  *slog.Logger

	// Emit state, guarded by *mu (the session's write lock).
	mu       *sync.Mutex
	buf      *[]byte
	write    func([]byte) error // writes one frame; *mu is held
	prefix   []byte             // {"type":"event","op":"…","t":
	lastT    float64
	finished bool
	summary  json.RawMessage
}

func newOp(parent context.Context, id string, mu *sync.Mutex, buf *[]byte, write func([]byte) error) *Op {
	op := &Op{
		id:      id,
		stopped: make(chan struct{}),
		done:    make(chan struct{}),
		mu:      mu,
		buf:     buf,
		write:   write,
		log:     slog.New(slog.DiscardHandler),
	}
	op.ctx, op.cancel = context.WithCancelCause(parent)
	context.AfterFunc(op.ctx, op.stop)
	p := append([]byte(nil), `{"type":"event","op":`...)
	p = appendQuoted(p, id)
	op.prefix = append(p, `,"t":`...)
	return op
}

func (s *session) newOp(id string, kind opKind) *Op {
	op := newOp(s.ctx, id, &s.wmu, &s.wbuf, s.writeLocked)
	op.kind, op.log = kind, s.log
	return op
}

// NewLocalOp returns an Op that is not connected to a controller, to run a
// Game's Run* in-process (tests, tools). Emit checks and encodes each event
// exactly as for the wire, decodes the frame with the controller's rules
// (protocol.DecodeAdapterMessage) and hands the event to sink (nil:
// discard), in order; a sink error is returned by Emit. stop closes
// Stopped(), like the controller's stop; cancelling ctx is the
// controller's cancel. A local op asks for no frames (Frames is nil).
func NewLocalOp(ctx context.Context, id string, sink func(protocol.Event) error) (op *Op, stop func()) {
	var mu sync.Mutex
	var buf []byte
	op = newOp(ctx, id, &mu, &buf, func(b []byte) error {
		m, err := protocol.DecodeAdapterMessage(b)
		if err != nil {
			return fmt.Errorf("cappy: the controller would refuse this event: %w", err)
		}
		if sink != nil {
			return sink(*m.Event)
		}
		return nil
	})
	return op, op.stop
}

// ID is the controller's operation id.
func (o *Op) ID() string { return o.id }

// Stopped is closed when the controller asks the operation to stop (stop),
// and also when it is cancelled or the connection ends: a recording or
// replay waiting on it then finishes. Tell stop from cancel with ctx.Err().
func (o *Op) Stopped() <-chan struct{} { return o.stopped }

func (o *Op) stop() { o.stopped1.Do(func() { close(o.stopped) }) }

// end closes an operation that never ran (cancelled before start).
func (o *Op) end() {
	o.mu.Lock()
	o.finished = true
	o.mu.Unlock()
	o.cancel(ErrOpDone)
	close(o.done)
}

// SetSummary sets the summary sent with completed: any value that encodes
// as a JSON object of at most protocol.MaxSummaryBytes (the controller
// keeps it with the capture).
func (o *Op) SetSummary(v any) error {
	raw, err := encodePayload(v)
	if err != nil {
		return fmt.Errorf("cappy: summary: %w", err)
	}
	if len(raw) > protocol.MaxSummaryBytes {
		return fmt.Errorf("cappy: summary is %d bytes of JSON, more than the %d the controller keeps", len(raw), protocol.MaxSummaryBytes)
	}
	o.mu.Lock()
	o.summary = raw
	o.mu.Unlock()
	return nil
}

// Summary returns what SetSummary set.
func (o *Op) Summary() json.RawMessage {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.summary
}

// closedErr says why the operation no longer takes events.
func (o *Op) closedErr() error {
	if c := context.Cause(o.ctx); c != nil {
		return c
	}
	return ErrOpDone
}

// Emit sends one event. t is presented milliseconds since the operation
// started: finite, non-negative and never below the previous event's t.
// durationMs is optional. payload is nil, a json.RawMessage holding a JSON
// object (sent as is, the cheap path), or any value json.Marshal encodes
// as an object; Emit does not retain it.
//
// Emit returns an error, without sending, once the operation is cancelled
// (ErrCancelled), the connection is gone (ErrDisconnected) or the
// operation is over (ErrOpDone), and for an invalid event. It blocks while
// the connection applies back-pressure.
func (o *Op) Emit(t float64, event string, durationMs *float64, payload any) error {
	if o.ctx.Err() != nil {
		return o.closedErr()
	}
	if err := protocol.CheckEventFields(t, event, durationMs); err != nil {
		return fmt.Errorf("cappy: event %.64q: %w", event, err)
	}
	raw, err := encodePayload(payload)
	if err != nil {
		return fmt.Errorf("cappy: event %q: payload: %w", event, err)
	}

	o.mu.Lock()
	defer o.mu.Unlock()
	if o.finished {
		return ErrOpDone
	}
	if o.ctx.Err() != nil {
		return o.closedErr()
	}
	if t < o.lastT {
		return fmt.Errorf("cappy: event %q: t %v goes back from %v", event, t, o.lastT)
	}
	b := append((*o.buf)[:0], o.prefix...)
	b = appendFloat(b, t)
	b = append(b, `,"event":`...)
	b = appendQuoted(b, event)
	if durationMs != nil {
		b = append(b, `,"durationMs":`...)
		b = appendFloat(b, *durationMs)
	}
	if raw != nil {
		b = append(b, `,"payload":`...)
		b = append(b, raw...)
	}
	b = append(b, '}')
	if cap(b) <= 64<<10 {
		*o.buf = b // keep the buffer for the next event, unless it grew large
	}
	if len(b) > protocol.CappyMaxMessageBytes {
		return fmt.Errorf("cappy: event %q is %d bytes, more than the %d a message may have", event, len(b), protocol.CappyMaxMessageBytes)
	}
	if err := o.write(b); err != nil {
		return err
	}
	o.lastT = t
	return nil
}

var jsonNull = []byte("null")

// encodePayload returns the payload's JSON object, or nil for none.
func encodePayload(v any) (json.RawMessage, error) {
	var raw []byte
	switch p := v.(type) {
	case nil:
		return nil, nil
	case json.RawMessage:
		raw = bytes.TrimSpace(p)
		if len(raw) > 0 && raw[0] == '{' && !json.Valid(raw) {
			return nil, errors.New("not valid JSON")
		}
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		raw = b
	}
	switch {
	case len(raw) == 0 || bytes.Equal(raw, jsonNull):
		return nil, nil
	case raw[0] != '{':
		return nil, errors.New("must be a JSON object")
	}
	return raw, nil
}

// appendFloat appends f as encoding/json would.
func appendFloat(b []byte, f float64) []byte {
	if f == 0 {
		return append(b, '0') // also -0
	}
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return strconv.AppendInt(b, int64(f), 10)
	}
	format := byte('f')
	if abs := math.Abs(f); abs < 1e-6 || abs >= 1e21 {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// isPlain reports whether s is printable ASCII without quotes or
// backslashes: its JSON string is s between quotes.
func isPlain(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// appendQuoted appends s as a JSON string.
func appendQuoted(b []byte, s string) []byte {
	if isPlain(s) {
		b = append(b, '"')
		b = append(b, s...)
		return append(b, '"')
	}
	q, _ := json.Marshal(s)
	return append(b, q...)
}
