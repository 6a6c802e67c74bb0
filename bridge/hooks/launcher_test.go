package hooks

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/crosscode/crosscode-mcp/internal/testing/npmtest"
	"github.com/crosscode/crosscode-mcp/internal/testing/sysdeps"
)

// The test binary stands in for crosscode-mcp when the launcher runs it:
// with CROSSCODE_LAUNCHER_ECHO set it writes its arguments, the via mark
// (the hook's, or the server's) and its stdin there, and exits.
func TestMain(m *testing.M) {
	if out := os.Getenv("CROSSCODE_LAUNCHER_ECHO"); out != "" {
		in, _ := io.ReadAll(os.Stdin)
		echo := fmt.Sprintf("args=%q via=%s stdin=%s", os.Args[1:], os.Getenv(ViaEnv), in)
		if v := os.Getenv("CROSSCODE_VIA"); v != "" { // a server the packages start
			echo = fmt.Sprintf("server args=%q via=%s stdin=%s", os.Args[1:], v, in)
		}
		os.WriteFile(out, []byte(echo), 0o644)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// launch runs the packages' launcher as the clients do: cmd.exe on
// Windows (Codex; PowerShell hands a .cmd to it too), else the shell that
// executes it directly (Claude Code, Codex) and bash that dot-sources it
// (Gemini CLI).
type launched struct {
	how                    string
	stdout, stderr, echoed string
	err                    error
}

func launch(t *testing.T, env []string, args ...string) []launched {
	t.Helper()
	launcher, err := filepath.Abs(filepath.Join("..", "..", filepath.FromSlash(Launcher)))
	if err != nil {
		t.Fatal(err)
	}
	var cmds []*exec.Cmd
	var hows []string
	if runtime.GOOS == "windows" {
		cmds = append(cmds, exec.Command("cmd", append([]string{"/c", launcher}, args...)...))
		hows = append(hows, "cmd /c")
	} else {
		quoted := `"` + launcher + `"` + " " + strings.Join(args, " ")
		for _, sh := range []string{"sh", "bash"} {
			if _, err := exec.LookPath(sh); err == nil {
				cmds = append(cmds, exec.Command(sh, "-c", quoted))
				hows = append(hows, sh+" runs it")
			}
		}
		if _, err := exec.LookPath("bash"); err == nil {
			cmds = append(cmds, exec.Command("bash", "-c", ". "+quoted))
			hows = append(hows, "bash dot-sources it")
		}
	}
	var out []launched
	for i, cmd := range cmds {
		var so, se bytes.Buffer
		echo := filepath.Join(t.TempDir(), "echo")
		cmd.Env = append(append([]string(nil), env...), "CROSSCODE_LAUNCHER_ECHO="+echo)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(`{"hook_event_name":"PreToolUse"}`), &so, &se
		err := cmd.Run()
		echoed, _ := os.ReadFile(echo)
		out = append(out, launched{hows[i], so.String(), se.String(), strings.TrimSpace(string(echoed)), err})
	}
	return out
}

// TestLauncher: the launcher runs the binary the server recorded (or
// CROSSCODE_MCP_BIN's) with `hook` and its arguments, the hook input on
// its stdin and the via mark; with no binary anywhere it allows (exit 0)
// and says why on stderr.
func TestLauncher(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	cache := filepath.Join(home, "cache")
	// The environment of a hook: nothing of this machine's but what runs
	// a shell (PATH without crosscode-mcp: only the system folders).
	base := []string{"HOME=" + home, "USERPROFILE=" + home, "XDG_CACHE_HOME=" + cache, "LOCALAPPDATA=" + cache}
	if runtime.GOOS == "windows" {
		base = append(base, "PATH="+os.Getenv("SystemRoot")+`\system32`, "SystemRoot="+os.Getenv("SystemRoot"), "ComSpec="+os.Getenv("ComSpec"))
	} else {
		base = append(base, "PATH=/usr/bin:/bin")
	}

	// None: allowed, with the reason.
	for _, r := range launch(t, base, "claude-code", "PreToolUse") {
		if r.err != nil || r.stdout != "" || !strings.Contains(r.stderr, "no crosscode-mcp binary found") || !strings.Contains(r.stderr, "allowed") {
			t.Errorf("%s, no binary: err %v, stdout %q, stderr %q", r.how, r.err, r.stdout, r.stderr)
		}
	}

	// The recorded one (as RecordBinary writes it, under the cache dir the
	// launcher reads), then CROSSCODE_MCP_BIN over it.
	rec := filepath.Join(cache, "crosscode-mcp", "binary")
	os.MkdirAll(filepath.Dir(rec), 0o700)
	if err := os.WriteFile(rec, []byte(self+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, env := range [][]string{base, append(base, "CROSSCODE_MCP_BIN="+self)} {
		for _, r := range launch(t, env, "gemini", "BeforeTool") {
			want := `args=["hook" "gemini" "BeforeTool"] via=plugin stdin={"hook_event_name":"PreToolUse"}`
			if r.err != nil || r.echoed != want {
				t.Errorf("%s: err %v, the binary got %q, want %q; stderr %q", r.how, r.err, r.echoed, want, r.stderr)
			}
		}
	}

	// With the hook client next to the recorded binary (as in the release
	// archives and the npm packages), the launcher runs the client, with
	// the arguments alone (not Windows: the client serves unix only).
	if runtime.GOOS != "windows" {
		bin := t.TempDir()
		for _, name := range []string{"crosscode-mcp", "crosscode-hook"} {
			if err := os.Symlink(self, filepath.Join(bin, name)); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(rec, []byte(filepath.Join(bin, "crosscode-mcp")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, r := range launch(t, base, "claude-code", "PreToolUse") {
			want := `args=["claude-code" "PreToolUse"] via=plugin stdin={"hook_event_name":"PreToolUse"}`
			if r.err != nil || r.echoed != want {
				t.Errorf("%s, with crosscode-hook: err %v, it got %q, want %q; stderr %q", r.how, r.err, r.echoed, want, r.stderr)
			}
		}
	}

	// A recorded binary that is gone: as if none.
	if err := os.WriteFile(rec, []byte(filepath.Join(home, "gone", "crosscode-mcp")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, r := range launch(t, base, "codex", "PreToolUse") {
		if r.err != nil || !strings.Contains(r.stderr, "no crosscode-mcp binary found") {
			t.Errorf("%s, a stale record: err %v, stderr %q", r.how, r.err, r.stderr)
		}
	}
}

// TestRecordBinary: the record holds the binary's resolved path, is
// written only when it changes, and never names a temporary build or a
// test binary.
func TestRecordBinary(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	t.Setenv("LOCALAPPDATA", cache)
	t.Setenv("HOME", cache) // macOS: ~/Library/Caches
	rec, err := BinaryRecord()
	if err != nil {
		t.Fatal(err)
	}
	// A binary outside the temp dir (TMPDIR moved away from it).
	bin := filepath.Join(cache, "bin", "crosscode-mcp")
	os.MkdirAll(filepath.Dir(bin), 0o755)
	os.WriteFile(bin, []byte("x"), 0o755)
	t.Setenv("TMPDIR", filepath.Join(cache, "tmp"))
	t.Setenv("TMP", filepath.Join(cache, "tmp"))
	t.Setenv("TEMP", filepath.Join(cache, "tmp"))
	if err := RecordBinary(bin); err != nil {
		t.Fatal(err)
	}
	if got := RecordedBinary(); got != bin {
		t.Fatalf("recorded %q, want %q (in %s)", got, bin, rec)
	}
	fi1, _ := os.Stat(rec)
	if err := RecordBinary(bin); err != nil {
		t.Fatal(err)
	}
	if fi2, _ := os.Stat(rec); !os.SameFile(fi1, fi2) {
		t.Error("the record was rewritten although it did not change")
	}
	// A build in the temp dir is not recorded.
	tmpBin := filepath.Join(cache, "tmp", "go-build1", "crosscode-mcp")
	os.MkdirAll(filepath.Dir(tmpBin), 0o755)
	os.WriteFile(tmpBin, []byte("x"), 0o755)
	if err := RecordBinary(tmpBin); err != nil {
		t.Fatal(err)
	}
	if got := RecordedBinary(); got != bin {
		t.Errorf("a temporary build replaced the record: %q", got)
	}
	// Nor a Go test binary, wherever it is (a test's server with a temp
	// dir of its own).
	testBin := filepath.Join(cache, "go-build2", "crosscode-mcp.test")
	os.MkdirAll(filepath.Dir(testBin), 0o755)
	os.WriteFile(testBin, []byte("x"), 0o755)
	if err := RecordBinary(testBin); err != nil {
		t.Fatal(err)
	}
	if got := RecordedBinary(); got != bin {
		t.Errorf("a test binary replaced the record: %q", got)
	}
}

// TestPackageServerCommand: the packages' MCP server entry (the plugin's
// .mcp.json, the same in gemini-extension.json) runs, as the clients run
// it, with the environment Codex gives a server (HOME and PATH, no
// XDG_CACHE_HOME) and the entry's own: the binary the server recorded,
// else CROSSCODE_MCP_BIN's, else crosscode-mcp on PATH, with no argument,
// stdin its own and the via mark; with none, `npx -y crosscode-mcp`.
func TestPackageServerCommand(t *testing.T) {
	node := sysdeps.Need(t, "node")
	entry := npmtest.PackageEntry(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// PATH: a folder with node alone, and one for what a case puts there.
	nodeDir, onPath := t.TempDir(), t.TempDir()
	if err := os.Symlink(node, filepath.Join(nodeDir, "node")); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	run := func(env ...string) (echoed, stderr string) {
		t.Helper()
		echo := filepath.Join(t.TempDir(), "echo")
		cmd := exec.Command(entry.Command, entry.Args...)
		cmd.Path = "" // found on the PATH the client gives, not the test's
		for _, dir := range []string{onPath, nodeDir} {
			if _, err := os.Stat(filepath.Join(dir, entry.Command)); err == nil && cmd.Path == "" {
				cmd.Path = filepath.Join(dir, entry.Command)
			}
		}
		cmd.Env = append([]string{"HOME=" + home, "PATH=" + onPath + string(os.PathListSeparator) + nodeDir, "CROSSCODE_LAUNCHER_ECHO=" + echo}, env...)
		for k, v := range entry.Env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		var se bytes.Buffer
		cmd.Stdin, cmd.Stderr = strings.NewReader(`{"jsonrpc":"2.0"}`), &se
		if err := cmd.Run(); err != nil {
			t.Fatalf("%v: %v; stderr %q", env, err, se.String())
		}
		out, _ := os.ReadFile(echo)
		return strings.TrimSpace(string(out)), se.String()
	}
	const served = `server args=[] via=plugin stdin={"jsonrpc":"2.0"}`

	// None: npx (here a stand-in on PATH that says how it was run).
	npx := filepath.Join(onPath, "npx")
	if err := os.WriteFile(npx, []byte("#!/bin/sh\nprintf 'npx %s' \"$*\" > \"$CROSSCODE_LAUNCHER_ECHO\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got, se := run(); got != "npx -y crosscode-mcp" {
		t.Errorf("no binary anywhere: %q, want npx -y crosscode-mcp; stderr %q", got, se)
	}
	// On PATH.
	if err := os.Symlink(self, filepath.Join(onPath, "crosscode-mcp")); err != nil {
		t.Fatal(err)
	}
	if got, se := run(); got != served {
		t.Errorf("on PATH: the binary got %q, want %q; stderr %q", got, served, se)
	}
	os.Remove(filepath.Join(onPath, "crosscode-mcp"))
	// Recorded, in the cache folder of Codex's environment (~/.cache) and
	// in XDG_CACHE_HOME's; a record of a binary that is gone counts for
	// nothing.
	record := func(dir, bin string) {
		t.Helper()
		os.MkdirAll(filepath.Join(dir, "crosscode-mcp"), 0o700)
		if err := os.WriteFile(filepath.Join(dir, "crosscode-mcp", "binary"), []byte(bin+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	record(filepath.Join(home, ".cache"), self)
	if got, se := run(); got != served {
		t.Errorf("recorded in ~/.cache: %q, want %q; stderr %q", got, served, se)
	}
	xdg := filepath.Join(home, "xdg")
	record(xdg, self)
	record(filepath.Join(home, ".cache"), filepath.Join(home, "gone", "crosscode-mcp"))
	if got, se := run("XDG_CACHE_HOME=" + xdg); got != served {
		t.Errorf("recorded in XDG_CACHE_HOME: %q, want %q; stderr %q", got, served, se)
	}
	if got, _ := run(); got != "npx -y crosscode-mcp" {
		t.Errorf("a record of a binary that is gone: %q, want npx", got)
	}
	// CROSSCODE_MCP_BIN first.
	if got, se := run("CROSSCODE_MCP_BIN=" + self); got != served {
		t.Errorf("CROSSCODE_MCP_BIN: %q, want %q; stderr %q", got, served, se)
	}
}
