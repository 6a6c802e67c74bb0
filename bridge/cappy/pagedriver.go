package cappy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/crosscode/crosscode-mcp/protocol"
)

// The page driver (spec section 17): an adapter inside crosscode-mcp for
// a web game with no adapter code. It connects to the controller like any
// other adapter (a loopback WebSocket, the session token), and drives the
// game's page through the DevTools protocol: the page's clocks run on
// virtual time the driver advances (pageclock.js), its randomness is
// seeded, the agent's keys and pointer are trusted input events, and its
// pictures are the page's screenshots.

// PageAdapterName names the page driver in hello.
const PageAdapterName = "crosscode-page"

// PageReplayFormat is the format of the page driver's replays.
const PageReplayFormat = "crosscode-page/1"

// pageCapabilities are what the page driver offers.
var pageCapabilities = []string{protocol.CapFreeformRecording, protocol.CapReplay, protocol.CapTimeScale, protocol.CapFrames,
	protocol.CapInput, protocol.CapInspect, protocol.CapSeed}

// pageDriverConfig configures a page driver.
type pageDriverConfig struct {
	Browser  context.Context // the browser's chromedp context: tabs open in it
	URL      string          // the game's page, without the fragment
	Game     string          // the game's id in hello
	Version  string
	Width    int64
	Height   int64
	Endpoint string
	Token    string
	Logger   *slog.Logger
	Logf     func(format string, args ...any) // the game's log
	// Actions are the keys (by KeyboardEvent.code) and "pointer" the
	// game takes (game.actions); nil: every key and the pointer.
	Actions []string
	// Kill ends the browser (a hung or misbehaving page); the driver's
	// connection ends with it. Dying, called first, marks the browser as
	// no longer running, before the operation's failure is told.
	Kill  func(why string)
	Dying func()
}

// pageReplay is a recording's replay: the page, its seed, and its steps.
type pageReplay struct {
	Format string     `json:"format"`
	URL    string     `json:"url"`
	Seed   int64      `json:"seed"`
	Width  int64      `json:"width"`
	Height int64      `json:"height"`
	Steps  []pageStep `json:"steps"`
}

// pageStep is one step of play: the inputs applied at its start (pointer
// positions in the page's own pixels), then ms of page time.
type pageStep struct {
	Ms     float64                `json:"ms"`
	Inputs []protocol.ActionInput `json:"inputs,omitempty"`
}

// pageOp is the operation the driver runs.
type pageOp struct {
	id, kind  string // "recording" or "replay"
	agent     bool
	tab       *pageTab
	frames    *protocol.FramesRequest
	mime      string
	timeScale float64
	seed      int64
	simT      float64 // page time
	slot      int64   // the next frame slot of the asked rate
	replay    *pageReplay
	steps     []pageStep
	stop      atomic.Bool
	cancel    atomic.Bool
	started   bool
}

// pageDriver is one connection of the page driver.
type pageDriver struct {
	cfg     pageDriverConfig
	ws      *websocket.Conn
	writeMu sync.Mutex
	ctx     context.Context
	work    chan any
	mu      sync.Mutex
	op      *pageOp  // the operation, or nil
	tab     *pageTab // the page inspect reads: the latest operation's
	actions []protocol.Action
}

