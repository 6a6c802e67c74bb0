package cappy

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/crosscode/crosscode-mcp/protocol"
	"github.com/crosscode/crosscode-mcp/store"
)

// ---- handshake ----

func TestHandshakeWelcome(t *testing.T) {
	e := newEnv(t, nil)
	a := mustDial(t, e)
	if e.ctrl.Connected() != nil {
		t.Fatal("Connected before hello")
	}
	a.send(t, hello(e.ctrl.Token(), "scenarios", "replay"))
	w := a.expect(t, "welcome")
	want := map[string]any{"type": "welcome", "protocol": 1.0, "controller": map[string]any{"name": "cappy", "version": "9.9.9-test"}}
	if !reflect.DeepEqual(w.M, want) {
		t.Fatalf("welcome %s, want %s", w.Raw, mustJSON(want))
	}
	if e.ctrl.Connected() != nil {
		t.Fatal("Connected before the registry arrived")
	}
	a.send(t, registry())
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	got, err := e.ctrl.WaitAdapter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != "test-adapter" || got.Version != "0.1.0" || got.Game != "fantasy-party" || got.GameName != "Fantasy Party" || got.Build != "build-42" {
		t.Fatalf("adapter %+v", got)
	}
	if !reflect.DeepEqual(got.Capabilities, []string{"scenarios", "replay"}) {
		t.Fatalf("capabilities %v", got.Capabilities)
	}
	if len(got.Scenarios) != 3 || got.Scenarios[0].ID != "boss_intro" || got.Scenarios[0].Parameters["difficulty"].Default != 2.0 {
		t.Fatalf("scenarios %+v", got.Scenarios)
	}
}

func TestHandshakeVersionNegotiation(t *testing.T) {
	e := newEnv(t, nil)
	a := mustDial(t, e)
	h := hello(e.ctrl.Token(), "scenarios")
	h["protocol"] = map[string]any{"min": 1, "max": 3} // a newer adapter that still speaks 1
	a.send(t, h)
	if w := a.expect(t, "welcome"); w.M["protocol"] != 1.0 {
		t.Fatalf("welcome %s, want protocol 1", w.Raw)
	}
}

// Every way a handshake can go wrong gets a reject with its code, then a
// close; none of them takes the adapter slot.
func TestHandshakeRejects(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.RequiredCapabilities = []string{"replay"} })
	tok := e.ctrl.Token()
	withProto := func(min, max int) map[string]any {
		h := hello(tok, "replay")
		h["protocol"] = map[string]any{"min": min, "max": max}
		return h
	}
	cases := []struct {
		name  string
		frame func(*testing.T, *testAdapter)
		code  string
	}{
		{"wrong token", func(t *testing.T, a *testAdapter) { a.send(t, hello(tok+"x", "replay")) }, protocol.CappyUnauthenticated},
		{"token prefix", func(t *testing.T, a *testAdapter) { a.send(t, hello(tok[:len(tok)-1], "replay")) }, protocol.CappyUnauthenticated},
		{"no shared version", func(t *testing.T, a *testAdapter) { a.send(t, withProto(2, 3)) }, protocol.CappyVersionIncompatible},
		{"binary first frame", func(t *testing.T, a *testAdapter) {
			if err := a.write(websocket.MessageBinary, mustJSON(hello(tok, "replay"))); err != nil {
				t.Fatal(err)
			}
		}, protocol.CappyInvalidMessage},
		{"malformed json", func(t *testing.T, a *testAdapter) { a.sendRaw(t, `{"type":"hello","token":`) }, protocol.CappyInvalidMessage},
		{"first message not hello", func(t *testing.T, a *testAdapter) { a.send(t, registry()) }, protocol.CappyInvalidMessage},
		{"first message a pong", func(t *testing.T, a *testAdapter) { a.send(t, map[string]any{"type": "pong", "nonce": "x"}) }, protocol.CappyInvalidMessage},
		{"missing required capability", func(t *testing.T, a *testAdapter) { a.send(t, hello(tok, allCapsBut("replay")...)) }, protocol.CappyCapabilityMissing},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := mustDial(t, e)
			tc.frame(t, a)
			m, ok := a.nextOrClosed(t)
			if !ok {
				t.Fatalf("socket closed without a reject (read error: %v)", a.err)
			}
			if m.Type != "reject" || m.str("code") != tc.code || m.str("message") == "" {
				t.Fatalf("got %s, want reject %s with a message", m.Raw, tc.code)
			}
			err := a.waitClosed(t)
			if s := websocket.CloseStatus(err); s != websocket.StatusPolicyViolation {
				t.Fatalf("after reject: read error %v (status %v), want a close with StatusPolicyViolation", err, s)
			}
			if e.ctrl.Connected() != nil {
				t.Fatal("a rejected adapter is Connected")
			}
		})
	}
	// None of them kept the slot: a correct adapter gets in and works.
	a := connect(t, e, allCaps...)
	completeScenario(t, e, a)
}

func allCapsBut(c string) []string {
	var out []string
	for _, x := range allCaps {
		if x != c {
			out = append(out, x)
		}
	}
	return out
}

func TestHandshakeAcceptsUnknownFieldsAndCapabilities(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.RequiredCapabilities = []string{"scenarios"} })
	a := mustDial(t, e)
	h := hello(e.ctrl.Token(), "scenarios", "teleport_v9", "x-vendor.thing")
	h["futureField"] = map[string]any{"nested": []any{1, 2}}
	h["adapter"] = map[string]any{"name": "test-adapter", "version": "0.1.0", "engine": "godot 5"}
	a.send(t, h)
	a.expect(t, "welcome")
	a.send(t, registry())
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	got, err := e.ctrl.WaitAdapter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Capabilities, []string{"scenarios", "teleport_v9", "x-vendor.thing"}) {
		t.Fatalf("capabilities %v", got.Capabilities)
	}
	completeScenario(t, e, a)
}

// An adapter that never says hello is turned away after HelloTimeout: the
// controller rejects it (PROTOCOL_INVALID_MESSAGE) and closes the socket.
func TestHandshakeHelloTimeout(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.HelloTimeout = 200 * time.Millisecond })
	a := mustDial(t, e)
	err := a.waitClosed(t) // the socket must go away
	select {
	case m := <-a.msgs:
		if m.Type != "reject" || m.str("code") != protocol.CappyInvalidMessage {
			t.Fatalf("got %s, want reject %s", m.Raw, protocol.CappyInvalidMessage)
		}
	default:
		t.Fatalf("the controller dropped a silent adapter without a reject (read error: %v); want {type:reject, code:%s} then a close",
			err, protocol.CappyInvalidMessage)
	}
	if s := websocket.CloseStatus(err); s != websocket.StatusPolicyViolation {
		t.Errorf("read error %v, want a close with StatusPolicyViolation", err)
	}
	// The slot stays free.
	completeScenario(t, e, connect(t, e, allCaps...))
}

func TestSecondAdapterBusy(t *testing.T) {
	e := newEnv(t, nil)
	a1 := connect(t, e, allCaps...)
	o := runningScenario(t, e, a1)

	a2 := mustDial(t, e)
	a2.send(t, hello(e.ctrl.Token(), allCaps...))
	r := a2.expect(t, "reject")
	if r.str("code") != protocol.CappyOperationBusy {
		t.Fatalf("second adapter got %s, want reject OPERATION_BUSY", r.Raw)
	}
	if s := websocket.CloseStatus(a2.waitClosed(t)); s != websocket.StatusPolicyViolation {
		t.Fatalf("second adapter: close status %v", s)
	}

	// The first keeps working: its running operation finishes, and another runs.
	if a1.isClosed() {
		t.Fatal("the first adapter was dropped")
	}
	a1.send(t, map[string]any{"type": "event", "op": o.ID, "t": 5, "event": "STILL_HERE"})
	a1.send(t, map[string]any{"type": "completed", "op": o.ID})
	if out := wantOutcome(t, e, o, StatusCompleted, ""); out.Events != 1 {
		t.Fatalf("events %d", out.Events)
	}
	if got := e.ctrl.Connected(); got == nil || got.Name != "test-adapter" {
		t.Fatalf("Connected = %+v", got)
	}
	completeScenario(t, e, a1)
}

