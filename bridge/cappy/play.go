package cappy

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/crosscode/crosscode-mcp/internal/sanitize"
	"github.com/crosscode/crosscode-mcp/protocol"
	"github.com/crosscode/crosscode-mcp/store"
)

// Agent play (spec section 11): an agent-controlled recording runs in
// steps the agent asks for, one at a time; between them the game waits,
// paused. The controller keeps the rules: steps only inside such a
// recording and one at a time, a stepped or inspect_result nobody asked for
// fails the operation (PROTOCOL_OUT_OF_STATE), and a step unanswered
// within its ms plus StepGrace fails it (ADAPTER_UNRESPONSIVE).

// ControlAgent is Request.Control for a recording the agent plays in steps.
const ControlAgent = protocol.ControlAgent

// DefaultStepGrace is how long past its ms a step may go unanswered.
const DefaultStepGrace = 10 * time.Second

// InspectTimeout bounds how long an inspect waits for its answer.
const InspectTimeout = 10 * time.Second

// MaxStepEvents and MaxStepEventBytes bound the events of one step kept
// in memory for its answer (their count, and their payloads' bytes); the
// rest are counted (all are stored).
const (
	MaxStepEvents     = 200
	MaxStepEventBytes = 256 << 10
)

// playState is an agent-controlled recording's steps; guarded by
// Operation.mu.
type playState struct {
	n       int       // steps sent
	pending *stepWait // the step in flight
	lastT   float64   // of the last stepped
}

// stepWait is one step in flight.
type stepWait struct {
	id     string
	ms     float64
	sent   time.Time
	done   chan struct{}
	events []store.CaptureEvent
	bytes  int   // of the events' payloads
	more   int64 // events past MaxStepEvents or MaxStepEventBytes
	frame  *protocol.Frame
	seq    int64 // the frame's, when it was stored
	res    *protocol.Stepped
	err    *Error
	timer  *time.Timer
}

// StepResult is a step the adapter answered: where the operation stands
// (T presented, SimT simulation time), the step's events (at most
// MaxStepEvents, EventsOmitted the rest) and its picture: the frame of
// the paused state the adapter sent with reason "step" (nil when none
// were asked, or it sent none).
type StepResult struct {
	ID            string
	T, SimT       float64
	Events        []store.CaptureEvent
	EventsOmitted int64
	Frame         *protocol.Frame
	FrameSeq      int64 // the frame's seq when it is stored (0: dropped, over the budget)
	Took          time.Duration
}

// Actions returns the actions the connected adapter accepts (nil when
// none is connected or it sent none).
func (c *Controller) Actions() []protocol.Action {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn == nil {
		return nil
	}
	return slices.Clone(c.conn.actions)
}

// AgentControlled reports whether o is a recording the agent plays in steps.
func (o *Operation) AgentControlled() bool { return o.Control == ControlAgent }