// runPageDriver connects to the controller and drives the page until ctx
// ends, the controller closes the connection, or the page is killed.
func runPageDriver(ctx context.Context, cfg pageDriverConfig) error {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	if cfg.Width <= 0 || cfg.Height <= 0 {
		cfg.Width, cfg.Height = DefaultPageWidth, DefaultPageHeight
	}
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	ws, _, err := websocket.Dial(dctx, cfg.Endpoint, nil)
	cancel()
	if err != nil {
		return fmt.Errorf("page driver: connect: %w", err)
	}
	defer ws.CloseNow()
	ws.SetReadLimit(protocol.CappyMaxMessageBytes)
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	d := &pageDriver{cfg: cfg, ws: ws, ctx: ctx, work: make(chan any, 64), actions: pageActions(cfg.Actions)}
	defer d.closeTabs()
	if err := d.send(pageHello(cfg.Game, cfg.Version, cfg.Token)); err != nil {
		return err
	}
	go d.worker()
	for {
		_, data, err := ws.Read(ctx)
		if err != nil {
			if ctx.Err() != nil || websocket.CloseStatus(err) != -1 {
				return nil
			}
			return err
		}
		typ, v, err := protocol.DecodeControllerMessage(data)
		if err != nil {
			cfg.Logger.Warn("page driver: a controller message it does not understand", "type", typ, "error", err)
			continue
		}
		switch m := v.(type) {
		case *protocol.Ping:
			d.send(protocol.Ping{Type: "pong", Nonce: m.Nonce})
			continue
		case *protocol.Reject:
			return fmt.Errorf("page driver: the controller refused it: %s: %s", m.Code, m.Message)
		case *protocol.Welcome:
			d.send(protocol.Scenarios{Type: "scenarios", Scenarios: []protocol.Scenario{}})
			d.send(protocol.Actions{Type: "actions", Actions: d.actions})
			continue
		case *protocol.OpMessage:
			// stop and cancel reach a running operation at once.
			d.mu.Lock()
			if op := d.op; op != nil && op.id == m.Op {
				switch m.Type {
				case "stop":
					op.stop.Store(true)
				case "cancel":
					op.cancel.Store(true)
				}
			}
			d.mu.Unlock()
		case *protocol.CappyError:
			cfg.Logger.Warn("page driver: controller error", "code", m.Code, "message", m.Message, "op", m.Op)
			if m.Op != "" {
				d.mu.Lock()
				if op := d.op; op != nil && op.id == m.Op {
					op.cancel.Store(true)
				}
				d.mu.Unlock()
				v = &protocol.OpMessage{Type: "cancel", Op: m.Op}
			}
		}
		select {
		case d.work <- v:
		case <-ctx.Done():
			return nil
		}
	}
}

// pageHello is the page driver's hello.
func pageHello(game, version, token string) protocol.Hello {
	return protocol.Hello{Type: "hello", Protocol: protocol.VersionRange{Min: 1, Max: 1}, Token: token,
		Adapter: protocol.NameVersion{Name: PageAdapterName, Version: version}, Game: protocol.GameInfo{ID: game, Name: game},
		Capabilities: pageCapabilities}
}

// CheckPageDriver says whether the controller would take the page
// driver's hello for the web game w under the capture config cfg, as the
// launcher would send it: nil, or the refusal (an *Error with the reject's
// code and message).
func CheckPageDriver(w *WebGame, cfg *CaptureConfig, version string) error {
	const token = "doctor"
	b, err := json.Marshal(pageHello(w.ID, version, token))
	if err != nil {
		return err
	}
	msg, err := protocol.DecodeAdapterMessage(b)
	if err != nil {
		return errorf(protocol.CappyInvalidMessage, "hello: %v", err)
	}
	if code, why := checkHello(msg.Hello, token, cfg.RequiredCapabilities); code != "" {
		return errorf(code, "%s", why)
	}
	return nil
}

func (d *pageDriver) send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	d.writeMu.Lock()
	defer d.writeMu.Unlock()
	ctx, cancel := context.WithTimeout(d.ctx, 10*time.Second)
	defer cancel()
	return d.ws.Write(ctx, websocket.MessageText, b)
}

// worker handles the controller's requests one at a time.
func (d *pageDriver) worker() {
	for {
		var v any
		select {
		case v = <-d.work:
		case <-d.ctx.Done():
			return
		}
		switch m := v.(type) {
		case *protocol.ListScenarios:
			d.send(protocol.Scenarios{Type: "scenarios", Scenarios: []protocol.Scenario{}})
		case *protocol.PrepareScenario:
			d.failed(m.Op, protocol.CappyScenarioNotFound, "a page driven without adapter code has no scenarios: record (start_recording) and replay instead, or add the JavaScript adapter for scenarios")
		case *protocol.RecordStart:
			d.record(m)
		case *protocol.PrepareReplay:
			d.prepareReplay(m)
		case *protocol.OpMessage:
			d.opMessage(m)
		case *protocol.Step:
			d.step(m)
		case *protocol.Inspect:
			d.inspect(m)
		}
	}
}

func (d *pageDriver) failed(op, code, msg string) {
	d.send(protocol.Failed{Type: "failed", Op: op, Code: code, Message: msg})
}

