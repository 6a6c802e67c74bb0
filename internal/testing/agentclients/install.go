package agentclients

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/crosscode/crosscode-mcp/internal/testing/sysdeps"
)

// lockFile is the pinned clients' package-lock.json, relative to this
// package's directory (where go test runs).
const lockFile = "npm/package-lock.json"

// InstallDir is where scripts/agent-clients installs the clients pinned by
// npm/package-lock.json: one folder per version of the lock file under
// CROSSCODE_CACHE (default ~/.cache/crosscode), so a change of the pins
// installs anew and an unchanged one is reused.
func InstallDir() (string, error) { return sysdeps.PinnedDir("agent-clients", lockFile) }

// NodeModules is the installed clients' node_modules; a test fails (never
// skips) when they are not installed: scripts/deps installs them.
func NodeModules(t testing.TB) string {
	t.Helper()
	dir, err := InstallDir()
	if err != nil {
		t.Fatal(err)
	}
	nm := filepath.Join(dir, "node_modules")
	if _, err := os.Stat(filepath.Join(dir, ".installed")); err != nil {
		t.Fatalf("the agent clients are not installed in %s: run scripts/agent-clients (scripts/deps runs it)", dir)
	}
	return nm
}

// nativeBinary is the path of a client's native executable inside
// node_modules: Claude Code and OpenCode ship one per platform in an
// optional package, which their launcher scripts find (a postinstall
// script links it; scripts/agent-clients installs with scripts off, as
// npm 11 does unless told otherwise, so the tests run the binary itself,
// which is what the launcher runs).
func nativeBinary(t testing.TB, pkg, rel string) string {
	t.Helper()
	p := filepath.Join(NodeModules(t), pkg+"-"+nodePlatform(), rel)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s: %v", pkg, err)
	}
	return p
}

// nodePlatform is Node's os-cpu of this machine (linux-x64).
func nodePlatform() string {
	os := map[string]string{"windows": "win32"}[runtime.GOOS]
	if os == "" {
		os = runtime.GOOS
	}
	cpu := map[string]string{"amd64": "x64", "arm64": "arm64"}[runtime.GOARCH]
	return os + "-" + cpu
}
