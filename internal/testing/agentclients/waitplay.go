package agentclients

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
)

// WaitPlay is a claim that waits its turn (issue 24), in a real client:
// OtherActor holds src/boss.go; the model claims it with waitSeconds
// instead of polling; while that call waits, OtherActor releases (Release
// does that once the waiting claim is in the log), and the same call
// answers granted, with the lease from the grant.
//
//  1. claim src/boss.go with waitSeconds 300
//  2. a final text.
type WaitPlay struct {
	steps []*step
}

// WaitPrompt is what the user asks in the wait play.
const WaitPrompt = "Wait for src/boss.go (Grace holds it) and tell me when it is yours."

// Script is the wait play's Script.
func (p *WaitPlay) Script(r *Request) Reply {
	for i := range r.Results {
		if n := len(p.steps); n > 0 && p.steps[n-1].result == nil {
			res := r.Results[i]
			p.steps[n-1].result = &res
		}
	}
	if len(p.steps) > 0 {
		if p.steps[0].result == nil {
			return Reply{Text: "The result of my last call did not come back."}
		}
		return Reply{Text: "src/boss.go is mine now."}
	}
	name := r.Tool("claim")
	if name == "" {
		return Reply{Text: "No claim tool is offered."}
	}
	s := &step{what: "claim that waits", tool: "claim", call: Call{ID: "call_wait1", Name: name,
		Args: map[string]any{"patterns": []string{"src/boss.go"}, "reason": "tune the boss", "waitSeconds": 300}}}
	p.steps = append(p.steps, s)
	return Reply{Calls: []Call{s.call}}
}

// Release has other release its claims once the client's claim waits for
// them (other's check_conflicts shows it queued; polled, for up to two
// minutes). It runs beside the client, so it reports by its error.
func (p *WaitPlay) Release(other *mcpclient.Client) error {
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		out, err := callTool(other, "check_conflicts", map[string]any{"paths": []string{"src/boss.go"}})
		if err != nil {
			return err
		}
		if b, _ := json.Marshal(out["claims"]); strings.Contains(string(b), `"status":"queued"`) && strings.Contains(string(b), Actor) {
			_, err := callTool(other, "release_claim", map[string]any{"all": true})
			return err
		}
	}
	return errors.New("the client's claim never waited for src/boss.go")
}

// callTool is CallTool for a goroutine that is not the test's: errors
// are returned.
func callTool(c *mcpclient.Client, tool string, args map[string]any) (map[string]any, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req := mcpgo.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = tool, args
	res, err := c.CallTool(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", tool, err)
	}
	if res.IsError {
		return nil, fmt.Errorf("%s: tool error: %v", tool, res.Content)
	}
	var out map[string]any
	b, _ := json.Marshal(res.StructuredContent)
	return out, json.Unmarshal(b, &out)
}

// Check checks that the waiting call itself answered granted, as one
// result the model read, not an error.
func (p *WaitPlay) Check(t *testing.T, c *Client, m *Model, res *RunResult) {
	t.Helper()
	for _, f := range m.Failures() {
		t.Errorf("model endpoint: %s", f)
	}
	if res.ExitCode != 0 {
		t.Errorf("%s exited %d; stderr: %s", c.Name, res.ExitCode, tail(res.Stderr, 2000))
	}
	if len(p.steps) != 1 || p.steps[0].result == nil {
		t.Fatalf("the wait play stopped before the claim's result came back (%d steps)", len(p.steps))
	}
	r := p.steps[0].result
	txt := r.Text
	if !strings.Contains(txt, `"granted"`) || !strings.Contains(txt, "grantedAt") || !strings.Contains(txt, "Granted after waiting") ||
		(r.ErrorFlag && r.IsError) || res.ToolErrors[p.steps[0].call.ID] {
		t.Errorf("the waiting claim: want granted after waiting, got %s", tail(txt, 600))
	}
}