// current returns the operation if it is id.
func (d *pageDriver) current(id string) *pageOp {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.op != nil && d.op.id == id {
		return d.op
	}
	return nil
}

// begin makes op the operation: it opens its fresh page (the previous
// one closes) with its seed, and runs nothing yet.
func (d *pageDriver) begin(op *pageOp, frames *protocol.FramesRequest) error {
	d.mu.Lock()
	busy := d.op
	d.mu.Unlock()
	if busy != nil {
		return &protocol.CappyFailure{Code: protocol.CappyOperationBusy, Message: "operation " + busy.id + " is still running"}
	}
	if frames != nil {
		if err := frames.Validate(); err != nil {
			return &protocol.CappyFailure{Code: protocol.CappyInvalidMessage, Message: err.Error()}
		}
		op.frames, op.mime = frames, chooseFrameMime(frames.Formats)
	}
	d.closeTabs()
	tab, err := openPageTab(d.cfg.Browser, d.cfg.URL, op.seed, d.cfg.Width, d.cfg.Height, d.cfg.Logf)
	if err != nil {
		return err
	}
	op.tab = tab
	d.mu.Lock()
	d.op, d.tab = op, tab
	d.mu.Unlock()
	return nil
}

func chooseFrameMime(formats []string) string {
	for _, f := range formats {
		if f == protocol.MimeJPEG {
			return f
		}
	}
	return protocol.MimePNG
}

// end forgets the operation; its page stays for inspect.
func (d *pageDriver) end(op *pageOp) {
	d.mu.Lock()
	if d.op == op {
		d.op = nil
	}
	d.mu.Unlock()
}

// fault ends the operation with what went wrong: the page's own doing
// (its code) or the driver's. A page that hung, crashed or did what ends
// an operation takes the browser with it.
func (d *pageDriver) fault(op *pageOp, err error) {
	code, msg := "ADAPTER_ERROR", err.Error()
	var pf *pageFault
	var cf *protocol.CappyFailure
	switch {
	case errors.As(err, &pf):
		code, msg = pf.Code, pf.Message
	case errors.As(err, &cf):
		code, msg = cf.Code, cf.Message
	}
	if pf != nil && d.cfg.Dying != nil {
		d.cfg.Dying() // no more calls reach this browser: the next one launches another
	}
	if op != nil {
		d.end(op)
		d.failed(op.id, code, msg)
	}
	if pf != nil {
		d.cfg.Logf("[page driver] %s: %s; closing the browser", code, msg)
		d.closeTabs()
		if d.cfg.Kill != nil {
			d.cfg.Kill("the page driver closed the browser: " + code)
		}
	}
}

func (d *pageDriver) closeTabs() {
	d.mu.Lock()
	tab := d.tab
	d.tab = nil
	d.mu.Unlock()
	if tab != nil {
		tab.close()
	}
}

// record starts a recording: a fresh page, seeded, paused at page time 0
// after its first animation frame.
func (d *pageDriver) record(m *protocol.RecordStart) {
	op := &pageOp{id: m.Op, kind: KindRecording, agent: m.Control == protocol.ControlAgent, timeScale: 1, seed: protocol.DefaultSeed}
	if m.Seed != nil {
		op.seed = *m.Seed
	}
	if m.Control != "" && !op.agent {
		d.failed(m.Op, protocol.CappyInvalidMessage, fmt.Sprintf("record_start.control must be %q, got %q", protocol.ControlAgent, m.Control))
		return
	}
	if err := d.begin(op, m.Frames); err != nil {
		d.fault(op, err)
		return
	}
	if err := d.send(protocol.OpState{Type: "started", Op: op.id}); err != nil {
		return
	}
	op.started = true
	// Frame 0, at page time 0, runs in the agent's first step (with what
	// the page reported while it loaded), or here for a free recording.
	if !op.agent {
		if err := d.advance(op, 0, true); err != nil {
			d.fault(op, err)
			return
		}
		d.runFree(op)
	}
}

// codeOf is an error's protocol code.
func codeOf(err error) string {
	var pf *pageFault
	var cf *protocol.CappyFailure
	switch {
	case errors.As(err, &pf):
		return pf.Code
	case errors.As(err, &cf):
		return cf.Code
	}
	return "ADAPTER_ERROR"
}

