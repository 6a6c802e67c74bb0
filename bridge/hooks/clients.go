package hooks

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// Clients are the agent clients whose hooks crosscode-mcp speaks.
var Clients = []string{"claude-code", "gemini", "codex"}

// Input is what a client's hook reads on stdin: the fields the three
// clients share (Claude Code's names; Gemini CLI and Codex use the same).
type Input struct {
	SessionID     string          `json:"session_id"`
	Cwd           string          `json:"cwd"`
	HookEventName string          `json:"hook_event_name"`
	ToolName      string          `json:"tool_name"`
	ToolInput     json.RawMessage `json:"tool_input"`
	Source        string          `json:"source"` // SessionStart: startup, resume, clear, compact
}

// kind is what an event asks of the hook.
type kind int

const (
	kindOther  kind = iota // an event crosscode-mcp does nothing on
	kindEdit               // before a tool runs: check the files it edits
	kindStart              // the session starts: news, with open handoffs again
	kindPrompt             // before a prompt: news
)

// eventKind classifies a client's event name.
func eventKind(client, event string) kind {
	switch client + " " + event {
	case "claude-code PreToolUse", "codex PreToolUse", "gemini BeforeTool":
		return kindEdit
	case "claude-code SessionStart", "codex SessionStart", "gemini SessionStart":
		return kindStart
	case "claude-code UserPromptSubmit", "codex UserPromptSubmit", "gemini BeforeAgent":
		return kindPrompt
	}
	return kindOther
}

// editTools are the file-editing tools of each client and the tool_input
// fields that hold the path.
var editTools = map[string]map[string][]string{
	"claude-code": {"Edit": {"file_path"}, "Write": {"file_path"}, "MultiEdit": {"file_path"}, "NotebookEdit": {"notebook_path"}},
	"gemini":      {"write_file": {"file_path"}, "replace": {"file_path"}},
}

// editedPaths returns the paths a tool call is about to edit, as the tool
// input names them (absolute, or relative to the session's directory);
// none for a tool that edits no file.
func editedPaths(client string, in *Input) []string {
	if client == "codex" {
		return patchPaths(in.ToolInput)
	}
	fields, ok := editTools[client][in.ToolName]
	if !ok {
		return nil
	}
	var args map[string]json.RawMessage
	if json.Unmarshal(in.ToolInput, &args) != nil {
		return nil
	}
	var out []string
	for _, f := range fields {
		var p string
		if json.Unmarshal(args[f], &p) == nil && p != "" {
			out = append(out, p)
		}
	}
	return out
}

// patchHeader is a file header of Codex's apply_patch format.
var patchHeader = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?m)^\*\*\* (?:Add File|Update File|Delete File|Move to): (.+?)\s*$`)
})

// patchPaths finds the files an apply_patch call touches: Codex hands its
// hooks the patch text in the tool input (as "command", "input" or an
// argv), so every string in it that holds a patch is read.
func patchPaths(raw json.RawMessage) []string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return nil
	}
	var out []string
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			if strings.Contains(x, "*** Begin Patch") {
				for _, m := range patchHeader().FindAllStringSubmatch(x, -1) {
					if !slices.Contains(out, m[1]) {
						out = append(out, m[1])
					}
				}
			}
		case []any:
			for _, y := range x {
				walk(y)
			}
		case map[string]any:
			for _, y := range x {
				walk(y)
			}
		}
	}
	walk(v)
	return out
}

// denyAnswer is a client's answer that stops a tool call, with the reason
// its model reads.
func denyAnswer(client, event, reason string) any {
	if client == "gemini" {
		return map[string]any{"decision": "deny", "reason": reason}
	}
	return map[string]any{"hookSpecificOutput": map[string]any{
		"hookEventName": event, "permissionDecision": "deny", "permissionDecisionReason": reason,
	}}
}

// noteAnswer lets a tool call go and adds a note. Claude Code and Codex
// put it in the model's context; Gemini CLI reads no context from
// BeforeTool, so it shows the note to the user.
func noteAnswer(client, event, note string) any {
	if client == "gemini" {
		return map[string]any{"systemMessage": note}
	}
	return map[string]any{"hookSpecificOutput": map[string]any{"hookEventName": event, "additionalContext": note}}
}

// contextAnswer adds text to the model's context at the start of a session
// or before a prompt.
func contextAnswer(event, text string) any {
	return map[string]any{"hookSpecificOutput": map[string]any{"hookEventName": event, "additionalContext": text}}
}
