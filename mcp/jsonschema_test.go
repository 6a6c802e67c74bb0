package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// TestPatchedJSONSchema: the JSON Schema library that mcp-go's server
// links is the copy in third_party (its metaschemas compile on first use,
// not at every start of the binary; see third_party/README.md), and it
// still validates: schemas of every draft compile against their
// metaschema (a malformed one is refused) and check instances, from
// several goroutines at once (the first use compiles the metaschemas);
// and mcp-go's input and output validation, which runs on it, accepts and
// refuses calls of every tool of ours by the tool's own schemas.
func TestPatchedJSONSchema(t *testing.T) {
	t.Run("replaced", func(t *testing.T) {
		if _, err := exec.LookPath("go"); err != nil {
			t.Skip("no go command (under Wine)")
		}
		out, err := exec.Command("go", "list", "-m", "-f", "{{.Version}} {{with .Replace}}{{.Path}}{{end}}", "github.com/santhosh-tekuri/jsonschema/v6").CombinedOutput()
		if err != nil {
			t.Fatalf("go list: %v %s", err, out)
		}
		if !strings.Contains(string(out), "third_party/santhosh-tekuri/jsonschema") {
			t.Fatalf("github.com/santhosh-tekuri/jsonschema/v6 %s is not replaced by the patched copy in third_party (go.work's replace names one version: a new one needs the patch again, see third_party/README.md)", strings.TrimSpace(string(out)))
		}
	})
	t.Run("drafts", func(t *testing.T) {
		drafts := []string{
			"http://json-schema.org/draft-04/schema#",
			"http://json-schema.org/draft-06/schema#",
			"http://json-schema.org/draft-07/schema#",
			"https://json-schema.org/draft/2019-09/schema",
			"https://json-schema.org/draft/2020-12/schema",
		}
		var wg sync.WaitGroup
		for i := range 3 {
			for _, draft := range drafts {
				wg.Go(func() {
					if err := checkDraft(draft, i); err != nil {
						t.Error(err)
					}
				})
			}
		}
		wg.Wait()
	})
	t.Run("mcp-go", func(t *testing.T) {
		srv := server.NewMCPServer("t", "1", server.WithInputSchemaValidation(), server.WithOutputSchemaValidation())
		var out map[string]any // the structured content the next call returns
		called := 0
		for _, tl := range registry() {
			srv.AddTool(tl.Def, func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
				called++
				return &mcpgo.CallToolResult{Content: []mcpgo.Content{mcpgo.NewTextContent("{}")}, StructuredContent: out}, nil
			})
		}
		call := func(tool, args string) *mcpgo.CallToolResult {
			t.Helper()
			msg := srv.HandleMessage(context.Background(), json.RawMessage(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, tool, args)))
			resp, ok := msg.(mcpgo.JSONRPCResponse)
			if !ok {
				t.Fatalf("%s: %#v", tool, msg)
			}
			res, ok := resp.Result.(*mcpgo.CallToolResult)
			if !ok {
				t.Fatalf("%s: result %#v", tool, resp.Result)
			}
			return res
		}
		text := func(r *mcpgo.CallToolResult) string {
			var b strings.Builder
			for _, c := range r.Content {
				if tc, ok := c.(mcpgo.TextContent); ok {
					b.WriteString(tc.Text)
				}
			}
			return b.String()
		}
		// Input: wrong type, unknown argument, missing required one.
		for _, args := range []string{`{"summary":5,"paths":["a"]}`, `{"summary":"s","paths":["a"],"colour":"red"}`, `{"paths":["a"]}`} {
			if r := call("publish_intent", args); !r.IsError || called != 0 {
				t.Errorf("publish_intent %s: not refused by input validation: %s", args, text(r))
			}
		}
		out = map[string]any{"news": map[string]any{}}
		if r := call("publish_intent", `{"summary":"rebalance the boss","paths":["src/boss.gd"]}`); r.IsError || called != 1 {
			t.Fatalf("a valid publish_intent was refused: %s", text(r))
		}
		// Output: a field of the wrong type.
		out = map[string]any{"news": "none"}
		if r := call("publish_intent", `{"summary":"rebalance the boss","paths":["src/boss.gd"]}`); !r.IsError {
			t.Errorf("output validation let a wrong result through: %s", text(r))
		}
	})
}

// checkDraft compiles a schema of draft (a date format, a minimum, a
// required property) and checks a good and a bad instance; a schema that
// breaks the draft's metaschema must be refused.
func checkDraft(draft string, n int) error {
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	url := fmt.Sprintf("mem://schema-%d.json", n)
	doc := map[string]any{"$schema": draft, "type": "object", "required": []any{"when"},
		"properties": map[string]any{"when": map[string]any{"type": "string", "format": "date"}, "n": map[string]any{"type": "integer", "minimum": 1.0}}}
	if err := c.AddResource(url, doc); err != nil {
		return err
	}
	sch, err := c.Compile(url)
	if err != nil {
		return fmt.Errorf("%s: %v", draft, err)
	}
	if err := sch.Validate(map[string]any{"when": "2026-12-03", "n": json.Number("2")}); err != nil {
		return fmt.Errorf("%s: a valid instance: %v", draft, err)
	}
	for _, bad := range []map[string]any{{"n": json.Number("2")}, {"when": "yesterday"}, {"when": "2026-12-03", "n": json.Number("0")}} {
		if sch.Validate(bad) == nil {
			return fmt.Errorf("%s: %v passed", draft, bad)
		}
	}
	c = jsonschema.NewCompiler()
	broken := map[string]any{"$schema": draft, "type": 5, "minimum": "one"}
	if err := c.AddResource(url, broken); err != nil {
		return err
	}
	if _, err := c.Compile(url); err == nil {
		return fmt.Errorf("%s: a schema against its metaschema (type 5) compiled", draft)
	}
	return nil
}