// runFree runs a recording nobody steps: the page's time goes on at the
// wall clock's pace, frame by frame, until stop (a page's own autoplay;
// a person's input to a headed browser is not part of its replay).
func (d *pageDriver) runFree(op *pageOp) {
	start := time.Now()
	for !op.stop.Load() && !op.cancel.Load() {
		want := float64(time.Since(start)) / float64(time.Millisecond)
		next := op.simT + PageFrameMs
		if want < next {
			time.Sleep(time.Duration((next - want) * float64(time.Millisecond)))
			continue
		}
		if err := d.advance(op, next, true); err != nil {
			d.fault(op, err)
			return
		}
		select {
		case <-d.ctx.Done():
			return
		default:
		}
	}
	if op.cancel.Load() {
		d.end(op)
		return
	}
	op.steps = append(op.steps, pageStep{Ms: op.simT})
	d.complete(op)
}

// advance runs the operation's page on to page time to, sending what the
// page reported as events and, when frames were asked, a frame at each
// 1/fps of presented time before to (and at to itself, when withEnd).
func (d *pageDriver) advance(op *pageOp, to float64, withEnd bool) error {
	const eps = 1e-6
	for {
		target, capture := to, false
		if op.frames != nil {
			at := float64(op.slot) * 1000 / op.frames.FPS * op.timeScale // page time of the next frame
			if at < to-eps || (withEnd && at <= to+eps) {
				target, capture = max(at, op.simT), true
			}
		}
		st, err := op.tab.advance(target)
		if st != nil {
			d.reports(op, st)
		}
		if err != nil {
			return err
		}
		op.simT = max(op.simT, target)
		if !capture {
			return nil
		}
		op.slot++
		if err := d.frame(op, ""); err != nil {
			return err
		}
		if target >= to-eps {
			return nil
		}
	}
}

// reports sends what the page reported as the operation's events.
func (d *pageDriver) reports(op *pageOp, st *pageState) {
	for _, r := range st.Reports {
		payload := r.Payload
		if len(payload) == 0 || payload[0] != '{' {
			payload = nil
		}
		d.send(protocol.Event{Type: "event", Op: op.id, T: op.presented(r.T), Event: r.Event, Payload: payload})
	}
	if st.Dropped > 0 {
		p, _ := json.Marshal(map[string]int{"dropped": st.Dropped})
		d.send(protocol.Event{Type: "event", Op: op.id, T: op.presented(st.Now), Event: "PAGE_EVENTS_DROPPED", Payload: p})
	}
}

// presented is page time on the operation's presented clock.
func (op *pageOp) presented(simT float64) float64 { return simT / op.timeScale }

// frame sends the page's picture now.
func (d *pageDriver) frame(op *pageOp, reason string) error {
	data, w, h, err := op.tab.screenshot(op.frames.MaxWidth, op.mime)
	if err != nil {
		return err
	}
	return d.send(protocol.Frame{Type: "frame", Op: op.id, T: op.presented(op.simT), Mime: op.mime, Width: w, Height: h, Data: data, Reason: reason})
}

// scale turns the frames' pixels into the page's: the frames are at most
// maxWidth wide (AgentWidth when none are asked).
func (op *pageOp) scale(width int64) float64 {
	fw := int64(AgentWidth)
	if op.frames != nil {
		fw = int64(op.frames.MaxWidth)
	}
	if fw <= 0 || fw >= width {
		return 1
	}
	return float64(width) / float64(fw)
}

// step runs one step of an agent-controlled recording.
func (d *pageDriver) step(m *protocol.Step) {
	op := d.current(m.Op)
	if op == nil || !op.agent {
		d.send(protocol.StepRefused{Type: "step_refused", Op: m.Op, ID: m.ID, Code: protocol.CappyInvalidInput, Message: "no agent-controlled recording " + m.Op + " is running"})
		return
	}
	if err := protocol.CheckStep(m, d.actions); err != nil {
		d.send(protocol.StepRefused{Type: "step_refused", Op: m.Op, ID: m.ID, Code: protocol.CappyInvalidInput, Message: err.Error()})
		return
	}
	scale := op.scale(op.tab.width)
	inputs := pageInputs(m.Actions, scale)
	err := op.tab.newStep()
	if err == nil {
		err = op.tab.input(inputs, 1)
	}
	if err == nil {
		err = d.advance(op, op.simT+m.Ms, false)
	}
	if err == nil && op.frames != nil {
		// The picture of the paused page; the asked rate's frame at
		// this moment, if due, is this one.
		if at := float64(op.slot) * 1000 / op.frames.FPS; at <= op.simT+1e-6 {
			op.slot++
		}
		err = d.frame(op, "step")
	}
	if err != nil {
		d.fault(op, err)
		return
	}
	op.steps = append(op.steps, pageStep{Ms: m.Ms, Inputs: inputs})
	d.send(protocol.Stepped{Type: "stepped", Op: op.id, ID: m.ID, T: op.presented(op.simT), SimT: op.simT})
}

