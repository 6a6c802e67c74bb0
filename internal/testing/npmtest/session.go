package npmtest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"time"
)

// InitializeRequest is an MCP initialize request, one JSON-RPC line.
const InitializeRequest = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"npmtest","version":"1"}}}` + "\n"

// Session is a stdio MCP server process (the bare binary, the launcher or
// npx) driven line by line, as an MCP client drives it.
type Session struct {
	Cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader

	mu     sync.Mutex
	stderr bytes.Buffer
}

// Start starts cmd with pipes for stdin and stdout; stderr is kept for
// Stderr.
func Start(cmd *exec.Cmd) (*Session, error) {
	s := &Session{Cmd: cmd}
	var err error
	if s.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	s.out = bufio.NewReader(stdout)
	cmd.Stderr = lockedWriter{&s.mu, &s.stderr}
	if cmd.WaitDelay == 0 {
		// Wait returns even if a grandchild (npx's shell, the server)
		// still holds a pipe.
		cmd.WaitDelay = 5 * time.Second
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return s, nil
}

// Initialize sends InitializeRequest and returns the result of the answer
// line, within timeout.
func (s *Session) Initialize(timeout time.Duration) (map[string]any, error) {
	if _, err := io.WriteString(s.stdin, InitializeRequest); err != nil {
		return nil, fmt.Errorf("write initialize: %w", err)
	}
	type answer struct {
		line []byte
		err  error
	}
	ch := make(chan answer, 1)
	go func() {
		line, err := s.out.ReadBytes('\n')
		ch <- answer{line, err}
	}()
	var a answer
	select {
	case a = <-ch:
	case <-time.After(timeout):
		return nil, fmt.Errorf("no answer to initialize within %v; stderr: %s", timeout, s.Stderr())
	}
	if a.err != nil {
		return nil, fmt.Errorf("read the answer to initialize: %v; stderr: %s", a.err, s.Stderr())
	}
	var resp struct {
		ID     int            `json:"id"`
		Result map[string]any `json:"result"`
		Error  any            `json:"error"`
	}
	if err := json.Unmarshal(a.line, &resp); err != nil || resp.ID != 1 || resp.Result == nil {
		return nil, fmt.Errorf("answer to initialize: %q (%v)", a.line, err)
	}
	return resp.Result, nil
}

// ServerName is result.serverInfo.name of an initialize answer.
func ServerName(result map[string]any) string {
	info, _ := result["serverInfo"].(map[string]any)
	name, _ := info["name"].(string)
	return name
}

// CloseStdin closes the process's stdin: the end of the session for a
// stdio MCP server.
func (s *Session) CloseStdin() error { return s.stdin.Close() }

// Wait waits for the process, at most timeout (then kills it), and returns
// its state.
func (s *Session) Wait(timeout time.Duration) (*os.ProcessState, error) {
	done := make(chan error, 1)
	go func() { done <- s.Cmd.Wait() }()
	select {
	case <-done:
		return s.Cmd.ProcessState, nil
	case <-time.After(timeout):
		s.Cmd.Process.Kill()
		<-done
		return s.Cmd.ProcessState, fmt.Errorf("still running after %v; stderr: %s", timeout, s.Stderr())
	}
}

// Stderr is what the process wrote to stderr so far.
func (s *Session) Stderr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stderr.String()
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
