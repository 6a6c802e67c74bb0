package mcp

import (
	"strings"

	"github.com/crosscode/crosscode-mcp/protocol"
)

// ProviderFromClient maps an MCP client's clientInfo.name to a provider
// (case-insensitive: claude -> claude-code, cursor, codex, opencode,
// devin -> devin-like, else unknown).
func ProviderFromClient(name string) protocol.Provider {
	n := strings.ToLower(name)
	switch {
	case strings.Contains(n, "claude"):
		return protocol.ProviderClaude
	case strings.Contains(n, "cursor"):
		return protocol.ProviderCursor
	case strings.Contains(n, "codex"):
		return protocol.ProviderCodex
	case strings.Contains(n, "opencode"):
		return protocol.ProviderOpenCode
	case strings.Contains(n, "devin"):
		return protocol.ProviderDevinLike
	}
	return protocol.ProviderUnknown
}

// SessionRefInput is what sessionReference is chosen from.
type SessionRefInput struct {
	Flag      string            // --session-ref or CROSSCODE_SESSION_REF
	Provider  protocol.Provider // the resolved provider
	ClaudeEnv string            // CLAUDE_CODE_SESSION_ID
	CallMeta  map[string]any    // the tool call's _meta
	SessionID string            // this MCP session's id
}

// SessionReference picks agent.sessionReference by the documented
// precedence: the flag (or CROSSCODE_SESSION_REF), then
// CLAUDE_CODE_SESSION_ID when the provider is claude-code, then the
// sessionId in the tool call's _meta (Codex sends its thread id there;
// OpenCode once sent sessionID, 1.18 sends none), then this MCP
// session's own id.
func SessionReference(in SessionRefInput) string {
	if in.Flag != "" {
		return in.Flag
	}
	if in.Provider == protocol.ProviderClaude && in.ClaudeEnv != "" {
		return in.ClaudeEnv
	}
	for _, key := range []string{"sessionID", "sessionId"} {
		if v, ok := in.CallMeta[key].(string); ok && v != "" {
			return v
		}
	}
	return in.SessionID
}