// pageInputs are a step's inputs as the page gets them: pointer positions
// in the page's pixels.
func pageInputs(in []protocol.ActionInput, scale float64) []protocol.ActionInput {
	out := make([]protocol.ActionInput, len(in))
	for i, a := range in {
		if a.X != nil && a.Y != nil {
			x, y := *a.X*scale, *a.Y*scale
			a.X, a.Y = &x, &y
		}
		out[i] = a
	}
	return out
}

// complete ends a recording with its replay.
func (d *pageDriver) complete(op *pageOp) {
	rep := pageReplay{Format: PageReplayFormat, URL: pageURLPath(d.cfg.URL), Seed: op.seed, Width: op.tab.width, Height: op.tab.height, Steps: op.steps}
	data, err := json.Marshal(rep)
	if err != nil {
		d.fault(op, err)
		return
	}
	if len(data) > protocol.MaxInlineReplayBytes {
		d.fault(op, &protocol.CappyFailure{Code: protocol.CappyReplayInvalid, Message: fmt.Sprintf("the recording's replay is %d bytes, over the %d the page driver hands over: record shorter plays", len(data), protocol.MaxInlineReplayBytes)})
		return
	}
	d.end(op)
	d.send(protocol.Completed{Type: "completed", Op: op.id, Replay: protocol.NewInlineReplay(data, PageReplayFormat)})
}

// pageURLPath is a URL's path and query, for the replay to say what it played.
func pageURLPath(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return ""
	}
	p.Scheme, p.Host, p.Fragment, p.User = "", "", "", nil
	return p.String()
}

// opMessage handles start, stop and cancel.
func (d *pageDriver) opMessage(m *protocol.OpMessage) {
	op := d.current(m.Op)
	if op == nil {
		return
	}
	switch m.Type {
	case "cancel":
		d.end(op)
	case "stop":
		if op.kind == KindRecording && op.agent {
			d.complete(op)
		}
		// A free recording or a replay sees its stop flag as it runs.
	case "start":
		if op.kind == KindReplay && !op.started {
			d.playReplay(op)
		}
	}
}

// prepareReplay loads a replay's page, seeded as its recording, and
// answers ready.
func (d *pageDriver) prepareReplay(m *protocol.PrepareReplay) {
	rep, err := decodePageReplay(m.Replay)
	if err != nil {
		d.failed(m.Op, protocol.CappyReplayInvalid, err.Error())
		return
	}
	op := &pageOp{id: m.Op, kind: KindReplay, timeScale: m.Presentation.TimeScale(), seed: rep.Seed, replay: rep}
	if m.Seed != nil {
		op.seed = *m.Seed
	}
	if err := m.Presentation.Check(func(c string) bool { return c == protocol.CapTimeScale }); err != nil {
		d.failed(m.Op, codeOf(err), err.Error())
		return
	}
	if err := d.begin(op, m.Frames); err != nil {
		d.fault(op, err)
		return
	}
	d.send(protocol.OpState{Type: "ready", Op: op.id})
}

