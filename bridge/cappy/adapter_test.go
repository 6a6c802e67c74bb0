package cappy

// A scripted adapter: a real github.com/coder/websocket client that talks to
// the real controller over loopback, answers pings unless told not to, and
// hands every other message to the test in order.

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/crosscode/crosscode-mcp/store"
)

// wait bounds every wait of the suite; nothing asserts on timing, it only
// keeps a broken controller from hanging the run. Generous: the suite runs
// beside browsers, databases and engines on two cores, and the race
// detector slows it several times.
const wait = 20 * time.Second

// env is one controller over its own store.
type env struct {
	ctrl      *Controller
	st        *store.Store
	replayDir string
	frameDir  string
}

// newEnv starts a controller with short, test-friendly timeouts; mod may
// change the config before New.
func newEnv(t *testing.T, mod func(*Config)) *env {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "c.db"), nil)
	if err != nil {
		t.Fatalf("store.Open: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	cfg := Config{
		Store:        st,
		ReplayDir:    filepath.Join(t.TempDir(), "replays"),
		Version:      "9.9.9-test",
		HelloTimeout: wait,
		PingEvery:    50 * time.Millisecond,
		PongTimeout:  wait,
	}
	if mod != nil {
		mod(&cfg)
	}
	ctrl, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { ctrl.Close() })
	return &env{ctrl: ctrl, st: st, replayDir: cfg.ReplayDir, frameDir: ctrl.cfg.FrameDir}
}

// msg is one message the controller sent the adapter.
type msg struct {
	Type   string
	Raw    []byte
	M      map[string]any
	Binary bool
}

func (m msg) str(key string) string { s, _ := m.M[key].(string); return s }

type testAdapter struct {
	ws      *websocket.Conn
	msgs    chan msg
	noPong  atomic.Bool  // stop answering pings
	badPong atomic.Bool  // answer pings with a nonce no ping carried
	pings   atomic.Int64 // pings received
	pongs   atomic.Int64 // pongs sent
	mu      sync.Mutex
	nonces  []string // of the pings received
	// auto, if set, sees every non-ping message on the reader goroutine
	// first; it returns true when it handled the message itself.
	auto atomic.Pointer[func(msg) bool]
	done chan struct{}
	err  error // the read error that ended the reader; valid after done
}

// dialAdapter opens a WebSocket to the controller and starts the reader.
func dialAdapter(t *testing.T, e *env, opts *websocket.DialOptions) (*testAdapter, *http.Response, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	ws, resp, err := websocket.Dial(ctx, e.ctrl.Endpoint(), opts)
	if err != nil {
		return nil, resp, err
	}
	ws.SetReadLimit(16 << 20)
	a := &testAdapter{ws: ws, msgs: make(chan msg, 1<<14), done: make(chan struct{})}
	go a.read()
	t.Cleanup(func() {
		ws.CloseNow()
		<-a.done
	})
	return a, resp, nil
}

func mustDial(t *testing.T, e *env) *testAdapter {
	t.Helper()
	a, _, err := dialAdapter(t, e, nil)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	return a
}

func (a *testAdapter) read() {
	defer close(a.done)
	for {
		typ, data, err := a.ws.Read(context.Background())
		if err != nil {
			a.err = err
			return
		}
		m := msg{Raw: data, Binary: typ != websocket.MessageText}
		if !m.Binary {
			if err := json.Unmarshal(data, &m.M); err != nil {
				m.Type = "<invalid json>"
			} else {
				m.Type, _ = m.M["type"].(string)
			}
		}
		if m.Type == "ping" {
			a.mu.Lock()
			a.nonces = append(a.nonces, m.str("nonce"))
			a.mu.Unlock()
			a.pings.Add(1)
			if !a.noPong.Load() {
				nonce := m.M["nonce"]
				if a.badPong.Load() {
					nonce = "p999999"
				}
				if a.write(websocket.MessageText, mustJSON(map[string]any{"type": "pong", "nonce": nonce})) == nil {
					a.pongs.Add(1)
				}
			}
			continue
		}
		if f := a.auto.Load(); f != nil && (*f)(m) {
			continue
		}
		a.msgs <- m
	}
}

