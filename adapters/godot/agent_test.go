package godot_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crosscode/crosscode-mcp/adapters/go/cappy/cappytest"
	"github.com/crosscode/crosscode-mcp/internal/testing/sysdeps"
	"github.com/crosscode/crosscode-mcp/protocol"
)

// msg is one message from the adapter: checked by the controller's strict
// decoder (protocol.DecodeAdapterMessage) and kept as JSON for the test.
type msg struct {
	raw []byte
	m   map[string]any
}

func (m msg) typ() string { s, _ := m.m["type"].(string); return s }
func (m msg) op() string  { s, _ := m.m["op"].(string); return s }
func (m msg) id() string  { s, _ := m.m["id"].(string); return s }
func (m msg) num(k string) float64 {
	f, ok := m.m[k].(float64)
	if !ok {
		return math.NaN()
	}
	return f
}

// recvMsg reads the adapter's next message; one the controller would not
// accept fails the test.
func recvMsg(t testing.TB, ctx context.Context, p *cappytest.Peer) msg {
	t.Helper()
	_, b, err := p.Conn.Read(ctx)
	if err != nil {
		t.Fatalf("reading the adapter: %v", err)
	}
	if _, err := protocol.DecodeAdapterMessage(b); err != nil {
		t.Fatalf("the controller would refuse %s: %v", b, err)
	}
	m := msg{raw: b}
	if err := json.Unmarshal(b, &m.m); err != nil {
		t.Fatal(err)
	}
	return m
}

// expectMsg reads the next message and checks its type.
func expectMsg(t testing.TB, ctx context.Context, p *cappytest.Peer, typ string) msg {
	t.Helper()
	m := recvMsg(t, ctx, p)
	if m.typ() != typ {
		t.Fatalf("got %s, expected %s", m.raw, typ)
	}
	return m
}

// play is an agent-controlled recording seen from the controller: every
// event and frame it sent, in order.
type play struct {
	t      testing.TB
	ctx    context.Context
	peer   *cappytest.Peer
	op     string
	n      int
	events []protocol.Event
	frames []protocol.Frame
}

// stepResult is a step's answer: its events and frames, and stepped or
// step_refused.
type stepResult struct {
	events []protocol.Event
	frames []protocol.Frame
	end    msg
}

// step sends a step and reads what it brings until its stepped or
// step_refused.
func (p *play) step(ms float64, actions ...map[string]any) stepResult {
	p.t.Helper()
	p.n++
	id := fmt.Sprintf("s%d", p.n)
	if actions == nil {
		actions = []map[string]any{}
	}
	send(p.t.(*testing.T), p.ctx, p.peer, map[string]any{"type": "step", "op": p.op, "id": id, "actions": actions, "ms": ms})
	return p.until(id)
}

func (p *play) until(id string) stepResult {
	p.t.Helper()
	var r stepResult
	for {
		m := recvMsg(p.t, p.ctx, p.peer)
		switch m.typ() {
		case "event":
			var e protocol.Event
			json.Unmarshal(m.raw, &e)
			r.events = append(r.events, e)
			p.events = append(p.events, e)
		case "frame":
			var f protocol.Frame
			json.Unmarshal(m.raw, &f)
			r.frames = append(r.frames, f)
			p.frames = append(p.frames, f)
		case "stepped", "step_refused":
			if m.id() != id || m.op() != p.op {
				p.t.Fatalf("%s, expected one for step %s of %s", m.raw, id, p.op)
			}
			r.end = m
			return r
		default:
			p.t.Fatalf("during step %s: %s", id, m.raw)
		}
	}
}

// inspect asks a query and returns the inspect_result.
func inspect(t *testing.T, ctx context.Context, p *cappytest.Peer, id, query string) msg {
	t.Helper()
	send(t, ctx, p, map[string]any{"type": "inspect", "id": id, "query": query})
	m := expectMsg(t, ctx, p, "inspect_result")
	if m.id() != id {
		t.Fatalf("inspect_result %s for %s", m.raw, id)
	}
	return m
}

