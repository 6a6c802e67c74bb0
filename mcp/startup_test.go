package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// stdioPeer drives Run over pipes, as a client does.
type stdioPeer struct {
	t   *testing.T
	in  *io.PipeWriter
	out *bufio.Reader
	run chan error
}

func runPeer(t *testing.T, cfg Config) *stdioPeer {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	p := &stdioPeer{t: t, in: inW, out: bufio.NewReader(outR), run: make(chan error, 1)}
	go func() {
		err := Run(context.Background(), cfg, inR, outW)
		outW.Close()
		p.run <- err
	}()
	t.Cleanup(func() { inW.Close() })
	return p
}

func (p *stdioPeer) send(msg string) {
	p.t.Helper()
	if _, err := io.WriteString(p.in, msg+"\n"); err != nil {
		p.t.Fatal(err)
	}
}

// answer reads the next message: the answer of the request just sent.
func (p *stdioPeer) answer(id int) map[string]any {
	p.t.Helper()
	type read struct {
		line string
		err  error
	}
	got := make(chan read, 1)
	go func() {
		line, err := p.out.ReadString('\n')
		got <- read{line, err}
	}()
	var line string
	select {
	case r := <-got:
		if r.err != nil {
			p.t.Fatalf("no answer to %d: %v", id, r.err)
		}
		line = r.line
	case <-time.After(time.Minute): // a hang guard only
		p.t.Fatalf("no answer to %d within a minute", id)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(line), &m); err != nil || m["id"] != float64(id) {
		p.t.Fatalf("answer to %d: %s", id, line)
	}
	return m
}

func (p *stdioPeer) exit() error {
	p.t.Helper()
	select {
	case err := <-p.run:
		return err
	case <-time.After(time.Minute): // a hang guard only
		p.t.Fatal("Run did not return")
		return nil
	}
}

const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"claude-code","version":"1"}}}`

// TestRunAnswersBeforeStart: Run answers initialize and tools/list while
// its start (repository, databases, capture controller) has not run at
// all, and a tool called meanwhile waits for the start and then answers.
func TestRunAnswersBeforeStart(t *testing.T) {
	gate := make(chan struct{})
	startGate = func() { <-gate }
	t.Cleanup(func() { startGate = nil })
	data := t.TempDir()
	p := runPeer(t, Config{Repo: t.TempDir(), Data: data, Actor: "ada", Getenv: noEnv})
	p.send(initialize)
	if res := p.answer(1)["result"].(map[string]any); res["serverInfo"].(map[string]any)["name"] != "crosscode-mcp" {
		t.Fatalf("initialize: %v", res)
	}
	p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	p.send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	list := p.answer(2)["result"].(map[string]any)["tools"].([]any)
	if len(list) != len(registry()) {
		t.Fatalf("tools/list before the start: %d tools, want %d", len(list), len(registry()))
	}
	if entries, _ := os.ReadDir(data); len(entries) != 0 {
		t.Fatalf("the start ran before its gate opened: %v", entries)
	}
	p.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"workspace_status","arguments":{}}}`)
	close(gate)
	res := p.answer(3)["result"].(map[string]any)
	if res["isError"] == true || res["structuredContent"] == nil {
		t.Fatalf("workspace_status after the start: %v", res)
	}
	p.in.Close()
	if err := p.exit(); err != nil {
		t.Fatalf("Run: %v", err)
	}
}

// TestRunStartFailure: a start that fails (the data folder is a file)
// ends Run with its error, after it answered initialize.
func TestRunStartFailure(t *testing.T) {
	gate := make(chan struct{})
	startGate = func() { <-gate }
	t.Cleanup(func() { startGate = nil })
	data := filepath.Join(t.TempDir(), "data")
	if err := os.WriteFile(data, []byte("not a folder"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := runPeer(t, Config{Repo: t.TempDir(), Data: data, Actor: "ada", Getenv: noEnv})
	p.send(initialize)
	p.answer(1)
	close(gate)
	err := p.exit()
	if err == nil || !strings.Contains(err.Error(), "data") {
		t.Fatalf("Run returned %v, want the start's error", err)
	}
}
