// Command noopmcp is the floor of the stdio server's benchmarks (bench,
// BENCHMARKS.md): a stdio MCP server on the same mcp-go, built the same
// way, that does nothing of its own. It serves one tool, noop, which
// takes any arguments and answers an empty JSON object.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	s := server.NewMCPServer("noopmcp", "1", server.WithToolCapabilities(false))
	s.AddTool(mcpgo.NewTool("noop", mcpgo.WithDescription("Does nothing: answers an empty JSON object.")),
		func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			return mcpgo.NewToolResultText("{}"), nil
		})
	if err := server.NewStdioServer(s).Listen(ctx, os.Stdin, os.Stdout); err != nil && ctx.Err() == nil {
		fmt.Fprintln(os.Stderr, "noopmcp:", err)
		os.Exit(1)
	}
}