// inspect asks a query during the play: the play's events and frames may
// come first.
func (p *play) inspect(id, query string) msg {
	p.t.Helper()
	send(p.t.(*testing.T), p.ctx, p.peer, map[string]any{"type": "inspect", "id": id, "query": query})
	for {
		m := recvMsg(p.t, p.ctx, p.peer)
		switch m.typ() {
		case "event":
			var e protocol.Event
			json.Unmarshal(m.raw, &e)
			p.events = append(p.events, e)
		case "frame":
			var f protocol.Frame
			json.Unmarshal(m.raw, &f)
			p.frames = append(p.frames, f)
		case "inspect_result":
			if m.id() != id {
				p.t.Fatalf("inspect_result %s for %s", m.raw, id)
			}
			return m
		default:
			p.t.Fatalf("waiting for inspect_result %s: %s", id, m.raw)
		}
	}
}

// value is an inspect_result's value, decoded into v.
func value(t *testing.T, m msg, v any) {
	t.Helper()
	b, _ := json.Marshal(m.m["value"])
	if m.m["error"] != nil || json.Unmarshal(b, v) != nil {
		t.Fatalf("inspect_result %s", m.raw)
	}
}

func refused(t *testing.T, r stepResult, code, contains string) {
	t.Helper()
	if r.end.typ() != "step_refused" || r.end.m["code"] != code || !strings.Contains(fmt.Sprint(r.end.m["message"]), contains) || len(r.events) != 0 {
		t.Fatalf("step: %s (events %v), expected step_refused %s saying %q", r.end.raw, r.events, code, contains)
	}
}

// stepped checks a step's stepped: simT as asked, t the same (timeScale 1).
func stepped(t *testing.T, r stepResult, simT float64) {
	t.Helper()
	if r.end.typ() != "stepped" || math.Abs(r.end.num("simT")-simT) > 0.001 || r.end.num("t") != r.end.num("simT") {
		t.Fatalf("step: %s, expected stepped at simT %v", r.end.raw, simT)
	}
}

func recordAgent(t *testing.T, ctx context.Context, peer *cappytest.Peer, op string, frames *protocol.FramesRequest) *play {
	t.Helper()
	rs := map[string]any{"type": "record_start", "op": op, "control": "agent"}
	if frames != nil {
		rs["frames"] = frames
	}
	send(t, ctx, peer, rs)
	if m := expectMsg(t, ctx, peer, "started"); m.op() != op {
		t.Fatalf("started: %s", m.raw)
	}
	return &play{t: t, ctx: ctx, peer: peer, op: op}
}

// stop stops the play and returns its completed.
func (p *play) stop() *protocol.Completed {
	p.t.Helper()
	send(p.t.(*testing.T), p.ctx, p.peer, stop(p.op))
	for {
		m := recvMsg(p.t, p.ctx, p.peer)
		switch m.typ() {
		case "event":
			p.t.Fatalf("an event while the simulation is held: %s", m.raw)
		case "frame":
			continue // at the asked rate, of the held state
		case "completed":
			d, _ := protocol.DecodeAdapterMessage(m.raw)
			return d.Completed
		default:
			p.t.Fatalf("after stop: %s", m.raw)
		}
	}
}

