package cappy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"math"
	"sync"

	"github.com/crosscode/crosscode-mcp/protocol"
)

// Agent play: the agent holds the controller (crosscode-mcp spec,
// section 11); see the package documentation.

// Player is implemented by a Game that lists protocol.CapInput.
type Player interface {
	// Actions are the actions the game accepts, sent after welcome (use
	// Op.SetActions when they change during an operation). Names are
	// identifiers the agent types: short, unique, without spaces at the
	// ends; kinds are protocol.Action*.
	Actions() []protocol.Action
}

// Inspector is implemented by a Game that lists protocol.CapInspect.
type Inspector interface {
	// Inspect answers query, in the game's own query language (the empty
	// query should answer what can be asked), with any value that
	// encodes as JSON of at most protocol.MaxInspectBytes. It is called on
	// a goroutine of its own, at any time, also while an operation runs:
	// guard what the game loop changes. A returned *Failure is sent as
	// the answer's error with its code; any other error with code
	// CodeInspectFailed.
	Inspect(query string) (any, error)
}

// CodeInspectFailed is the inspect error code of an Inspect error that is
// not a *Failure; CodeValueTooLarge that of a value over the limit.
const (
	CodeInspectFailed = "INSPECT_FAILED"
	CodeValueTooLarge = "VALUE_TOO_LARGE"
)

// Input is the state of the game's actions as the agent set them: each
// action as its latest step set it (a button stays pressed until a step
// releases it). The zero value has nothing set.
type Input struct {
	set map[string]protocol.ActionInput
}

func (in Input) with(changes []protocol.ActionInput) Input {
	out := Input{set: make(map[string]protocol.ActionInput, len(in.set)+len(changes))}
	for k, v := range in.set {
		out.set[k] = v
	}
	for _, c := range changes {
		out.set[c.Name] = c
	}
	return out
}

// Get returns the latest input of the action name, if any.
func (in Input) Get(name string) (protocol.ActionInput, bool) {
	v, ok := in.set[name]
	return v, ok
}

// Pressed reports whether a button (or a pointer's button) is held.
func (in Input) Pressed(name string) bool {
	v, ok := in.set[name]
	return ok && v.Pressed != nil && *v.Pressed
}

// Value is an axis's value (0 when unset).
func (in Input) Value(name string) float64 {
	if v, ok := in.set[name]; ok && v.Value != nil {
		return *v.Value
	}
	return 0
}

// XY is an axis2d's or a pointer's x and y (0, 0 when unset).
func (in Input) XY(name string) (x, y float64) {
	v, ok := in.set[name]
	if !ok {
		return 0, 0
	}
	if v.X != nil {
		x = *v.X
	}
	if v.Y != nil {
		y = *v.Y
	}
	return x, y
}

// Text is a text action's latest text.
func (in Input) Text(name string) string { return in.set[name].Text }

// Step is one step the agent asked for: apply Actions (Input is the held
// state with them applied), run Ms milliseconds of simulation time, pause,
// and answer with Done (or Refuse).
type Step struct {
	ID      string
	Actions []protocol.ActionInput
	Ms      float64
	Input   Input

	op       *Op
	answered bool
}

// StepFrame is the picture of the paused game a step answers with: drawn
// by Render on the adapter's worker, at presented time T (the time of
// the state it shows, never below the previous frame's).
type StepFrame struct {
	T      float64
	Render func() image.Image
}

// ErrStepAnswered is the error of a second Done or Refuse of one step.
var ErrStepAnswered = errors.New("cappy: the step was already answered")

