// Package npmtest makes the npm packages of crosscode-mcp the way a release
// does (scripts/npm over a dist laid out like GoReleaser's) for the host
// platform only, packs them and installs the tarballs into fresh projects
// with npm, offline: the npm test and the npx benchmark run what a user's
// `npx -y crosscode-mcp` runs. Everything lives under t.TempDir(), npm's
// cache included; a loopback listener stands in for the registry and
// counts every connection npm makes to it (there must be none).
package npmtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/crosscode/crosscode-mcp/internal/testing/sysdeps"
)

// The stamps of the test build, as GoReleaser would set them.
const (
	Version = "1.2.3-npmtest.1"
	Commit  = "0123456789abcdef0123456789abcdef01234567"
	Date    = "2026-12-02T05:00:00Z"
)

// Node's names for the platforms that have a package (spec section 13).
var nodeOS = map[string]string{"linux": "linux", "darwin": "darwin", "windows": "win32"}
var nodeCPU = map[string]string{"amd64": "x64", "arm64": "arm64"}

// Packages are the host's npm packages, packed.
type Packages struct {
	Dir      string // scripts/npm's output: crosscode-mcp/ and mcp-OS-CPU/
	Binary   string // the stamped binary they were made from
	Launcher string // the crosscode-mcp tarball
	Platform string // the @crosscode/mcp-OS-CPU tarball of the host
	PlatPkg  string // that package's name

	env  []string
	hits atomic.Int64
}

