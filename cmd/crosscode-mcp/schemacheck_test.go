package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	mcpclient "github.com/mark3labs/mcp-go/client"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	validator "github.com/santhosh-tekuri/jsonschema/v6"
)

// Every tool result the tests get is checked as the official TypeScript
// SDK client checks it (what most MCP clients build on): a tool with an
// output schema must answer with structuredContent unless it is an error,
// and structuredContent, when present (errors included), must match the
// schema from tools/list. mcp-go's client checks neither.
func init() { checkResult = checkOutputSchema }

// clientSchemas are one client's compiled output schemas, by tool, read
// once from its tools/list.
type clientSchemas struct {
	once   sync.Once
	byTool map[string]*validator.Schema
	err    error
}

var outputSchemas sync.Map // *mcpclient.Client -> *clientSchemas

func schemasOf(ctx context.Context, c *mcpclient.Client) (map[string]*validator.Schema, error) {
	v, _ := outputSchemas.LoadOrStore(c, &clientSchemas{})
	cs := v.(*clientSchemas)
	cs.once.Do(func() {
		cs.byTool = map[string]*validator.Schema{}
		res, err := c.ListTools(ctx, mcpgo.ListToolsRequest{})
		if err != nil {
			cs.err = fmt.Errorf("tools/list: %w", err)
			return
		}
		comp := validator.NewCompiler()
		for _, tool := range res.Tools {
			if tool.OutputSchema.Type == "" {
				continue
			}
			b, err := json.Marshal(tool.OutputSchema)
			if err != nil {
				cs.err = err
				return
			}
			doc, err := validator.UnmarshalJSON(bytes.NewReader(b))
			if err != nil {
				cs.err = err
				return
			}
			url := "mem://" + tool.Name + ".json"
			if err := comp.AddResource(url, doc); err != nil {
				cs.err = err
				return
			}
			if cs.byTool[tool.Name], err = comp.Compile(url); err != nil {
				cs.err = fmt.Errorf("%s: output schema does not compile: %w", tool.Name, err)
				return
			}
		}
	})
	return cs.byTool, cs.err
}

func checkOutputSchema(ctx context.Context, c *mcpclient.Client, tool string, res *mcpgo.CallToolResult) error {
	schemas, err := schemasOf(ctx, c)
	if err != nil {
		return err
	}
	s := schemas[tool]
	if s == nil {
		return nil
	}
	if res.StructuredContent == nil {
		if res.IsError {
			return nil
		}
		return fmt.Errorf("%s has an output schema but answered without structuredContent", tool)
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return err
	}
	doc, err := validator.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return err
	}
	if err := s.Validate(doc); err != nil {
		return fmt.Errorf("%s: structuredContent does not match its output schema (a strict client rejects it): %v\n%.2000s", tool, err, b)
	}
	return nil
}

// callChecked is a.c.CallTool with the result checked like callTool's.
func (a *agent) callChecked(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
	res, err := a.c.CallTool(ctx, req)
	if err != nil {
		return nil, err
	}
	return res, checkOutputSchema(ctx, a.c, req.Params.Name, res)
}

// The check itself must catch what it is for.
func TestOutputSchemaCheckCatchesNull(t *testing.T) {
	comp := validator.NewCompiler()
	doc, _ := validator.UnmarshalJSON(bytes.NewReader([]byte(`{"type":"object","properties":{"timeline":{"type":"array"}}}`)))
	comp.AddResource("mem://t.json", doc)
	s, err := comp.Compile("mem://t.json")
	if err != nil {
		t.Fatal(err)
	}
	bad, _ := validator.UnmarshalJSON(bytes.NewReader([]byte(`{"timeline":null}`)))
	if s.Validate(bad) == nil {
		t.Fatal("a null where the schema says array passed")
	}
}
