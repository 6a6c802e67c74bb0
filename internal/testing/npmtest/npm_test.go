//go:build linux

package npmtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/crosscode/crosscode-mcp/internal/testing/procs"
)

const wait = 60 * time.Second // a loaded 2-core machine starts node slowly

// TestNpmPackages: scripts/npm's packages, packed and installed offline,
// run the stamped binary through `npx --no-install crosscode-mcp` as an
// MCP client's config does, pass signals on, end as the binary ends, and
// say what to do when the platform package is missing.
func TestNpmPackages(t *testing.T) {
	p := Pack(t)
	checkPackageJSON(t, p)
	proj := p.Install(t, true)

	t.Run("version", func(t *testing.T) {
		out, err := p.Command(proj, "npx", "--no-install", "crosscode-mcp", "version").Output()
		want := fmt.Sprintf("crosscode-mcp %s (commit %s, built %s, %s %s/%s)\n", Version, Commit[:12], Date, runtime.Version(), runtime.GOOS, runtime.GOARCH)
		if err != nil || string(out) != want {
			t.Fatalf("npx --no-install crosscode-mcp version: %v\n got %q\nwant %q", err, out, want)
		}
	})

	t.Run("installed binary is executable", func(t *testing.T) {
		fi, err := os.Stat(filepath.Join(proj, "node_modules", p.PlatPkg, "bin", "crosscode-mcp"))
		if err != nil || fi.Mode().Perm()&0o111 != 0o111 {
			t.Fatalf("the installed binary: %v, mode %v", err, fi.Mode())
		}
		// The hook client beside it, where the plugin's launcher looks.
		fi, err = os.Stat(filepath.Join(proj, "node_modules", p.PlatPkg, "bin", "crosscode-hook"))
		if err != nil || fi.Mode().Perm()&0o111 != 0o111 {
			t.Fatalf("the installed hook client: %v, mode %v", err, fi.Mode())
		}
	})

	t.Run("initialize through npx, then stdin closed", func(t *testing.T) {
		s := start(t, p.Command(proj, "npx", "--no-install", "crosscode-mcp"))
		if name := ServerName(initialize(t, s)); name != "crosscode-mcp" {
			t.Fatalf("serverInfo.name %q", name)
		}
		s.CloseStdin()
		st, err := s.Wait(wait)
		if err != nil || st.ExitCode() != 0 {
			t.Fatalf("after stdin closed: %v, %v; stderr:\n%s", err, st, s.Stderr())
		}
	})

	// The launcher itself (node_modules/.bin/crosscode-mcp, what npx runs)
	// gets a signal; stdin stays open, so only the signal can end the
	// server. SIGINT and SIGTERM end it cleanly (exit 0, as the bare binary
	// does); it has no handler for SIGHUP, dies of it, and the launcher
	// then dies of the same signal.
	launcher := filepath.Join(proj, "node_modules", ".bin", "crosscode-mcp")
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP} {
		t.Run("launcher passes on "+sig.String(), func(t *testing.T) {
			s := start(t, p.Command(proj, launcher))
			initialize(t, s)
			child := onlyChild(t, s.Cmd.Process.Pid)
			t.Cleanup(func() {
				if t.Failed() {
					syscall.Kill(child, syscall.SIGKILL) // an orphan, if the launcher left one
				}
			})
			if err := s.Cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			st, err := s.Wait(wait)
			if err != nil {
				t.Fatal(err)
			}
			ws := st.Sys().(syscall.WaitStatus)
			if sig == syscall.SIGHUP {
				if !ws.Signaled() || ws.Signal() != sig {
					t.Fatalf("launcher ended with %v, want killed by %v; stderr:\n%s", st, sig, s.Stderr())
				}
			} else if st.ExitCode() != 0 {
				t.Fatalf("launcher ended with %v, want exit 0 (the server's own); stderr:\n%s", st, s.Stderr())
			}
			if err := syscall.Kill(child, 0); !errors.Is(err, syscall.ESRCH) {
				t.Fatalf("the server (pid %d) outlived the launcher: %v", child, err)
			}
		})
	}

	t.Run("launcher dies of the signal that killed the server", func(t *testing.T) {
		s := start(t, p.Command(proj, launcher))
		initialize(t, s)
		if err := syscall.Kill(onlyChild(t, s.Cmd.Process.Pid), syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		st, err := s.Wait(wait)
		if ws := st.Sys().(syscall.WaitStatus); err != nil || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
			t.Fatalf("launcher ended with %v (%v), want killed by SIGKILL; stderr:\n%s", st, err, s.Stderr())
		}
	})

	t.Run("exit code passes through", func(t *testing.T) {
		cmd := p.Command(proj, "npx", "--no-install", "crosscode-mcp", "--no-such-flag")
		out, err := cmd.Output()
		if st := cmd.ProcessState; st == nil || st.ExitCode() != 2 || len(out) != 0 {
			t.Fatalf("a usage error: %v, stdout %q; want exit 2 (the binary's) and nothing on stdout", err, out)
		}
	})

	bare := p.Install(t, false)
	t.Run("no platform package", func(t *testing.T) {
		cmd := p.Command(bare, "npx", "--no-install", "crosscode-mcp", "version")
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, _ := cmd.Output()
		osName, cpu := nodeOS[runtime.GOOS], nodeCPU[runtime.GOARCH]
		for _, want := range []string{
			fmt.Sprintf("no binary for this platform (%s %s)", osName, cpu),
			p.PlatPkg + "@" + Version,
			fmt.Sprintf("crosscode-mcp_%s_%s_%s.tar.gz", Version, runtime.GOOS, runtime.GOARCH),
			"go install github.com/crosscode/crosscode-mcp/cmd/crosscode-mcp@latest",
			"CROSSCODE_MCP_BINARY",
		} {
			if !strings.Contains(stderr.String(), want) {
				t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
			}
		}
		if cmd.ProcessState.ExitCode() != 1 || len(out) != 0 {
			t.Fatalf("exit %v, stdout %q; want 1 and nothing", cmd.ProcessState, out)
		}
	})

	t.Run("CROSSCODE_MCP_BINARY", func(t *testing.T) {
		cmd := p.Command(bare, "npx", "--no-install", "crosscode-mcp", "version")
		cmd.Env = append(cmd.Env, "CROSSCODE_MCP_BINARY="+p.Binary)
		out, err := cmd.Output()
		if err != nil || !strings.HasPrefix(string(out), "crosscode-mcp "+Version+" (") {
			t.Fatalf("%v, stdout %q", err, out)
		}
	})

	if n := p.RegistryConnections(); n != 0 {
		t.Fatalf("npm connected to the registry %d times; everything must come from the tarballs", n)
	}
}

