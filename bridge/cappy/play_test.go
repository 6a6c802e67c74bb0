package cappy

import (
	"context"
	"encoding/json"
	"errors"
	"image/color"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/crosscode/crosscode-mcp/protocol"
)

// Agent play (spec section 11) over real loopback WebSockets: each rule of
// the controller, against a scripted adapter.

var playCaps = append([]string{protocol.CapInput, protocol.CapInspect, protocol.CapFrames}, allCaps...)

func playActions() map[string]any {
	return map[string]any{"type": "actions", "actions": []any{
		map[string]any{"name": "attack", "kind": "button", "description": "Hit what is in reach."},
		map[string]any{"name": "move", "kind": "axis2d"},
	}}
}

// agentRecording connects an adapter with the play capabilities and its
// actions, starts an agent-controlled recording (with frames when fr is
// set) and brings it to running.
func agentRecording(t *testing.T, e *env, fr *protocol.FramesRequest) (*testAdapter, *Operation) {
	t.Helper()
	a := connect(t, e, playCaps...)
	a.send(t, playActions())
	eventually(t, "the controller has the actions", func() bool { return len(e.ctrl.Actions()) == 2 })
	o := start(t, e, Request{Kind: KindRecording, Control: ControlAgent, Frames: fr})
	rs := a.expect(t, "record_start")
	if rs.str("control") != "agent" || rs.str("op") != o.ID {
		t.Fatalf("record_start %s", rs.Raw)
	}
	a.send(t, map[string]any{"type": "started", "op": o.ID})
	waitStatus(t, o, StatusRunning)
	return a, o
}

type stepOut struct {
	res *StepResult
	err error
}

// stepAsync runs Step on its own goroutine.
func stepAsync(e *env, o *Operation, in []protocol.ActionInput, ms float64) chan stepOut {
	ch := make(chan stepOut, 1)
	go func() {
		r, err := e.ctrl.Step(context.Background(), o, in, ms)
		ch <- stepOut{r, err}
	}()
	return ch
}

func recvStep(t *testing.T, ch chan stepOut) stepOut {
	t.Helper()
	select {
	case s := <-ch:
		return s
	case <-time.After(wait):
		t.Fatalf("Step did not return within %s", wait)
		return stepOut{}
	}
}

func wantCode(t *testing.T, err error, code string) *Error {
	t.Helper()
	var ce *Error
	if !errors.As(err, &ce) || ce.Code != code {
		t.Fatalf("error %v, want code %s", err, code)
	}
	return ce
}

func pressed(name string, p bool) protocol.ActionInput {
	return protocol.ActionInput{Name: name, Pressed: &p}
}

func TestStepRoundTrip(t *testing.T) {
	e := newEnv(t, nil)
	a, o := agentRecording(t, e, framesReq())
	ch := stepAsync(e, o, []protocol.ActionInput{pressed("attack", true)}, 500)
	s := a.expect(t, "step")
	if s.str("op") != o.ID || s.str("id") != "s1" || s.M["ms"] != 500.0 || !strings.Contains(string(s.Raw), `"actions":[{"name":"attack","pressed":true}]`) {
		t.Fatalf("step %s", s.Raw)
	}
	a.send(t, map[string]any{"type": "event", "op": o.ID, "t": 0, "event": "SPAWN"})
	a.send(t, map[string]any{"type": "event", "op": o.ID, "t": 250, "event": "HIT", "payload": map[string]any{"damage": 9}})
	// A flood of rate frames at one t, then the step's picture: the rate
	// drops the flood, never the step's picture.
	img := picture(t, protocol.MimeJPEG, 64, 36, color.RGBA{200, 10, 10, 255})
	for range 6 {
		a.send(t, frameMsg(o.ID, 450, protocol.MimeJPEG, 64, 36, img))
	}
	step := frameMsg(o.ID, 450, protocol.MimeJPEG, 64, 36, img)
	step["reason"] = "step"
	a.send(t, step)
	a.send(t, map[string]any{"type": "stepped", "op": o.ID, "id": "s1", "t": 500, "simT": 500})
	r := recvStep(t, ch)
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.res.ID != "s1" || r.res.T != 500 || r.res.SimT != 500 || len(r.res.Events) != 2 || r.res.Events[1].Event != "HIT" || r.res.Frame == nil || r.res.Frame.Reason != "step" {
		t.Fatalf("step result %+v", r.res)
	}
	// A step with ms 0 and no actions: apply and look.
	ch = stepAsync(e, o, nil, 0)
	s = a.expect(t, "step")
	if s.str("id") != "s2" || !strings.Contains(string(s.Raw), `"actions":[]`) {
		t.Fatalf("step %s", s.Raw)
	}
	a.send(t, map[string]any{"type": "stepped", "op": o.ID, "id": "s2", "t": 500, "simT": 500})
	if r := recvStep(t, ch); r.err != nil || len(r.res.Events) != 0 || r.res.Frame != nil {
		t.Fatalf("second step %+v %v", r.res, r.err)
	}
	if st := o.Status(); st.Status != StatusRunning || st.Events != 2 {
		t.Fatalf("after the steps: %+v", st)
	}
}

