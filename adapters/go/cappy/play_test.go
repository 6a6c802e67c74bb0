package cappy_test

import (
	"context"
	"encoding/json"
	"errors"
	"image"
	"image/color"
	"strings"
	"sync"
	"testing"

	"github.com/crosscode/crosscode-mcp/adapters/go/cappy"
	"github.com/crosscode/crosscode-mcp/adapters/go/cappy/cappytest"
	"github.com/crosscode/crosscode-mcp/protocol"
)

// walker is a game an agent plays: a dot that walks by 1 per 10 ms tick
// while "walk" is held, steered by "dir"; inspect "pos" reads it.
type walker struct {
	mu        sync.Mutex
	pos, simT float64
	refuseAll bool
}

func (g *walker) Info() cappy.Info {
	return cappy.Info{Game: protocol.GameInfo{ID: "walker"}, Capabilities: []string{protocol.CapFreeformRecording, protocol.CapFrames, protocol.CapInput, protocol.CapInspect}}
}
func (g *walker) Scenarios() []protocol.Scenario { return nil }
func (g *walker) Actions() []protocol.Action {
	return []protocol.Action{{Name: "walk", Kind: protocol.ActionButton, Description: "Walk while held."}, {Name: "dir", Kind: protocol.ActionAxis}}
}
func (g *walker) RunScenario(context.Context, *cappy.Op, string, map[string]any, protocol.Presentation) error {
	return errors.New("none")
}
func (g *walker) Replay(context.Context, *cappy.Op, *protocol.ReplayPayload, protocol.Presentation) error {
	return errors.New("none")
}
func (g *walker) Inspect(q string) (any, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch q {
	case "":
		return []string{"pos", "huge"}, nil
	case "pos":
		return map[string]any{"pos": g.pos, "simT": g.simT}, nil
	case "huge":
		return strings.Repeat("x", protocol.MaxInspectBytes), nil
	}
	return nil, cappy.Failf("UNKNOWN_QUERY", "no %q; ask pos", q)
}

func (g *walker) Record(ctx context.Context, op *cappy.Op) (*protocol.ReplayPayload, error) {
	if !op.AgentControlled() {
		<-op.Stopped()
		return cappy.InlineReplay([]byte("free"), "walker/1"), nil
	}
	var log []string
	for {
		st, err := op.NextStep(ctx)
		if err != nil {
			return nil, err
		}
		if st == nil {
			return cappy.InlineReplay([]byte(strings.Join(log, ";")), "walker/1"), nil
		}
		if g.refuseAll {
			st.Refuse("not now")
			continue
		}
		end := g.simT + st.Ms
		for g.simT+10 <= end {
			g.mu.Lock()
			if st.Input.Pressed("walk") {
				g.pos += 1 + st.Input.Value("dir")
			}
			g.simT += 10
			g.mu.Unlock()
			if err := op.Emit(g.simT, "TICK", nil, map[string]any{"pos": g.pos}); err != nil {
				return nil, err
			}
		}
		log = append(log, st.ID)
		pos := g.pos
		if err := st.Done(end, end, &cappy.StepFrame{T: g.simT, Render: func() image.Image {
			img := image.NewRGBA(image.Rect(0, 0, 64, 32))
			img.Set(int(pos)%64, 16, color.White)
			return img
		}}); err != nil {
			return nil, err
		}
	}
}