func (a *testAdapter) write(typ websocket.MessageType, b []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	return a.ws.Write(ctx, typ, b)
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// send writes v as one JSON text frame.
func (a *testAdapter) send(t *testing.T, v any) {
	t.Helper()
	if err := a.write(websocket.MessageText, mustJSON(v)); err != nil {
		t.Fatalf("adapter send %s: %v", mustJSON(v), err)
	}
}

// sendRaw writes s as one text frame, as is.
func (a *testAdapter) sendRaw(t *testing.T, s string) {
	t.Helper()
	if err := a.write(websocket.MessageText, []byte(s)); err != nil {
		t.Fatalf("adapter send %q: %v", s, err)
	}
}

// next is the next non-ping message from the controller.
func (a *testAdapter) next(t *testing.T) msg {
	t.Helper()
	select {
	case m := <-a.msgs:
		return m
	case <-time.After(wait):
		t.Fatalf("adapter: no message from the controller within %s", wait)
		return msg{}
	}
}

// nextOrClosed is the next message, or ok=false when the socket ended
// first (with nothing queued).
func (a *testAdapter) nextOrClosed(t *testing.T) (msg, bool) {
	t.Helper()
	select {
	case m := <-a.msgs:
		return m, true
	case <-a.done:
		select {
		case m := <-a.msgs:
			return m, true
		default:
			return msg{}, false
		}
	case <-time.After(wait):
		t.Fatalf("adapter: neither a message nor a close within %s", wait)
		return msg{}, false
	}
}

// expect is the next message, which must be of type typ.
func (a *testAdapter) expect(t *testing.T, typ string) msg {
	t.Helper()
	m := a.next(t)
	if m.Type != typ {
		t.Fatalf("adapter: got %s, want a %q message", m.Raw, typ)
	}
	return m
}

// expectError is the next message, which must be {type:error, code}.
func (a *testAdapter) expectError(t *testing.T, code string) msg {
	t.Helper()
	m := a.expect(t, "error")
	if m.str("code") != code {
		t.Fatalf("adapter: got error %s, want code %s", m.Raw, code)
	}
	return m
}

// waitClosed waits until the controller's end of the socket went away and
// returns the read error (a CloseError when the controller closed cleanly).
func (a *testAdapter) waitClosed(t *testing.T) error {
	t.Helper()
	select {
	case <-a.done:
		return a.err
	case <-time.After(wait):
		t.Fatalf("adapter: the controller did not close the socket within %s", wait)
		return nil
	}
}

// isClosed reports whether the socket has ended (without waiting).
func (a *testAdapter) isClosed() bool {
	select {
	case <-a.done:
		return true
	default:
		return false
	}
}

var allCaps = []string{"scenarios", "freeform_recording", "replay", "time_scale", "alternate_cameras"}

func hello(token string, caps ...string) map[string]any {
	if caps == nil {
		caps = []string{}
	}
	return map[string]any{
		"type":         "hello",
		"protocol":     map[string]any{"min": 1, "max": 1},
		"token":        token,
		"adapter":      map[string]any{"name": "test-adapter", "version": "0.1.0"},
		"game":         map[string]any{"id": "fantasy-party", "name": "Fantasy Party"},
		"build":        "build-42",
		"capabilities": caps,
	}
}

// registry is the adapter's scenario registry.
func registry() map[string]any {
	return map[string]any{"type": "scenarios", "scenarios": []any{
		map[string]any{
			"id":   "boss_intro",
			"name": "Boss intro",
			"parameters": map[string]any{
				"difficulty": map[string]any{"type": "integer", "minimum": 1, "maximum": 3, "default": 2},
				"mode":       map[string]any{"type": "string", "enum": []any{"story", "arcade"}, "default": "story"},
				"speed":      map[string]any{"type": "number", "minimum": 0.5, "maximum": 2},
				"seed":       map[string]any{"type": "integer", "required": true},
				"loud":       map[string]any{"type": "boolean", "default": false},
			},
			"requiredCapabilities": []any{"scenarios"},
		},
		map[string]any{"id": "menu", "name": "Main menu"},
		map[string]any{"id": "flyby", "name": "Camera fly-by", "requiredCapabilities": []any{"alternate_cameras"}},
	}}
}

// connect dials, shakes hands with caps, sends the registry, and waits
// until the controller has the adapter.
func connect(t *testing.T, e *env, caps ...string) *testAdapter {
	t.Helper()
	a := mustDial(t, e)
	a.send(t, hello(e.ctrl.Token(), caps...))
	a.expect(t, "welcome")
	a.send(t, registry())
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if _, err := e.ctrl.WaitAdapter(ctx); err != nil {
		t.Fatalf("WaitAdapter: %v", err)
	}
	return a
}

// disconnect drops the adapter and waits until the controller noticed.
func disconnect(t *testing.T, e *env, a *testAdapter) {
	t.Helper()
	a.ws.CloseNow()
	<-a.done
	eventually(t, "the controller forgets the adapter", func() bool { return e.ctrl.Connected() == nil })
}

// eventually polls cond until it holds, failing the test after wait.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitDone waits for the operation to end and returns its outcome.
func waitDone(t *testing.T, o *Operation) Outcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	out := o.Wait(ctx)
	if !Final(out.Status) {
		t.Fatalf("operation %s still %s after %s", o.ID, out.Status, wait)
	}
	return out
}