// decodePageReplay reads and checks a page driver's replay.
func decodePageReplay(p *protocol.ReplayPayload) (*pageReplay, error) {
	if p == nil {
		return nil, errors.New("no replay")
	}
	if p.Format != PageReplayFormat {
		return nil, fmt.Errorf("this replay is %q, not the page driver's %q: it was recorded by another adapter", p.Format, PageReplayFormat)
	}
	data, err := p.DecodeInline()
	if err != nil {
		return nil, err
	}
	var rep pageReplay
	if err := json.Unmarshal(data, &rep); err != nil {
		return nil, fmt.Errorf("the replay: %w", err)
	}
	if rep.Format != PageReplayFormat || protocol.CheckSeed(rep.Seed) != nil {
		return nil, errors.New("the replay's content is not a page driver's")
	}
	for i, s := range rep.Steps {
		if !(s.Ms >= 0) || s.Ms > 1e9 {
			return nil, fmt.Errorf("the replay's step %d has ms %v", i, s.Ms)
		}
		for j, a := range s.Inputs {
			if err := protocol.CheckActionInput(fmt.Sprintf("steps[%d].inputs[%d]", i, j), a, pageActions(nil)); err != nil {
				return nil, err
			}
		}
	}
	return &rep, nil
}

// playReplay plays a replay's steps on its fresh page.
func (d *pageDriver) playReplay(op *pageOp) {
	op.started = true
	if err := d.send(protocol.OpState{Type: "started", Op: op.id}); err != nil {
		return
	}
	err := d.advance(op, 0, true)
	for _, s := range op.replay.Steps {
		if err != nil || op.stop.Load() || op.cancel.Load() {
			break
		}
		if err = op.tab.newStep(); err == nil {
			if err = op.tab.input(s.Inputs, 1); err == nil {
				err = d.advance(op, op.simT+s.Ms, true)
			}
		}
	}
	switch {
	case err != nil:
		d.fault(op, err)
	case op.cancel.Load():
		d.end(op)
	default:
		d.end(op)
		d.send(protocol.Completed{Type: "completed", Op: op.id})
	}
}

// inspect answers a query about the page's state. A query is a path into
// the state the page's render_game_to_text() gives, checked here and
// handed to the page as data: it never runs as code.
func (d *pageDriver) inspect(m *protocol.Inspect) {
	answer := func(v json.RawMessage, e *protocol.InspectError) {
		d.send(protocol.InspectResult{Type: "inspect_result", ID: m.ID, Value: v, Error: e})
	}
	if err := checkPageQuery(m.Query); err != nil {
		answer(nil, &protocol.InspectError{Code: "INVALID_QUERY", Message: err.Error()})
		return
	}
	d.mu.Lock()
	tab, op := d.tab, d.op
	d.mu.Unlock()
	if tab == nil {
		var err error
		if tab, err = openPageTab(d.cfg.Browser, d.cfg.URL, protocol.DefaultSeed, d.cfg.Width, d.cfg.Height, d.cfg.Logf); err == nil {
			_, err = tab.advance(0)
		}
		if err != nil {
			if tab != nil {
				tab.close()
			}
			answer(nil, &protocol.InspectError{Code: codeOf(err), Message: "the page could not be opened: " + err.Error()})
			d.fault(nil, err)
			return
		}
		d.mu.Lock()
		d.tab = tab
		d.mu.Unlock()
	}
	v, ie, err := tab.inspect(m.Query)
	if err != nil {
		answer(nil, &protocol.InspectError{Code: codeOf(err), Message: err.Error()})
		d.fault(op, err)
		return
	}
	if len(v) > protocol.MaxInspectBytes-1024 {
		answer(nil, &protocol.InspectError{Code: "VALUE_TOO_LARGE", Message: fmt.Sprintf("the value is %d bytes, over the %d an answer holds: ask for a part of it (inspect \"\" lists the state's keys)", len(v), protocol.MaxInspectBytes-1024)})
		return
	}
	answer(v, ie)
}

// checkPageQuery refuses a query that is not "", "text" or a dotted path
// of names and indexes: the page driver's queries are paths, never code.
func checkPageQuery(q string) error {
	if q == "" || q == "text" {
		return nil
	}
	for _, seg := range strings.Split(q, ".") {
		if seg == "" {
			return fmt.Errorf("the query %q has an empty part: a query is \"\", \"text\" or a path such as player.x or enemies.0.hp", trimQuery(q))
		}
		for _, r := range seg {
			if !(r == '_' || r == '$' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
				return fmt.Errorf("the query %q is not a path (%q is not allowed): a query is \"\", \"text\" or a path such as player.x or enemies.0.hp, never code", trimQuery(q), r)
			}
		}
	}
	return nil
}

func trimQuery(q string) string {
	if len(q) > 80 {
		return q[:80] + "…"
	}
	return q
}