// TestArenaAgentPlay: the arena's actions from its InputMap; an
// agent-controlled recording that waits, held, for steps; each step runs
// exactly its simulation time with its input held (the hero walks 3 px a
// physics frame), ms 0 applies and looks, bad steps are refused and the
// play goes on; inspect of nodes, properties and keys at any time; and the
// play's replay gives the same events at speed 1, 0.5 and 2.
func TestArenaAgentPlay(t *testing.T) {
	t.Parallel()
	g := sysdeps.NeedGodot(t)
	ctx := timeout(t, 120*time.Second)
	ctrl := scripted(t)
	// The autopilot would play if the game let it: under agent control it must not.
	launch(t, g, project(t, g, "examples/godot-arena"), ctrl.Endpoint, ctrl.Token, map[string]string{"ARENA_AUTOPILOT": "1"})
	peer, err := ctrl.Accept(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	hello, _, err := peer.Handshake(ctx, ctrl.Token)
	if err != nil {
		t.Fatal(err)
	}
	if !hello.HasCapability("input") || !hello.HasCapability("inspect") {
		t.Fatalf("capabilities: %v", hello.Capabilities)
	}
	var kinds []string
	for _, a := range peer.Actions.Actions {
		kinds = append(kinds, a.Name+":"+a.Kind)
		if a.Description == "" {
			t.Fatalf("action %s has no description", a.Name)
		}
	}
	if want := []string{"move:axis2d", "attack:button", "dodge:button", "pointer:pointer"}; !slices.Equal(kinds, want) {
		t.Fatalf("actions %v, expected %v (the InputMap's, moves joined, no ui_*, and the pointer)", kinds, want)
	}

	// What can be asked, before any operation.
	var cat struct {
		Nodes []struct {
			Query      string
			Properties []string
		}
	}
	value(t, inspect(t, ctx, peer, "i0", ""), &cat)
	world := slices.IndexFunc(cat.Nodes, func(n struct {
		Query      string
		Properties []string
	}) bool {
		return n.Query == "World"
	})
	if world < 0 || !slices.Contains(cat.Nodes[world].Properties, "hero") || !slices.Contains(cat.Nodes[world].Properties, "foes") {
		t.Fatalf("the empty query: %+v", cat)
	}

	p := recordAgent(t, ctx, peer, "a1", nil)
	// The first look (as start_recording takes it): the game is held
	// where its start callable put it, no frame run.
	stepped(t, p.step(0), 0)
	// Held: the world's clock does not move between two looks.
	var tick0, tick1 float64
	value(t, p.inspect("i1", "World:tick"), &tick0)
	time.Sleep(300 * time.Millisecond) // 18 physics frames, were it running
	value(t, p.inspect("i2", "World:tick"), &tick1)
	if tick0 != 0 || tick1 != 0 {
		t.Fatalf("World:tick %v then %v while held; expected 0 (no frame runs before the first step)", tick0, tick1)
	}

	// 500 ms walking right: 30 physics frames, 3 px each.
	r := p.step(500, map[string]any{"name": "move", "x": 1, "y": 0})
	stepped(t, r, 500)
	var pos struct{ X, Y float64 }
	value(t, p.inspect("i3", "World:hero:pos"), &pos)
	value(t, p.inspect("i4", "World:tick"), &tick1)
	if pos.X != 320+30*3 || pos.Y != 180 || tick1 != 30 {
		t.Fatalf("after 500 ms right: hero at %+v, world tick %v; expected (410, 180) and 30", pos, tick1)
	}
	// Held after the step too; the move stays held into the next step.
	if r := p.step(0); r.end.typ() != "stepped" || len(r.events) != 0 || r.end.num("simT") != 500 {
		t.Fatalf("a look: %s %v", r.end.raw, r.events)
	}
	// ms 0 applies and looks: the attack goes in at the start of the next
	// step that runs, so it lands in that step's first frame.
	stepped(t, p.step(0, map[string]any{"name": "attack", "pressed": true}), 500)
	r = p.step(100, map[string]any{"name": "move", "x": 0, "y": 0})
	stepped(t, r, 600)
	swung := slices.IndexFunc(r.events, func(e protocol.Event) bool { return e.Event == "SWING" || e.Event == "HIT" })
	if swung < 0 || math.Abs(r.events[swung].T-516.667) > 0.001 {
		t.Fatalf("the attack of the look's step: %v; expected SWING or HIT at t 516.667 (the next step's first frame)", r.events)
	}
	value(t, p.inspect("i5", "World:hero:pos"), &pos)
	var x float64
	value(t, p.inspect("i5x", "World:hero:pos:x"), &x)
	if pos.X != 410 || x != 410 {
		t.Fatalf("move 0 0 did not stop the hero: %+v", pos)
	}

	// Refused steps: nothing applied, the play goes on.
	refused(t, p.step(100, map[string]any{"name": "jump", "pressed": true}), "INVALID_INPUT", "unknown action")
	refused(t, p.step(100, map[string]any{"name": "move", "x": 2, "y": 0}), "INVALID_INPUT", "-1 to 1")
	refused(t, p.step(100, map[string]any{"name": "attack"}), "INVALID_INPUT", "pressed")
	refused(t, p.step(100, map[string]any{"name": "attack", "value": 1}), "INVALID_INPUT", "no value")
	refused(t, p.step(20000), "INVALID_INPUT", "ms")
	send(t, ctx, peer, map[string]any{"type": "step", "op": "other", "id": "x1", "actions": []any{}, "ms": 10})
	if m := expectMsg(t, ctx, peer, "step_refused"); m.id() != "x1" || m.m["code"] != "PROTOCOL_OUT_OF_STATE" {
		t.Fatalf("a step of another op: %s", m.raw)
	}

	// Inspect's errors and deeper values.
	for q, code := range map[string]string{"Nowhere": "UNKNOWN_QUERY", "World:nothing": "UNKNOWN_QUERY", "World:foes:99": "UNKNOWN_QUERY"} {
		m := p.inspect("e", q)
		if e, _ := m.m["error"].(map[string]any); e == nil || e["code"] != code || e["message"] == "" {
			t.Fatalf("inspect %q: %s", q, m.raw)
		}
	}
	var node struct {
		Path, Class, Script string
		Properties          map[string]any
	}
	value(t, p.inspect("i6", "World"), &node)
	if node.Path != "/root/Main/World" || node.Script != "res://world.gd" || node.Properties["tick"] != 36.0 {
		t.Fatalf("inspect World: %+v", node)
	}

	// Fight for a while: the steps' events come in order, on the clock.
	simT := 600.0
	for i := range 8 {
		acts := []map[string]any{{"name": "attack", "pressed": false}, {"name": "attack", "pressed": true}}
		if i%3 == 1 {
			acts = append(acts, map[string]any{"name": "dodge", "pressed": i%2 == 1})
		}
		var aim struct{ X, Y float64 }
		value(t, p.inspect(fmt.Sprint("aim", i), "World:hero:facing"), &aim)
		acts = append(acts, map[string]any{"name": "move", "x": float64(i%3) - 1, "y": float64(i%2)*2 - 1})
		r := p.step(250, acts...)
		simT += 250
		stepped(t, r, simT)
	}
	if len(p.events) < 3 {
		t.Fatalf("the play's events: %v", p.events)
	}
	done := p.stop()
	if done.Replay == nil {
		t.Fatalf("completed without a replay: %+v", done)
	}
	var summary map[string]any
	json.Unmarshal(done.Summary, &summary)
	if summary["steps"] == nil || summary["simMs"] != simT {
		t.Fatalf("summary: %s", done.Summary)
	}
	t.Logf("played %d events in %v ms: %s", len(p.events), simT, done.Summary)

	for _, scale := range []float64{1, 0.5, 2} {
		pres := protocol.Presentation{"timeScale": scale}
		rep, end := replay(t, ctx, peer, fmt.Sprint("rep", scale), done.Replay, pres)
		if end.Completed == nil {
			t.Fatalf("replay at %v: %+v", scale, end.Failed)
		}
		sameEvents(t, p.events, rep, scale)
	}
}

// TestArenaAgentPictures: under Xvfb, each step of an agent-controlled
// recording with frames ends with one frame of the held state (reason
// step) just before its stepped, at its t; its replay at half speed holds
// at the same moments and shows the same pictures, pixel for pixel.
func TestArenaAgentPictures(t *testing.T) {
	t.Parallel()
	g := sysdeps.NeedGodot(t)
	ctx := timeout(t, 150*time.Second)
	ctrl := scripted(t)
	launch(t, g, project(t, g, "examples/godot-arena"), ctrl.Endpoint, ctrl.Token, nil, "--xvfb", "--path", ".")
	peer, err := ctrl.Accept(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	hello, _, err := peer.Handshake(ctx, ctrl.Token)
	if err != nil || !hello.HasCapability("frames") {
		t.Fatalf("handshake: %v %v", err, hello)
	}
	req := &protocol.FramesRequest{FPS: 2, MaxWidth: 320, Formats: []string{protocol.MimePNG}}
	p := recordAgent(t, ctx, peer, "pic", req)
	var pictures []protocol.Frame
	for i := range 6 {
		r := p.step(float64(100*i), map[string]any{"name": "move", "x": float64(i%3) - 1, "y": 0.5},
			map[string]any{"name": "attack", "pressed": i%2 == 0})
		if r.end.typ() != "stepped" || len(r.frames) == 0 {
			t.Fatalf("step %d: %s with %d frames", i, r.end.raw, len(r.frames))
		}
		last := r.frames[len(r.frames)-1]
		if last.Reason != "step" || last.T != r.end.num("t") || last.Width != 320 || last.Height != 180 || last.Mime != protocol.MimePNG {
			t.Fatalf("step %d's last frame: %+v at t %v", i, last, last.T)
		}
		for _, f := range r.frames[:len(r.frames)-1] {
			if f.Reason == "step" {
				t.Fatalf("step %d: two step frames", i)
			}
		}
		pictures = append(pictures, last)
	}
	done := p.stop()

	send(t, ctx, peer, protocol.PrepareReplay{Type: "prepare_replay", Op: "rp", Replay: done.Replay,
		Presentation: protocol.Presentation{"timeScale": 0.5}, Frames: req})
	expect(t, ctx, peer, "ready", "rp")
	send(t, ctx, peer, start("rp"))
	expect(t, ctx, peer, "started", "rp")
	var again []protocol.Frame
	for {
		m := recvMsg(t, ctx, peer)
		if m.typ() == "completed" {
			break
		}
		if m.typ() == "frame" {
			var f protocol.Frame
			json.Unmarshal(m.raw, &f)
			if f.Reason == "step" {
				again = append(again, f)
			}
		} else if m.typ() != "event" {
			t.Fatalf("replay: %s", m.raw)
		}
	}
	// Steps that ran no frame hold where the step before held: one picture.
	var want []protocol.Frame
	for _, f := range pictures {
		if len(want) == 0 || want[len(want)-1].T != f.T {
			want = append(want, f)
		}
	}
	if len(again) != len(want) {
		t.Fatalf("the replay's step pictures: %d, the recording's %d", len(again), len(want))
	}
	for i := range want {
		if again[i].T != 2*want[i].T {
			t.Fatalf("step picture %d at t %v in the replay at half speed, %v in the recording", i, again[i].T, want[i].T)
		}
		a, b := decodePNG(t, want[i]), decodePNG(t, again[i])
		if !bytes.Equal(a.Pix, b.Pix) {
			t.Fatalf("step picture %d (t %v) differs in the replay", i, want[i].T)
		}
		if blank(a) {
			t.Fatalf("step picture %d is blank", i)
		}
	}
}

func decodePNG(t *testing.T, f protocol.Frame) *image.NRGBA {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(f.Data))
	if err != nil {
		t.Fatal(err)
	}
	out := image.NewNRGBA(img.Bounds())
	for y := img.Bounds().Min.Y; y < img.Bounds().Max.Y; y++ {
		for x := img.Bounds().Min.X; x < img.Bounds().Max.X; x++ {
			out.Set(x, y, img.At(x, y))
		}
	}
	return out
}

// TestAgentControls: every kind of action, as the game sees it: a button
// (pressed, just pressed in the step's first frame), an axis and an
// axis2d of InputMap actions with their strengths, the pointer (motion
// and clicks where the agent put them, in the frames' pixels) and text
// (key events to _input); hidden actions and the axes' parts are not
// offered; bad values are refused; inspect refuses values over 256 KiB
// and the addon itself; the replay plays it all again.
func TestAgentControls(t *testing.T) {
	t.Parallel()
	g := sysdeps.NeedGodot(t)
	ctx := timeout(t, 120*time.Second)
	peer, hello, _ := connect(t, ctx, project(t, g, "adapters/godot/testdata/controls"), nil)
	if !hello.HasCapability("input") {
		t.Fatalf("capabilities: %v", hello.Capabilities)
	}
	acts := peer.Actions
	var kinds []string
	for _, a := range acts.Actions {
		kinds = append(kinds, a.Name+":"+a.Kind)
	}
	if want := []string{"throttle:axis", "stick:axis2d", "jump:button", "pointer:pointer", "text:text"}; !slices.Equal(kinds, want) {
		t.Fatalf("actions %v, expected %v", kinds, want)
	}
	if d := acts.Actions[3].Description; !strings.Contains(d, "320 x 180") {
		t.Fatalf("the pointer's description does not say the frames' size: %q", d)
	}

	p := recordAgent(t, ctx, peer, "c1", nil)
	// The payloads of a step's events called name.
	input := func(r stepResult, name string) []map[string]any {
		var out []map[string]any
		for _, e := range r.events {
			if e.Event == name {
				out = append(out, payload(t, e))
			}
		}
		return out
	}
	r := p.step(50, map[string]any{"name": "jump", "pressed": true}, map[string]any{"name": "throttle", "value": 0.5},
		map[string]any{"name": "stick", "x": -0.5, "y": 0.25})
	stepped(t, r, 50)
	got := input(r, "INPUT")
	// No frame runs before the first step; the step's first frame sees it
	// all, jump just pressed; the next sees jump held.
	if len(got) != 2 || got[0]["jumped"] != true || got[0]["jump"] != true || got[0]["throttle"] != 0.5 || got[0]["x"] != -0.5 || got[0]["y"] != 0.25 ||
		got[0]["simT"] != 16.667 || got[1]["jumped"] != false || got[1]["jump"] != true || got[1]["simT"] != 33.333 {
		t.Fatalf("the step's input as the game saw it: %v", got)
	}
	if j := input(r, "JUMP"); len(j) != 1 || j[0]["simT"] != 0.0 {
		t.Fatalf("_input's jumps: %v; expected one, as the step began", j)
	}
	var keys bool
	value(t, p.inspect("k1", ".:space_jumps"), &keys)
	if keys {
		t.Fatal("while the agent plays, a player's space bar would jump")
	}
	// A right click (press and release in one step), and text; a pointer
	// without pressed leaves its buttons as they are, and no text types
	// nothing.
	r = p.step(0, map[string]any{"name": "pointer", "x": 100, "y": 50, "button": "right", "pressed": true},
		map[string]any{"name": "pointer", "x": 100, "y": 50, "button": "right", "pressed": false},
		map[string]any{"name": "text", "text": "Hi 5"}, map[string]any{"name": "pointer", "x": 100, "y": 50, "button": "middle"},
		map[string]any{"name": "text"}, map[string]any{"name": "text", "text": ""})
	if r.end.typ() != "stepped" || len(r.events) != 0 {
		t.Fatalf("a look applies at the next step: %s %v", r.end.raw, r.events)
	}
	r = p.step(20, map[string]any{"name": "pointer", "x": 10.5, "y": 20, "pressed": true}, map[string]any{"name": "jump", "pressed": false})
	stepped(t, r, 66.667)
	var clicks []string
	typed := ""
	for _, e := range input(r, "CLICK") {
		clicks = append(clicks, fmt.Sprint(e["button"], e["pressed"], e["x"], e["y"]))
	}
	for _, e := range input(r, "TYPED") {
		typed = e["text"].(string)
	}
	// The typed space is text, not the jump it is bound to.
	if want := []string{"2 true 100 50", "2 false 100 50", "1 true 10.5 20"}; !slices.Equal(clicks, want) || typed != "Hi 5" || len(input(r, "JUMP")) != 0 {
		t.Fatalf("clicks %v, typed %q, events %v; expected %v, Hi 5 and no jump", clicks, typed, r.events, want)
	}
	var pointer struct{ X, Y float64 }
	value(t, p.inspect("i1", ".:pointer"), &pointer)
	var text string
	value(t, p.inspect("i2", ".:typed"), &text)
	if pointer.X != 10.5 || pointer.Y != 20 || text != "Hi 5" {
		t.Fatalf("inspect: pointer %+v, typed %q", pointer, text)
	}

	for _, c := range []struct {
		action   map[string]any
		contains string
	}{
		{map[string]any{"name": "secret", "pressed": true}, "unknown action"},
		{map[string]any{"name": "gas", "pressed": true}, "unknown action"},
		{map[string]any{"name": "ui_accept", "pressed": true}, "unknown action"},
		{map[string]any{"name": "throttle", "value": "full"}, "-1 to 1"},
		{map[string]any{"name": "stick", "x": 0.5}, "-1 to 1"},
		{map[string]any{"name": "pointer", "x": 321, "y": 0}, "0..320"},
		{map[string]any{"name": "pointer", "x": 1, "y": 1, "button": "side"}, "left, right or middle"},
		{map[string]any{"name": "text", "text": 5}, "text"},
		{map[string]any{"name": "pointer", "x": 1, "y": 1, "pressed": "yes"}, "pressed"},
		{map[string]any{"name": "jump", "pressed": true, "text": "a"}, "no text"},
	} {
		refused(t, p.step(10, c.action), "INVALID_INPUT", c.contains)
	}
	m := p.inspect("i3", ".:big")
	if e, _ := m.m["error"].(map[string]any); e == nil || e["code"] != "VALUE_TOO_LARGE" {
		t.Fatalf("inspect of 300 KB: %.300s", m.raw)
	}
	var one string
	value(t, p.inspect("i4", ".:big:0"), &one)
	m = p.inspect("i5", "/root/Cappy")
	if e, _ := m.m["error"].(map[string]any); len(one) != 1000 || e == nil || e["code"] != "UNKNOWN_QUERY" {
		t.Fatalf("inspect of the addon: %s", m.raw)
	}
	stepped(t, p.step(100, map[string]any{"name": "pointer", "x": 0, "y": 0, "pressed": false}, map[string]any{"name": "throttle", "value": -1}), 166.667)
	done := p.stop()
	var keys2 bool
	value(t, inspect(t, ctx, peer, "k2", ".:space_jumps"), &keys2)
	if !keys2 {
		t.Fatalf("after the play a player's space bar does not jump")
	}
	rep, end := replay(t, ctx, peer, "rep", done.Replay, protocol.Presentation{"timeScale": 0.5})
	if end.Completed == nil {
		t.Fatalf("replay: %+v", end.Failed)
	}
	sameEvents(t, p.events, rep, 0.5)
}

// TestHeldGameIdles: a game held between an agent's steps with nothing to
// do runs few frames (it drew 60 a second, in software almost half a
// core), yet answers at once: an inspect, a step and its picture still
// work after a long hold, and the steps still run exactly their frames.
func TestHeldGameIdles(t *testing.T) {
	t.Parallel()
	g := sysdeps.NeedGodot(t)
	ctx := timeout(t, 90*time.Second)
	peer, _, _ := connect(t, ctx, project(t, g, "adapters/godot/testdata/probe"), nil, "--headless", "--fixed-fps", "60", "--path", ".")
	p := recordAgent(t, ctx, peer, "a1", nil)
	stepped(t, p.step(0), 0)
	var f0, f1, f2 float64
	value(t, p.inspect("i1", "/root/Main:frames"), &f0)
	const hold = 3 * time.Second
	time.Sleep(hold)
	value(t, p.inspect("i2", "/root/Main:frames"), &f1)
	// Held at 60 frames a second it would have run 180; idle, the 30
	// frames after the last message and then 4 a second.
	if ran := f1 - f0; ran >= 80 {
		t.Fatalf("%v frames ran in %s of hold: the held game did not idle", ran, hold)
	}
	// Still exact after the idle: a step of 500 ms runs 30 frames.
	stepped(t, p.step(500), 500)
	value(t, p.inspect("i3", "/root/Main:frames"), &f2)
	if f2-f1 < 30 {
		t.Fatalf("a step of 500 ms ran %v frames, expected at least 30", f2-f1)
	}
	p.stop()
}