// checkPackageJSON checks the fields npm and the spec rely on.
func checkPackageJSON(t *testing.T, p *Packages) {
	t.Helper()
	read := func(dir string) map[string]any {
		var m map[string]any
		data, err := os.ReadFile(filepath.Join(p.Dir, dir, "package.json"))
		if err == nil {
			err = json.Unmarshal(data, &m)
		}
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := m["scripts"]; ok {
			t.Errorf("%s: has scripts (no install script may run): %v", dir, m["scripts"])
		}
		for _, k := range []string{"license", "repository", "description"} {
			if m[k] == nil {
				t.Errorf("%s: no %s", dir, k)
			}
		}
		if m["license"] != "Apache-2.0" {
			t.Errorf("%s: license %v, want Apache-2.0 (the LICENSE file's)", dir, m["license"])
		}
		if lic, err := os.ReadFile(filepath.Join(p.Dir, dir, "LICENSE")); err != nil || !strings.Contains(string(lic), "Apache License") {
			t.Errorf("%s: no LICENSE with the Apache License: %v", dir, err)
		}
		if m["version"] != Version {
			t.Errorf("%s: version %v, want %s", dir, m["version"], Version)
		}
		return m
	}
	l := read("crosscode-mcp")
	if l["name"] != "crosscode-mcp" || fmt.Sprint(l["bin"]) != "map[crosscode-mcp:bin/crosscode-mcp.js]" ||
		fmt.Sprint(l["engines"]) != "map[node:>=18]" {
		t.Errorf("launcher package.json: name %v, bin %v, engines %v", l["name"], l["bin"], l["engines"])
	}
	deps, _ := l["optionalDependencies"].(map[string]any)
	want := map[string]any{}
	for _, o := range []string{"linux", "darwin", "win32"} {
		for _, c := range []string{"x64", "arm64"} {
			want["@crosscode/mcp-"+o+"-"+c] = Version
		}
	}
	if fmt.Sprint(deps) != fmt.Sprint(want) {
		t.Errorf("optionalDependencies %v, want %v", deps, want)
	}
	// The MCP Registry's server.json, stamped: its name is the launcher's
	// mcpName (how the registry verifies an npm package), its package the
	// launcher at this version.
	var server struct {
		Name     string
		Version  string
		Packages []struct {
			RegistryType, Identifier, Version string
			Transport                         struct{ Type string }
		}
	}
	if b, err := os.ReadFile(filepath.Join(filepath.Dir(p.Dir), "server.json")); err != nil {
		t.Errorf("no server.json beside the packages: %v", err)
	} else if err := json.Unmarshal(b, &server); err != nil {
		t.Errorf("server.json: %v", err)
	}
	if server.Name == "" || server.Name != l["mcpName"] || server.Version != Version || len(server.Packages) != 1 ||
		server.Packages[0].Identifier != "crosscode-mcp" || server.Packages[0].Version != Version || server.Packages[0].Transport.Type != "stdio" {
		t.Errorf("server.json %+v does not describe the launcher (mcpName %v) at %s", server, l["mcpName"], Version)
	}
	osName, cpu := nodeOS[runtime.GOOS], nodeCPU[runtime.GOARCH]
	pl := read("mcp-" + osName + "-" + cpu)
	if pl["name"] != p.PlatPkg || fmt.Sprint(pl["os"]) != "["+osName+"]" || fmt.Sprint(pl["cpu"]) != "["+cpu+"]" ||
		pl["preferUnplugged"] != true || pl["bin"] != nil {
		t.Errorf("platform package.json: name %v, os %v, cpu %v, preferUnplugged %v, bin %v", pl["name"], pl["os"], pl["cpu"], pl["preferUnplugged"], pl["bin"])
	}
}

// start starts cmd as a Session that is killed if the test ends first.
func start(t *testing.T, cmd *exec.Cmd) *Session {
	t.Helper()
	s, err := Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if s.Cmd.ProcessState == nil {
			s.Cmd.Process.Kill()
			s.Wait(wait)
		}
	})
	return s
}

func initialize(t *testing.T, s *Session) map[string]any {
	t.Helper()
	res, err := s.Initialize(wait)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// onlyChild is the pid of the one child process of pid (from /proc).
func onlyChild(t *testing.T, pid int) int {
	t.Helper()
	var kids []int
	for child, p := range procs.All() {
		if p.PPID == pid {
			kids = append(kids, child)
		}
	}
	if len(kids) != 1 {
		t.Fatalf("pid %d has children %v, want one (the server)", pid, kids)
	}
	return kids[0]
}