// The registry sent right behind hello, before the adapter read welcome,
// is not lost.
func TestRegistryRightAfterHello(t *testing.T) {
	e := newEnv(t, nil)
	a := mustDial(t, e)
	a.send(t, hello(e.ctrl.Token(), allCaps...))
	a.send(t, registry())
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	got, err := e.ctrl.WaitAdapter(ctx)
	if err != nil {
		t.Fatalf("WaitAdapter: %v (the registry sent right after hello was lost)", err)
	}
	if len(got.Scenarios) != 3 {
		t.Fatalf("scenarios %+v", got.Scenarios)
	}
	a.expect(t, "welcome")
	completeScenario(t, e, a)
}

// A registry sent again replaces the old one.
func TestRegistryUpdate(t *testing.T) {
	e := newEnv(t, nil)
	a := connect(t, e, allCaps...)
	startErr(t, e, Request{Kind: KindScenario, Scenario: "new_one"}, protocol.CappyScenarioNotFound)
	a.send(t, map[string]any{"type": "scenarios", "scenarios": []any{map[string]any{"id": "new_one"}}})
	eventually(t, "the new registry is in", func() bool {
		c := e.ctrl.Connected()
		return c != nil && len(c.Scenarios) == 1 && c.Scenarios[0].ID == "new_one"
	})
	o := start(t, e, Request{Kind: KindScenario, Scenario: "new_one"})
	if p := a.expect(t, "prepare_scenario"); p.str("scenario") != "new_one" {
		t.Fatalf("prepare %s", p.Raw)
	}
	e.ctrl.Cancel(o)
	startErr(t, e, scenarioReq(), protocol.CappyScenarioNotFound)
}

// The registry may arrive again at any time, also while Start reads it.
// (Under -race this catches Start reading adapterConn.scenarios without
// the controller's lock.)
func TestRegistryResendDuringStart(t *testing.T) {
	e := newEnv(t, nil)
	a := connect(t, e, allCaps...)
	stop := make(chan struct{})
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		b := mustJSON(registry())
		for {
			select {
			case <-stop:
				return
			default:
			}
			if a.write(websocket.MessageText, b) != nil {
				return
			}
		}
	}()
	for i := 0; i < 50; i++ {
		o, err := e.ctrl.Start(context.Background(), scenarioReq())
		if err != nil {
			t.Fatalf("Start: %v", err)
		}
		e.ctrl.Cancel(o)
		waitDone(t, o)
	}
	close(stop)
	<-sent
}

// ---- transport security ----

func TestNewRefusesNonLoopback(t *testing.T) {
	st, err := store.Open(context.Background(), t.TempDir()+"/c.db", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, addr := range []string{"0.0.0.0:0", "[::]:0", ":0", "192.0.2.7:0", "10.0.0.1:47100", "example.com:0", "127.0.0.1.example.com:0"} {
		c, err := New(Config{Listen: addr, Store: st, ReplayDir: t.TempDir()})
		if err == nil {
			c.Close()
			t.Errorf("New(Listen %q) succeeded; it must refuse non-loopback addresses", addr)
			continue
		}
		if !strings.Contains(err.Error(), "loopback") || !strings.Contains(err.Error(), addr) {
			t.Errorf("New(Listen %q): %q; want a clear error naming the address and loopback", addr, err)
		}
	}
	for _, addr := range []string{"127.0.0.1:0", "localhost:0", "127.0.0.2:0"} {
		c, err := New(Config{Listen: addr, Store: st, ReplayDir: t.TempDir()})
		if err != nil {
			if strings.Contains(err.Error(), "loopback") {
				t.Errorf("New(Listen %q) refused a loopback address: %v", addr, err)
			}
			continue // e.g. 127.0.0.2 not configured here
		}
		if !strings.HasPrefix(c.Endpoint(), "ws://127.") && !strings.HasPrefix(c.Endpoint(), "ws://[::1]") {
			t.Errorf("New(Listen %q): endpoint %s", addr, c.Endpoint())
		}
		c.Close()
	}
}

func TestUpgradeHostMustBeLoopback(t *testing.T) {
	e := newEnv(t, nil)
	port := e.ctrl.Endpoint()[strings.LastIndex(e.ctrl.Endpoint(), ":")+1:]
	for _, host := range []string{"evil.example.com:1234", "evil.example.com", "127.0.0.1.nip.io:" + port, "localhost.evil.example:" + port, "192.0.2.7:" + port} {
		_, resp, err := dialAdapter(t, e, &websocket.DialOptions{Host: host})
		if err == nil {
			t.Fatalf("upgrade with Host %q accepted", host)
		}
		if resp == nil || resp.StatusCode != http.StatusForbidden {
			t.Fatalf("upgrade with Host %q: %v (response %v), want HTTP 403", host, err, resp)
		}
	}
	for _, host := range []string{"localhost:" + port, "LOCALHOST:" + port, "127.0.0.1:" + port, "[::1]:" + port} {
		a, _, err := dialAdapter(t, e, &websocket.DialOptions{Host: host})
		if err != nil {
			t.Fatalf("upgrade with loopback Host %q: %v", host, err)
		}
		a.send(t, hello(e.ctrl.Token(), allCaps...))
		a.expect(t, "welcome")
		a.send(t, registry())
		eventually(t, "adapter connected", func() bool { return e.ctrl.Connected() != nil })
		disconnect(t, e, a)
	}
}

func TestUpgradeOrigin(t *testing.T) {
	e := newEnv(t, func(c *Config) {
		c.AllowedOrigins = []string{"http://tool.local:3000", "webview.example"}
	})
	for _, origin := range []string{"http://evil.example.com", "http://tool.local:3001", "https://tool.local", "null", "http://webview.example.evil.com"} {
		_, resp, err := dialAdapter(t, e, &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {origin}}})
		if err == nil {
			t.Fatalf("upgrade with Origin %q accepted", origin)
		}
		if resp == nil || resp.StatusCode != http.StatusForbidden {
			t.Fatalf("upgrade with Origin %q: %v (response %v), want HTTP 403", origin, err, resp)
		}
	}
	for _, origin := range []string{"http://tool.local:3000", "HTTP://TOOL.LOCAL:3000", "https://webview.example", ""} {
		var opts *websocket.DialOptions
		if origin != "" {
			opts = &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {origin}}}
		}
		a, _, err := dialAdapter(t, e, opts)
		if err != nil {
			t.Fatalf("upgrade with allowed Origin %q: %v", origin, err)
		}
		a.send(t, hello(e.ctrl.Token(), allCaps...))
		a.expect(t, "welcome")
		a.send(t, registry())
		eventually(t, "adapter connected", func() bool { return e.ctrl.Connected() != nil })
		if origin == "" {
			completeScenario(t, e, a)
		}
		disconnect(t, e, a)
	}
}

// ---- scenario lifecycle ----