func TestStepOutsideAgentRecording(t *testing.T) {
	e := newEnv(t, nil)
	a := connect(t, e, playCaps...)
	a.send(t, playActions())
	// A recording the player plays.
	o := start(t, e, Request{Kind: KindRecording})
	if rs := a.expect(t, "record_start"); rs.M["control"] != nil {
		t.Fatalf("record_start %s", rs.Raw)
	}
	a.send(t, map[string]any{"type": "started", "op": o.ID})
	waitStatus(t, o, StatusRunning)
	_, err := e.ctrl.Step(context.Background(), o, nil, 100)
	wantCode(t, err, protocol.CappyOutOfState)
	e.ctrl.Cancel(o)
	a.expect(t, "cancel")
	// A scenario.
	sc := runningScenario(t, e, a)
	_, err = e.ctrl.Step(context.Background(), sc, nil, 100)
	wantCode(t, err, protocol.CappyOutOfState)
	e.ctrl.Cancel(sc)
	a.expect(t, "cancel")
	// An agent-controlled recording not yet started, and one that ended.
	ag := start(t, e, Request{Kind: KindRecording, Control: ControlAgent})
	a.expect(t, "record_start")
	_, err = e.ctrl.Step(context.Background(), ag, nil, 100)
	wantCode(t, err, protocol.CappyOutOfState)
	e.ctrl.Cancel(ag)
	_, err = e.ctrl.Step(context.Background(), ag, nil, 100)
	wantCode(t, err, protocol.CappyOutOfState)
	// Control needs the input capability, and a recording.
	e2 := newEnv(t, nil)
	connect(t, e2, allCaps...)
	startErr(t, e2, Request{Kind: KindRecording, Control: ControlAgent}, protocol.CappyCapabilityMissing)
	startErr(t, e, Request{Kind: KindScenario, Scenario: "menu", Control: ControlAgent}, protocol.CappyInvalidParameters)
}

func TestStepTwoAtOnceBusy(t *testing.T) {
	e := newEnv(t, nil)
	a, o := agentRecording(t, e, nil)
	ch := stepAsync(e, o, nil, 1000)
	a.expect(t, "step")
	_, err := e.ctrl.Step(context.Background(), o, nil, 0)
	wantCode(t, err, protocol.CappyOperationBusy)
	a.send(t, map[string]any{"type": "stepped", "op": o.ID, "id": "s1", "t": 1000, "simT": 1000})
	if r := recvStep(t, ch); r.err != nil {
		t.Fatal(r.err)
	}
	// Free again.
	ch = stepAsync(e, o, nil, 0)
	if s := a.expect(t, "step"); s.str("id") != "s2" {
		t.Fatalf("step %s", s.Raw)
	}
	a.send(t, map[string]any{"type": "stepped", "op": o.ID, "id": "s2", "t": 1000, "simT": 1000})
	if r := recvStep(t, ch); r.err != nil {
		t.Fatal(r.err)
	}
}

func TestStepUnknownActionAndBadValue(t *testing.T) {
	e := newEnv(t, nil)
	a, o := agentRecording(t, e, nil)
	two := 2.0
	for name, in := range map[string]protocol.ActionInput{
		"unknown action":  pressed("fly", true),
		"axis2d over":     {Name: "move", X: &two, Y: &two},
		"button no state": {Name: "attack"},
	} {
		_, err := e.ctrl.Step(context.Background(), o, []protocol.ActionInput{in}, 100)
		if ce := wantCode(t, err, protocol.CappyInvalidInput); !strings.Contains(ce.Message, "actions[0]") {
			t.Errorf("%s: %v", name, ce)
		}
	}
	_, err := e.ctrl.Step(context.Background(), o, nil, 10001)
	wantCode(t, err, protocol.CappyInvalidInput)
	// The adapter's own refusal: the play goes on.
	ch := stepAsync(e, o, []protocol.ActionInput{pressed("attack", true)}, 100)
	a.expect(t, "step")
	a.send(t, map[string]any{"type": "step_refused", "op": o.ID, "id": "s1", "code": "INVALID_INPUT", "message": "attack is\u202e disabled now"})
	r := recvStep(t, ch)
	if ce := wantCode(t, r.err, protocol.CappyInvalidInput); strings.ContainsRune(ce.Message, '\u202e') {
		t.Fatalf("the game's message reached the agent unsanitized: %q", ce.Message)
	}
	if st := o.Status().Status; st != StatusRunning {
		t.Fatalf("after refusals: %s", st)
	}
	ch = stepAsync(e, o, nil, 100)
	if s := a.expect(t, "step"); s.str("id") != "s2" {
		t.Fatalf("step %s", s.Raw)
	}
	a.send(t, map[string]any{"type": "stepped", "op": o.ID, "id": "s2", "t": 100, "simT": 100})
	if r := recvStep(t, ch); r.err != nil {
		t.Fatal(r.err)
	}
}

