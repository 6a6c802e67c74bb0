// Package cappy lets a game written in Go be driven by Cappy, the capture
// controller of crosscode-mcp, so that a coding agent can run the game's
// scenarios, record and replay play, and see its events and frames. It
// speaks the Cappy adapter protocol for the game: one loopback WebSocket of
// JSON text frames (see protocol/cappy.go).
//
// The five lines a game adds, when crosscode-mcp launches it with
// CAPPY_ENDPOINT and CAPPY_SESSION_TOKEN set (.crosscode/capture.json:
// {"game": {"command": ["go", "run", "./cmd/mygame"]}}):
//
//	import "github.com/crosscode/crosscode-mcp/adapters/go/cappy"
//
//	if os.Getenv("CAPPY_ENDPOINT") != "" { // unset in shipped builds
//		go func() { log.Println(cappy.Run(ctx, myGame{}, nil)) }()
//	}
//
// where myGame implements Game: Info names the game and lists its
// capabilities, Scenarios its authored scenarios, and RunScenario, Record
// and Replay run one operation each, emitting events with Op.Emit on the
// game's presented clock (the example below is a whole game).
//
// Run connects to the controller, performs the handshake, publishes the
// scenario registry and then serves operations, one at a time, until its
// context ends or the controller closes the connection. It does the
// protocol work: it answers ping and list_scenarios without involving the
// game, checks scenario parameters and presentation against the registry
// and the advertised capabilities before answering ready, sends
// started/completed/failed, and turns start/stop/cancel into the Op handed
// to the game and its context.
//
// A game whose Record and Replay put the game where a recording starts
// (a new world from the seed) lists protocol.CapResetsItself: otherwise
// crosscode-mcp, when it launches the game, starts a new process of it for
// each recording and replay, so that nothing of a previous run leaks in.
//
// A game that lists protocol.CapFrames hands pictures when the controller
// asks for them (Op.Frames, Op.FrameDue, Op.SendFrame, Op.SendFrameFunc):
// the adapter scales, encodes and sends them off the game loop, at the
// asked rate, dropping rather than slowing the game (see frames.go).
//
// Package cappytest is a scriptable controller for a game's own tests;
// crosscode-mcp's demo game (internal/demogame, `crosscode-mcp demo-game`)
// is a complete one, deterministic, with recordings that replay exactly.
//
// # Agent play
//
// A game an agent can play lists protocol.CapInput and implements Player:
// its Actions are what the agent may set (buttons, axes, pointers, text),
// sent after welcome. A recording the agent controls (the agent's
// start_recording with control "agent") comes to Record like any other,
// with op.AgentControlled() true: the game starts paused, ignores its own
// player's input, and runs in steps, each applying the agent's inputs at
// the start of its next simulation step, running Ms milliseconds of
// simulation time, and pausing again:
//
//	if op.AgentControlled() {
//		for {
//			st, err := op.NextStep(ctx)
//			if err != nil {
//				return nil, err // cancelled
//			}
//			if st == nil {
//				break // stopped: hand over the replay below
//			}
//			g.apply(st.Input) // held: st.Input.Pressed("attack"), st.Input.XY("move")
//			g.run(st.Ms)      // events (and due frames) as usual
//			st.Done(g.t, g.simT, &cappy.StepFrame{T: g.lastTickT, Render: g.draw})
//		}
//		return g.replayOfTheSteps(), nil
//	}
//
// The adapter refuses a step with an action the game did not declare or a
// value out of range before the game sees it (step_refused INVALID_INPUT;
// the play goes on); Step.Refuse refuses one the game cannot take. Record
// the inputs each simulation step applied into the replay: Replay must
// reproduce the play exactly, events and pictures, at any timeScale.
// Step.Done sends the picture of the paused game (reason "step") before
// stepped when frames were asked.
//
// A game that lists protocol.CapInspect implements Inspector: the agent
// asks it for values of its state (inspect_game) at any time, in the
// game's own terms; Inspect runs on its own goroutine, so guard what the
// game loop changes. The demo game (internal/demogame, play.go) does both.
package cappy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/crosscode/crosscode-mcp/protocol"
)