func TestScenarioLifecycle(t *testing.T) {
	e := newEnv(t, nil)
	a := connect(t, e, allCaps...)
	pres := protocol.Presentation{"timeScale": 0.5, "camera": "drone", "vendorKnob": "x"}
	before := time.Now()
	o := start(t, e, Request{Kind: KindScenario, Scenario: "boss_intro", Parameters: map[string]any{"seed": 7.0, "speed": 1.5}, Presentation: pres})
	if o.Status().Status != StatusPreparing || e.ctrl.Active() != o {
		t.Fatalf("after Start: %s, active %v", o.Status().Status, e.ctrl.Active())
	}
	wantParams := map[string]any{"seed": 7.0, "speed": 1.5, "difficulty": 2.0, "mode": "story", "loud": false}
	p := a.expect(t, "prepare_scenario")
	wantPrep := map[string]any{"type": "prepare_scenario", "op": o.ID, "scenario": "boss_intro", "parameters": wantParams,
		"presentation": map[string]any{"timeScale": 0.5, "camera": "drone", "vendorKnob": "x"}}
	if !reflect.DeepEqual(p.M, wantPrep) {
		t.Fatalf("prepare_scenario %s\nwant %s", p.Raw, mustJSON(wantPrep))
	}
	if !reflect.DeepEqual(o.Parameters, wantParams) {
		t.Fatalf("Operation.Parameters %v", o.Parameters)
	}

	a.send(t, map[string]any{"type": "ready", "op": o.ID})
	if s := a.expect(t, "start"); !reflect.DeepEqual(s.M, map[string]any{"type": "start", "op": o.ID}) {
		t.Fatalf("start %s", s.Raw)
	}
	a.send(t, map[string]any{"type": "started", "op": o.ID})
	waitStatus(t, o, StatusRunning)

	type ev struct {
		t       float64
		name    string
		dur     *float64
		payload string
	}
	d := 120.0
	evs := []ev{{0, "SPAWN", nil, ""}, {12.5, "SPELL_CAST", &d, `{"spell":"fireball"}`}, {12.5, "HIT", nil, `{"dmg":3,"crit":true}`}, {1000.25, "BOSS_DOWN", nil, ""}}
	for _, x := range evs {
		m := map[string]any{"type": "event", "op": o.ID, "t": x.t, "event": x.name}
		if x.dur != nil {
			m["durationMs"] = *x.dur
		}
		if x.payload != "" {
			m["payload"] = json.RawMessage(x.payload)
		}
		a.send(t, m)
	}
	a.send(t, map[string]any{"type": "completed", "op": o.ID, "summary": map[string]any{"ok": true}})
	out := wantOutcome(t, e, o, StatusCompleted, "")
	after := time.Now()
	if out.Events != 4 || out.LastT != 1000.25 || out.Kind != KindScenario || out.Scenario != "boss_intro" || out.TimeScale != 0.5 {
		t.Fatalf("outcome %+v", out)
	}
	if e.ctrl.Active() != nil {
		t.Fatal("still active after completed")
	}

	got, err := e.st.Events(context.Background(), store.EventQuery{Op: o.ID})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(evs) {
		t.Fatalf("stored %d events, want %d", len(got), len(evs))
	}
	for i, x := range evs {
		g := got[i]
		if g.Seq != int64(i+1) || g.T != x.t || g.Event != x.name {
			t.Fatalf("event %d: seq %d t %g %s, want seq %d t %g %s", i, g.Seq, g.T, g.Event, i+1, x.t, x.name)
		}
		if (g.DurationMs == nil) != (x.dur == nil) || (x.dur != nil && *g.DurationMs != *x.dur) {
			t.Fatalf("event %d: durationMs %v", i, g.DurationMs)
		}
		if x.payload != "" && !jsonEqual(g.Payload, x.payload) {
			t.Fatalf("event %d: payload %s, want %s", i, g.Payload, x.payload)
		}
		if x.payload == "" && len(g.Payload) != 0 && string(g.Payload) != "null" {
			t.Fatalf("event %d: payload %s, want none", i, g.Payload)
		}
		if g.ReceivedAt.Before(before.Add(-time.Millisecond)) || g.ReceivedAt.After(after.Add(time.Millisecond)) {
			t.Fatalf("event %d: receivedAt %v", i, g.ReceivedAt)
		}
	}

	c, err := e.st.Capture(context.Background(), o.ID)
	if err != nil {
		t.Fatal(err)
	}
	if c.Kind != KindScenario || c.Scenario != "boss_intro" || c.Game != "fantasy-party" || c.Adapter != "test-adapter 0.1.0" || c.Build != "build-42" {
		t.Fatalf("capture %+v", c)
	}
	if c.Events != 4 || c.LastT != 1000.25 {
		t.Fatalf("capture counters: events %d lastT %g", c.Events, c.LastT)
	}
	if c.StartedAt == nil || c.EndedAt == nil || c.StartedAt.Before(c.CreatedAt.Add(-time.Millisecond)) || c.EndedAt.Before(*c.StartedAt) {
		t.Fatalf("capture times created %v started %v ended %v", c.CreatedAt, c.StartedAt, c.EndedAt)
	}
	if !jsonEqual(c.Parameters, string(mustJSON(wantParams))) {
		t.Fatalf("capture parameters %s", c.Parameters)
	}
	if !jsonEqual(c.Presentation, `{"timeScale":0.5,"camera":"drone","vendorKnob":"x"}`) {
		t.Fatalf("capture presentation %s", c.Presentation)
	}
}

func jsonEqual(a json.RawMessage, b string) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// A scenario without parameters or presentation sends {} parameters and no
// presentation.
func TestScenarioWithoutParameters(t *testing.T) {
	e := newEnv(t, nil)
	a := connect(t, e, allCaps...)
	o := start(t, e, Request{Kind: KindScenario, Scenario: "menu"})
	p := a.expect(t, "prepare_scenario")
	if _, has := p.M["presentation"]; has {
		t.Fatalf("prepare_scenario carries a presentation: %s", p.Raw)
	}
	if params, ok := p.M["parameters"].(map[string]any); !ok || len(params) != 0 {
		t.Fatalf("prepare_scenario parameters: %s", p.Raw)
	}
	a.send(t, map[string]any{"type": "ready", "op": o.ID})
	a.expect(t, "start")
	a.send(t, map[string]any{"type": "started", "op": o.ID})
	a.send(t, map[string]any{"type": "completed", "op": o.ID})
	if out := wantOutcome(t, e, o, StatusCompleted, ""); out.Events != 0 {
		t.Fatalf("events %d", out.Events)
	}
}

// ---- validation before sending ----

func TestStartValidation(t *testing.T) {
	e := newEnv(t, nil)
	a := connect(t, e, "scenarios", "freeform_recording") // no time_scale, alternate_cameras, replay
	withParams := func(p map[string]any) Request {
		return Request{Kind: KindScenario, Scenario: "boss_intro", Parameters: p}
	}
	cases := []struct {
		name string
		req  Request
		code string
		msg  []string // the error message mentions these
	}{
		{"unknown scenario", Request{Kind: KindScenario, Scenario: "nope"}, protocol.CappyScenarioNotFound, []string{"nope", "boss_intro", "menu", "flyby"}},
		{"wrong type", withParams(map[string]any{"seed": 1.0, "difficulty": "hard"}), protocol.CappyInvalidParameters, []string{"difficulty"}},
		{"string for boolean", withParams(map[string]any{"seed": 1.0, "loud": "yes"}), protocol.CappyInvalidParameters, []string{"loud"}},
		{"not an integer", withParams(map[string]any{"seed": 1.5}), protocol.CappyInvalidParameters, []string{"seed"}},
		{"not in enum", withParams(map[string]any{"seed": 1.0, "mode": "insane"}), protocol.CappyInvalidParameters, []string{"mode"}},
		{"below minimum", withParams(map[string]any{"seed": 1.0, "difficulty": 0.0}), protocol.CappyInvalidParameters, []string{"difficulty"}},
		{"above maximum", withParams(map[string]any{"seed": 1.0, "difficulty": 4.0}), protocol.CappyInvalidParameters, []string{"difficulty"}},
		{"number above maximum", withParams(map[string]any{"seed": 1.0, "speed": 2.01}), protocol.CappyInvalidParameters, []string{"speed"}},
		{"missing required", withParams(map[string]any{"difficulty": 1.0}), protocol.CappyInvalidParameters, []string{"seed"}},
		{"unknown parameter", withParams(map[string]any{"seed": 1.0, "colour": "red"}), protocol.CappyInvalidParameters, []string{"colour"}},
		{"timeScale without capability", Request{Kind: KindScenario, Scenario: "menu", Presentation: protocol.Presentation{"timeScale": 0.5}}, protocol.CappyCapabilityMissing, []string{"time_scale"}},
		{"camera without capability", Request{Kind: KindScenario, Scenario: "menu", Presentation: protocol.Presentation{"camera": "drone"}}, protocol.CappyCapabilityMissing, []string{"alternate_cameras"}},
		{"scenario needs capability", Request{Kind: KindScenario, Scenario: "flyby"}, protocol.CappyCapabilityMissing, []string{"alternate_cameras"}},
		{"replay without capability", Request{Kind: KindReplay, Replay: &store.Replay{SHA256: strings.Repeat("a", 64), Bytes: 1}}, protocol.CappyReplayUnsupported, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ce := startErr(t, e, tc.req, tc.code)
			for _, s := range tc.msg {
				if !strings.Contains(ce.Message, s) {
					t.Errorf("message %q does not mention %q", ce.Message, s)
				}
			}
			if e.ctrl.Active() != nil {
				t.Fatal("a refused Start left an active operation")
			}
		})
	}
	// Nothing reached the adapter or the store: the first message it gets
	// is the next valid operation's prepare_scenario.
	o := start(t, e, scenarioReq())
	if p := a.expect(t, "prepare_scenario"); p.str("op") != o.ID {
		t.Fatalf("first message to the adapter %s; the refused Starts sent something", p.Raw)
	}
	caps, err := e.st.Captures(context.Background(), "", time.Time{}, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(caps) != 1 || caps[0].Op != o.ID {
		t.Fatalf("refused Starts recorded captures: %d", len(caps))
	}
}