func TestAgentPlay(t *testing.T) {
	g := &walker{}
	h := cappytest.Start(t, g)
	h.Handshake()
	if a := h.Peer.Actions; a == nil || len(a.Actions) != 2 || a.Actions[0].Name != "walk" {
		t.Fatalf("actions after welcome: %+v", a)
	}
	fr := &protocol.FramesRequest{FPS: 2, MaxWidth: 640, Formats: []string{protocol.MimePNG}}
	h.Send(&protocol.RecordStart{Type: "record_start", Op: "op_1", Frames: fr, Control: protocol.ControlAgent})
	h.Expect("started", "op_1")
	on, half := true, 0.5
	c := h.Step("op_1", "s1", []protocol.ActionInput{{Name: "walk", Pressed: &on}, {Name: "dir", Value: &half}}, 100, fr)
	if c.Stepped == nil || c.Stepped.T != 100 || c.Stepped.SimT != 100 || len(c.Events) != 10 || c.Picture() == nil || c.Picture().T != 100 {
		t.Fatalf("step 1: %+v", c)
	}
	// The button stays held; ms 0 applies and looks.
	c = h.Step("op_1", "s2", nil, 0, fr)
	if c.Stepped == nil || c.Stepped.T != 100 || len(c.Events) != 0 || c.Picture() == nil {
		t.Fatalf("step 2: %+v", c)
	}
	c = h.Step("op_1", "s3", nil, 50, fr)
	if c.Stepped == nil || len(c.Events) != 5 || !strings.Contains(string(c.Events[4].Payload), `"pos":22.5`) {
		t.Fatalf("step 3 (held): %+v", c.Events)
	}
	// Refused before the game sees them: an unknown action, a bad value.
	two := 2.0
	for _, in := range [][]protocol.ActionInput{{{Name: "jump", Pressed: &on}}, {{Name: "dir", Value: &two}}, {{Name: "walk"}}} {
		c = h.Step("op_1", "bad", in, 10, fr)
		if c.Refused == nil || c.Refused.Code != protocol.CappyInvalidInput || len(c.Events) != 0 {
			t.Fatalf("refusal %+v", c)
		}
	}
	// Inspect, at any time.
	r := h.Inspect("i1", "pos")
	if r.Error != nil || string(r.Value) != `{"pos":22.5,"simT":150}` {
		t.Fatalf("inspect pos: %s %+v", r.Value, r.Error)
	}
	if r := h.Inspect("i2", "nope"); r.Error == nil || r.Error.Code != "UNKNOWN_QUERY" {
		t.Fatalf("inspect nope: %+v", r)
	}
	if r := h.Inspect("i3", "huge"); r.Error == nil || r.Error.Code != cappy.CodeValueTooLarge {
		t.Fatalf("inspect huge: %+v", r)
	}
	// Stop: the replay holds the steps.
	h.Send(&protocol.OpMessage{Type: "stop", Op: "op_1"})
	_, end := h.Collect("op_1")
	if end.Completed == nil {
		t.Fatalf("end %+v", end)
	}
	data, err := end.Completed.Replay.DecodeInline()
	if err != nil || string(data) != "s1;s2;s3" {
		t.Fatalf("replay %q %v", data, err)
	}
	// A step after the end, or of a recording the player plays: refused.
	c = h.Step("op_1", "s4", nil, 10, fr)
	if c.Refused == nil || c.Refused.Code != protocol.CappyOutOfState {
		t.Fatalf("step after the end: %+v", c)
	}
	h.Send(&protocol.RecordStart{Type: "record_start", Op: "op_2"})
	h.Expect("started", "op_2")
	if c = h.Step("op_2", "s1", nil, 10, nil); c.Refused == nil || c.Refused.Code != protocol.CappyOutOfState {
		t.Fatalf("step of a free recording: %+v", c)
	}
}

func TestAgentPlayGameRefuses(t *testing.T) {
	h := cappytest.Start(t, &walker{refuseAll: true})
	h.Handshake()
	h.Send(&protocol.RecordStart{Type: "record_start", Op: "op_1", Control: protocol.ControlAgent})
	h.Expect("started", "op_1")
	if c := h.Step("op_1", "s1", nil, 10, nil); c.Refused == nil || c.Refused.Message != "not now" {
		t.Fatalf("%+v", c)
	}
}

func TestAgentControlNeedsInput(t *testing.T) {
	g := newTestGame()
	h := cappytest.Start(t, g)
	h.Handshake()
	h.Send(&protocol.RecordStart{Type: "record_start", Op: "op_1", Control: protocol.ControlAgent})
	if m := h.Expect("failed", "op_1"); m.Failed.Code != protocol.CappyCapabilityMissing {
		t.Fatalf("%+v", m.Failed)
	}
	// Inspect of a game without it: an error answer, not silence.
	r := h.Inspect("i1", "x")
	if r.Error == nil || r.Error.Code != protocol.CappyCapabilityMissing {
		t.Fatalf("%+v", r)
	}
	var v any
	if json.Unmarshal(r.Value, &v) == nil {
		t.Fatalf("value %s", r.Value)
	}
}