// Game is what a game implements to be driven by Cappy.
type Game interface {
	// Info names the adapter and the game and lists its capabilities
	// (protocol.Cap*). It is sent in hello.
	Info() Info
	// Scenarios is the scenario registry, sent after welcome and on
	// list_scenarios. It should be cheap.
	Scenarios() []protocol.Scenario

	// Each Run* runs one operation. It emits events with op.Emit (t =
	// presented milliseconds since the operation started, monotonic) and
	// returns when done. ctx is cancelled on `cancel` (tear down and return
	// ctx.Err(); nothing more is sent to the controller) and when the
	// connection or Run ends. op.Stopped() is closed on `stop` (recordings
	// and replays finish gracefully) and on cancel.
	//
	// Returning nil sends completed; returning a *Failure sends failed with
	// its code; any other error sends failed with CodeAdapterError. A panic
	// is recovered and reported as CodeAdapterError.

	// RunScenario runs an authored scenario. params were checked with
	// protocol.ResolveParameters (defaults filled in); p was checked
	// against the advertised capabilities.
	RunScenario(ctx context.Context, op *Op, scenario string, params map[string]any, p protocol.Presentation) error
	// Record runs a freeform recording until op.Stopped() and returns its
	// replay, sent with completed.
	Record(ctx context.Context, op *Op) (*protocol.ReplayPayload, error)
	// Replay plays a replay this game recorded before.
	Replay(ctx context.Context, op *Op, replay *protocol.ReplayPayload, p protocol.Presentation) error
}

// Validator is optionally implemented by a Game to check an operation when
// it is prepared, before the adapter answers ready: a returned error is
// sent as failed instead (a *Failure with its code; any other error as
// INVALID_PARAMETERS for a scenario, REPLAY_INVALID for a replay). Use it
// for checks the adapter cannot make, such as camera names and replay
// formats. The adapter's own checks (scenario known, parameters,
// presentation capabilities) run first.
type Validator interface {
	ValidateScenario(scenario string, params map[string]any, p protocol.Presentation) error
	ValidateReplay(replay *protocol.ReplayPayload, p protocol.Presentation) error
}

// Info is what hello says about the adapter and the game.
type Info struct {
	Adapter      protocol.NameVersion // defaults to DefaultAdapterName when Name is empty
	Game         protocol.GameInfo    // Game.ID is required
	Build        string               // optional build identity
	Capabilities []string             // protocol.Cap* and the adapter's own
}

// DefaultAdapterName names the adapter in hello when Info.Adapter.Name is empty.
const DefaultAdapterName = "crosscode-go-adapter"

// CodeAdapterError is the failed code of a Run* error that is not a *Failure.
const CodeAdapterError = "ADAPTER_ERROR"

// Failure is an error a Run* (or a Validator) returns to report failed with
// a code, such as protocol.CappyScenarioNotFound, CappyInvalidParameters,
// CappyReplayUnsupported or CappyUnknownCamera. It is protocol's
// CappyFailure, which protocol's checks (Presentation.Check) return.
type Failure = protocol.CappyFailure

// Failf returns a *Failure with a formatted message.
func Failf(code, format string, args ...any) *Failure {
	return &Failure{Code: code, Message: fmt.Sprintf(format, args...)}
}

// RejectError is Run's error when the controller rejects the hello.
type RejectError struct {
	Code, Message string
}

func (e *RejectError) Error() string {
	return fmt.Sprintf("cappy controller rejected the adapter: %s: %s", e.Code, e.Message)
}

// Errors an Op's Emit returns (wrapped or as the cause of the op's context).
var (
	// ErrCancelled: the controller cancelled the operation.
	ErrCancelled = errors.New("cappy: operation cancelled by the controller")
	// ErrDisconnected: the connection to the controller is gone.
	ErrDisconnected = errors.New("cappy: disconnected from the controller")
	// ErrOpDone: the operation already ended (its Run* returned).
	ErrOpDone = errors.New("cappy: operation is over")
)

