// Package agentclients runs crosscode-mcp inside the real agent clients,
// as a user does: Claude Code, Codex, Gemini CLI and OpenCode from npm at
// pinned versions (npm/package.json, installed by scripts/agent-clients),
// each configured the way the README says, in a temporary HOME, and each
// pointed at a model endpoint of ours on loopback that speaks the client's
// own wire format (Anthropic Messages, OpenAI Responses, Gemini
// generateContent, OpenAI chat completions), plays a script of tool calls
// and records every request the client sends.
//
// What a client forwards to its model is the only proof that the model
// sees what crosscode-mcp shows it: the tool results as text, the pictures
// as images, failures marked as errors. The tests of this package check
// that, per client (clients_test.go).
//
// A client is three parts (Client): the model endpoint for its wire
// format (Mount), the configuration step (Configure) and the headless run
// (Run). Everything else is shared: the world the client works in
// (World: a git repository, the crosscode-mcp binary, the demo game), the
// scripted model (Model) and the play every client goes through (play.go).
package agentclients
