package cappy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/crosscode/crosscode-mcp/internal/ids"
	"github.com/crosscode/crosscode-mcp/protocol"
	"github.com/crosscode/crosscode-mcp/store"
)

// Operation kinds.
const (
	KindScenario  = "scenario"
	KindRecording = "recording"
	KindReplay    = "replay"
)

// Operation states; the last three are final.
const (
	StatusPreparing = "preparing" // waiting for ready
	StatusStarting  = "starting"  // start sent, waiting for started
	StatusRunning   = "running"
	StatusStopping  = "stopping" // stop sent, waiting for completed
	StatusCompleted = "completed"
	StatusFailed    = "failed"
	StatusCancelled = "cancelled"
)

// Final reports whether status ends an operation.
func Final(status string) bool {
	return status == StatusCompleted || status == StatusFailed || status == StatusCancelled
}

// Operation is one scenario, recording or replay.
type Operation struct {
	ID           string
	Kind         string
	Scenario     string
	Parameters   map[string]any
	Presentation protocol.Presentation
	Created      time.Time
	// Control is ControlAgent for a recording the agent plays in steps.
	Control string
	// Seed is the seed the adapter was given (nil: it takes none).
	Seed *int64

	mu        sync.Mutex
	status    string
	started   time.Time
	seq       int64 // receipts: events and frames share it
	events    int64
	lastT     float64
	pending   []store.CaptureEvent // not yet stored
	listeners map[int]func(store.CaptureEvent)
	lsnap     []func(store.CaptureEvent) // listeners as a slice, replaced (never changed) when they change
	nextL     int
	out       outcome
	done      chan struct{}
	timer     *time.Timer
	flushMu   sync.Mutex
	kick      chan struct{} // wakes the flusher
	stateMu   sync.Mutex    // orders status changes with their store writes
	aborted   *outcome      // set by Cancel or a timeout before it tells the adapter
	frames    frameState    // guarded by mu
	play      playState     // guarded by mu
	warnings  []string      // the game's and the controller's, guarded by mu (warnings.go)
	warnMu    sync.Mutex    // orders the stores of warnings
}

type outcome struct {
	status, code, message string
	replay                *store.Replay
	summary               json.RawMessage // the adapter's, from completed
	warnings              []string        // the summary's
}

// Outcome is how an operation ended (or stands).
type Outcome struct {
	Op        string
	Kind      string
	Status    string
	Code      string
	Message   string
	Events    int64
	LastT     float64
	Replay    *store.Replay   // a recording's stored replay
	Summary   json.RawMessage // the adapter's summary of a completed run, if it sent one
	Started   time.Time
	Duration  time.Duration
	Scenario  string
	TimeScale float64
}

// Status is the operation's current state.
func (o *Operation) Status() Outcome {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := Outcome{Op: o.ID, Kind: o.Kind, Status: o.status, Code: o.out.code, Message: o.out.message, Events: o.events, LastT: o.lastT,
		Replay: o.out.replay, Summary: o.out.summary, Started: o.started, Scenario: o.Scenario, TimeScale: o.Presentation.TimeScale()}
	if !o.started.IsZero() {
		out.Duration = time.Since(o.started)
	}
	return out
}

// FramesAsked is the frames request the adapter was sent, or nil (none
// asked, or the adapter does not send frames).
func (o *Operation) FramesAsked() *protocol.FramesRequest {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.frames.req
}

// Done is closed when the operation ends.
func (o *Operation) Done() <-chan struct{} { return o.done }

// Listen calls f for every event from now on (on the reading goroutine:
// f must not block) until the returned func is called. Every event f is
// given is stored; a call may still be running as Done closes.
func (o *Operation) Listen(f func(store.CaptureEvent)) (stop func()) {
	o.mu.Lock()
	defer o.mu.Unlock()
	id := o.nextL
	o.nextL++
	if o.listeners == nil {
		o.listeners = map[int]func(store.CaptureEvent){}
	}
	o.listeners[id] = f
	o.snapListeners()
	return func() {
		o.mu.Lock()
		delete(o.listeners, id)
		o.snapListeners()
		o.mu.Unlock()
	}
}

// snapListeners replaces lsnap after a change of listeners; o.mu is held.
func (o *Operation) snapListeners() {
	ls := make([]func(store.CaptureEvent), 0, len(o.listeners))
	for _, f := range o.listeners {
		ls = append(ls, f)
	}
	o.lsnap = ls
}