// Options configures Run. The zero value (or nil) reads the environment.
type Options struct {
	// Endpoint is the controller's WebSocket URL; default $CAPPY_ENDPOINT.
	Endpoint string
	// Token is echoed in hello; default $CAPPY_SESSION_TOKEN.
	Token string
	// Logger receives diagnostics; default discards.
	Logger *slog.Logger
	// DialTimeout bounds connecting and then waiting for welcome; default 10 s.
	DialTimeout time.Duration

	// Frames (see Op.SendFrame), for a game that lists protocol.CapFrames.

	// FrameQueue is how many handed frames may wait for the encoding
	// worker; default 2 (DefaultFrameQueue). A frame handed while the
	// queue is full is dropped and counted, unless sent with
	// FrameOptions.Wait.
	FrameQueue int
	// FrameQuality is the JPEG quality of frames, 1 to 100; default 80
	// (DefaultFrameQuality). A frame over protocol.MaxFrameBytes is
	// encoded again at quality 50, then 20, and dropped if still too large.
	FrameQuality int
	// FrameCPU is the share of one CPU core that frames handed without
	// Wait may take to render and encode, over 0 and at most 1; default
	// 0.10 (DefaultFrameCPU: 30 fps of 640x360 JPEG, about 2.3 ms each,
	// fit in it). After each frame the worker counts as busy long enough
	// to keep to it, so a game handing frames faster than they encode
	// loses frames, not speed.
	FrameCPU float64
}

// teardownWait bounds how long Run, or a new operation, waits for a
// cancelled operation's Run* to return.
const teardownWait = 5 * time.Second

// closeWait bounds the closing handshake when Run ends.
const closeWait = time.Second

// Run connects to the controller, sends hello, waits for welcome (a reject
// is a *RejectError naming its code), sends the scenario registry, then
// serves operations until ctx ends (Run returns nil) or the controller
// closes the connection (nil for a normal close, else an error).
//
// Run reads from the moment the socket opens, so a request arriving in the
// same read as welcome is not lost; it answers ping promptly even while an
// operation runs (reading never waits on the game) and runs one operation
// at a time. When Run returns, the operation in progress has been
// cancelled and, unless it ignored that for 5 s, has returned.
func Run(ctx context.Context, g Game, o *Options) error {
	var opts Options
	if o != nil {
		opts = *o
	}
	if opts.Endpoint == "" {
		opts.Endpoint = os.Getenv("CAPPY_ENDPOINT")
	}
	if opts.Token == "" {
		opts.Token = os.Getenv("CAPPY_SESSION_TOKEN")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.DialTimeout <= 0 {
		opts.DialTimeout = 10 * time.Second
	}
	if opts.Endpoint == "" {
		return errors.New("cappy: no controller endpoint (set CAPPY_ENDPOINT)")
	}
	if opts.Token == "" {
		return errors.New("cappy: no session token (set CAPPY_SESSION_TOKEN)")
	}
	if u, err := url.Parse(opts.Endpoint); err != nil || (u.Scheme != "ws" && u.Scheme != "wss") {
		return fmt.Errorf("cappy: endpoint %q is not a ws:// URL", opts.Endpoint)
	}
	info := g.Info()
	if info.Game.ID == "" {
		return errors.New("cappy: Info().Game.ID is required")
	}
	if info.Adapter.Name == "" {
		info.Adapter.Name = DefaultAdapterName
	}
	caps := info.Capabilities
	if caps == nil {
		caps = []string{}
	}

	dialCtx, cancelDial := context.WithTimeout(ctx, opts.DialTimeout)
	conn, _, err := websocket.Dial(dialCtx, opts.Endpoint, nil)
	cancelDial()
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("cappy: connect to %s: %w", opts.Endpoint, err)
	}
	conn.SetReadLimit(protocol.CappyMaxMessageBytes)

	s := &session{
		g:    g,
		conn: conn,
		log:  opts.Logger,
		caps: caps,
		in:   newInbox(),
		fset: opts.frameSettings(),
	}
	s.validator, _ = g.(Validator)
	s.ctx, s.cancel = context.WithCancelCause(ctx)
	defer s.cancel(nil)

	// Read from the moment the socket opens. The read context is not ctx:
	// cancelling a Read's context makes coder/websocket drop the socket
	// without a close handshake.
	readCtx, cancelRead := context.WithCancel(context.Background())
	defer cancelRead()
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		s.readLoop(readCtx)
	}()

	err = s.send(&protocol.Hello{
		Type:         "hello",
		Protocol:     protocol.VersionRange{Min: protocol.CappyProtocolVersion, Max: protocol.CappyProtocolVersion},
		Token:        opts.Token,
		Adapter:      info.Adapter,
		Game:         info.Game,
		Build:        info.Build,
		Capabilities: caps,
	})
	if err == nil {
		err = s.serve(opts.DialTimeout)
	}

	// Tear down: cancel the operation, wait for the game, close the socket.
	s.cancel(ErrDisconnected)
	s.waitOp(teardownWait)
	if _, ended, _ := s.in.take(); !ended {
		// A normal close, but do not wait long for a controller that no
		// longer reads.
		closed := make(chan struct{})
		go func() {
			defer close(closed)
			conn.Close(websocket.StatusNormalClosure, "adapter stopping")
		}()
		t := time.NewTimer(closeWait)
		select {
		case <-closed:
		case <-t.C:
		}
		t.Stop()
	}
	conn.CloseNow()
	cancelRead()
	<-readDone
	if err == nil && ctx.Err() == nil && !s.welcomed {
		err = errors.New("cappy: connection closed before welcome")
	}
	return err
}