func TestUnaskedStepped(t *testing.T) {
	for _, tc := range []struct {
		name string
		msg  func(op string) map[string]any
	}{
		{"stepped", func(op string) map[string]any {
			return map[string]any{"type": "stepped", "op": op, "id": "s1", "t": 0, "simT": 0}
		}},
		{"step_refused", func(op string) map[string]any {
			return map[string]any{"type": "step_refused", "op": op, "id": "s9", "code": "INVALID_INPUT", "message": "m"}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, nil)
			a, o := agentRecording(t, e, nil)
			a.send(t, tc.msg(o.ID))
			a.expectError(t, protocol.CappyOutOfState)
			wantOutcome(t, e, o, StatusFailed, protocol.CappyOutOfState)
		})
	}
	// The wrong id while a step is in flight.
	e := newEnv(t, nil)
	a, o := agentRecording(t, e, nil)
	ch := stepAsync(e, o, nil, 10)
	a.expect(t, "step")
	a.send(t, map[string]any{"type": "stepped", "op": o.ID, "id": "s7", "t": 10, "simT": 10})
	a.expectError(t, protocol.CappyOutOfState)
	wantOutcome(t, e, o, StatusFailed, protocol.CappyOutOfState)
	if r := recvStep(t, ch); r.err == nil {
		t.Fatal("the step succeeded on a failed operation")
	}
}

func TestStepNeverAnswered(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.stepGrace = 200 * time.Millisecond })
	a, o := agentRecording(t, e, nil)
	ch := stepAsync(e, o, nil, 100)
	a.expect(t, "step")
	r := recvStep(t, ch)
	wantCode(t, r.err, protocol.CappyAdapterUnresponsive)
	wantOutcome(t, e, o, StatusFailed, protocol.CappyAdapterUnresponsive)
	a.expect(t, "cancel") // not required by the spec; tells the adapter
}

func TestInspect(t *testing.T) {
	e := newEnv(t, nil)
	a := connect(t, e, playCaps...)
	a.auto.Store(new(func(m msg) bool {
		if m.Type != "inspect" {
			return false
		}
		switch q := m.str("query"); q {
		case "boss":
			a.send(t, map[string]any{"type": "inspect_result", "id": m.str("id"), "value": map[string]any{"hp": 550}})
		default:
			a.send(t, map[string]any{"type": "inspect_result", "id": m.str("id"), "error": map[string]any{"code": "UNKNOWN_QUERY", "message": "no " + q}})
		}
		return true
	}))
	ctx := context.Background()
	r, err := e.ctrl.Inspect(ctx, "boss")
	if err != nil || string(r.Value) != `{"hp":550}` || r.Error != nil {
		t.Fatalf("inspect boss: %+v %v", r, err)
	}
	r, err = e.ctrl.Inspect(ctx, "dragon")
	if err != nil || r.Error == nil || r.Error.Code != "UNKNOWN_QUERY" {
		t.Fatalf("inspect dragon: %+v %v", r, err)
	}
	// Without the capability.
	e2 := newEnv(t, nil)
	connect(t, e2, allCaps...)
	_, err = e2.ctrl.Inspect(ctx, "boss")
	wantCode(t, err, protocol.CappyCapabilityMissing)
}

func TestUnaskedInspectResult(t *testing.T) {
	e := newEnv(t, nil)
	a, o := agentRecording(t, e, nil)
	a.send(t, map[string]any{"type": "inspect_result", "id": "i42", "value": 1})
	a.expectError(t, protocol.CappyOutOfState)
	wantOutcome(t, e, o, StatusFailed, protocol.CappyOutOfState)
}

