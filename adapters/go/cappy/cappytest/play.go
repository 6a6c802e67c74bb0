package cappytest

import (
	"context"
	"fmt"

	"github.com/crosscode/crosscode-mcp/protocol"
)

// StepCapture is what an adapter sent for one step: its events and frames
// in order, and its answer (stepped or step_refused).
type StepCapture struct {
	Events  []protocol.Event
	Frames  []protocol.Frame
	Stepped *protocol.Stepped
	Refused *protocol.StepRefused
}

// Picture is the step's frame of the paused game (reason "step"), or nil.
func (c *StepCapture) Picture() *protocol.Frame {
	for i := len(c.Frames) - 1; i >= 0; i-- {
		if c.Frames[i].Reason == "step" {
			return &c.Frames[i]
		}
	}
	return nil
}

// Step sends a step of the agent-controlled recording op and reads the
// adapter's messages until its stepped or step_refused, checking frames
// against req as CollectCapture does.
func (p *Peer) Step(ctx context.Context, op, id string, actions []protocol.ActionInput, ms float64, req *protocol.FramesRequest) (*StepCapture, error) {
	if actions == nil {
		actions = []protocol.ActionInput{}
	}
	if err := p.Send(ctx, protocol.Step{Type: "step", Op: op, ID: id, Actions: actions, Ms: ms}); err != nil {
		return nil, err
	}
	c := &StepCapture{}
	for {
		m, err := p.Recv(ctx)
		if err != nil {
			return c, err
		}
		switch {
		case m.Op() != op:
			return c, fmt.Errorf("cappytest: %s for op %q during step %s of %q", m.Type, m.Op(), id, op)
		case m.Event != nil:
			c.Events = append(c.Events, *m.Event)
		case m.Frame != nil:
			if err := checkFrame(req, c.Frames, m.Frame); err != nil {
				return c, err
			}
			c.Frames = append(c.Frames, *m.Frame)
		case m.Stepped != nil:
			if m.Stepped.ID != id {
				return c, fmt.Errorf("cappytest: stepped for step %q, expected %q", m.Stepped.ID, id)
			}
			c.Stepped = m.Stepped
			return c, nil
		case m.StepRefused != nil:
			if m.StepRefused.ID != id {
				return c, fmt.Errorf("cappytest: step_refused for step %q, expected %q", m.StepRefused.ID, id)
			}
			c.Refused = m.StepRefused
			return c, nil
		default:
			return c, fmt.Errorf("cappytest: unexpected %s during step %s", m.Type, id)
		}
	}
}

// Inspect sends an inspect and reads the adapter's answer.
func (p *Peer) Inspect(ctx context.Context, id, query string) (*protocol.InspectResult, error) {
	if err := p.Send(ctx, protocol.Inspect{Type: "inspect", ID: id, Query: query}); err != nil {
		return nil, err
	}
	m, err := p.Expect(ctx, "inspect_result", "")
	if err != nil {
		return nil, err
	}
	if m.InspectResult.ID != id {
		return nil, fmt.Errorf("cappytest: inspect_result for %q, expected %q", m.InspectResult.ID, id)
	}
	return m.InspectResult, nil
}

// Step is Peer.Step, failing the test on an error.
func (h *Harness) Step(op, id string, actions []protocol.ActionInput, ms float64, req *protocol.FramesRequest) *StepCapture {
	h.T.Helper()
	c, err := h.Peer.Step(h.Ctx, op, id, actions, ms, req)
	if err != nil {
		h.T.Fatal(err)
	}
	return c
}

// Inspect is Peer.Inspect, failing the test on an error.
func (h *Harness) Inspect(id, query string) *protocol.InspectResult {
	h.T.Helper()
	r, err := h.Peer.Inspect(h.Ctx, id, query)
	if err != nil {
		h.T.Fatal(err)
	}
	return r
}