// Step sends one step to o, an agent-controlled recording, and waits for
// its stepped (or its refusal, an *Error with code INVALID_INPUT; the play
// goes on). It refuses at once, without sending, a step outside such a
// recording (PROTOCOL_OUT_OF_STATE), a second while one is in flight
// (OPERATION_BUSY) and an action the adapter did not declare or a value
// out of range (INVALID_INPUT). A step unanswered within ms plus the
// grace fails the operation with ADAPTER_UNRESPONSIVE. When ctx ends
// first the step stays in flight (the next one is busy until it is
// answered) and ctx's error is returned.
func (c *Controller) Step(ctx context.Context, o *Operation, actions []protocol.ActionInput, ms float64) (*StepResult, error) {
	if !o.AgentControlled() {
		return nil, errorf(protocol.CappyOutOfState, "operation %s is a %s the agent does not control: steps go only to a recording started with control \"agent\"", o.ID, o.Kind)
	}
	c.mu.Lock()
	a := c.conn
	active := c.op == o
	var declared []protocol.Action
	if a != nil {
		declared = a.actions
	}
	c.mu.Unlock()
	if !active || a == nil {
		st := o.Status()
		return nil, errorf(protocol.CappyOutOfState, "operation %s is %s, not running: no more steps", o.ID, st.Status)
	}
	if actions == nil {
		actions = []protocol.ActionInput{}
	}
	o.mu.Lock()
	switch {
	case o.status != StatusRunning:
		st := o.status
		o.mu.Unlock()
		return nil, errorf(protocol.CappyOutOfState, "operation %s is %s, not running: no more steps", o.ID, st)
	case o.play.pending != nil:
		id := o.play.pending.id
		o.mu.Unlock()
		return nil, errorf(protocol.CappyOperationBusy, "step %s is still running; wait for its answer before the next step", id)
	}
	step := protocol.Step{Type: "step", Op: o.ID, ID: "s" + strconv.Itoa(o.play.n+1), Actions: actions, Ms: ms}
	if err := protocol.CheckStep(&step, declared); err != nil {
		o.mu.Unlock()
		return nil, errorf(protocol.CappyInvalidInput, "%v", err)
	}
	o.play.n++
	w := &stepWait{id: step.ID, ms: ms, sent: time.Now(), done: make(chan struct{})}
	o.play.pending = w
	grace := c.cfg.stepGrace
	if grace <= 0 {
		grace = DefaultStepGrace
	}
	limit := time.Duration(ms)*time.Millisecond + grace
	w.timer = time.AfterFunc(limit, func() {
		msg := fmt.Sprintf("the adapter did not answer step %s (ms %g) within %s", w.id, ms, limit)
		if o.endStep(w, nil, &Error{Code: protocol.CappyAdapterUnresponsive, Message: msg}) {
			c.abort(o, StatusFailed, protocol.CappyAdapterUnresponsive, msg) // and tell the adapter
		}
	})
	o.mu.Unlock()
	if err := a.send(ctx, step); err != nil {
		o.endStep(w, nil, &Error{Code: protocol.CappyAdapterDisconnected, Message: "could not send the step: " + err.Error()})
		c.finish(o, outcome{status: StatusFailed, code: protocol.CappyAdapterDisconnected, message: "could not send a step: " + err.Error()})
	}
	select {
	case <-w.done:
	case <-o.done:
		// Ended (failed, cancelled, stopped) before the answer.
		select {
		case <-w.done:
		default:
			st := o.Status()
			o.endStep(w, nil, &Error{Code: orCode(st.Code, protocol.CappyOutOfState), Message: fmt.Sprintf("the operation ended (%s) before step %s was answered: %s", st.Status, w.id, st.Message)})
		}
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if w.err != nil {
		return nil, w.err
	}
	return &StepResult{ID: w.id, T: w.res.T, SimT: w.res.SimT, Events: w.events, EventsOmitted: w.more, Frame: w.frame, FrameSeq: w.seq, Took: time.Since(w.sent)}, nil
}

func orCode(code, def string) string {
	if code == "" {
		return def
	}
	return code
}

// endStep ends w with its answer or error, once; it reports whether this
// call ended it.
func (o *Operation) endStep(w *stepWait, res *protocol.Stepped, err *Error) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.play.pending != w {
		return false
	}
	o.play.pending = nil
	w.res, w.err = res, err
	w.timer.Stop()
	close(w.done)
	return true
}

// stepAnswer takes a stepped or step_refused about o.
func (o *Operation) stepAnswer(ctx context.Context, c *Controller, a *adapterConn, m *protocol.AdapterMessage) {
	id := ""
	if m.Stepped != nil {
		id = m.Stepped.ID
	} else {
		id = m.StepRefused.ID
	}
	o.mu.Lock()
	w := o.play.pending
	status := o.status
	lastT := max(o.lastT, o.play.lastT)
	if w == nil || w.id != id || (status != StatusRunning && status != StatusStopping) {
		o.mu.Unlock()
		asked := "no step was asked"
		if w != nil {
			asked = "the step asked is " + w.id
		}
		c.violation(ctx, a, o.ID, protocol.CappyOutOfState, fmt.Sprintf("%s for step %q, but %s", m.Type, sanitize.Line(id, 64), asked))
		return
	}
	if m.Stepped != nil && m.Stepped.T < lastT {
		o.mu.Unlock()
		c.violation(ctx, a, o.ID, protocol.CappyInvalidMessage, fmt.Sprintf("a stepped whose t (%g) went back from %g", m.Stepped.T, lastT))
		return
	}
	if m.Stepped != nil {
		o.play.lastT = m.Stepped.T
	}
	o.mu.Unlock()
	if m.Stepped != nil {
		o.endStep(w, m.Stepped, nil)
		return
	}
	r := m.StepRefused
	o.endStep(w, nil, &Error{Code: sanitize.Line(r.Code, 64), Message: "the game refused the step: " + sanitize.Line(r.Message, 500)})
}

// stepEvent adds an event to the step in flight; o.mu is held.
func (o *Operation) stepEvent(e store.CaptureEvent) {
	w := o.play.pending
	if w == nil {
		return
	}
	// The first ones, in order: once one is left out, so are the rest.
	if w.more == 0 && len(w.events) < MaxStepEvents && w.bytes+len(e.Payload) <= MaxStepEventBytes {
		w.events = append(w.events, e)
		w.bytes += len(e.Payload)
	} else {
		w.more++
	}
}