func TestStartPresentationRange(t *testing.T) {
	e := newEnv(t, nil)
	a := connect(t, e, allCaps...)
	for _, pres := range []protocol.Presentation{{"timeScale": 0.05}, {"timeScale": 4.5}, {"timeScale": 0.0}, {"timeScale": "fast"}, {"camera": ""}, {"camera": 3.0}} {
		startErr(t, e, Request{Kind: KindScenario, Scenario: "menu", Presentation: pres}, protocol.CappyPresentationRejected)
	}
	for _, ts := range []float64{0.1, 4} { // the bounds are inside
		o := start(t, e, Request{Kind: KindScenario, Scenario: "menu", Presentation: protocol.Presentation{"timeScale": ts}})
		if p := a.expect(t, "prepare_scenario"); p.str("op") != o.ID || p.M["presentation"].(map[string]any)["timeScale"] != ts {
			t.Fatalf("prepare %s", p.Raw)
		}
		e.ctrl.Cancel(o)
		a.expect(t, "cancel")
		waitDone(t, o)
	}
}

func TestStartBusy(t *testing.T) {
	e := newEnv(t, nil)
	a := connect(t, e, allCaps...)
	o := start(t, e, scenarioReq())
	a.expect(t, "prepare_scenario")
	ce := startErr(t, e, Request{Kind: KindScenario, Scenario: "menu"}, protocol.CappyOperationBusy)
	if !strings.Contains(ce.Message, o.ID) {
		t.Errorf("busy message %q does not name %s", ce.Message, o.ID)
	}
	startErr(t, e, Request{Kind: KindRecording}, protocol.CappyOperationBusy)
	if e.ctrl.Active() != o || o.Status().Status != StatusPreparing {
		t.Fatal("the refused Start disturbed the running operation")
	}
	// The running one is unaffected and finishes normally.
	a.send(t, map[string]any{"type": "ready", "op": o.ID})
	a.expect(t, "start")
	a.send(t, map[string]any{"type": "started", "op": o.ID})
	a.send(t, map[string]any{"type": "completed", "op": o.ID})
	wantOutcome(t, e, o, StatusCompleted, "")
}

func TestStartNoAdapter(t *testing.T) {
	e := newEnv(t, nil)
	startErr(t, e, scenarioReq(), protocol.CappyAdapterDisconnected)
	// Shook hands but no registry yet: still not usable.
	a := mustDial(t, e)
	a.send(t, hello(e.ctrl.Token(), allCaps...))
	a.expect(t, "welcome")
	startErr(t, e, scenarioReq(), protocol.CappyAdapterDisconnected)
}

// ---- state machine misbehaviour ----

// Each misbehaviour fails the active operation with its code and tells the
// adapter with {type:error}.
func TestStateMachineViolations(t *testing.T) {
	type step func(t *testing.T, a *testAdapter, op string)
	send := func(v map[string]any) step {
		return func(t *testing.T, a *testAdapter, op string) {
			if v["op"] == "$op" {
				v["op"] = op
			}
			a.send(t, v)
		}
	}
	ready := func(t *testing.T, a *testAdapter, op string) {
		a.send(t, map[string]any{"type": "ready", "op": op})
		a.expect(t, "start")
	}
	started := func(t *testing.T, a *testAdapter, op string) {
		a.send(t, map[string]any{"type": "started", "op": op})
	}
	ev := func(tt float64) step {
		return func(t *testing.T, a *testAdapter, op string) {
			a.send(t, map[string]any{"type": "event", "op": op, "t": tt, "event": "E"})
		}
	}
	raw := func(s string) step { return func(t *testing.T, a *testAdapter, op string) { a.sendRaw(t, s) } }
	// rawOp sends a raw frame with the operation's ID put in for %[1]s: the
	// shape of the decoder's fast path for events.
	rawOp := func(format string) step {
		return func(t *testing.T, a *testAdapter, op string) { a.sendRaw(t, fmt.Sprintf(format, op)) }
	}
	cases := []struct {
		name  string
		steps []step
		code  string
	}{
		{"completed while preparing", []step{send(map[string]any{"type": "completed", "op": "$op"})}, protocol.CappyOutOfState},
		{"completed after ready, before started", []step{ready, send(map[string]any{"type": "completed", "op": "$op"})}, protocol.CappyOutOfState},
		{"event before started", []step{ready, ev(1)}, protocol.CappyOutOfState},
		{"event while preparing", []step{ev(1)}, protocol.CappyOutOfState},
		{"started before ready", []step{started}, protocol.CappyOutOfState},
		{"ready twice", []step{ready, send(map[string]any{"type": "ready", "op": "$op"})}, protocol.CappyOutOfState},
		{"ready while running", []step{ready, started, send(map[string]any{"type": "ready", "op": "$op"})}, protocol.CappyOutOfState},
		{"started twice", []step{ready, started, started}, protocol.CappyOutOfState},
		{"unknown op", []step{ready, started, send(map[string]any{"type": "event", "op": "op_someoneelse", "t": 1, "event": "E"})}, protocol.CappyOutOfState},
		{"unknown op while preparing", []step{send(map[string]any{"type": "ready", "op": "op_someoneelse"})}, protocol.CappyOutOfState},
		{"a second hello", []step{ready, started, func(t *testing.T, a *testAdapter, op string) { a.send(t, hello("whatever", allCaps...)) }}, protocol.CappyOutOfState},
		{"t going backwards", []step{ready, started, ev(100), ev(100), ev(99.5)}, protocol.CappyInvalidMessage},
		{"negative t", []step{ready, started, ev(-1)}, protocol.CappyInvalidMessage},
		{"malformed json", []step{ready, started, raw(`{"type":"event","op":`)}, protocol.CappyInvalidMessage},
		{"not json at all", []step{ready, started, raw(`hello?`)}, protocol.CappyInvalidMessage},
		{"fast-path event with broken payload", []step{ready, started, rawOp(`{"type":"event","op":"%s","t":1,"event":"E","payload":{"a":}}`)}, protocol.CappyInvalidMessage},
		{"fast-path event with trailing data", []step{ready, started, rawOp(`{"type":"event","op":"%s","t":1,"event":"E","payload":{"a":1}} {"b":2}`)}, protocol.CappyInvalidMessage},
		{"fast-path event with empty name", []step{ready, started, rawOp(`{"type":"event","op":"%s","t":1,"event":""}`)}, protocol.CappyInvalidMessage},
		{"fast-path event with huge t", []step{ready, started, rawOp(`{"type":"event","op":"%s","t":1e999,"event":"E"}`)}, protocol.CappyInvalidMessage},
		{"unknown field", []step{ready, started, func(t *testing.T, a *testAdapter, op string) {
			a.send(t, map[string]any{"type": "event", "op": op, "t": 1, "event": "E", "extra": 1})
		}}, protocol.CappyInvalidMessage},
		{"unknown type", []step{ready, started, send(map[string]any{"type": "teleport", "op": "$op"})}, protocol.CappyInvalidMessage},
		{"payload not an object", []step{ready, started, func(t *testing.T, a *testAdapter, op string) {
			a.send(t, map[string]any{"type": "event", "op": op, "t": 1, "event": "E", "payload": []any{1}})
		}}, protocol.CappyInvalidMessage},
		{"binary frame", []step{ready, started, func(t *testing.T, a *testAdapter, op string) {
			if err := a.write(websocket.MessageBinary, mustJSON(map[string]any{"type": "event", "op": op, "t": 1, "event": "E"})); err != nil {
				t.Fatal(err)
			}
		}}, protocol.CappyInvalidMessage},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, nil)
			a := connect(t, e, allCaps...)
			o := start(t, e, scenarioReq())
			a.expect(t, "prepare_scenario")
			for _, s := range tc.steps {
				s(t, a, o.ID)
			}
			m := a.expectError(t, tc.code)
			if m.str("message") == "" {
				t.Errorf("error without a message: %s", m.Raw)
			}
			// The error names the operation it failed, whatever the
			// offending message named (nothing, or another op): an adapter
			// stops working on the operation an error names.
			if m.str("op") != o.ID {
				t.Errorf("error %s names op %q, want the failed operation %q", m.Raw, m.str("op"), o.ID)
			}
			out := wantOutcome(t, e, o, StatusFailed, tc.code)
			if out.Message == "" {
				t.Error("failed without a message")
			}
			if e.ctrl.Active() != nil {
				t.Fatal("still active")
			}
			// The adapter stays connected and the next operation runs.
			completeScenario(t, e, a)
		})
	}
}