func waitStatus(t *testing.T, o *Operation, status string) {
	t.Helper()
	eventually(t, "operation is "+status, func() bool { return o.Status().Status == status })
}

// wantOutcome checks how an operation ended, in memory and in the store.
func wantOutcome(t *testing.T, e *env, o *Operation, status, code string) Outcome {
	t.Helper()
	out := waitDone(t, o)
	if out.Status != status || out.Code != code {
		t.Fatalf("outcome %s/%s (%s), want %s/%s", out.Status, out.Code, out.Message, status, code)
	}
	c, err := e.st.Capture(context.Background(), o.ID)
	if err != nil {
		t.Fatalf("store.Capture: %v", err)
	}
	if c.Status != status || c.Code != code {
		t.Fatalf("stored capture %s/%s, want %s/%s", c.Status, c.Code, status, code)
	}
	if c.EndedAt == nil {
		t.Fatalf("stored capture has no end time")
	}
	return out
}

// start starts an operation, which must be accepted.
func start(t *testing.T, e *env, r Request) *Operation {
	t.Helper()
	o, err := e.ctrl.Start(context.Background(), r)
	if err != nil {
		t.Fatalf("Start(%+v): %v", r, err)
	}
	return o
}

// startErr starts an operation, which must be refused with code.
func startErr(t *testing.T, e *env, r Request, code string) *Error {
	t.Helper()
	o, err := e.ctrl.Start(context.Background(), r)
	if err == nil {
		t.Fatalf("Start(%+v) = %s, want %s", r, o.ID, code)
	}
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("Start(%+v): %T %v, want *Error %s", r, err, err, code)
	}
	if ce.Code != code {
		t.Fatalf("Start(%+v): %v, want code %s", r, err, code)
	}
	return ce
}

func scenarioReq() Request {
	return Request{Kind: KindScenario, Scenario: "boss_intro", Parameters: map[string]any{"seed": 7.0}}
}

// runningScenario starts boss_intro and brings it to running.
func runningScenario(t *testing.T, e *env, a *testAdapter) *Operation {
	t.Helper()
	o := start(t, e, scenarioReq())
	p := a.expect(t, "prepare_scenario")
	if p.str("op") != o.ID {
		t.Fatalf("prepare_scenario for %q, want %q", p.str("op"), o.ID)
	}
	a.send(t, map[string]any{"type": "ready", "op": o.ID})
	a.expect(t, "start")
	a.send(t, map[string]any{"type": "started", "op": o.ID})
	waitStatus(t, o, StatusRunning)
	return o
}

// completeScenario runs boss_intro from Start to completed.
func completeScenario(t *testing.T, e *env, a *testAdapter) Outcome {
	t.Helper()
	o := runningScenario(t, e, a)
	a.send(t, map[string]any{"type": "event", "op": o.ID, "t": 1, "event": "SPAWN"})
	a.send(t, map[string]any{"type": "completed", "op": o.ID})
	out := wantOutcome(t, e, o, StatusCompleted, "")
	if out.Events != 1 {
		t.Fatalf("events %d, want 1", out.Events)
	}
	return out
}