// msg is one decoded controller message.
type msg struct {
	typ string
	v   any
}

// inbox is the unbounded queue from the reader to the dispatcher, so that
// reading never waits on the game.
type inbox struct {
	mu     sync.Mutex
	items  []msg
	err    error // why reading ended; set once
	ended  bool
	signal chan struct{}
}

func newInbox() *inbox { return &inbox{signal: make(chan struct{}, 1)} }

func (in *inbox) push(m msg) {
	in.mu.Lock()
	in.items = append(in.items, m)
	in.mu.Unlock()
	in.notify()
}

func (in *inbox) end(err error) {
	in.mu.Lock()
	in.ended, in.err = true, err
	in.mu.Unlock()
	in.notify()
}

func (in *inbox) notify() {
	select {
	case in.signal <- struct{}{}:
	default:
	}
}

// take returns the queued messages and whether reading has ended.
func (in *inbox) take() ([]msg, bool, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	items := in.items
	in.items = nil
	return items, in.ended && len(items) == 0, in.err
}

type session struct {
	g         Game
	validator Validator
	conn      *websocket.Conn
	log       *slog.Logger
	caps      []string
	in        *inbox
	fset      frameSettings

	ctx    context.Context // cancelled when Run's ctx ends or the connection is lost
	cancel context.CancelCauseFunc

	// wmu serializes writes (coder/websocket allows one writer at a time)
	// and guards wbuf and the ops' emit state.
	wmu  sync.Mutex
	wbuf []byte

	// Dispatcher state.
	welcomed bool
	cur      *Op
	actions  []protocol.Action // sent after welcome (Player)
}

func (s *session) lost() bool { return context.Cause(s.ctx) == ErrDisconnected }

// readLoop reads every message, answers ping directly and queues the rest.
func (s *session) readLoop(ctx context.Context) {
	for {
		typ, data, err := s.conn.Read(ctx)
		if err != nil {
			status := websocket.CloseStatus(err)
			var rerr error
			switch {
			case status == websocket.StatusNormalClosure || status == websocket.StatusGoingAway:
			case s.ctx.Err() != nil:
			default:
				rerr = fmt.Errorf("cappy: connection to the controller lost: %w", err)
			}
			s.cancel(ErrDisconnected)
			s.in.end(rerr)
			return
		}
		if typ != websocket.MessageText {
			s.log.Warn("cappy: ignoring a binary frame")
			continue
		}
		t, v, err := protocol.DecodeControllerMessage(data)
		if err != nil {
			s.log.Warn("cappy: ignoring a controller message", "type", t, "err", err)
			continue
		}
		if p, ok := v.(*protocol.Ping); ok {
			if err := s.send(&protocol.Ping{Type: "pong", Nonce: p.Nonce}); err != nil {
				s.log.Debug("cappy: pong", "err", err)
			}
			continue
		}
		s.in.push(msg{t, v})
	}
}

// send writes one control message.
func (s *session) send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return s.writeLocked(b)
}

// writeLocked writes one text frame; s.wmu is held. Writes use a context
// without deadline: coder/websocket would otherwise arm a timer per write,
// and a blocked write is released by closing the connection.
func (s *session) writeLocked(b []byte) error {
	if err := s.conn.Write(context.Background(), websocket.MessageText, b); err != nil {
		s.cancel(ErrDisconnected)
		s.conn.CloseNow() // unusable; this also ends the reader
		return fmt.Errorf("cappy: write: %w", err)
	}
	return nil
}

