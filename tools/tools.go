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
	"io"
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
	// Reflect generates the tool's input and output schemas from its Go
	// types, as the definition's schemas were when schemas_gen.go was
	// written: the registry test compares the two.
	Reflect func() (in, out json.RawMessage)
}

// Annotations are a tool's behaviour hints; every tool states all three.
type Annotations struct {
	ReadOnly, Destructive, Idempotent bool
}

// New builds a tool whose input and output schemas are generated from In
// and Out (one tag style rules: invopop's). The schemas of the tools of
// crosscode-mcp were generated when it was built (schemas_gen.go, which
// `UPDATE_TOOLSNAPS=true go test ./mcp` writes and the registry test
// checks): reflecting over the types took about 15 ms of CPU at every start
// of the server. A tool without a generated schema is reflected here.
func New[In, Out any](toolset, name, title, description string, a Annotations, h server.ToolHandlerFunc) Tool {
	reflected := func() (json.RawMessage, json.RawMessage) { return Schema[In](), schema[Out](true) }
	in, out, ok := generatedSchemas(name)
	if !ok {
		in, out = reflected()
	}
	def := mcpgo.NewToolWithRawSchema(name, description, in)
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
	return Tool{Toolset: toolset, Def: def, Handler: h, Reflect: reflected}
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
// wrong types are errors in plain words that name the argument, what was
// sent and what was expected (`patterns: expected a list of strings, got
// the number 5`), never a Go type.
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
		return v, argumentError(reflect.TypeFor[T](), raw, err)
	}
	return v, nil
}

// argumentError says in plain words what is wrong with a call's arguments.
func argumentError(t reflect.Type, raw []byte, err error) error {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		field := te.Field
		if field == "" {
			return fmt.Errorf("the arguments must be an object of named arguments, got %s", sent(raw, te))
		}
		if ft := fieldType(t, field); ft != nil && ft != te.Type {
			// The value is inside the argument (an item of its list).
			return fmt.Errorf("%s: expected %s, got %s in it", field, describe(ft), sent(raw, te))
		}
		return fmt.Errorf("%s: expected %s, got %s", field, describe(te.Type), sent(raw, te))
	case errors.As(err, &se):
		return fmt.Errorf("the arguments are not valid JSON (at byte %d)", se.Offset)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("the arguments are not valid JSON (they end too soon)")
	}
	msg := strings.TrimPrefix(err.Error(), "json: ")
	if name, ok := strings.CutPrefix(msg, "unknown field "); ok {
		name = strings.Trim(name, `"`)
		return fmt.Errorf("%s: no such argument; the arguments are %s", name, strings.Join(argumentNames(t), ", "))
	}
	return errors.New(msg)
}

// sent describes the JSON value a type error is about, as sent: a short
// value in full (`the number 5`, `the string "x"`), a longer one by its
// kind.
func sent(raw []byte, te *json.UnmarshalTypeError) string {
	kind, _, _ := strings.Cut(te.Value, " ")
	words := map[string]string{"number": "a number", "string": "a string", "bool": "true or false", "array": "a list", "object": "an object"}[kind]
	if words == "" {
		words = te.Value
	}
	// The value itself ends at te.Offset; short scalars are worth quoting.
	if kind == "number" || kind == "string" || kind == "bool" {
		start := int(te.Offset)
		for start > 0 && raw[start-1] != ':' && raw[start-1] != '[' && raw[start-1] != ',' {
			start--
		}
		if v := strings.TrimSpace(string(raw[start:min(int(te.Offset), len(raw))])); v != "" && len(v) <= 40 && json.Valid([]byte(v)) {
			article := map[string]string{"number": "the number ", "string": "the string ", "bool": ""}[kind]
			return article + v
		}
	}
	return words
}

// describe says what a Go type accepts, in JSON's words.
func describe(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "a list of " + plural(t.Elem())
	case reflect.Interface:
		return "a value"
	}
	return "an object"
}

// plural names many values of a type.
func plural(t reflect.Type) string {
	switch d := describe(t); d {
	case "true or false":
		return "true/false values"
	case "a value":
		return "values"
	default:
		d = strings.TrimPrefix(strings.TrimPrefix(d, "an "), "a ")
		if rest, ok := strings.CutPrefix(d, "list of "); ok {
			return "lists of " + rest
		}
		if rest, ok := strings.CutPrefix(d, "whole number"); ok {
			return "whole numbers" + rest
		}
		return d + "s"
	}
}

// fieldType is the type of the argument at a dotted JSON path of t
// (parameters.difficulty), or nil.
func fieldType(t reflect.Type, path string) reflect.Type {
	for name := range strings.SplitSeq(path, ".") {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct {
			return nil
		}
		f, ok := fieldNamed(t, name)
		if !ok {
			return nil
		}
		t = f.Type
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// fieldNamed is the field of struct t whose JSON name is name (embedded
// structs included).
func fieldNamed(t reflect.Type, name string) (reflect.StructField, bool) {
	for f := range t.Fields() {
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case tag == name, tag == "" && strings.EqualFold(f.Name, name):
			return f, true
		case tag == "" && f.Anonymous:
			if g, ok := fieldNamed(f.Type, name); ok {
				return g, true
			}
		}
	}
	return reflect.StructField{}, false
}

// argumentNames are the JSON names of an input type's fields.
func argumentNames(t reflect.Type) []string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	var names []string
	for f := range t.Fields() {
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-":
			continue
		case name == "":
			if f.Anonymous {
				names = append(names, argumentNames(f.Type)...)
				continue
			}
			name = f.Name
		}
		names = append(names, name)
	}
	if len(names) == 0 {
		return []string{"(none)"}
	}
	return names
}

// Handler is the handler of a tool: it binds the call's arguments strictly
// into In, runs f, and answers with f's result (see Result). An error f
// returns that the agent can act on, as actionable tells with the message
// to show, is a tool error; any other fails the call.
func Handler[In, Out any](actionable func(error) (string, bool), f func(context.Context, mcpgo.CallToolRequest, In) (*Out, error)) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		in, err := Bind[In](req)
		if err != nil {
			return Error(fmt.Sprintf("%s was called with wrong arguments: %v. Nothing was done; call it again with the arguments its input schema describes.", req.Params.Name, err)), nil
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
// Result answers it with isError, so clients flag it, and with its whole
// result as JSON text, once: not also as structuredContent, which no
// client needs on an error (the official SDK's client asks for it only on
// success) and one (Gemini CLI) copies beside the text into what its
// model reads.
type Failure interface{ Failed() bool }

// Attacher is a result that carries content besides its JSON (images):
// Result adds it after the text. MaxResultBytes bounds only the text; the
// result itself bounds what it attaches.
type Attacher interface{ Attachments() []mcpgo.Content }

// Result answers with out as structuredContent and, for clients that read
// only text, the same JSON as text (a failure: the text alone, see
// Failure); then what out attaches (pictures). The text never exceeds
// MaxResultBytes: a larger result is shrunk while it can (see Shrinker),
// and else answered with a tool error that says so. What a client
// forwards to its model differs by client; mcp.FitResult shapes the
// result for the calling client from this canonical form.
func Result(out any) *mcpgo.CallToolResult {
	for {
		b, err := json.Marshal(out)
		if err != nil {
			return Error("encode result: " + err.Error())
		}
		if len(b) <= MaxResultBytes {
			res := &mcpgo.CallToolResult{Content: []mcpgo.Content{mcpgo.NewTextContent(string(b))}, StructuredContent: out}
			if f, ok := out.(Failure); ok && f.Failed() {
				res.IsError, res.StructuredContent = true, nil
			}
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