// completed before started can never count as success, whatever follows.
func TestCompletedBeforeStartedNeverSucceeds(t *testing.T) {
	e := newEnv(t, nil)
	a := connect(t, e, allCaps...)
	o := start(t, e, Request{Kind: KindRecording})
	a.expect(t, "record_start")
	a.send(t, map[string]any{"type": "completed", "op": o.ID, "replay": inlineReplay([]byte("r"))})
	a.send(t, map[string]any{"type": "started", "op": o.ID})
	a.send(t, map[string]any{"type": "completed", "op": o.ID, "replay": inlineReplay([]byte("r"))})
	wantOutcome(t, e, o, StatusFailed, protocol.CappyOutOfState)
	a.expectError(t, protocol.CappyOutOfState)
}

func TestOversizedMessage(t *testing.T) {
	e := newEnv(t, nil)
	a := connect(t, e, allCaps...)
	o := runningScenario(t, e, a)
	big := map[string]any{"type": "event", "op": o.ID, "t": 1, "event": "BIG", "payload": map[string]any{"blob": strings.Repeat("x", protocol.CappyMaxMessageBytes)}}
	go a.write(websocket.MessageText, mustJSON(big)) // may fail once the controller hangs up
	wantOutcome(t, e, o, StatusFailed, protocol.CappyInvalidMessage)
	err := a.waitClosed(t)
	t.Logf("adapter read error after the oversized message: %v", err)
	eventually(t, "the controller drops the adapter", func() bool { return e.ctrl.Connected() == nil })
	// A message just under the limit is fine.
	e2 := newEnv(t, nil)
	a2 := connect(t, e2, allCaps...)
	o2 := runningScenario(t, e2, a2)
	ok := map[string]any{"type": "event", "op": o2.ID, "t": 1, "event": "BIG", "payload": map[string]any{"blob": ""}}
	ok["payload"].(map[string]any)["blob"] = strings.Repeat("x", protocol.CappyMaxMessageBytes-len(mustJSON(ok)))
	if n := len(mustJSON(ok)); n != protocol.CappyMaxMessageBytes {
		t.Fatalf("built %d bytes", n)
	}
	a2.send(t, ok)
	a2.send(t, map[string]any{"type": "completed", "op": o2.ID})
	if out := wantOutcome(t, e2, o2, StatusCompleted, ""); out.Events != 1 {
		t.Fatalf("events %d", out.Events)
	}
}

func TestAdapterFailed(t *testing.T) {
	for _, state := range []string{"preparing", "running"} {
		t.Run(state, func(t *testing.T) {
			e := newEnv(t, nil)
			a := connect(t, e, allCaps...)
			var o *Operation
			if state == "running" {
				o = runningScenario(t, e, a)
				a.send(t, map[string]any{"type": "event", "op": o.ID, "t": 3, "event": "E"})
			} else {
				o = start(t, e, Request{Kind: KindScenario, Scenario: "flyby", Presentation: protocol.Presentation{"camera": "nope"}})
				a.expect(t, "prepare_scenario")
			}
			a.send(t, map[string]any{"type": "failed", "op": o.ID, "code": "UNKNOWN_CAMERA", "message": "no camera named nope"})
			out := wantOutcome(t, e, o, StatusFailed, "UNKNOWN_CAMERA")
			if out.Message != "no camera named nope" {
				t.Fatalf("message %q", out.Message)
			}
			c, _ := e.st.Capture(context.Background(), o.ID)
			if c.Message != "no camera named nope" {
				t.Fatalf("stored message %q", c.Message)
			}
			if state == "running" && (out.Events != 1 || c.Events != 1) {
				t.Fatalf("events %d / stored %d", out.Events, c.Events)
			}
			completeScenario(t, e, a)
		})
	}
}

// ---- liveness ----

func TestPingPongKeepsAdapter(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.PingEvery = 50 * time.Millisecond; c.PongTimeout = 300 * time.Millisecond })
	a := connect(t, e, allCaps...)
	// Well past several PongTimeouts, answering every ping.
	eventually(t, "20 pings arrive", func() bool { return a.pings.Load() >= 20 })
	if a.isClosed() || e.ctrl.Connected() == nil {
		t.Fatalf("an adapter that answers pings was dropped (%v)", a.err)
	}
	completeScenario(t, e, a)
}

// Pings carry a nonce each; pongs echo it.
func TestPingNonces(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.PingEvery = 20 * time.Millisecond })
	a := connect(t, e, allCaps...)
	eventually(t, "5 pings arrive", func() bool { return a.pings.Load() >= 5 })
	a.mu.Lock()
	nonces := append([]string(nil), a.nonces...)
	a.mu.Unlock()
	seen := map[string]bool{}
	for _, n := range nonces {
		if n == "" || seen[n] {
			t.Fatalf("ping nonces %q: want non-empty and distinct", nonces)
		}
		seen[n] = true
	}
}

// A pong proves liveness only if it echoes a recent ping: an adapter that
// answers with a nonce no ping carried is dropped as unresponsive.
func TestPongMustEchoARecentPing(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.PingEvery = 30 * time.Millisecond; c.PongTimeout = 200 * time.Millisecond })
	a := connect(t, e, allCaps...)
	o := runningScenario(t, e, a)
	a.badPong.Store(true)
	wantOutcome(t, e, o, StatusFailed, protocol.CappyAdapterUnresponsive)
	a.waitClosed(t)
	if a.pongs.Load() == 0 {
		t.Fatal("the adapter sent no pongs: the test proves nothing")
	}
}

func TestPongWindow(t *testing.T) {
	a := &adapterConn{}
	if a.echoesRecentPing("p1") {
		t.Fatal("a pong before any ping counted")
	}
	a.pinged.Store(20)
	for nonce, want := range map[string]bool{
		"p20": true, "p13": true, "p12": false, "p21": false, "p0": false, "p-1": false,
		"20": false, "p020": false, "p+20": false, "": false, "px": false, "p20 ": false,
	} {
		if got := a.echoesRecentPing(nonce); got != want {
			t.Errorf("echoesRecentPing(%q) = %v, want %v", nonce, got, want)
		}
	}
}