// Done answers the step: the operation's presented time t and simulation
// time simT, now that the game paused. When the controller asked for
// frames and frame is not nil, the picture of the paused game is sent
// first (reason "step", whatever the rate; Done waits until it is sent).
func (s *Step) Done(t, simT float64, frame *StepFrame) error {
	o := s.op
	if s.answered {
		return ErrStepAnswered
	}
	if !(t >= 0) || math.IsInf(t, 1) || !(simT >= 0) || math.IsInf(simT, 1) {
		return fmt.Errorf("cappy: step %s: t and simT must be finite, non-negative milliseconds, got %v and %v", s.ID, t, simT)
	}
	if frame != nil && frame.Render != nil && o.fr != nil {
		if err := o.fr.stepFrame(frame.T, frame.Render); err != nil {
			return err
		}
		if _, err := o.FlushFrames(o.ctx); err != nil {
			return err
		}
	}
	s.answered = true
	return o.sendLocked(&protocol.Stepped{Type: "stepped", Op: o.id, ID: s.ID, T: t, SimT: simT})
}

// Refuse answers the step with step_refused INVALID_INPUT and message:
// the game did not apply it (an input it cannot take now, say). The play
// goes on.
func (s *Step) Refuse(message string) error {
	if s.answered {
		return ErrStepAnswered
	}
	s.answered = true
	return s.op.sendLocked(&protocol.StepRefused{Type: "step_refused", Op: s.op.id, ID: s.ID, Code: protocol.CappyInvalidInput, Message: message})
}

// sendLocked writes a message of the operation through the session's
// write lock, unless the operation is over.
func (o *Op) sendLocked(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.finished {
		return ErrOpDone
	}
	if o.ctx.Err() != nil {
		return o.closedErr()
	}
	return o.write(b)
}

// AgentControlled reports whether the operation is a recording the agent
// plays in steps (record_start with control "agent"): the game starts it
// paused and runs it with NextStep.
func (o *Op) AgentControlled() bool { return o.play != nil }