// serve is the dispatcher: it handles queued messages in order.
func (s *session) serve(handshakeTimeout time.Duration) error {
	hs := time.NewTimer(handshakeTimeout)
	defer hs.Stop()
	done := s.ctx.Done()
	for {
		items, ended, rerr := s.in.take()
		for _, m := range items {
			if err := s.handle(m); err != nil {
				return err
			}
		}
		if ended {
			return rerr
		}
		var timeout <-chan time.Time
		if !s.welcomed {
			timeout = hs.C
		}
		select {
		case <-s.in.signal:
		case <-done:
			if s.lost() {
				done = nil // the reader ends too; drain what it queued
				continue
			}
			return nil
		case <-timeout:
			return fmt.Errorf("cappy: no welcome from the controller within %s", handshakeTimeout)
		}
	}
}

func (s *session) handle(m msg) error {
	if !s.welcomed {
		switch v := m.v.(type) {
		case *protocol.Welcome:
			if v.Protocol != protocol.CappyProtocolVersion {
				return fmt.Errorf("cappy: controller welcomed protocol %d, this adapter speaks %d", v.Protocol, protocol.CappyProtocolVersion)
			}
			s.welcomed = true
			s.log.Info("cappy: welcomed", "controller", v.Controller.Name, "version", v.Controller.Version)
			if err := s.sendScenarios(); err != nil {
				return err
			}
			return s.sendActions()
		case *protocol.Reject:
			return &RejectError{Code: v.Code, Message: v.Message}
		case *protocol.CappyError:
			s.log.Warn("cappy: controller error", "code", v.Code, "message", v.Message)
			return nil
		default:
			s.log.Warn("cappy: ignoring a message before welcome", "type", m.typ)
			return nil
		}
	}
	switch v := m.v.(type) {
	case *protocol.ListScenarios:
		return s.sendScenarios()
	case *protocol.PrepareScenario:
		s.prepareScenario(v)
	case *protocol.PrepareReplay:
		s.prepareReplay(v)
	case *protocol.RecordStart:
		s.recordStart(v)
	case *protocol.Step:
		s.step(v)
	case *protocol.Inspect:
		s.inspect(v)
	case *protocol.OpMessage:
		switch v.Type {
		case "start":
			s.start(v.Op)
		case "stop":
			s.stop(v.Op)
		case "cancel":
			s.cancelOp(v.Op, "cancel")
		}
	case *protocol.CappyError:
		s.log.Warn("cappy: controller error", "code", v.Code, "message", v.Message, "op", v.Op)
		if v.Op != "" {
			// The controller failed the operation; stop working on it.
			s.cancelOp(v.Op, "error")
		}
	case *protocol.Reject:
		return &RejectError{Code: v.Code, Message: v.Message}
	case *protocol.Welcome:
		s.log.Warn("cappy: ignoring a second welcome")
	default:
		s.log.Warn("cappy: ignoring a message", "type", m.typ)
	}
	return nil
}

func (s *session) sendScenarios() error {
	sc := s.g.Scenarios()
	if sc == nil {
		sc = []protocol.Scenario{}
	}
	return s.send(&protocol.Scenarios{Type: "scenarios", Scenarios: sc})
}

func (s *session) fail(op, code, message string) {
	if err := s.send(&protocol.Failed{Type: "failed", Op: op, Code: code, Message: message}); err != nil {
		s.log.Debug("cappy: failed", "err", err)
	}
}

func (s *session) hasCap(c string) bool { return slices.Contains(s.caps, c) }

// admit reports whether a new operation may begin, answering failed
// OPERATION_BUSY when another one is active. A cancelled operation still
// tearing down is waited for (up to teardownWait).
func (s *session) admit(op string) bool {
	if op == "" {
		s.log.Warn("cappy: ignoring an operation request without op")
		return false
	}
	if s.cur != nil && s.cur.cancelled {
		s.waitOp(teardownWait)
	}
	if s.cur != nil {
		select {
		case <-s.cur.done:
			s.cur = nil
		default:
		}
	}
	if s.cur != nil {
		s.fail(op, protocol.CappyOperationBusy, fmt.Sprintf("operation %s is still active", s.cur.id))
		return false
	}
	return true
}

// waitOp waits (bounded) for the current operation's Run* to return.
func (s *session) waitOp(d time.Duration) {
	if s.cur == nil {
		return
	}
	if !s.cur.launched {
		s.cur.end()
		s.cur = nil
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-s.cur.done:
		s.cur = nil
	case <-t.C:
		s.log.Warn("cappy: the game did not end a cancelled operation", "op", s.cur.id, "waited", d)
	}
}

