package mcp

import (
	"testing"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
)

// TestFitResult: a result with pictures reaches a client that forwards
// structuredContent alone (Codex) without it, so the pictures and the JSON
// text get through; every other result, and every other client, gets the
// canonical form.
func TestFitResult(t *testing.T) {
	picture := mcpgo.NewImageContent("aGk=", "image/png")
	withPictures := func() *mcpgo.CallToolResult {
		return &mcpgo.CallToolResult{Content: []mcpgo.Content{mcpgo.NewTextContent(`{"status":"completed"}`), picture}, StructuredContent: map[string]any{"status": "completed"}}
	}
	textOnly := &mcpgo.CallToolResult{Content: []mcpgo.Content{mcpgo.NewTextContent(`{"n":1}`)}, StructuredContent: map[string]any{"n": 1}}
	for _, tc := range []struct {
		client           string
		res              *mcpgo.CallToolResult
		structured, pics bool
	}{
		{"codex-mcp-client", withPictures(), false, true},
		{"Codex", withPictures(), false, true},
		{"codex-mcp-client", textOnly, true, false},
		{"claude-code", withPictures(), true, true},
		{"gemini-cli-mcp-client", withPictures(), true, true},
		{"opencode", withPictures(), true, true},
		{"", withPictures(), true, true},
	} {
		before := len(tc.res.Content)
		got := FitResult(tc.res, ForwardingOf(tc.client))
		if (got.StructuredContent != nil) != tc.structured || hasPictures(got.Content) != tc.pics || len(got.Content) != before {
			t.Errorf("%s: structured %v, pictures %v, %d blocks; want structured %v, pictures %v, %d blocks",
				tc.client, got.StructuredContent != nil, hasPictures(got.Content), len(got.Content), tc.structured, tc.pics, before)
		}
		if tc.res.StructuredContent == nil {
			t.Errorf("%s: FitResult changed the canonical result in place", tc.client)
		}
	}
	if FitResult(nil, ForwardingOf("codex")) != nil {
		t.Error("nil result")
	}
}