// Wait waits for the operation to end or ctx to end, and reports it.
func (o *Operation) Wait(ctx context.Context) Outcome {
	select {
	case <-o.done:
	case <-ctx.Done():
	}
	return o.Status()
}

// eventBuffer bounds what is held in memory: past it, the reader stores
// before it reads on, which slows a too-fast adapter instead of growing.
const eventBuffer = 2048

// handle advances the state machine with one message about this operation.
func (o *Operation) handle(ctx context.Context, c *Controller, a *adapterConn, m *protocol.AdapterMessage) {
	if m.Event != nil {
		o.event(ctx, c, a, m.Event)
		return
	}
	if m.Frame != nil {
		o.frame(ctx, c, a, m.Frame)
		return
	}
	if m.Stepped != nil || m.StepRefused != nil {
		o.stepAnswer(ctx, c, a, m)
		return
	}
	o.mu.Lock()
	status := o.status
	o.mu.Unlock()
	if Final(status) {
		// Ended meanwhile (cancelled, timed out) and about to be released.
		c.over(ctx, a, o.ID)
		return
	}
	outOfState := func() {
		c.violation(ctx, a, o.ID, protocol.CappyOutOfState, fmt.Sprintf("%s while the operation is %s", m.Type, status))
	}
	switch {
	case m.OpState != nil && m.Type == "ready":
		o.mu.Lock()
		ok := o.status == StatusPreparing
		if ok {
			o.status = StatusStarting
		}
		o.mu.Unlock()
		if !ok {
			outOfState()
			return
		}
		if err := a.send(ctx, protocol.OpMessage{Type: "start", Op: o.ID}); err != nil {
			c.finish(o, outcome{status: StatusFailed, code: protocol.CappyAdapterDisconnected, message: "could not send start: " + err.Error()})
		}
	case m.OpState != nil && m.Type == "started":
		// Under stateMu, so a cancel or timeout finishing the operation
		// meanwhile cannot be overwritten, in memory or in the store.
		o.stateMu.Lock()
		if o.Status().Status != StatusStarting {
			o.stateMu.Unlock()
			outOfState()
			return
		}
		// Stored first: whoever sees the operation running finds it so in the store too.
		now := time.Now()
		c.st.UpdateCapture(ctx, o.ID, store.CaptureUpdate{Status: StatusRunning, StartedAt: now})
		o.mu.Lock()
		o.status, o.started = StatusRunning, now
		o.mu.Unlock()
		o.stateMu.Unlock()
	case m.Completed != nil:
		if status != StatusRunning && status != StatusStopping {
			// completed before started never counts as success.
			c.violation(ctx, a, o.ID, protocol.CappyOutOfState, fmt.Sprintf("completed while the operation is %s (completed needs started first)", status))
			return
		}
		out := outcome{status: StatusCompleted}
		out.summary, out.message = c.keepSummary(o, m.Completed.Summary)
		out.warnings = summaryWarnings(out.summary)
		if o.Kind == KindRecording {
			if m.Completed.Replay == nil {
				c.violation(ctx, a, o.ID, protocol.CappyInvalidMessage, "a recording's completed without its replay")
				return
			}
			rep, err := c.storeReplay(ctx, m.Completed.Replay)
			if err != nil {
				c.finish(o, outcome{status: StatusFailed, code: protocol.CappyReplayInvalid, message: err.Error()})
				return
			}
			out.replay = rep
		}
		c.finish(o, out)
	case m.Failed != nil:
		c.finish(o, outcome{status: StatusFailed, code: m.Failed.Code, message: m.Failed.Message})
	}
}

