package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// TestClosedStderr: a client that closes the server's stderr (mcp-go's
// client closes stdin and stderr at once) does not kill it at its next log
// line. It serves on, runs the game, and when stdin ends it stops the game
// and exits 0. Killed by SIGPIPE before, it left the game's browser and
// its profile behind. Here stderr has no reader from the start, so the
// first log line (the start's) already writes to a closed pipe.
func TestClosedStderr(t *testing.T) {
	repo, data := gitRepo(t), t.TempDir()
	cmd := command(t, "--actor", "ada@example.com", "--data", data, "--game-cmd", os.Args[0]+" demo-game")
	cmd.Dir = repo
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	cmd.Stderr = w
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-done
	})

	lines := bufio.NewScanner(stdout)
	lines.Buffer(nil, 16<<20)
	send := func(id int, method string, params any) map[string]any {
		t.Helper()
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
		if _, err := fmt.Fprintf(stdin, "%s\n", b); err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		for lines.Scan() {
			var m map[string]any
			if json.Unmarshal(lines.Bytes(), &m) == nil && m["id"] == float64(id) {
				return m
			}
		}
		select {
		case err := <-done:
			done <- err
			t.Fatalf("%s: no answer; the server ended: %v", method, err)
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: no answer (%v)", method, lines.Err())
		}
		return nil
	}
	send(1, "initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "claude-code", "version": "2"}})
	fmt.Fprintln(stdin, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	res := send(2, "tools/call", map[string]any{"name": "run_scenario",
		"arguments": map[string]any{"scenario": "boss_intro", "parameters": map[string]any{"difficulty": 1}, "frames": 0}})
	if b, _ := json.Marshal(res); !strings.Contains(string(b), `"status":"completed"`) {
		t.Fatalf("run_scenario: %s", b)
	}
	stdin.Close()
	select {
	case err := <-done:
		done <- err // for the cleanup
		if err != nil {
			t.Fatalf("the server ended with %v, want exit 0", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the server did not end within 60 s of its stdin's end")
	}
}