// stepFrame reports whether f is the picture of the step in flight (its
// first frame with reason "step"), and keeps it for the answer; o.mu is
// held. Such a frame is taken whatever the rate: there is one per step.
func (o *Operation) stepFrame(f *protocol.Frame) bool {
	w := o.play.pending
	if w == nil || f.Reason != "step" || w.frame != nil {
		return false
	}
	w.frame = f
	return true
}

// inspectWait is an inspect in flight.
type inspectWait struct {
	done chan struct{}
	res  *protocol.InspectResult
	err  *Error // the answer was invalid
}

// inspectInvalid ends the inspect an invalid inspect_result answered, if
// it names one in flight, with the violation.
func (c *Controller) inspectInvalid(a *adapterConn, data []byte, why error) {
	var head struct{ Type, ID string }
	if json.Unmarshal(data, &head) != nil || head.Type != "inspect_result" {
		return
	}
	c.mu.Lock()
	w := a.inspects[head.ID]
	delete(a.inspects, head.ID)
	c.mu.Unlock()
	if w != nil {
		w.err = errorf(protocol.CappyInvalidMessage, "the game's answer was invalid: %s", sanitize.Line(why.Error(), 300))
		close(w.done)
	}
}

// InspectAnswer is an adapter's answer to an inspect, as it sent it:
// Value (raw JSON from the game: data, not yet sanitized) or Error.
type InspectAnswer struct {
	ID    string
	Value json.RawMessage
	Error *protocol.InspectError
}

// Inspect asks the connected adapter (which must advertise inspect) for
// query's value, and waits up to InspectTimeout for the answer.
func (c *Controller) Inspect(ctx context.Context, query string) (*InspectAnswer, error) {
	if len(query) > protocol.MaxInspectQuery || !utf8.ValidString(query) {
		return nil, errorf(protocol.CappyInvalidParameters, "the query must be UTF-8 of at most %d bytes", protocol.MaxInspectQuery)
	}
	c.mu.Lock()
	a := c.conn
	if a == nil || a.scenarios == nil {
		c.mu.Unlock()
		return nil, errorf(protocol.CappyAdapterDisconnected, "no adapter is connected")
	}
	if !a.hello.HasCapability(protocol.CapInspect) {
		c.mu.Unlock()
		return nil, missingCapability(a.hello, protocol.CapInspect, "its state cannot be read")
	}
	a.inspectN++
	id := "i" + strconv.Itoa(a.inspectN)
	w := &inspectWait{done: make(chan struct{})}
	if a.inspects == nil {
		a.inspects = map[string]*inspectWait{}
	}
	a.inspects[id] = w
	c.mu.Unlock()
	forget := func() {
		c.mu.Lock()
		if a.inspects[id] == w {
			delete(a.inspects, id)
			a.expired = append(a.expired, id) // a late answer is not a violation
			if len(a.expired) > 32 {
				a.expired = a.expired[1:]
			}
		}
		c.mu.Unlock()
	}
	if err := a.send(ctx, protocol.Inspect{Type: "inspect", ID: id, Query: query}); err != nil {
		forget()
		return nil, errorf(protocol.CappyAdapterDisconnected, "could not send the inspect: %v", err)
	}
	t := time.NewTimer(InspectTimeout)
	defer t.Stop()
	select {
	case <-w.done:
		if w.err != nil {
			return nil, w.err
		}
		return &InspectAnswer{ID: id, Value: w.res.Value, Error: w.res.Error}, nil
	case <-a.gone:
		forget()
		return nil, errorf(protocol.CappyAdapterDisconnected, "the adapter disconnected before answering the inspect")
	case <-t.C:
		forget()
		return nil, errorf(protocol.CappyAdapterUnresponsive, "the adapter did not answer the inspect within %s", InspectTimeout)
	case <-ctx.Done():
		forget()
		return nil, ctx.Err()
	}
}

// inspectAnswer takes an inspect_result: for an inspect in flight, or late
// for one that timed out (ignored); any other is a violation.
func (c *Controller) inspectAnswer(ctx context.Context, a *adapterConn, r *protocol.InspectResult) {
	c.mu.Lock()
	w := a.inspects[r.ID]
	delete(a.inspects, r.ID)
	late := slices.Contains(a.expired, r.ID)
	c.mu.Unlock()
	switch {
	case w != nil:
		w.res = r
		close(w.done)
	case late:
		c.log.Debug("late inspect_result ignored", "id", r.ID)
	default:
		c.violation(ctx, a, "", protocol.CappyOutOfState, fmt.Sprintf("an inspect_result for %q, which was not asked", sanitize.Line(r.ID, 64)))
	}
}
