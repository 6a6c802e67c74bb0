package tools

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
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
	if res, err := call(`{"n":"x"}`); err != nil || !res.IsError || !strings.Contains(text(t, res), `n: expected a whole number, got the string "x"`) {
		t.Fatalf("wrong type: %+v %v", res, err)
	}
	if res, err := call(`{"m":1}`); err != nil || !res.IsError || !strings.Contains(text(t, res), "m: no such argument; the arguments are n") {
		t.Fatalf("unknown field: %+v %v", res, err)
	}
	if res, err := call(`{"n":1}`); err != nil || !res.IsError || text(t, res) != "fix it: bad input" {
		t.Fatalf("actionable: %+v %v", res, err)
	}
	if _, err := call(`{"n":2}`); err == nil {
		t.Fatal("an error the agent cannot act on is a tool result")
	}
}

// TestBindPlainWords: a wrong argument is told in JSON's words: which
// argument, what was expected, what was sent; never a Go type.
func TestBindPlainWords(t *testing.T) {
	type inner struct {
		Difficulty int `json:"difficulty"`
	}
	type in struct {
		Patterns  []string          `json:"patterns,omitempty"`
		Exclusive *bool             `json:"exclusive,omitempty"`
		TTL       int               `json:"ttlMinutes,omitempty"`
		Scale     float64           `json:"scale,omitempty"`
		Params    inner             `json:"parameters"`
		Grid      [][]int           `json:"grid,omitempty"`
		Tags      map[string]string `json:"tags,omitempty"`
		Any       any               `json:"any,omitempty"`
	}
	for _, tc := range []struct{ args, want string }{
		{`{"patterns": 5}`, "patterns: expected a list of strings, got the number 5"},
		{`{"patterns": "src/a.go"}`, `patterns: expected a list of strings, got the string "src/a.go"`},
		{`{"patterns": ["a", 7]}`, "patterns: expected a list of strings, got the number 7 in it"},
		{`{"patterns": {"a": 1}}`, "patterns: expected a list of strings, got an object"},
		{`{"exclusive": "yes"}`, `exclusive: expected true or false, got the string "yes"`},
		{`{"ttlMinutes": 1.5}`, "ttlMinutes: expected a whole number, got the number 1.5"},
		{`{"ttlMinutes": true}`, "ttlMinutes: expected a whole number, got true"},
		{`{"scale": [1]}`, "scale: expected a number, got a list"},
		{`{"parameters": {"difficulty": "hard"}}`, `parameters.difficulty: expected a whole number, got the string "hard"`},
		{`{"grid": [[1], "x"]}`, `grid: expected a list of lists of whole numbers, got the string "x" in it`},
		{`{"tags": []}`, "tags: expected an object, got a list"},
		{`{"patterns": "` + strings.Repeat("x", 60) + `"}`, "patterns: expected a list of strings, got a string"},
		{`{"pattern": ["a"]}`, "pattern: no such argument; the arguments are patterns, exclusive, ttlMinutes, scale, parameters, grid, tags, any"},
		{`[1]`, "the arguments must be an object of named arguments, got a list"},
		{`{"patterns": [`, "the arguments are not valid JSON"},
	} {
		var req mcpgo.CallToolRequest
		req.Params.RawArguments = json.RawMessage(tc.args)
		_, err := Bind[in](req)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.args, err, tc.want)
		}
		if err != nil && regexp.MustCompile(`\b(slice|int|float64|string\]|map\[|struct|json:|Go)\b`).MatchString(strings.ReplaceAll(err.Error(), tc.args, "")) {
			t.Errorf("%s: Go jargon in %q", tc.args, err)
		}
	}
}