// event stamps and keeps one event. The state check, the t check, the seq
// and the append are one critical section: an operation that ended cannot
// take an event after its final flush.
func (o *Operation) event(ctx context.Context, c *Controller, a *adapterConn, e *protocol.Event) {
	now := time.Now()
	o.mu.Lock()
	switch status := o.status; {
	case Final(status):
		o.mu.Unlock()
		c.over(ctx, a, o.ID)
		return
	case status != StatusRunning && status != StatusStopping:
		o.mu.Unlock()
		c.violation(ctx, a, o.ID, protocol.CappyOutOfState, fmt.Sprintf("event while the operation is %s", status))
		return
	}
	if e.T < o.lastT {
		last := o.lastT
		o.mu.Unlock()
		c.violation(ctx, a, o.ID, protocol.CappyInvalidMessage, fmt.Sprintf("an event whose t (%g) went back from %g", e.T, last))
		return
	}
	o.seq++
	o.events++
	ce := store.CaptureEvent{Seq: o.seq, T: e.T, Event: e.Event, DurationMs: e.DurationMs, Payload: e.Payload, ReceivedAt: now}
	o.lastT = e.T
	o.pending = append(o.pending, ce)
	if o.play.pending != nil {
		o.stepEvent(ce)
	}
	n := len(o.pending)
	listeners := o.lsnap
	o.mu.Unlock()
	for _, f := range listeners {
		f(ce)
	}
	switch {
	case n >= 4*eventBuffer:
		// The store fell behind: store here, which stops reading, which
		// slows the adapter down instead of growing memory.
		a.paused(func() { c.flush(ctx, o) })
	case n >= eventBuffer:
		select { // the flusher stores them while reading goes on
		case o.kick <- struct{}{}:
		default:
		}
	}
}

// keepSummary returns the adapter's summary as it is kept: none for an
// empty or null one, and none, with a note, for one over
// protocol.MaxSummaryBytes.
func (c *Controller) keepSummary(o *Operation, s json.RawMessage) (json.RawMessage, string) {
	s = bytes.TrimSpace(s)
	switch {
	case len(s) == 0 || string(s) == "null":
		return nil, ""
	case len(s) > protocol.MaxSummaryBytes:
		c.log.Warn("adapter summary dropped", "op", o.ID, "bytes", len(s))
		return nil, fmt.Sprintf("the adapter's summary was dropped: %d bytes, over the %d kept", len(s), protocol.MaxSummaryBytes)
	}
	return s, ""
}

// flush stores the operation's pending events.
func (c *Controller) flush(ctx context.Context, o *Operation) {
	o.flushMu.Lock()
	defer o.flushMu.Unlock()
	o.mu.Lock()
	batch := o.pending
	o.pending = nil
	o.mu.Unlock()
	if len(batch) == 0 {
		return
	}
	if err := c.st.AppendEvents(context.WithoutCancel(ctx), o.ID, batch); err != nil {
		c.log.Error("store events", "op", o.ID, "err", err)
	}
}

// flusher stores pending events every 100 ms and whenever a buffer's worth
// is pending, so a long operation's events reach the disk as they come,
// while the reader goes on reading.
func (c *Controller) flusher(o *Operation) {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-o.done:
			return
		case <-t.C:
		case <-o.kick:
		}
		c.flush(context.Background(), o)
	}
}

// finish ends an operation once: it stores the rest of its events and its
// outcome, then releases the controller for the next one.
func (c *Controller) finish(o *Operation, out outcome) {
	o.stateMu.Lock()
	defer o.stateMu.Unlock()
	o.mu.Lock()
	if Final(o.status) {
		o.mu.Unlock()
		return
	}
	if o.aborted != nil {
		out = *o.aborted // a cancel or timeout decided it, whatever the adapter says meanwhile
	}
	o.status, o.out = out.status, out
	if o.timer != nil {
		o.timer.Stop()
	}
	o.addWarnings(out.warnings)
	end := o.endT(out.summary)
	o.mu.Unlock()
	ctx := context.Background()
	c.flush(ctx, o)
	drops := o.endFrames()
	o.warnMu.Lock()
	defer o.warnMu.Unlock()
	o.mu.Lock()
	warnings := slices.Clone(o.warnings)
	o.mu.Unlock()
	u := store.CaptureUpdate{Status: out.status, Code: out.code, Message: out.message, EndedAt: time.Now(), Summary: out.summary, FramesDropped: drops,
		Warnings: warnings, EndT: &end}
	if out.replay != nil {
		u.ReplaySHA = out.replay.SHA256
	}
	if err := c.st.UpdateCapture(ctx, o.ID, u); err != nil {
		c.log.Error("store outcome", "op", o.ID, "err", err)
	}
	c.mu.Lock()
	if c.op == o {
		c.op = nil
	}
	c.finishSeq++
	c.finished[o.ID] = c.finishSeq
	if len(c.finished) > 64 {
		keys := make([]string, 0, len(c.finished))
		for k := range c.finished {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool { return c.finished[keys[i]] < c.finished[keys[j]] })
		for _, k := range keys[:len(keys)-32] {
			delete(c.finished, k)
		}
	}
	c.mu.Unlock()
	close(o.done)
	c.log.Info("operation ended", "op", o.ID, "kind", o.Kind, "status", out.status, "code", out.code)
}

