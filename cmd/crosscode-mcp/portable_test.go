package main

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// These tests need nothing but the binary: they run on every OS, and in
// the Windows pass under Wine (scripts/wine-test), where git, Chromium and
// the rest are not there.

// TestStdioWithoutGit: with no git on PATH (a Windows machine without Git
// for Windows) the server starts, says on stderr what it cannot do, and
// two agents in one folder coordinate through its local state.
func TestStdioWithoutGit(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "my game")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(t.TempDir(), "data")
	env := []string{"PATH=" + t.TempDir()}
	ada := startAgent(t, "ada", agentOpts{clientName: "claude-code", dir: dir, env: env, args: []string{"--data", data, "--actor", "ada@example.com"}})
	bo := startAgent(t, "bo", agentOpts{clientName: "cursor", dir: dir, env: env, args: []string{"--data", data, "--actor", "bo@example.com"}})
	st := ada.call("workspace_status", nil)
	if st["workspace"] != "my game" {
		t.Errorf("workspace %v, want the folder's name", st["workspace"])
	}
	got := ada.call("claim", map[string]any{"patterns": []string{`src\game\boss.gd`}, "reason": "boss fight"})
	if got["status"] != "granted" {
		t.Fatalf("ada's claim: %v", got)
	}
	denied := bo.call("claim", map[string]any{"patterns": []string{"src/game/**"}, "reason": "refactor"})
	if denied["status"] != "denied" || !strings.Contains(toJSON(denied), "ada@example.com") {
		t.Fatalf("bo's overlapping claim should be denied naming ada: %v", denied)
	}
	if !strings.Contains(ada.stderr.String(), "git is not installed") {
		t.Errorf("stderr does not say git is missing:\n%s", ada.stderr.String())
	}
}

// TestStdioCRLF: a client that ends its lines with CRLF (a Windows
// console, or a client written for one) is answered, one JSON message per
// line ending in a bare "\n", and nothing but MCP on stdout.
func TestStdioCRLF(t *testing.T) {
	cmd := command(t, "--data", t.TempDir(), "--repo", t.TempDir(), "--toolsets", "coord")
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill() // when the test fails early
	r := bufio.NewReader(out)
	read := func(id int) map[string]any {
		t.Helper()
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the answer to %d: %v", id, err)
		}
		if strings.HasSuffix(line, "\r\n") {
			t.Errorf("the answer to %d ends in CRLF", id)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("stdout carries something other than MCP: %q", line)
		}
		if m["id"] != float64(id) {
			t.Fatalf("answer %v, want id %d", m, id)
		}
		return m
	}
	io.WriteString(in, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"crlf","version":"1"}}}`+"\r\n")
	init := read(1)
	info, _ := init["result"].(map[string]any)["serverInfo"].(map[string]any)
	// The version alone ("dev" for a test build), not the whole line that
	// `crosscode-mcp version` prints.
	if info["name"] != "crosscode-mcp" || info["version"] != "dev" {
		t.Fatalf("initialize's serverInfo: %v", init)
	}
	io.WriteString(in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\r\n")
	io.WriteString(in, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`+"\r\n")
	list := read(2)
	if tools, _ := list["result"].(map[string]any)["tools"].([]any); len(tools) < 13 {
		t.Fatalf("tools/list over CRLF: %d tools", len(tools))
	}
	in.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		t.Fatal("the server did not end when stdin closed")
	}
}

func toJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