// checkPresentation checks the keys Cappy defines, and the capabilities
// they need, as the controller does.
func (s *session) checkPresentation(p protocol.Presentation) *Failure {
	if err := p.Check(s.hasCap); err != nil {
		return failureOf(err, protocol.CappyPresentationRejected)
	}
	return nil
}

func failureOf(err error, defaultCode string) *Failure {
	var f *Failure
	if errors.As(err, &f) {
		return f
	}
	return &Failure{Code: defaultCode, Message: err.Error()}
}

func (s *session) prepareScenario(v *protocol.PrepareScenario) {
	if !s.admit(v.Op) {
		return
	}
	var sc *protocol.Scenario
	for _, c := range s.g.Scenarios() {
		if c.ID == v.Scenario {
			sc = &c
			break
		}
	}
	if sc == nil {
		s.fail(v.Op, protocol.CappyScenarioNotFound, fmt.Sprintf("no scenario %q", v.Scenario))
		return
	}
	params, err := protocol.ResolveParameters(sc, v.Parameters)
	if err != nil {
		s.fail(v.Op, protocol.CappyInvalidParameters, err.Error())
		return
	}
	if f := s.checkPresentation(v.Presentation); f != nil {
		s.fail(v.Op, f.Code, f.Message)
		return
	}
	if s.validator != nil {
		if err := s.validator.ValidateScenario(v.Scenario, params, v.Presentation); err != nil {
			f := failureOf(err, protocol.CappyInvalidParameters)
			s.fail(v.Op, f.Code, f.Message)
			return
		}
	}
	op := s.newOp(v.Op, kindScenario)
	if !s.askFrames(op, v.Frames) {
		return
	}
	op.scenario, op.params, op.pres = v.Scenario, params, v.Presentation
	s.ready(op)
}

func (s *session) prepareReplay(v *protocol.PrepareReplay) {
	if !s.admit(v.Op) {
		return
	}
	switch {
	case !s.hasCap(protocol.CapReplay):
		s.fail(v.Op, protocol.CappyReplayUnsupported, "this game does not play replays")
		return
	case v.Replay == nil:
		s.fail(v.Op, protocol.CappyReplayInvalid, "prepare_replay without replay")
		return
	}
	if err := v.Replay.Validate(); err != nil {
		s.fail(v.Op, protocol.CappyReplayInvalid, err.Error())
		return
	}
	if f := s.checkPresentation(v.Presentation); f != nil {
		s.fail(v.Op, f.Code, f.Message)
		return
	}
	if s.validator != nil {
		if err := s.validator.ValidateReplay(v.Replay, v.Presentation); err != nil {
			f := failureOf(err, protocol.CappyReplayInvalid)
			s.fail(v.Op, f.Code, f.Message)
			return
		}
	}
	op := s.newOp(v.Op, kindReplay)
	if !s.askFrames(op, v.Frames) {
		return
	}
	op.replay, op.pres = v.Replay, v.Presentation
	s.ready(op)
}

// askFrames attaches an operation's frames request, answering failed
// when the game did not advertise frames (CAPABILITY_MISSING) or the
// request is invalid (PROTOCOL_INVALID_MESSAGE).
func (s *session) askFrames(op *Op, req *protocol.FramesRequest) bool {
	if req == nil {
		return true
	}
	if !s.hasCap(protocol.CapFrames) {
		s.fail(op.id, protocol.CappyCapabilityMissing, "this game does not send frames (no "+protocol.CapFrames+" capability)")
		return false
	}
	fr, err := newFramer(op, req, s.fset)
	if err != nil {
		s.fail(op.id, protocol.CappyInvalidMessage, err.Error())
		return false
	}
	op.fr = fr
	return true
}

func (s *session) ready(op *Op) {
	s.cur = op
	if err := s.send(&protocol.OpState{Type: "ready", Op: op.id}); err != nil {
		s.log.Debug("cappy: ready", "err", err)
	}
}