// Request asks for an operation.
type Request struct {
	Kind         string
	Scenario     string
	Parameters   map[string]any
	Presentation protocol.Presentation
	Replay       *store.Replay // for replays
	ReplayOf     string        // the recording a replay replays
	Timeout      time.Duration // default 10 minutes
	// Frames asks for frames; it reaches the adapter only if it
	// advertised protocol.CapFrames (see Operation.FramesAsked). FPS 0 in
	// an agent-controlled recording asks for no frames at a rate but for
	// each step's picture (the adapter is asked at protocol.MinFrameFPS,
	// and only its step frames are kept); elsewhere it asks for none.
	Frames *protocol.FramesRequest
	// OnEvent, if set, listens from the first event on (see Operation.Listen).
	OnEvent func(store.CaptureEvent)
	// Control ControlAgent makes a recording agent-controlled: it runs in
	// Steps (the adapter must advertise protocol.CapInput).
	Control string
	// Seed seeds the game's randomness: a recording's (nil:
	// protocol.DefaultSeed), or for a replay its recording's. It reaches
	// only an adapter that advertises protocol.CapSeed, which always gets
	// one; a recording asked for a seed of an adapter without it is
	// refused with CAPABILITY_MISSING (a replay is not: its recording's
	// seed is what it is).
	Seed *int64
}

