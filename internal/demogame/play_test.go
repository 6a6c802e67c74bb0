package demogame_test

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/crosscode/crosscode-mcp/internal/demogame"
	"github.com/crosscode/crosscode-mcp/protocol"
)

// scriptStep is one step of a scripted agent.
type scriptStep struct {
	actions []protocol.ActionInput
	ms      float64
}

func btn(name string, on bool) protocol.ActionInput {
	return protocol.ActionInput{Name: name, Pressed: &on}
}
func walk(x, y float64) protocol.ActionInput { return protocol.ActionInput{Name: "move", X: &x, Y: &y} }

// agentScript walks the knight to the boss's path, waits, and fights: ten
// steps, one of them a look (ms 0).
var agentScript = []scriptStep{
	{[]protocol.ActionInput{walk(1, 0)}, 500},
	{nil, 500},
	{nil, 0},
	{[]protocol.ActionInput{walk(1, 0.2)}, 500},
	{[]protocol.ActionInput{walk(0, 0), btn("attack", true)}, 1000},
	{nil, 500},
	{[]protocol.ActionInput{btn("cast", true)}, 250},
	{[]protocol.ActionInput{btn("cast", false)}, 750},
	{[]protocol.ActionInput{btn("dodge", true), walk(0, -1)}, 120},
	{[]protocol.ActionInput{btn("dodge", false), walk(0, 0)}, 1380},
}

// played is what an agent's play sent.
type played struct {
	events  []protocol.Event
	frames  []protocol.Frame
	stepped []protocol.Stepped
	replay  *protocol.ReplayPayload
	inspect map[string]json.RawMessage
}

var pngFrames = &protocol.FramesRequest{FPS: 2, MaxWidth: 640, Formats: []string{protocol.MimePNG}}

// playScript plays agentScript over the wire against seed, inspecting
// after the fifth step.
func playScript(t *testing.T, seed uint64) *played {
	t.Helper()
	h := connect(t, &demogame.Game{Seed: seed})
	if a := h.Peer.Actions; a == nil || len(a.Actions) != 5 {
		t.Fatalf("actions %+v", a)
	}
	h.Send(&protocol.RecordStart{Type: "record_start", Op: "op_a", Frames: pngFrames, Control: protocol.ControlAgent})
	h.Expect("started", "op_a")
	p := &played{inspect: map[string]json.RawMessage{}}
	for i, s := range agentScript {
		c := h.Step("op_a", "s"+string(rune('a'+i)), s.actions, s.ms, pngFrames)
		if c.Stepped == nil {
			t.Fatalf("step %d refused: %+v", i, c.Refused)
		}
		if c.Picture() == nil {
			t.Fatalf("step %d: no picture of the paused game", i)
		}
		p.events = append(p.events, c.Events...)
		p.frames = append(p.frames, c.Frames...)
		p.stepped = append(p.stepped, *c.Stepped)
		if i == 5 {
			for _, q := range []string{"hero", "boss", "projectiles", "world", ""} {
				r := h.Inspect("i_"+q, q)
				if r.Error != nil {
					t.Fatalf("inspect %q: %+v", q, r.Error)
				}
				p.inspect[q] = r.Value
			}
			if r := h.Inspect("i_x", "dragon"); r.Error == nil || r.Error.Code != "UNKNOWN_QUERY" {
				t.Fatalf("inspect dragon: %+v", r)
			}
		}
	}
	h.Send(&protocol.OpMessage{Type: "stop", Op: "op_a"})
	c := h.CollectCapture("op_a", pngFrames)
	if c.End.Completed == nil || c.End.Completed.Replay == nil {
		t.Fatalf("end %+v", c.End)
	}
	p.replay = c.End.Completed.Replay
	return p
}