// An inspect_result of 10 MB: over the message limit, read no further than
// it (the socket's read limit), a violation that fails the operation; the
// inspect waiting for it ends too.
func TestInspectResultTooLarge(t *testing.T) {
	e := newEnv(t, nil)
	a, o := agentRecording(t, e, nil)
	a.auto.Store(new(func(m msg) bool {
		if m.Type != "inspect" {
			return false
		}
		go a.write(1, []byte(`{"type":"inspect_result","id":"`+m.str("id")+`","value":"`+strings.Repeat("x", 10<<20)+`"}`))
		return true
	}))
	_, err := e.ctrl.Inspect(context.Background(), "everything")
	wantCode(t, err, protocol.CappyAdapterDisconnected)
	wantOutcome(t, e, o, StatusFailed, protocol.CappyInvalidMessage)
	// Over 256 KiB but within a message: a violation too.
	e2 := newEnv(t, nil)
	a2, o2 := agentRecording(t, e2, nil)
	a2.auto.Store(new(func(m msg) bool {
		if m.Type != "inspect" {
			return false
		}
		go a2.write(1, []byte(`{"type":"inspect_result","id":"`+m.str("id")+`","value":"`+strings.Repeat("x", 300<<10)+`"}`))
		return true
	}))
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	go e2.ctrl.Inspect(ctx, "everything")
	wantOutcome(t, e2, o2, StatusFailed, protocol.CappyInvalidMessage)
}

// Inspect values reach the agent sanitized and capped: 16 KB inline, a
// larger value cut and written whole to a file under the capture
// directory; the game's error as data.
func TestServiceInspectSanitizesAndCaps(t *testing.T) {
	e := newEnv(t, nil)
	a := connect(t, e, playCaps...)
	big := strings.Repeat("golem ", 30<<10/6)
	a.auto.Store(new(func(m msg) bool {
		if m.Type != "inspect" {
			return false
		}
		var v any
		switch m.str("query") {
		case "small":
			v = map[string]any{"name": "Golem\u202eKing\u200b", "hp\u2066": 550}
		case "big":
			v = map[string]any{"lore": big, "evil": "a\u202eb"}
		case "invalid":
			a.send(t, map[string]any{"type": "inspect_result", "id": m.str("id"), "error": map[string]any{"code": "X", "message": "a bell\u0007"}})
			return true
		default:
			a.send(t, map[string]any{"type": "inspect_result", "id": m.str("id"), "error": map[string]any{"code": "NO\u202eKEY", "message": "no such key\u2066"}})
			return true
		}
		a.send(t, map[string]any{"type": "inspect_result", "id": m.str("id"), "value": v})
		return true
	}))
	s := &Service{Controller: e.ctrl, Store: e.st, Config: &CaptureConfig{}}
	ctx := context.Background()
	v, err := s.Inspect(ctx, "small")
	if err != nil || v.Truncated || v.File != "" || strings.ContainsAny(string(v.Value), "\u202e\u200b\u2066") || !strings.Contains(string(v.Value), `"hp":550`) {
		t.Fatalf("small: %+v %s %v", v, v.Value, err)
	}
	v, err = s.Inspect(ctx, "big")
	if err != nil || !v.Truncated || v.Value != nil || v.Bytes <= MaxInspectAgentBytes || len(v.Preview) > MaxInspectAgentBytes {
		t.Fatalf("big: truncated %v, %d bytes, preview %d, %v", v.Truncated, v.Bytes, len(v.Preview), err)
	}
	if !strings.HasPrefix(v.File, filepath.Join(filepath.Dir(e.frameDir), "inspect")) {
		t.Fatalf("file %s not under the capture directory", v.File)
	}
	whole, err := os.ReadFile(v.File)
	if err != nil || !strings.Contains(string(whole), big) || strings.ContainsRune(string(whole), '\u202e') {
		t.Fatalf("the file does not hold the whole value, sanitized (%d bytes): %v", len(whole), err)
	}
	v, err = s.Inspect(ctx, "nope")
	if err != nil || v.ErrorCode == "" || strings.ContainsAny(v.ErrorCode+v.ErrorMessage, "\u202e\u2066") {
		t.Fatalf("error: %+v %v", v, err)
	}
	// An answer that does not decode ends its inspect at once.
	_, err = s.Inspect(ctx, "invalid")
	wantCode(t, err, protocol.CappyInvalidMessage)
	a.expectError(t, protocol.CappyInvalidMessage)
}