// Start begins an operation: it checks the request against the adapter
// (capabilities, the scenario registry, parameters, presentation) before
// anything is sent, records the capture, and sends the first message.
func (c *Controller) Start(ctx context.Context, r Request) (*Operation, error) {
	c.mu.Lock()
	a := c.conn
	busy := c.op
	var scenarios []protocol.Scenario // read under c.mu: a new registry may arrive at any time
	if a != nil {
		scenarios = a.scenarios
	}
	c.mu.Unlock()
	if a == nil || scenarios == nil {
		return nil, errorf(protocol.CappyAdapterDisconnected, "no adapter is connected")
	}
	if busy != nil {
		return nil, errorf(protocol.CappyOperationBusy, "operation %s (%s) is %s; wait for it, stop it, or cancel_capture it", busy.ID, busy.Kind, busy.Status().Status)
	}
	switch {
	case r.Control != "" && r.Control != ControlAgent:
		return nil, errorf(protocol.CappyInvalidParameters, "control must be %q or absent, got %q", ControlAgent, r.Control)
	case r.Control != "" && r.Kind != KindRecording:
		return nil, errorf(protocol.CappyInvalidParameters, "only a recording can be agent-controlled, not a %s", r.Kind)
	case r.Control != "" && !a.hello.HasCapability(protocol.CapInput):
		return nil, missingCapability(a.hello, protocol.CapInput, "it cannot be played in steps")
	}
	o := &Operation{ID: ids.New("op"), Kind: r.Kind, Scenario: r.Scenario, Presentation: r.Presentation, Created: time.Now(), Control: r.Control, done: make(chan struct{}), kick: make(chan struct{}, 1)}
	c.mu.Lock()
	o.addWarnings(a.warnings) // what the game warns of concerns what it runs
	c.mu.Unlock()
	if r.OnEvent != nil {
		o.Listen(r.OnEvent)
	}
	if o.Presentation == nil {
		o.Presentation = protocol.Presentation{}
	}
	if err := o.Presentation.Check(a.hello.HasCapability); err != nil {
		return nil, presentationError(a.hello, o.Presentation, err)
	}
	switch seeded := a.hello.HasCapability(protocol.CapSeed); {
	case r.Seed != nil && protocol.CheckSeed(*r.Seed) != nil:
		return nil, errorf(protocol.CappyInvalidParameters, "%v", protocol.CheckSeed(*r.Seed))
	case r.Kind == KindScenario && r.Seed != nil:
		return nil, errorf(protocol.CappyInvalidParameters, "a seed is for recordings (and their replays), not scenarios")
	case r.Kind == KindRecording && r.Seed != nil && !seeded:
		return nil, errorf(protocol.CappyCapabilityMissing, "the game's adapter does not advertise %q: it cannot be seeded (leave seed out)", protocol.CapSeed)
	case seeded && r.Kind != KindScenario:
		seed := protocol.DefaultSeed
		if r.Seed != nil {
			seed = *r.Seed
		}
		o.Seed = &seed
	}
	var frames *protocol.FramesRequest
	stepsOnly := false
	if r.Frames != nil && a.hello.HasCapability(protocol.CapFrames) && (r.Frames.FPS != 0 || r.Control == ControlAgent) {
		fr := *r.Frames
		if stepsOnly = fr.FPS == 0; stepsOnly {
			fr.FPS = protocol.MinFrameFPS
		}
		if err := fr.Validate(); err != nil {
			return nil, errorf(protocol.CappyInvalidParameters, "%v", err)
		}
		fr.Formats = slices.Clone(fr.Formats)
		frames = &fr
	}
	var first any
	switch r.Kind {
	case KindScenario:
		if !a.hello.HasCapability(protocol.CapScenarios) {
			return nil, missingCapability(a.hello, protocol.CapScenarios, "it has no scenarios to run")
		}
		i := slices.IndexFunc(scenarios, func(s protocol.Scenario) bool { return s.ID == r.Scenario })
		if i < 0 {
			var names []string
			for _, s := range scenarios {
				names = append(names, s.ID)
			}
			return nil, errorf(protocol.CappyScenarioNotFound, "no scenario %q; the game has: %s", r.Scenario, strings.Join(names, ", "))
		}
		sc := scenarios[i]
		for _, need := range sc.RequiredCapabilities {
			if !a.hello.HasCapability(need) {
				return nil, missingCapability(a.hello, need, fmt.Sprintf("scenario %q needs it", sc.ID))
			}
		}
		params, err := protocol.ResolveParameters(&sc, r.Parameters)
		if err != nil {
			return nil, errorf(protocol.CappyInvalidParameters, "%v", err)
		}
		o.Parameters = params
		first = protocol.PrepareScenario{Type: "prepare_scenario", Op: o.ID, Scenario: sc.ID, Parameters: params, Presentation: presentationOrNil(o.Presentation), Frames: frames}
		o.status = StatusPreparing
	case KindRecording:
		if !a.hello.HasCapability(protocol.CapFreeformRecording) {
			return nil, missingCapability(a.hello, protocol.CapFreeformRecording, "it cannot be recorded")
		}
		first = protocol.RecordStart{Type: "record_start", Op: o.ID, Frames: frames, Control: r.Control, Seed: o.Seed}
		o.status = StatusStarting
	case KindReplay:
		if !a.hello.HasCapability(protocol.CapReplay) {
			e := missingCapability(a.hello, protocol.CapReplay, "it cannot play replays")
			e.Code = protocol.CappyReplayUnsupported
			return nil, e
		}
		payload, err := c.replayPayload(r.Replay)
		if err != nil {
			return nil, err
		}
		first = protocol.PrepareReplay{Type: "prepare_replay", Op: o.ID, Replay: payload, Presentation: presentationOrNil(o.Presentation), Frames: frames, Seed: o.Seed}
		o.status = StatusPreparing
	default:
		return nil, fmt.Errorf("cappy: unknown operation kind %q", r.Kind)
	}
	params, _ := json.Marshal(o.Parameters)
	pres, _ := json.Marshal(o.Presentation)
	capt := &store.Capture{Op: o.ID, Kind: o.Kind, Scenario: o.Scenario, Parameters: params, Presentation: pres, Status: o.status,
		Game: a.hello.Game.ID, Adapter: a.hello.Adapter.Name + " " + a.hello.Adapter.Version, Build: a.hello.Build, ReplayOf: r.ReplayOf, CreatedAt: o.Created,
		Owner: c.owner.id, Seed: o.Seed, Warnings: slices.Clone(o.warnings)}
	if r.Replay != nil {
		capt.ReplaySHA = r.Replay.SHA256
	}
	if frames != nil {
		kept := *frames
		if stepsOnly {
			kept.FPS = 0 // the recording's rate: none
		}
		capt.FramesRequest, _ = json.Marshal(kept)
	}
	// Published as active and stored under stateMu: whoever finishes the
	// operation (a cancel, a disconnect, Close) does so once its capture
	// is stored, and so finds it to update.
	o.stateMu.Lock()
	c.mu.Lock()
	if c.op != nil || c.conn != a {
		c.mu.Unlock()
		o.stateMu.Unlock()
		return nil, errorf(protocol.CappyOperationBusy, "another operation started, or the adapter changed; try again")
	}
	c.op = o
	a.ops++
	c.mu.Unlock()
	if h := c.cfg.hooks.published; h != nil {
		h(o)
	}
	if err := c.st.CreateCapture(ctx, capt); err != nil {
		// Ended before it began: a finish waiting for stateMu finds it over.
		o.mu.Lock()
		o.status, o.out = StatusFailed, outcome{status: StatusFailed, message: "could not store the capture: " + err.Error()}
		o.mu.Unlock()
		c.mu.Lock()
		if c.op == o {
			c.op = nil
		}
		c.mu.Unlock()
		close(o.done)
		o.stateMu.Unlock()
		return nil, err
	}
	o.stateMu.Unlock()
	timeout := r.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Minute
	}
	o.mu.Lock()
	over := Final(o.status) || o.aborted != nil // cancelled (or dropped) while it was stored
	if !over {
		o.timer = time.AfterFunc(timeout, func() {
			c.abort(o, StatusFailed, protocol.CappyOperationTimeout, fmt.Sprintf("the operation outlived its timeout of %s", timeout))
		})
		if frames != nil {
			c.startFrames(o, frames, stepsOnly)
		}
	}
	o.mu.Unlock()
	if over {
		return o, nil
	}
	go c.flusher(o)
	if err := a.send(ctx, first); err != nil {
		c.finish(o, outcome{status: StatusFailed, code: protocol.CappyAdapterDisconnected, message: "could not reach the adapter: " + err.Error()})
	}
	return o, nil
}