func TestAgentPlayIsDeterministicAndReplays(t *testing.T) {
	a := playScript(t, 7)
	var total float64
	for i, s := range a.stepped {
		total += agentScript[i].ms
		if s.T != total || s.SimT != total {
			t.Fatalf("step %d stepped at t=%v simT=%v, want %v", i, s.T, s.SimT, total)
		}
	}
	want := []string{"SPAWN", "BOSS_INTRO", "BOSS_PHASE", "HIT", "SHIELD_UP", "DODGE"}
	got := names(a.events)
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Fatalf("the script's play lacks %s: %v", w, got)
		}
	}
	if !bytes.Contains(a.inspect["boss"], []byte(`"present":true`)) || !bytes.Contains(a.inspect["hero"], []byte(`"class":"knight"`)) ||
		!bytes.Contains(a.inspect[""], []byte(`"projectiles"`)) {
		t.Fatalf("inspect: %s", a.inspect)
	}

	// The same steps from the same seed: the same events and pictures.
	b := playScript(t, 7)
	sameEvents(t, a.events, b.events, 1)
	if len(a.frames) != len(b.frames) {
		t.Fatalf("%d frames, then %d", len(a.frames), len(b.frames))
	}
	for i := range a.frames {
		if a.frames[i].T != b.frames[i].T || !bytes.Equal(a.frames[i].Data, b.frames[i].Data) {
			t.Fatalf("frame %d differs (t %v, %v)", i, a.frames[i].T, b.frames[i].T)
		}
	}
	if a.replay.SHA256 != b.replay.SHA256 {
		t.Fatal("the replays differ")
	}

	// The replay at timeScale 0.5 and 1: the same events, and at every
	// simulation time both have a picture, the same picture.
	for _, ts := range []float64{0.5, 1} {
		h := connect(t, demogame.New())
		h.Send(&protocol.PrepareReplay{Type: "prepare_replay", Op: "op_r", Replay: a.replay, Presentation: protocol.Presentation{"timeScale": ts}, Frames: pngFrames})
		h.Expect("ready", "op_r")
		h.Send(&protocol.OpMessage{Type: "start", Op: "op_r"})
		h.Expect("started", "op_r")
		c := h.CollectCapture("op_r", pngFrames)
		if c.End.Completed == nil {
			t.Fatalf("replay at %g: %+v", ts, c.End)
		}
		sameEvents(t, a.events, c.Events, 1/ts)
		bySim := map[float64][]byte{}
		for _, f := range a.frames {
			bySim[f.T] = f.Data
		}
		compared := 0
		for _, f := range c.Frames {
			if rec, ok := bySim[f.T*ts]; ok {
				compared++
				if !bytes.Equal(rec, f.Data) {
					t.Fatalf("replay at %g: the picture at simT %v differs from the recording's", ts, f.T*ts)
				}
			}
		}
		if compared < 5 {
			t.Fatalf("replay at %g: only %d pictures at the recording's times", ts, compared)
		}
	}
}

func TestAgentPlayRefusesAndInspectsNothing(t *testing.T) {
	g := demogame.New()
	if _, err := g.Inspect("boss"); err == nil || !strings.Contains(err.Error(), "NOT_RUNNING") {
		t.Fatalf("inspect with nothing played: %v", err)
	}
	h := connect(t, g)
	h.Send(&protocol.RecordStart{Type: "record_start", Op: "op_a", Control: protocol.ControlAgent})
	h.Expect("started", "op_a")
	two := 2.0
	if c := h.Step("op_a", "s1", []protocol.ActionInput{{Name: "move", X: &two, Y: &two}}, 100, nil); c.Refused == nil || c.Refused.Code != protocol.CappyInvalidInput {
		t.Fatalf("%+v", c)
	}
	if c := h.Step("op_a", "s2", []protocol.ActionInput{btn("jump", true)}, 100, nil); c.Refused == nil {
		t.Fatalf("%+v", c)
	}
	if c := h.Step("op_a", "s3", nil, 100, nil); c.Stepped == nil || c.Stepped.SimT != 100 || len(c.Events) == 0 {
		t.Fatalf("%+v", c)
	}
}