func TestUnresponsiveAdapter(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.PingEvery = 50 * time.Millisecond; c.PongTimeout = 300 * time.Millisecond })
	a := connect(t, e, allCaps...)
	o := runningScenario(t, e, a)
	a.send(t, map[string]any{"type": "event", "op": o.ID, "t": 1, "event": "E"})
	a.noPong.Store(true)
	out := wantOutcome(t, e, o, StatusFailed, protocol.CappyAdapterUnresponsive)
	if out.Events != 1 {
		t.Fatalf("events %d", out.Events)
	}
	a.waitClosed(t)
	eventually(t, "the controller drops the adapter", func() bool { return e.ctrl.Connected() == nil })
	// A fresh adapter can connect and run.
	a2 := connect(t, e, allCaps...)
	completeScenario(t, e, a2)
}

// Without an operation, an adapter that stops answering is dropped too.
func TestUnresponsiveIdleAdapter(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.PingEvery = 50 * time.Millisecond; c.PongTimeout = 300 * time.Millisecond })
	a := connect(t, e, allCaps...)
	a.noPong.Store(true)
	a.waitClosed(t)
	eventually(t, "the controller drops the adapter", func() bool { return e.ctrl.Connected() == nil })
}

func TestDisconnectMidOperation(t *testing.T) {
	e := newEnv(t, nil)
	a := connect(t, e, allCaps...)
	o := runningScenario(t, e, a)
	a.send(t, map[string]any{"type": "event", "op": o.ID, "t": 1, "event": "E"})
	a.ws.CloseNow()
	out := wantOutcome(t, e, o, StatusFailed, protocol.CappyAdapterDisconnected)
	if out.Events != 1 {
		t.Fatalf("events %d", out.Events)
	}
	evs, err := e.st.Events(context.Background(), store.EventQuery{Op: o.ID})
	if err != nil || len(evs) != 1 {
		t.Fatalf("stored events %v %v", evs, err)
	}
	eventually(t, "the controller forgets the adapter", func() bool { return e.ctrl.Connected() == nil })
	startErr(t, e, scenarioReq(), protocol.CappyAdapterDisconnected)

	// A new adapter can connect and run; WaitAdapter waits for it.
	got := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		_, err := e.ctrl.WaitAdapter(ctx)
		got <- err
	}()
	a2 := connect(t, e, allCaps...)
	if err := <-got; err != nil {
		t.Fatalf("WaitAdapter: %v", err)
	}
	completeScenario(t, e, a2)
}

// A graceful close (close frame) mid-operation is a disconnect too.
func TestCloseFrameMidOperation(t *testing.T) {
	e := newEnv(t, nil)
	a := connect(t, e, allCaps...)
	o := start(t, e, Request{Kind: KindRecording})
	a.expect(t, "record_start")
	go a.ws.Close(websocket.StatusNormalClosure, "bye")
	wantOutcome(t, e, o, StatusFailed, protocol.CappyAdapterDisconnected)
}

// ---- stop, cancel, timeout ----

func TestRecordingStop(t *testing.T) {
	e := newEnv(t, nil)
	a := connect(t, e, allCaps...)
	o := start(t, e, Request{Kind: KindRecording})
	if r := a.expect(t, "record_start"); !reflect.DeepEqual(r.M, map[string]any{"type": "record_start", "op": o.ID}) {
		t.Fatalf("record_start %s", r.Raw)
	}
	if err := e.ctrl.Stop(context.Background(), o); err == nil {
		t.Fatal("Stop before started accepted")
	}
	a.send(t, map[string]any{"type": "started", "op": o.ID})
	waitStatus(t, o, StatusRunning)
	a.send(t, map[string]any{"type": "event", "op": o.ID, "t": 10, "event": "JUMP"})
	if err := e.ctrl.Stop(context.Background(), o); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if s := a.expect(t, "stop"); !reflect.DeepEqual(s.M, map[string]any{"type": "stop", "op": o.ID}) {
		t.Fatalf("stop %s", s.Raw)
	}
	if st := o.Status().Status; st != StatusStopping {
		t.Fatalf("after Stop: %s", st)
	}
	if err := e.ctrl.Stop(context.Background(), o); err == nil {
		t.Fatal("a second Stop accepted")
	}
	// Events still count while stopping.
	a.send(t, map[string]any{"type": "event", "op": o.ID, "t": 20, "event": "LAND"})
	data := []byte("recorded inputs: jump, land")
	rp := inlineReplay(data)
	rp["format"] = "test-inputs/1"
	a.send(t, map[string]any{"type": "completed", "op": o.ID, "replay": rp})
	out := wantOutcome(t, e, o, StatusCompleted, "")
	if out.Events != 2 || out.Replay == nil || out.Replay.SHA256 != sha(data) || out.Replay.Bytes != int64(len(data)) || out.Replay.Format != "test-inputs/1" {
		t.Fatalf("outcome %+v replay %+v", out, out.Replay)
	}
	c, _ := e.st.Capture(context.Background(), o.ID)
	if c.ReplaySHA != sha(data) || c.Kind != KindRecording {
		t.Fatalf("capture %+v", c)
	}
	checkStoredReplay(t, e, data, "test-inputs/1")
}

