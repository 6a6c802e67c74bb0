// Package js_test runs the JavaScript adapter library's own tests (Node's
// built-in test runner) against the real controller: the crosscode-mcp
// binary, built from this repository.
package js_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/crosscode/crosscode-mcp/internal/testing/sysdeps"
)

func TestNodeSuite(t *testing.T) {
	node := sysdeps.Need(t, "node")
	out, err := exec.Command(node, "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	major, _ := strconv.Atoi(strings.TrimPrefix(strings.SplitN(strings.TrimSpace(string(out)), ".", 2)[0], "v"))
	if major < 20 {
		t.Fatalf("node %s is too old: the library needs Node.js 20 or newer", strings.TrimSpace(string(out)))
	}
	bin := filepath.Join(t.TempDir(), "crosscode-mcp")
	build := exec.Command("go", "build", "-o", bin, "github.com/crosscode/crosscode-mcp/cmd/crosscode-mcp")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	files, _ := filepath.Glob("test/*.test.mjs")
	args := []string{"--test", "--test-reporter=tap"}
	if major < 22 {
		args = append([]string{"--experimental-websocket"}, args...) // Node 20's WebSocket is behind a flag
	}
	cmd := exec.Command(node, append(args, files...)...)
	cmd.Env = append(os.Environ(), "CROSSCODE_MCP="+bin)
	res, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test: %v\n%s", err, res)
	}
	if !strings.Contains(string(res), "\n# fail 0") {
		t.Fatalf("node --test did not report its results:\n%s", res)
	}
	t.Logf("%s", res[max(0, len(res)-400):])
}
