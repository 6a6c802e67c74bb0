package mcp

import (
	"context"
	"strings"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Forwarding is what a client passes to its model from a tool result.
// The tools answer in one canonical form (tools.Result: structuredContent,
// the same JSON as text, then pictures; a failure as its JSON text alone);
// FitResult changes it only where a client would otherwise drop part of
// it on the way to its model.
type Forwarding struct {
	// StructuredOnly: when a result has structuredContent, the client
	// forwards that JSON alone and drops every content block, pictures
	// included (Codex: codex-rs/protocol/src/models.rs,
	// as_function_call_output_payload). It does not check results against
	// output schemas.
	StructuredOnly bool
}

// ForwardingOf is the forwarding of the client with this clientInfo.name.
func ForwardingOf(clientName string) Forwarding {
	n := strings.ToLower(clientName)
	return Forwarding{StructuredOnly: strings.Contains(n, "codex")}
}

// FitResult shapes a canonical result for a client that forwards f. A
// result with pictures goes to a StructuredOnly client without its
// structuredContent: the client then forwards the content, the JSON text
// and the pictures, which is the whole result. Anything else is left as
// it is.
func FitResult(res *mcpgo.CallToolResult, f Forwarding) *mcpgo.CallToolResult {
	if res == nil || res.StructuredContent == nil || !f.StructuredOnly || !hasPictures(res.Content) {
		return res
	}
	fit := *res
	fit.StructuredContent = nil
	return &fit
}

// hasPictures is whether content holds anything but text.
func hasPictures(content []mcpgo.Content) bool {
	for _, c := range content {
		if _, ok := c.(mcpgo.TextContent); !ok {
			return true
		}
	}
	return false
}

// fitResult is the middleware that shapes every tool result for the
// calling client (FitResult).
func fitResult(next server.ToolHandlerFunc) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		res, err := next(ctx, req)
		if err != nil {
			return res, err
		}
		return FitResult(res, ForwardingOf(clientName(ctx))), nil
	}
}