func TestRecordingCompletedWithoutReplay(t *testing.T) {
	e := newEnv(t, nil)
	a := connect(t, e, allCaps...)
	o := start(t, e, Request{Kind: KindRecording})
	a.expect(t, "record_start")
	a.send(t, map[string]any{"type": "started", "op": o.ID})
	waitStatus(t, o, StatusRunning)
	if err := e.ctrl.Stop(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	a.expect(t, "stop")
	a.send(t, map[string]any{"type": "completed", "op": o.ID})
	a.expectError(t, protocol.CappyInvalidMessage)
	wantOutcome(t, e, o, StatusFailed, protocol.CappyInvalidMessage)
}

func TestRecordingNeedsCapability(t *testing.T) {
	e := newEnv(t, nil)
	connect(t, e, "scenarios")
	startErr(t, e, Request{Kind: KindRecording}, protocol.CappyCapabilityMissing)
}

func TestStopScenarioRefused(t *testing.T) {
	e := newEnv(t, nil)
	a := connect(t, e, allCaps...)
	o := runningScenario(t, e, a)
	err := e.ctrl.Stop(context.Background(), o)
	if err == nil {
		t.Fatal("Stop of a scenario accepted")
	}
	if ce, ok := err.(*Error); !ok || ce.Code != protocol.CappyOutOfState {
		t.Fatalf("Stop of a scenario: %v", err)
	}
	if s := o.Status().Status; s != StatusRunning {
		t.Fatalf("after the refused Stop: %s", s)
	}
	// No stop was sent: the next message the adapter sees is the next op's.
	a.send(t, map[string]any{"type": "completed", "op": o.ID})
	wantOutcome(t, e, o, StatusCompleted, "")
	o2 := start(t, e, scenarioReq())
	if m := a.next(t); m.Type != "prepare_scenario" || m.str("op") != o2.ID {
		t.Fatalf("adapter got %s; want the next prepare_scenario (a refused Stop sent something)", m.Raw)
	}
}

func TestCancelSilentAdapter(t *testing.T) {
	e := newEnv(t, nil)
	a := connect(t, e, allCaps...)
	o := runningScenario(t, e, a)
	a.send(t, map[string]any{"type": "event", "op": o.ID, "t": 1, "event": "E"})
	eventually(t, "the event arrived", func() bool { return o.Status().Events == 1 })
	e.ctrl.Cancel(o) // the adapter never answers
	if c := a.expect(t, "cancel"); !reflect.DeepEqual(c.M, map[string]any{"type": "cancel", "op": o.ID}) {
		t.Fatalf("cancel %s", c.Raw)
	}
	out := wantOutcome(t, e, o, StatusCancelled, protocol.CappyOperationCancelled)
	if out.Events != 1 {
		t.Fatalf("events %d", out.Events)
	}
	if e.ctrl.Active() != nil {
		t.Fatal("still active")
	}
	e.ctrl.Cancel(o) // a second cancel is a no-op
	if st := o.Status(); st.Status != StatusCancelled || st.Code != protocol.CappyOperationCancelled {
		t.Fatalf("after a second Cancel: %+v", st)
	}

	// Late messages for the cancelled op are answered with an error and
	// change nothing.
	for _, late := range []map[string]any{
		{"type": "event", "op": o.ID, "t": 2, "event": "LATE"},
		{"type": "event", "op": o.ID, "t": 0, "event": "LATE_BACKWARDS"},
		{"type": "completed", "op": o.ID},
		{"type": "failed", "op": o.ID, "code": "TORN_DOWN", "message": "ok"},
	} {
		a.send(t, late)
		m := a.expectError(t, protocol.CappyOutOfState)
		if m.str("op") != o.ID {
			t.Fatalf("late error %s, want op %s", m.Raw, o.ID)
		}
	}
	if st := o.Status(); st.Status != StatusCancelled || st.Events != 1 {
		t.Fatalf("late messages changed the cancelled op: %+v", st)
	}
	if c, _ := e.st.Capture(context.Background(), o.ID); c.Status != StatusCancelled || c.Events != 1 {
		t.Fatalf("late messages changed the stored capture: %+v", c)
	}
	// The next op is unaffected, also by a late message in its middle.
	o2 := runningScenario(t, e, a)
	a.send(t, map[string]any{"type": "event", "op": o.ID, "t": 99, "event": "LATE"})
	a.expectError(t, protocol.CappyOutOfState)
	a.send(t, map[string]any{"type": "event", "op": o2.ID, "t": 1, "event": "E"})
	a.send(t, map[string]any{"type": "completed", "op": o2.ID})
	if out := wantOutcome(t, e, o2, StatusCompleted, ""); out.Events != 1 {
		t.Fatalf("events %d", out.Events)
	}
}

func TestCancelWhilePreparing(t *testing.T) {
	e := newEnv(t, nil)
	a := connect(t, e, allCaps...)
	o := start(t, e, scenarioReq())
	a.expect(t, "prepare_scenario")
	e.ctrl.Cancel(o)
	a.expect(t, "cancel")
	wantOutcome(t, e, o, StatusCancelled, protocol.CappyOperationCancelled)
	a.send(t, map[string]any{"type": "ready", "op": o.ID}) // late: no start follows
	a.expectError(t, protocol.CappyOutOfState)
	completeScenario(t, e, a)
}

func TestOperationTimeout(t *testing.T) {
	e := newEnv(t, nil)
	a := connect(t, e, allCaps...)
	r := scenarioReq()
	r.Timeout = 200 * time.Millisecond
	o := start(t, e, r)
	a.expect(t, "prepare_scenario")
	// The adapter stays silent.
	if c := a.expect(t, "cancel"); c.str("op") != o.ID {
		t.Fatalf("cancel %s", c.Raw)
	}
	out := wantOutcome(t, e, o, StatusFailed, protocol.CappyOperationTimeout)
	if !strings.Contains(out.Message, "200ms") {
		t.Errorf("message %q", out.Message)
	}
	completeScenario(t, e, a)
}

// A running operation that keeps sending events still times out.
func TestOperationTimeoutWhileRunning(t *testing.T) {
	e := newEnv(t, nil)
	a := connect(t, e, allCaps...)
	o := start(t, e, Request{Kind: KindRecording, Timeout: 300 * time.Millisecond})
	a.expect(t, "record_start")
	a.send(t, map[string]any{"type": "started", "op": o.ID})
	for i := 0; !Final(o.Status().Status); i++ {
		if i > 10000 {
			t.Fatal("never timed out")
		}
		a.send(t, map[string]any{"type": "event", "op": o.ID, "t": i, "event": "TICK"})
		time.Sleep(5 * time.Millisecond)
	}
	wantOutcome(t, e, o, StatusFailed, protocol.CappyOperationTimeout)
	for {
		m := a.next(t)
		if m.Type == "cancel" {
			break
		}
		if m.Type != "error" { // late events may already be answered
			t.Fatalf("got %s, want cancel", m.Raw)
		}
	}
}

// An adapter may acknowledge cancel (or the cancel of a timeout) with
// failed at once; the operation still ends cancelled, or timed out, and
// the next one is unaffected.
func TestAbortAnsweredAtOnce(t *testing.T) {
	for _, tc := range []struct {
		name, status, code string
		timeout            time.Duration
		rounds             int
	}{
		{"cancel", StatusCancelled, protocol.CappyOperationCancelled, 0, 100},
		{"timeout", StatusFailed, protocol.CappyOperationTimeout, 20 * time.Millisecond, 25},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, nil)
			a := connect(t, e, allCaps...)
			var cancels atomic.Int64
			answer := func(m msg) bool {
				switch m.Type {
				case "cancel":
					a.write(websocket.MessageText, mustJSON(map[string]any{"type": "failed", "op": m.str("op"), "code": "TORN_DOWN", "message": "cancelled"}))
					cancels.Add(1)
					return true
				case "error": // the late answer turned away
					return m.str("code") == protocol.CappyOutOfState
				}
				return false
			}
			a.auto.Store(&answer)
			for i := 0; i < tc.rounds; i++ {
				r := scenarioReq()
				r.Timeout = tc.timeout
				o := start(t, e, r)
				a.expect(t, "prepare_scenario")
				if tc.timeout == 0 {
					e.ctrl.Cancel(o)
				}
				wantOutcome(t, e, o, tc.status, tc.code)
			}
			// The outcome is decided before the adapter reads the cancel:
			// let it read the last one before answering by hand again.
			// The controller's turning away of the last failed may come
			// later still (on a slow machine): keep dropping those.
			eventually(t, "the adapter got every cancel", func() bool { return cancels.Load() == int64(tc.rounds) })
			late := func(m msg) bool { return m.Type == "error" && m.str("code") == protocol.CappyOutOfState }
			a.auto.Store(&late)
			completeScenario(t, e, a)
		})
	}
}

// Cancel while the adapter's started is being handled: the operation ends
// cancelled and stays so.
func TestCancelRacingStarted(t *testing.T) {
	e := newEnv(t, nil)
	a := connect(t, e, allCaps...)
	answer := func(m msg) bool {
		switch m.Type {
		case "record_start":
			a.write(websocket.MessageText, mustJSON(map[string]any{"type": "started", "op": m.str("op")}))
			return true
		case "cancel":
			return true
		case "error": // a started that came after the cancel
			return m.str("code") == protocol.CappyOutOfState
		}
		return false
	}
	a.auto.Store(&answer)
	for i := 0; i < 100; i++ {
		o := start(t, e, Request{Kind: KindRecording})
		time.Sleep(time.Duration(i%20) * 100 * time.Microsecond)
		e.ctrl.Cancel(o)
		wantOutcome(t, e, o, StatusCancelled, protocol.CappyOperationCancelled)
		if e.ctrl.Active() != nil {
			t.Fatal("still active")
		}
	}
}

// Adapters connecting while the controller closes: Close returns once every
// accepted connection is gone, none is served after it, and (under -race)
// no connection is counted while Close waits.
func TestCloseWhileAdaptersConnect(t *testing.T) {
	e := newEnv(t, nil)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), wait)
				ws, _, err := websocket.Dial(ctx, e.ctrl.Endpoint(), nil)
				cancel()
				if err != nil {
					continue // refused once the listener is closed
				}
				ws.CloseNow()
			}
		}()
	}
	time.Sleep(20 * time.Millisecond)
	done := make(chan error, 1)
	go func() { done <- e.ctrl.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return while adapters kept connecting")
	}
	close(stop)
	wg.Wait()
	// After Close, a dial is refused: nothing listens any more.
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if ws, _, err := websocket.Dial(ctx, e.ctrl.Endpoint(), nil); err == nil {
		ws.CloseNow()
		t.Fatal("a dial after Close succeeded")
	}
}