// A step's first events are kept for its answer, up to MaxStepEvents and
// MaxStepEventBytes of payloads; the rest are counted, and all are stored.
func TestStepEventsCapped(t *testing.T) {
	e := newEnv(t, nil)
	a, o := agentRecording(t, e, nil)
	ch := stepAsync(e, o, nil, 1000)
	a.expect(t, "step")
	big := strings.Repeat("x", 100<<10)
	for i := range MaxStepEvents + 5 {
		ev := map[string]any{"type": "event", "op": o.ID, "t": i, "event": "TICK"}
		if i < 3 {
			ev["payload"] = map[string]any{"blob": big}
		}
		a.send(t, ev)
	}
	a.send(t, map[string]any{"type": "stepped", "op": o.ID, "id": "s1", "t": 1000, "simT": 1000})
	r := recvStep(t, ch)
	if r.err != nil {
		t.Fatal(r.err)
	}
	if n := int64(len(r.res.Events)) + r.res.EventsOmitted; n != MaxStepEvents+5 || len(r.res.Events) != 2 || r.res.Events[1].T != 1 {
		t.Fatalf("kept %d, omitted %d", len(r.res.Events), r.res.EventsOmitted)
	}
	if st := o.Status(); st.Events != MaxStepEvents+5 {
		t.Fatalf("events %d", st.Events)
	}
}

func TestInspectPreviewFits(t *testing.T) {
	for _, text := range []string{strings.Repeat(`"<&>\`, 5000), strings.Repeat("é", 9000), strings.Repeat("a", 100)} {
		p := preview([]byte(text), 8<<10)
		b, _ := json.Marshal(p)
		if len(b) > 8<<10 || !strings.HasSuffix(p, "…") || !strings.HasPrefix(text, strings.TrimSuffix(p, "…")) || !utf8.ValidString(p) {
			t.Fatalf("preview of %.20q: %d bytes encoded", text, len(b))
		}
	}
}

// TestStepPicturesAtFramesZero: frames 0 is the recording's rate, not its
// steps' pictures. An agent-controlled recording asked for frames at 0
// asks the adapter for frames (at the lowest rate the protocol has, so
// every adapter sends its step pictures as it does today), keeps each
// step's picture (stored, counted), and drops the rate's frames without a
// word; it is stored as asked at 0 fps. A scenario at 0 asks for none.
func TestStepPicturesAtFramesZero(t *testing.T) {
	e := newEnv(t, nil)
	zero := framesReq()
	zero.FPS = 0
	a, o := agentRecording(t, e, zero)
	if fr := o.FramesAsked(); fr == nil || fr.FPS != protocol.MinFrameFPS {
		t.Fatalf("asked of the adapter: %+v", fr)
	}
	img := picture(t, protocol.MimeJPEG, 64, 36, color.RGBA{10, 200, 10, 255})
	for i, ms := range []float64{0, 500} {
		ch := stepAsync(e, o, nil, ms)
		s := a.expect(t, "step")
		a.send(t, frameMsg(o.ID, ms, protocol.MimeJPEG, 64, 36, img)) // a rate frame
		step := frameMsg(o.ID, ms, protocol.MimeJPEG, 64, 36, img)
		step["reason"] = "step"
		a.send(t, step)
		a.send(t, map[string]any{"type": "stepped", "op": o.ID, "id": s.str("id"), "t": ms, "simT": ms})
		if r := recvStep(t, ch); r.err != nil || r.res.Frame == nil || r.res.Frame.Reason != "step" {
			t.Fatalf("step %d at frames 0: %+v %v", i, r.res, r.err)
		}
	}
	e.ctrl.Cancel(o)
	wantOutcome(t, e, o, StatusCancelled, protocol.CappyOperationCancelled)
	fs := storedFrames(t, e, o.ID)
	c, _ := e.st.Capture(context.Background(), o.ID)
	var req protocol.FramesRequest
	if len(fs) != 2 || fs[0].Reason != "step" || fs[1].Reason != "step" || c.FramesDropped.Total() != 0 || json.Unmarshal(c.FramesRequest, &req) != nil || req.FPS != 0 {
		t.Fatalf("stored %+v, dropped %+v, asked %s", fs, c.FramesDropped, c.FramesRequest)
	}

	// A scenario at frames 0 asks for none.
	a.expect(t, "cancel")
	r := scenarioReq()
	r.Frames = zero
	so := start(t, e, r)
	if p := a.expect(t, "prepare_scenario"); p.M["frames"] != nil || so.FramesAsked() != nil {
		t.Fatalf("a scenario at frames 0 asked for frames: %s", p.Raw)
	}
}