// NextStep waits for the agent's next step. It returns (nil, nil) when the
// controller stops the recording (hand over its replay), and the
// operation's error when it is cancelled or the connection is lost.
func (o *Op) NextStep(ctx context.Context) (*Step, error) {
	if o.play == nil {
		return nil, errors.New("cappy: NextStep of an operation the agent does not control")
	}
	select {
	case st := <-o.play.steps:
		return st, nil
	case <-o.stopped:
		if o.ctx.Err() != nil {
			return nil, o.closedErr()
		}
		return nil, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// SetActions sends the game's actions again, when they changed; later
// steps are checked against them.
func (o *Op) SetActions(actions []protocol.Action) error {
	if actions == nil {
		actions = []protocol.Action{}
	}
	msg := &protocol.Actions{Type: "actions", Actions: actions}
	if err := checkOwnActions(msg); err != nil {
		return err
	}
	if o.play != nil {
		o.play.mu.Lock()
		o.play.actions = actions
		o.play.mu.Unlock()
	}
	return o.sendLocked(msg)
}

// checkOwnActions checks the game's actions as the controller will.
func checkOwnActions(a *protocol.Actions) error {
	b, err := json.Marshal(a)
	if err != nil {
		return err
	}
	if _, err := protocol.DecodeAdapterMessage(b); err != nil {
		return fmt.Errorf("cappy: the game's actions: %w", err)
	}
	return nil
}

// playState is an agent-controlled operation's steps.
type playState struct {
	steps chan *Step // at most one waits: the controller sends one at a time
	mu    sync.Mutex
	// Dispatcher-only: the held input after the last step handed over.
	input   Input
	actions []protocol.Action // guarded by mu
}

// stepFrame queues the picture of a paused step, whatever the rate, and
// waits for room in the queue.
func (f *framer) stepFrame(t float64, render func() image.Image) error {
	if !(t >= 0) || math.IsInf(t, 1) {
		return fmt.Errorf("cappy: step frame t must be a finite, non-negative number of milliseconds, got %v", t)
	}
	j := &frameJob{t: t, render: render, reason: "step"}
	f.sub.Lock()
	defer f.sub.Unlock()
	f.mu.Lock()
	switch {
	case f.closed:
		f.mu.Unlock()
		return ErrOpDone
	case t < f.lastT:
		f.mu.Unlock()
		return fmt.Errorf("cappy: step frame t %v goes back from %v", t, f.lastT)
	}
	f.lastT = t
	f.mu.Unlock()
	select {
	case f.queue <- j:
		return nil
	case <-f.op.ctx.Done():
		return f.op.closedErr()
	case <-f.quit:
		return ErrOpDone
	}
}

// sendActions sends the game's actions after welcome, when it has input.
func (s *session) sendActions() error {
	p, ok := s.g.(Player)
	if !ok || !s.hasCap(protocol.CapInput) {
		return nil
	}
	acts := p.Actions()
	if acts == nil {
		acts = []protocol.Action{}
	}
	msg := &protocol.Actions{Type: "actions", Actions: acts}
	if err := checkOwnActions(msg); err != nil {
		return err
	}
	s.actions = acts
	return s.send(msg)
}

// step hands a step to the agent-controlled operation it is for, or
// refuses it.
func (s *session) step(v *protocol.Step) {
	refuse := func(code, msg string) {
		if err := s.send(&protocol.StepRefused{Type: "step_refused", Op: v.Op, ID: v.ID, Code: code, Message: msg}); err != nil {
			s.log.Debug("cappy: step_refused", "err", err)
		}
	}
	op := s.cur
	over := false
	if op != nil {
		select {
		case <-op.done:
			over = true
		default:
		}
	}
	if op == nil || op.id != v.Op || op.play == nil || !op.launched || over {
		refuse(protocol.CappyOutOfState, fmt.Sprintf("operation %s is not an agent-controlled recording in progress", v.Op))
		return
	}
	op.play.mu.Lock()
	actions := op.play.actions
	op.play.mu.Unlock()
	if err := protocol.CheckStep(v, actions); err != nil {
		refuse(protocol.CappyInvalidInput, err.Error())
		return
	}
	st := &Step{ID: v.ID, Actions: v.Actions, Ms: v.Ms, Input: op.play.input.with(v.Actions), op: op}
	select {
	case op.play.steps <- st:
		op.play.input = st.Input
	default:
		refuse(protocol.CappyOperationBusy, "a step is still running")
	}
}

// inspect answers an inspect on a goroutine of its own.
func (s *session) inspect(v *protocol.Inspect) {
	in, ok := s.g.(Inspector)
	if !ok || !s.hasCap(protocol.CapInspect) {
		s.sendInspect(v.ID, nil, &protocol.InspectError{Code: protocol.CappyCapabilityMissing, Message: "this game does not answer inspect"})
		return
	}
	go func() {
		val, err := func() (val any, err error) {
			defer func() {
				if r := recover(); r != nil {
					err = fmt.Errorf("the game's Inspect panicked: %v", r)
				}
			}()
			return in.Inspect(v.Query)
		}()
		if err != nil {
			f := failureOf(err, CodeInspectFailed)
			s.sendInspect(v.ID, nil, &protocol.InspectError{Code: f.Code, Message: f.Message})
			return
		}
		b, err := json.Marshal(val)
		switch {
		case err != nil:
			s.sendInspect(v.ID, nil, &protocol.InspectError{Code: CodeInspectFailed, Message: "the value does not encode as JSON: " + err.Error()})
		case len(b) > protocol.MaxInspectBytes:
			s.sendInspect(v.ID, nil, &protocol.InspectError{Code: CodeValueTooLarge, Message: fmt.Sprintf("the value is %d bytes of JSON, over the %d an answer may have; ask for less", len(b), protocol.MaxInspectBytes)})
		default:
			s.sendInspect(v.ID, b, nil)
		}
	}()
}

func (s *session) sendInspect(id string, value json.RawMessage, e *protocol.InspectError) {
	if err := s.send(&protocol.InspectResult{Type: "inspect_result", ID: id, Value: value, Error: e}); err != nil {
		s.log.Debug("cappy: inspect_result", "err", err)
	}
}
