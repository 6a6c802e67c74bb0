// Package capturebench holds what the capture benchmarks share: calling a
// tool's handler in-process, and the median of what they measured.
package capturebench

import (
	"context"
	"slices"
	"testing"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
)

// Call runs a tool's handler with args and fails b when it errs or the
// result is an error.
func Call(b testing.TB, h func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error), args map[string]any) *mcpgo.CallToolResult {
	b.Helper()
	req := mcpgo.CallToolRequest{}
	req.Params.Arguments = args
	res, err := h(context.Background(), req)
	if err != nil || res.IsError {
		b.Fatalf("%v %+v", err, res)
	}
	return res
}

// Median returns the median of ds (sorting ds).
func Median(ds []time.Duration) time.Duration {
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// Ms is d in milliseconds, to the microsecond.
func Ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