// Pack builds the host's binary with the release stamps, runs scripts/npm
// on it and packs the launcher and the host's platform package. It needs
// node and npm (sysdeps.Need) and skips on a host that has no package.
func Pack(t testing.TB) *Packages {
	t.Helper()
	sysdeps.Need(t, "node")
	sysdeps.Need(t, "npm")
	osName, cpu := nodeOS[runtime.GOOS], nodeCPU[runtime.GOARCH]
	if osName == "" || cpu == "" {
		t.Skipf("no npm package for %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	repo := repoRoot(t)
	tmp := t.TempDir()
	p := &Packages{PlatPkg: "@crosscode/mcp-" + osName + "-" + cpu}
	p.env = p.npmEnv(t, tmp)

	// A dist as GoReleaser leaves it, with the one target: the binary,
	// artifacts.json (paths relative to dist's parent) and metadata.json.
	// Plain `go build` (cached like the other tests' builds); the release
	// flags (-trimpath, CGO off, -s -w) are CI's goreleaser step's part.
	dist := filepath.Join(tmp, "dist")
	sub := fmt.Sprintf("crosscode-mcp_%s_%s", runtime.GOOS, runtime.GOARCH)
	exe := "crosscode-mcp"
	if runtime.GOOS == "windows" {
		exe += ".exe"
	}
	p.Binary = filepath.Join(dist, sub, exe)
	ldflags := fmt.Sprintf("-X main.version=%s -X main.commit=%s -X main.date=%s", Version, Commit, Date)
	build := exec.Command("go", "build", "-ldflags", ldflags, "-o", p.Binary, "./cmd/crosscode-mcp")
	build.Dir = repo
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	artifacts := []map[string]any{{
		"name": exe, "path": "dist/" + sub + "/" + exe, "goos": runtime.GOOS, "goarch": runtime.GOARCH,
		"internal_type": 4, "type": "Binary", "extra": map[string]any{"Binary": "crosscode-mcp", "ID": "crosscode-mcp"},
	}}
	if runtime.GOOS != "windows" {
		// The hook client, as the release builds it for unix systems.
		hsub := fmt.Sprintf("crosscode-hook_%s_%s", runtime.GOOS, runtime.GOARCH)
		build := exec.Command("go", "build", "-o", filepath.Join(dist, hsub, "crosscode-hook"), "./cmd/crosscode-hook")
		build.Dir = repo
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("go build: %v\n%s", err, out)
		}
		artifacts = append(artifacts, map[string]any{
			"name": "crosscode-hook", "path": "dist/" + hsub + "/crosscode-hook", "goos": runtime.GOOS, "goarch": runtime.GOARCH,
			"internal_type": 4, "type": "Binary", "extra": map[string]any{"Binary": "crosscode-hook", "ID": "crosscode-hook"},
		})
	}
	writeJSON(t, filepath.Join(dist, "artifacts.json"), artifacts)
	writeJSON(t, filepath.Join(dist, "metadata.json"), map[string]any{
		"project_name": "crosscode-mcp", "tag": "v" + Version, "version": Version, "commit": Commit, "date": Date,
	})

	script := exec.Command("node", filepath.Join(repo, "scripts", "npm"), "--dist", dist, "--partial")
	script.Env = p.env
	if out, err := script.CombinedOutput(); err != nil {
		t.Fatalf("scripts/npm: %v\n%s", err, out)
	}
	p.Dir = filepath.Join(dist, "npm")

	tarballs := filepath.Join(tmp, "tarballs")
	if err := os.Mkdir(tarballs, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, pkg := range []string{"crosscode-mcp", "mcp-" + osName + "-" + cpu} {
		cmd := p.Command(filepath.Join(p.Dir, pkg), "npm", "pack", "--json", "--pack-destination", tarballs)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("npm pack %s: %v\n%s", pkg, err, stderr.String())
		}
		var packed []struct{ Filename string }
		if err := json.Unmarshal(out, &packed); err != nil || len(packed) != 1 {
			t.Fatalf("npm pack %s --json: %v\n%s", pkg, err, out)
		}
		if pkg == "crosscode-mcp" {
			p.Launcher = filepath.Join(tarballs, packed[0].Filename)
		} else {
			p.Platform = filepath.Join(tarballs, packed[0].Filename)
		}
	}
	return p
}

// Install makes a fresh project (a git repository, so the server has one
// to work in) and installs the launcher's tarball into it, with the
// host's platform package when withPlatform, by `npm install --offline`.
// It returns the project's directory.
func (p *Packages) Install(t testing.TB, withPlatform bool) string {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("git", "init", "-q", dir).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	if err := os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"name": "npmtest-project", "version": "1.0.0", "private": true}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"install", "--offline", "--no-audit", "--no-fund", p.Launcher}
	if withPlatform {
		args = append(args, p.Platform)
	}
	if out, err := p.Command(dir, "npm", args...).CombinedOutput(); err != nil {
		t.Fatalf("npm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return dir
}

// Command is name with args in dir, in the npm environment: offline, the
// counting registry, npm's cache, HOME and TMPDIR under the test's temp
// dir, no user or global git config.
func (p *Packages) Command(dir, name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Env = dir, append([]string(nil), p.env...)
	return cmd
}

// Env is the npm environment Command uses.
func (p *Packages) Env() []string { return append([]string(nil), p.env...) }

// RegistryConnections counts the connections npm made to the registry.
func (p *Packages) RegistryConnections() int64 { return p.hits.Load() }

// npmEnv is the environment for npm, node and the server: the caller's,
// without its npm settings, plus an offline npm whose registry is a
// loopback listener that counts connections and answers none.
func (p *Packages) npmEnv(t testing.TB, tmp string) []string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.hits.Add(1)
			c.Close()
		}
	}()
	home, tmpdir := filepath.Join(tmp, "home"), filepath.Join(tmp, "tmp")
	for _, d := range []string{home, tmpdir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch lk := strings.ToLower(k); {
		case strings.HasPrefix(lk, "npm_"), k == "HOME", k == "TMPDIR", k == "XDG_CONFIG_HOME", k == "XDG_CACHE_HOME":
			continue
		}
		env = append(env, kv)
	}
	return append(env,
		"HOME="+home, "TMPDIR="+tmpdir, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"), "XDG_CACHE_HOME="+filepath.Join(home, ".cache"),
		"npm_config_cache="+filepath.Join(tmp, "npm-cache"),
		"npm_config_userconfig="+filepath.Join(home, ".npmrc"), // absent
		"npm_config_registry=http://"+ln.Addr().String()+"/",
		"npm_config_offline=true",
		"npm_config_audit=false", "npm_config_fund=false", "npm_config_update_notifier=false",
		"npm_config_loglevel=warn",
		"GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_CONFIG_NOSYSTEM=1",
	)
}

func writeJSON(t testing.TB, path string, v any) {
	t.Helper()
	data, err := json.MarshalIndent(v, "", "  ")
	if err == nil {
		err = os.WriteFile(path, append(data, '\n'), 0o644)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// repoRoot is the directory of go.mod above the working directory.
func repoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the working directory")
		}
		dir = parent
	}
}

// Entry is an MCP server entry of a client package, as the client reads
// it: the command, its arguments and what it adds to the environment.
type Entry struct {
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
}

// PackageEntry is the crosscode server's entry of the plugin
// (plugins/crosscode/.mcp.json; gemini-extension.json has the same).
func PackageEntry(t testing.TB) Entry {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "plugins", "crosscode", ".mcp.json"))
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		MCPServers map[string]Entry `json:"mcpServers"`
	}
	if err := json.Unmarshal(b, &file); err != nil {
		t.Fatalf(".mcp.json: %v", err)
	}
	e, ok := file.MCPServers["crosscode"]
	if !ok {
		t.Fatal(".mcp.json has no crosscode server")
	}
	return e
}
