// Package mcpsdk runs the official MCP TypeScript SDK's Streamable HTTP
// client (@modelcontextprotocol/sdk, pinned by npm/package-lock.json and
// installed by scripts/mcp-sdk) against a server's /mcp, as a Node.js
// process per job: what most MCP clients that connect by URL build on.
package mcpsdk

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/crosscode/crosscode-mcp/internal/testing/sysdeps"
)

//go:embed client.mjs
var script []byte

// Call is one tools/call of a job.
type Call struct {
	Tool string         `json:"tool"`
	Args map[string]any `json:"args,omitempty"`
}

// Job is what the client does: connect to URL with the token (and
// headers), list the tools, make the calls, and end the session if
// Terminate.
type Job struct {
	URL        string            `json:"url"`
	Token      string            `json:"token,omitempty"`
	ClientName string            `json:"clientName,omitempty"`
	Headers    map[string]string `json:"headers,omitempty"`
	Calls      []Call            `json:"calls,omitempty"`
	Terminate  bool              `json:"terminate,omitempty"`
}

// Result is one call's outcome: its structured result, or what the SDK
// threw (a result that does not match the tool's output schema, a
// transport error).
type Result struct {
	Tool       string         `json:"tool"`
	IsError    bool           `json:"isError"`
	Structured map[string]any `json:"structured"`
	Text       string         `json:"text"`
	Thrown     string         `json:"thrown"`
}

// Report is what a job did.
type Report struct {
	ConnectError    string   `json:"connectError"`
	ConnectCode     any      `json:"connectCode"` // the HTTP status of a refused connection
	ProtocolVersion string   `json:"protocolVersion"`
	SessionID       string   `json:"sessionId"`
	Tools           []string `json:"tools"`
	Calls           []Result `json:"calls"`
}

// InstallDir is where scripts/mcp-sdk installs the pinned SDK.
func InstallDir() (string, error) {
	_, file, _, _ := runtime.Caller(0)
	return sysdeps.PinnedDir("mcp-sdk", filepath.Join(filepath.Dir(file), "npm", "package-lock.json"))
}

// Run runs a job with the SDK and returns its report; the test fails
// (never skips) when node or the SDK is missing: scripts/deps installs
// them.
func Run(t testing.TB, job Job) *Report {
	t.Helper()
	sysdeps.Need(t, "node")
	dir, err := InstallDir()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, ".installed")); err != nil {
		t.Fatalf("the MCP TypeScript SDK is not installed in %s: run scripts/mcp-sdk (scripts/deps runs it)", dir)
	}
	js := filepath.Join(t.TempDir(), "client.mjs")
	if err := os.WriteFile(js, script, 0o600); err != nil {
		t.Fatal(err)
	}
	in, _ := json.Marshal(job)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", js)
	cmd.Env = append(os.Environ(), "MCP_SDK="+dir)
	cmd.Stdin = bytes.NewReader(in)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("the SDK client: %v\n%s\n%s", err, out.String(), errOut.String())
	}
	var r Report
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("the SDK client's report %q: %v\n%s", out.String(), err, errOut.String())
	}
	return &r
}
