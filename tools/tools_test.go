package tools

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
)

func text(t *testing.T, res *mcpgo.CallToolResult) string {
	t.Helper()
	if len(res.Content) != 1 {
		t.Fatalf("%d contents", len(res.Content))
	}
	return res.Content[0].(mcpgo.TextContent).Text
}

// shrinking is a result that can drop its extra.
type shrinking struct {
	Body  string   `json:"body"`
	Extra []string `json:"extra"`
}

func (s *shrinking) Shrink() bool {
	if len(s.Extra) == 0 {
		return false
	}
	s.Extra = s.Extra[:len(s.Extra)/2]
	return true
}

// TestResultSize: a result never exceeds MaxResultBytes, escaping
// included: it shrinks when it can, and else is a tool error saying so.
func TestResultSize(t *testing.T) {
	// 4,000 '<' encode as 24,000 bytes.
	res := Result(map[string]string{"x": strings.Repeat("<", 4000)})
	if msg := text(t, res); !res.IsError || res.StructuredContent != nil || !strings.Contains(msg, "RESULT_TOO_LARGE") || len(msg) > 1000 {
		t.Fatalf("oversized result: %v %.200s", res.IsError, msg)
	}
	out := &shrinking{Body: "kept", Extra: make([]string, 64)}
	for i := range out.Extra {
		out.Extra[i] = strings.Repeat("e", 1000)
	}
	res = Result(out)
	if msg := text(t, res); res.IsError || len(msg) > MaxResultBytes || !strings.Contains(msg, `"body":"kept"`) || len(out.Extra) == 0 {
		t.Fatalf("shrunk result: %v, %d bytes, %d extras", res.IsError, len(msg), len(out.Extra))
	}
	if res := Result(map[string]int{"n": 1}); res.IsError || text(t, res) != `{"n":1}` {
		t.Fatalf("small result: %+v", res)
	}
}

// TestFit measures items as they encode, escaping included.
func TestFit(t *testing.T) {
	items := []string{strings.Repeat("<", 100), "b", "c"} // 602, 3 and 3 bytes encoded
	if kept, left := Fit(items, 610); len(kept) != 2 || left != 1 {
		t.Fatalf("kept %d, left %d", len(kept), left)
	}
	if kept, left := Fit(items, 10); len(kept) != 1 || left != 2 {
		t.Fatalf("the first item is always kept: kept %d, left %d", len(kept), left)
	}
	if kept, left := Fit(items, 1000); len(kept) != 3 || left != 0 {
		t.Fatalf("kept %d, left %d", len(kept), left)
	}
	if kept, left := Fit([]string{}, 10); kept == nil || left != 0 {
		t.Fatal("an empty list stays an empty list")
	}
}

// TestHandler: arguments bind strictly; errors the agent can act on are
// tool errors, others fail the call.
func TestHandler(t *testing.T) {
	type in struct {
		N int `json:"n"`
	}
	bad := errors.New("bad input")
	h := Handler(func(err error) (string, bool) { return "fix it: " + err.Error(), errors.Is(err, bad) },
		func(_ context.Context, _ mcpgo.CallToolRequest, in in) (*map[string]int, error) {
			switch in.N {
			case 1:
				return nil, bad
			case 2:
				return nil, errors.New("broken")
			}
			return &map[string]int{"n": in.N}, nil
		})
	call := func(args string) (*mcpgo.CallToolResult, error) {
		var req mcpgo.CallToolRequest
		req.Params.RawArguments = json.RawMessage(args)
		return h(context.Background(), req)
	}
	if res, err := call(`{"n":3}`); err != nil || res.IsError || text(t, res) != `{"n":3}` {
		t.Fatalf("ok: %+v %v", res, err)
	}
	if res, err := call(`{"n":"x"}`); err != nil || !res.IsError || !strings.Contains(text(t, res), `argument "n" must be int`) {
		t.Fatalf("wrong type: %+v %v", res, err)
	}
	if res, err := call(`{"m":1}`); err != nil || !res.IsError || !strings.Contains(text(t, res), "input schema") {
		t.Fatalf("unknown field: %+v %v", res, err)
	}
	if res, err := call(`{"n":1}`); err != nil || !res.IsError || text(t, res) != "fix it: bad input" {
		t.Fatalf("actionable: %+v %v", res, err)
	}
	if _, err := call(`{"n":2}`); err == nil {
		t.Fatal("an error the agent cannot act on is a tool result")
	}
}
