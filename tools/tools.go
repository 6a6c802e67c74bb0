// Package tools holds what every MCP tool of crosscode-mcp shares: schema
// generation (invopop/jsonschema, handed to mcp-go raw), strict argument
// binding, results with structuredContent, and the registry conventions.
// The tools themselves live in tools/coord and tools/capture, one file
// each, as constructors over small interfaces.
package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/invopop/jsonschema"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Tool is one MCP tool: its definition and handler, and its toolset.
type Tool struct {
	Toolset string // "coord" or "capture"
	Def     mcpgo.Tool
	Handler server.ToolHandlerFunc
}

// Annotations are a tool's behaviour hints; every tool states all three.
type Annotations struct {
	ReadOnly, Destructive, Idempotent bool
}

// New builds a tool whose input and output schemas are generated from In
// and Out (one tag style rules: invopop's).
func New[In, Out any](toolset, name, title, description string, a Annotations, h server.ToolHandlerFunc) Tool {
	def := mcpgo.NewToolWithRawSchema(name, description, Schema[In]())
	out := schema[Out](true)
	for _, opt := range []mcpgo.ToolOption{
		mcpgo.WithTitleAnnotation(title),
		mcpgo.WithReadOnlyHintAnnotation(a.ReadOnly),
		mcpgo.WithDestructiveHintAnnotation(a.Destructive),
		mcpgo.WithIdempotentHintAnnotation(a.Idempotent),
		mcpgo.WithOpenWorldHintAnnotation(false),
		mcpgo.WithRawOutputSchema(out),
	} {
		opt(&def)
	}
	return Tool{Toolset: toolset, Def: def, Handler: h}
}

// Schema is the JSON Schema of an input T, inlined (no $defs), strict (no
// additional properties), each property described by its jsonschema tags.
func Schema[T any]() json.RawMessage { return schema[T](false) }

// schema generates T's schema; output schemas allow additional properties
// (results may grow) and so stay smaller: tools/list rides in the context.
func schema[T any](output bool) json.RawMessage {
	r := &jsonschema.Reflector{ExpandedStruct: true, DoNotReference: true, AllowAdditionalProperties: output}
	s := r.ReflectFromType(reflect.TypeFor[T]())
	s.Version = ""
	s.ID = ""
	b, err := json.Marshal(s)
	if err != nil {
		panic(fmt.Sprintf("schema of %T: %v", *new(T), err))
	}
	if output {
		b = compact(b)
	}
	return b
}

// compact strips an output schema to its outline: the result's fields with
// their types and enums, nested objects and lists by type only. tools/list
// is read into every agent's context, and results explain themselves; the
// tool descriptions say what matters.
func compact(b []byte) []byte {
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		return b
	}
	outline := func(m map[string]any) map[string]any {
		o := map[string]any{}
		for _, k := range []string{"type", "enum"} {
			if x, ok := m[k]; ok {
				o[k] = x
			}
		}
		return o
	}
	top := map[string]any{"type": "object"}
	if d, ok := v["description"]; ok {
		top["description"] = d
	}
	if props, ok := v["properties"].(map[string]any); ok {
		out := map[string]any{}
		for name, p := range props {
			if m, ok := p.(map[string]any); ok {
				out[name] = outline(m)
			}
		}
		top["properties"] = out
	}
	b2, err := json.Marshal(top)
	if err != nil {
		return b
	}
	return b2
}

// Bind decodes a call's arguments into T strictly: unknown fields and
// wrong types are errors that name the field.
func Bind[T any](req mcpgo.CallToolRequest) (T, error) {
	var v T
	raw := req.Params.RawArguments
	if len(raw) == 0 {
		b, err := json.Marshal(req.Params.Arguments)
		if err != nil {
			return v, err
		}
		raw = b
	}
	if len(raw) == 0 || string(raw) == "null" {
		raw = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		msg := strings.TrimPrefix(err.Error(), "json: ")
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			msg = fmt.Sprintf("argument %q must be %s", te.Field, te.Type.Kind())
		}
		return v, fmt.Errorf("bad arguments: %s", msg)
	}
	return v, nil
}

// Handler is the handler of a tool: it binds the call's arguments strictly
// into In, runs f, and answers with f's result (see Result). An error f
// returns that the agent can act on, as actionable tells with the message
// to show, is a tool error; any other fails the call.
func Handler[In, Out any](actionable func(error) (string, bool), f func(context.Context, mcpgo.CallToolRequest, In) (*Out, error)) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		in, err := Bind[In](req)
		if err != nil {
			return Error(err.Error() + "; see the tool's input schema"), nil
		}
		out, err := f(ctx, req, in)
		if err != nil {
			if msg, ok := actionable(err); ok {
				return Error(msg), nil
			}
			return nil, err
		}
		return Result(out), nil
	}
}

// Shrinker is a result that can do without some of its content (the news
// digest riding on it): Shrink drops some and reports whether it did.
type Shrinker interface{ Shrink() bool }

// Failure is a result that reports a failure: an operation that failed.
// Result answers it with isError, so clients flag it, and still with its
// whole structured content (which must match the output schema: strict
// clients check it on errors too).
type Failure interface{ Failed() bool }

// Attacher is a result that carries content besides its JSON (images):
// Result adds it after the text. MaxResultBytes bounds only the text; the
// result itself bounds what it attaches.
type Attacher interface{ Attachments() []mcpgo.Content }

// Result answers with out as structuredContent and, for clients that read
// only text, the same JSON as text. The text never exceeds MaxResultBytes:
// a larger result is shrunk while it can (see Shrinker), and else answered
// with a tool error that says so.
func Result(out any) *mcpgo.CallToolResult {
	for {
		b, err := json.Marshal(out)
		if err != nil {
			return Error("encode result: " + err.Error())
		}
		if len(b) <= MaxResultBytes {
			f, ok := out.(Failure)
			res := &mcpgo.CallToolResult{Content: []mcpgo.Content{mcpgo.NewTextContent(string(b))}, StructuredContent: out, IsError: ok && f.Failed()}
			if a, ok := out.(Attacher); ok {
				res.Content = append(res.Content, a.Attachments()...)
			}
			return res
		}
		if s, ok := out.(Shrinker); !ok || !s.Shrink() {
			return Error(fmt.Sprintf("RESULT_TOO_LARGE: the result is %d bytes, over the %d-byte limit of a tool result; ask for less (fewer paths, a smaller limit, a narrower filter)", len(b), MaxResultBytes))
		}
	}
}

// Fit keeps the leading items of list whose JSON encodings, measured as
// they will be encoded, add up to at most budget bytes (and the first item
// whatever its size: Result still bounds the whole), and counts the items
// it left out.
func Fit[T any](list []T, budget int) (kept []T, omitted int) {
	size := 0
	for i, it := range list {
		b, err := json.Marshal(it)
		if err != nil {
			return list[:i], len(list) - i
		}
		size += len(b) + 1 // and the comma
		if size > budget && i > 0 {
			return list[:i], len(list) - i
		}
	}
	return list, 0
}

// Error answers with a tool error the model can act on: what went wrong
// and what to do next.
func Error(msg string) *mcpgo.CallToolResult {
	return &mcpgo.CallToolResult{Content: []mcpgo.Content{mcpgo.NewTextContent(msg)}, IsError: true}
}

// MaxResultBytes bounds a result's text: lists page rather than exceed it.
const MaxResultBytes = 20 << 10