func presentationOrNil(p protocol.Presentation) protocol.Presentation {
	if len(p) == 0 {
		return nil
	}
	return p
}

// presentationError is a refused presentation as an *Error; a capability
// it needs that the adapter lacks is named with what gives it.
func presentationError(h *protocol.Hello, p protocol.Presentation, err error) error {
	e, ok := codedError(err).(*Error)
	if !ok || e.Code != protocol.CappyCapabilityMissing {
		return codedError(err)
	}
	c := protocol.CapTimeScale
	if _, scaled := p["timeScale"]; !scaled || h.HasCapability(protocol.CapTimeScale) {
		c = protocol.CapAlternateCameras
	}
	e.Message += ". To add it: " + capabilityFix(h, c)
	return e
}

// codedError turns a protocol refusal into an *Error with its code.
func codedError(err error) error {
	var f *protocol.CappyFailure
	if errors.As(err, &f) {
		return &Error{Code: f.Code, Message: f.Message}
	}
	return err
}

// Stop asks a running recording or replay to finish.
func (c *Controller) Stop(ctx context.Context, o *Operation) error {
	o.mu.Lock()
	status := o.status
	if o.Kind == KindScenario {
		o.mu.Unlock()
		return errorf(protocol.CappyOutOfState, "a scenario cannot be stopped, only cancelled")
	}
	if status != StatusRunning {
		o.mu.Unlock()
		return errorf(protocol.CappyOutOfState, "operation %s is %s, not running", o.ID, status)
	}
	o.status = StatusStopping
	o.mu.Unlock()
	c.mu.Lock()
	a := c.conn
	c.mu.Unlock()
	if a == nil {
		return errorf(protocol.CappyAdapterDisconnected, "no adapter is connected")
	}
	return a.send(ctx, protocol.OpMessage{Type: "stop", Op: o.ID})
}

// Cancel aborts an operation: the adapter is told, and the operation ends
// cancelled at once (the adapter may stay silent).
func (c *Controller) Cancel(o *Operation) {
	c.abort(o, StatusCancelled, protocol.CappyOperationCancelled, "cancelled")
}

func (c *Controller) abort(o *Operation, status, code, msg string) {
	o.mu.Lock()
	if Final(o.status) || o.aborted != nil {
		o.mu.Unlock()
		return
	}
	o.aborted = &outcome{status: status, code: code, message: msg}
	o.mu.Unlock()
	c.mu.Lock()
	a := c.conn
	c.mu.Unlock()
	if a != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		a.send(ctx, protocol.OpMessage{Type: "cancel", Op: o.ID})
		cancel()
	}
	c.finish(o, outcome{status: status, code: code, message: msg})
}