func (s *session) recordStart(v *protocol.RecordStart) {
	if !s.admit(v.Op) {
		return
	}
	if !s.hasCap(protocol.CapFreeformRecording) {
		s.fail(v.Op, protocol.CappyCapabilityMissing, "this game does not support freeform recording")
		return
	}
	switch v.Control {
	case "":
	case protocol.ControlAgent:
		if !s.hasCap(protocol.CapInput) {
			s.fail(v.Op, protocol.CappyCapabilityMissing, "this game cannot be played by an agent (no "+protocol.CapInput+" capability)")
			return
		}
	default:
		s.fail(v.Op, protocol.CappyInvalidParameters, fmt.Sprintf("unknown control %q", v.Control))
		return
	}
	op := s.newOp(v.Op, kindRecord)
	if !s.askFrames(op, v.Frames) {
		return
	}
	if v.Control == protocol.ControlAgent {
		op.play = &playState{steps: make(chan *Step, 1), actions: s.actions}
	}
	s.cur = op
	s.launch(op)
}

func (s *session) start(id string) {
	switch {
	case id == "":
		s.log.Warn("cappy: ignoring start without op")
	case s.cur == nil || s.cur.id != id:
		s.fail(id, protocol.CappyOutOfState, fmt.Sprintf("operation %s is not prepared", id))
	case s.cur.launched:
		s.log.Warn("cappy: ignoring a repeated start", "op", id)
	default:
		// Not launched, so not cancelled either: cancelOp ends and clears
		// an operation cancelled before its start.
		s.launch(s.cur)
	}
}

func (s *session) stop(id string) {
	if s.cur == nil || s.cur.id != id {
		s.log.Debug("cappy: ignoring stop of an inactive operation", "op", id)
		return
	}
	s.cur.stop()
}

func (s *session) cancelOp(id, why string) {
	if s.cur == nil || s.cur.id != id {
		s.log.Debug("cappy: ignoring "+why+" of an inactive operation", "op", id)
		return
	}
	s.cur.cancelled = true
	s.cur.cancel(ErrCancelled)
	s.cur.stop()
	if !s.cur.launched {
		s.cur.end()
		s.cur = nil
	}
}

// launch sends started and runs the operation's Run* in its own goroutine.
func (s *session) launch(op *Op) {
	op.launched = true
	if err := s.send(&protocol.OpState{Type: "started", Op: op.id}); err != nil {
		op.cancel(ErrDisconnected)
		op.end()
		return
	}
	if op.fr != nil {
		go op.fr.run()
	}
	go s.runOp(op)
}

func (s *session) runOp(op *Op) {
	var replay *protocol.ReplayPayload
	err := func() (err error) {
		defer func() {
			if r := recover(); r != nil {
				s.log.Error("cappy: the game panicked", "op", op.id, "panic", r)
				err = fmt.Errorf("game panicked: %v", r)
			}
		}()
		switch op.kind {
		case kindScenario:
			return s.g.RunScenario(op.ctx, op, op.scenario, op.params, op.pres)
		case kindReplay:
			return s.g.Replay(op.ctx, op, op.replay, op.pres)
		default:
			replay, err = s.g.Record(op.ctx, op)
			return err
		}
	}()

	// Queued frames go out before the outcome, never after it.
	if op.fr != nil {
		op.fr.finish(frameDrainWait)
	}

	// Done before the outcome is written, under the write lock: a request
	// the controller sends on seeing the outcome finds the slot free, and
	// no reply to it can overtake the outcome.
	s.wmu.Lock()
	defer s.wmu.Unlock()
	op.finished = true
	close(op.done)
	defer op.cancel(ErrOpDone)
	if op.ctx.Err() != nil {
		// Cancelled, or the connection or Run ended: nothing to report.
		s.log.Debug("cappy: operation ended after cancel", "op", op.id, "err", err)
		return
	}
	var out any
	switch {
	case err != nil:
		f := failureOf(err, CodeAdapterError)
		out = &protocol.Failed{Type: "failed", Op: op.id, Code: f.Code, Message: f.Message}
	case op.kind == kindRecord && replay == nil:
		out = &protocol.Failed{Type: "failed", Op: op.id, Code: protocol.CappyReplayInvalid, Message: "the recording produced no replay"}
	default:
		if replay != nil {
			if verr := replay.Validate(); verr != nil {
				out = &protocol.Failed{Type: "failed", Op: op.id, Code: protocol.CappyReplayInvalid, Message: "the recording's replay is invalid: " + verr.Error()}
				break
			}
		}
		out = &protocol.Completed{Type: "completed", Op: op.id, Replay: replay, Summary: op.summary}
	}
	b, merr := json.Marshal(out)
	if merr == nil {
		merr = s.writeLocked(b)
	}
	if merr != nil {
		s.log.Debug("cappy: operation result", "op", op.id, "err", merr)
	}
}