// ---- summaries, and finishing racing the rest ----

// The adapter's completed.summary is kept: in the outcome and the store.
func TestCompletedSummaryKept(t *testing.T) {
	e := newEnv(t, nil)
	a := connect(t, e, allCaps...)
	o := runningScenario(t, e, a)
	a.send(t, map[string]any{"type": "completed", "op": o.ID, "summary": map[string]any{"outcome": "victory", "simMs": 1234}})
	out := wantOutcome(t, e, o, StatusCompleted, "")
	if !jsonEqual(out.Summary, `{"outcome":"victory","simMs":1234}`) {
		t.Fatalf("outcome summary %s", out.Summary)
	}
	c, err := e.st.Capture(context.Background(), o.ID)
	if err != nil || !jsonEqual(c.Summary, `{"outcome":"victory","simMs":1234}`) {
		t.Fatalf("stored summary %s (%v)", c.Summary, err)
	}

	// A recording's too.
	o = start(t, e, Request{Kind: KindRecording})
	a.expect(t, "record_start")
	a.send(t, map[string]any{"type": "started", "op": o.ID})
	a.send(t, map[string]any{"type": "completed", "op": o.ID, "replay": inlineReplay([]byte("r")), "summary": map[string]any{"ticks": 3}})
	if out := wantOutcome(t, e, o, StatusCompleted, ""); !jsonEqual(out.Summary, `{"ticks":3}`) {
		t.Fatalf("recording summary %s", out.Summary)
	}
	if c, _ := e.st.Capture(context.Background(), o.ID); !jsonEqual(c.Summary, `{"ticks":3}`) {
		t.Fatalf("stored recording summary %s", c.Summary)
	}

	// One over MaxSummaryBytes is dropped, and the outcome says so.
	o = runningScenario(t, e, a)
	a.send(t, map[string]any{"type": "completed", "op": o.ID, "summary": map[string]any{"blob": strings.Repeat("x", protocol.MaxSummaryBytes)}})
	out = wantOutcome(t, e, o, StatusCompleted, "")
	if out.Summary != nil || !strings.Contains(out.Message, "summary") {
		t.Fatalf("oversized summary: kept %d bytes, message %q", len(out.Summary), out.Message)
	}
	if c, _ := e.st.Capture(context.Background(), o.ID); c.Summary != nil {
		t.Fatalf("oversized summary stored: %d bytes", len(c.Summary))
	}

	// None sent, none kept.
	if out := completeScenario(t, e, a); out.Summary != nil {
		t.Fatalf("summary %s without one sent", out.Summary)
	}
}

// An operation finished (here cancelled) between becoming active and its
// capture being stored ends in the store too, not "preparing" forever.
func TestCancelWhileTheCaptureIsCreated(t *testing.T) {
	var ctrl atomic.Pointer[Controller]
	var adapter atomic.Pointer[testAdapter]
	e := newEnv(t, func(c *Config) {
		c.hooks.published = func(o *Operation) {
			go ctrl.Load().Cancel(o)
			// The cancel reaches the adapter before the finish; give
			// that finish every chance to run now, before the capture
			// is stored (it must wait for it).
			adapter.Load().expect(t, "cancel")
			select {
			case <-o.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	})
	ctrl.Store(e.ctrl)
	a := connect(t, e, allCaps...)
	adapter.Store(a)
	o, err := e.ctrl.Start(context.Background(), scenarioReq())
	if err != nil {
		t.Fatal(err)
	}
	wantOutcome(t, e, o, StatusCancelled, protocol.CappyOperationCancelled)
	e.ctrl.cfg.hooks.published = nil
	// Nothing was prepared for it: the next message is the next op's.
	o2 := start(t, e, scenarioReq())
	if m := a.next(t); m.Type != "prepare_scenario" || m.str("op") != o2.ID {
		t.Fatalf("adapter got %s, want the next operation's prepare_scenario", m.Raw)
	}
}

// Events arriving while another goroutine finishes the operation are
// either stored or refused: never taken after the final flush, so every
// event counted or heard by a listener is stored. Driven
// straight into the operation from other goroutines, as fast as it takes
// them, while Cancel finishes it.
func TestEventsRacingFinish(t *testing.T) {
	const feeders = 4
	e := newEnv(t, nil)
	a := connect(t, e, allCaps...)
	drop := func(m msg) bool { return m.Type == "error" } // the refusals of events after the end
	a.auto.Store(&drop)
	e.ctrl.mu.Lock()
	conn := e.ctrl.conn
	e.ctrl.mu.Unlock()
	ctx := context.Background()
	for i := range 25 {
		o := runningScenario(t, e, a)
		var heard atomic.Int64
		stop := o.Listen(func(store.CaptureEvent) { heard.Add(1) })
		var fed sync.WaitGroup
		for range feeders {
			fed.Go(func() {
				for {
					select {
					case <-o.Done():
						return
					default:
					}
					o.handle(ctx, e.ctrl, conn, &protocol.AdapterMessage{Type: "event", Event: &protocol.Event{Type: "event", Op: o.ID, T: 1, Event: "E"}})
				}
			})
		}
		deadline := time.Now().Add(wait)
		for o.Status().Events < 10 { // few events: fewer to store under -race
			if time.Now().After(deadline) {
				t.Fatal("no events flow")
			}
			runtime.Gosched()
		}
		e.ctrl.Cancel(o)
		a.expect(t, "cancel")
		fed.Wait()
		stop()
		out := wantOutcome(t, e, o, StatusCancelled, protocol.CappyOperationCancelled)
		c, err := e.st.Capture(ctx, o.ID)
		if err != nil {
			t.Fatal(err)
		}
		if c.Events != out.Events || heard.Load() != out.Events {
			t.Fatalf("round %d: %d events counted, %d stored, %d heard", i, out.Events, c.Events, heard.Load())
		}
		o.mu.Lock()
		left := len(o.pending)
		o.mu.Unlock()
		if left != 0 {
			t.Fatalf("round %d: %d events left unstored", i, left)
		}
	}
}

func TestPresetsChecked(t *testing.T) {
	for _, p := range []protocol.Presentation{{"timeScale": 5.0}, {"timeScale": "slow"}, {"camera": ""}, {"camera": 1.0}} {
		c := &CaptureConfig{Presets: map[string]protocol.Presentation{"p": p}}
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "presets.p") {
			t.Errorf("preset %v: %v", p, err)
		}
	}
	// Capabilities are the adapter's: a preset may use any key.
	c := &CaptureConfig{Presets: map[string]protocol.Presentation{"slow": {"timeScale": 0.25, "camera": "wide", "fov": 90.0}}}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
}

// The capture config's events: "NODE_PATH:signal" to an event's name;
// anything else is refused with what the key should look like.
func TestConfigEventsChecked(t *testing.T) {
	good := &CaptureConfig{Events: map[string]string{".:won": "WON", "World/Hero:died": "HERO_DIED", "Start:pressed": "START"}}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	for key, name := range map[string]string{"Hero": "X", ":died": "X", "Hero:": "X", "Hero:died": "", "Hero:hit": "two\nlines"} {
		c := &CaptureConfig{Events: map[string]string{key: name}}
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "events:") {
			t.Errorf("events {%q: %q}: %v", key, name, err)
		}
	}
	c := &CaptureConfig{Events: map[string]string{}}
	for i := range MaxConfigEvents + 1 {
		c.Events[fmt.Sprintf("N%d:s", i)] = "E"
	}
	if err := c.Validate(); err == nil {
		t.Error("a map of more than MaxConfigEvents signals")
	}
}
