package cappy

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/crosscode/crosscode-mcp/internal/testing/procs"
	"github.com/crosscode/crosscode-mcp/internal/testing/sysdeps"
)

func TestStaticServer(t *testing.T) {
	dir := t.TempDir()
	outside := t.TempDir()
	files := map[string]string{
		"index.html": "<!doctype html>game", "game.js": "export {}", "lib/phaser.min.js": "var Phaser", "data/level.json": "{}",
		"game.wasm": "\x00asm", "art/hero.png": "\x89PNG", "sub/index.html": "sub page", "empty/.keep": "",
	}
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("secret"), 0o644)
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(dir, "link.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "out")); err != nil {
		t.Fatal(err)
	}
	s, err := ServeStatic(dir, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !strings.HasPrefix(s.URL(), "http://127.0.0.1:") {
		t.Fatalf("URL %s", s.URL())
	}
	get := func(path string, header http.Header) (int, string, http.Header) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, s.URL()+strings.TrimPrefix(path, "/"), nil)
		for k, v := range header {
			req.Header[k] = v
		}
		if h := header.Get("Host"); h != "" {
			req.Host = h
		}
		client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), resp.Header
	}
	for path, want := range map[string]string{
		"/": "text/html; charset=utf-8", "/game.js": "text/javascript; charset=utf-8", "/lib/phaser.min.js": "text/javascript; charset=utf-8",
		"/data/level.json": "application/json", "/game.wasm": "application/wasm", "/art/hero.png": "image/png", "/sub/": "text/html; charset=utf-8",
	} {
		code, _, h := get(path, nil)
		if code != http.StatusOK || h.Get("Content-Type") != want || h.Get("Cache-Control") != "no-cache" {
			t.Errorf("GET %s: %d %q %q, want 200 %q no-cache", path, code, h.Get("Content-Type"), h.Get("Cache-Control"), want)
		}
	}
	if code, body, _ := get("/", nil); code != 200 || body != "<!doctype html>game" {
		t.Errorf("GET /: %d %q", code, body)
	}
	if code, _, h := get("/sub", nil); code != http.StatusMovedPermanently || h.Get("Location") != "/sub/" {
		t.Errorf("GET /sub: %d %v, want a redirect to /sub/", code, h)
	}
	// Nothing outside the directory, no listings.
	for _, path := range []string{"/../" + filepath.Base(outside) + "/secret.txt", "/%2e%2e/secret.txt", "/link.txt", "/out/secret.txt", "/empty/", "/missing.js", "/lib/"} {
		if code, body, _ := get(path, nil); code != http.StatusNotFound || strings.Contains(body, "secret") {
			t.Errorf("GET %s: %d %q, want 404", path, code, body)
		}
	}
	// A foreign Host (DNS rebinding) is refused; so is a write.
	if code, _, _ := get("/game.js", http.Header{"Host": {"evil.example:80"}}); code != http.StatusForbidden {
		t.Errorf("foreign Host: %d, want 403", code)
	}
	resp, err := http.Post(s.URL()+"game.js", "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d, want 405", resp.StatusCode)
	}
	if _, err := ServeStatic(filepath.Join(dir, "nope"), "", nil); err == nil {
		t.Error("serving a missing directory succeeded")
	}
	if _, err := ServeStatic(dir, "0.0.0.0:0", nil); err == nil {
		t.Error("serving on a non-loopback address succeeded")
	}
}

func TestWebGameConfig(t *testing.T) {
	for _, tc := range []struct {
		json, err string
	}{
		{`{"game": {"serve": "dist"}}`, ""},
		{`{"game": {"serve": "dist", "url": "/?autopilot=1", "headed": true, "browser": "chromium"}}`, ""},
		{`{"game": {"url": "http://127.0.0.1:5173/", "command": ["npm", "run", "dev"]}}`, ""},
		{`{"game": {"url": "http://localhost:5173/"}}`, ""},
		{`{"game": {"command": ["godot"]}}`, ""},
		{`{"game": {}}`, "game.command"},
		{`{"game": {"command": ["godot"], "headed": true}}`, "for a web game"},
		{`{"game": {"url": "/index.html"}}`, "needs game.serve"},
		{`{"game": {"url": "https://example.com/game"}}`, "on this machine"},
		{`{"game": {"url": "file:///tmp/game.html"}}`, "http://"},
		{`{"game": {"serve": "dist", "url": "//example.com/"}}`, "on this machine"},
		{`{"game": {"serve": "dist", "port": 3}}`, "unknown field"},
	} {
		p := filepath.Join(t.TempDir(), "capture.json")
		os.WriteFile(p, []byte(tc.json), 0o644)
		_, err := LoadConfig(p, false)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.json, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: %v, want an error about %q", tc.json, err, tc.err)
		}
	}
}

func TestResolvePage(t *testing.T) {
	for _, tc := range []struct{ base, page, want string }{
		{"http://127.0.0.1:4000/", "", "http://127.0.0.1:4000/"},
		{"http://127.0.0.1:4000/", "/?autopilot=1", "http://127.0.0.1:4000/?autopilot=1"},
		{"http://127.0.0.1:4000/", "levels/2.html", "http://127.0.0.1:4000/levels/2.html"},
		{"", "http://[::1]:5173/play", "http://[::1]:5173/play"},
	} {
		got, err := resolvePage(tc.base, tc.page)
		if err != nil || got != tc.want {
			t.Errorf("resolvePage(%q, %q) = %q, %v; want %q", tc.base, tc.page, got, err, tc.want)
		}
	}
}

// A launch's origin is allowed while it lasts, and only exactly it.
func TestAllowOrigin(t *testing.T) {
	e := newEnv(t, nil)
	dial := func(origin string) int {
		t.Helper()
		a, resp, err := dialAdapter(t, e, &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {origin}}})
		if err == nil {
			a.ws.CloseNow()
			return http.StatusSwitchingProtocols
		}
		if resp == nil {
			t.Fatal(err)
		}
		return resp.StatusCode
	}
	page := "http://127.0.0.1:41234"
	if code := dial(page); code != http.StatusForbidden {
		t.Fatalf("before the launch: %d, want 403", code)
	}
	withdraw := e.ctrl.AllowOrigin(page)
	again := e.ctrl.AllowOrigin(page) // a second launch of the same origin
	if code := dial(page); code != http.StatusSwitchingProtocols {
		t.Fatalf("during the launch: %d, want an upgrade", code)
	}
	for _, other := range []string{"http://127.0.0.1:41235", "https://127.0.0.1:41234", "http://localhost:41234"} {
		if code := dial(other); code != http.StatusForbidden {
			t.Fatalf("%s during the launch of %s: %d, want 403", other, page, code)
		}
	}
	withdraw()
	withdraw() // once only
	if code := dial(page); code != http.StatusSwitchingProtocols {
		t.Fatalf("with the second launch still on: %d, want an upgrade", code)
	}
	again()
	if code := dial(page); code != http.StatusForbidden {
		t.Fatalf("after the launches: %d, want 403", code)
	}
}

// game.command with game.url: the dev server starts first, its url is
// waited for, the browser opens it; Stop ends both.
func TestBrowserWithDevServer(t *testing.T) {
	node := sysdeps.Need(t, "node")
	sysdeps.Need(t, "chromium")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	// Slow to start, as dev servers are: it listens after a second.
	server := fmt.Sprintf(`setTimeout(() => require('http').createServer((q, s) => { console.log('GET ' + q.url); s.end('<!doctype html><script>console.error("page says hi")</script>'); }).listen(%d, '127.0.0.1'), 1000)`, port)
	e := newEnv(t, nil)
	logPath := filepath.Join(t.TempDir(), "game.log")
	// What a launch killed with its controller (kill -9) left: its dir,
	// with a profile whose singleton socket is in the temp dir.
	tmp := t.TempDir()
	staleSock := filepath.Join(os.TempDir(), fmt.Sprintf("org.chromium.Chromium.test%d", os.Getpid()))
	if err := os.MkdirAll(filepath.Join(tmp, "crosscode-browser-1", "profile"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(staleSock, 0o700); err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(staleSock)
	if err := os.Symlink(filepath.Join(staleSock, "SingletonSocket"), filepath.Join(tmp, "crosscode-browser-1", "profile", "SingletonSocket")); err != nil {
		t.Fatal(err)
	}
	b := &BrowserLauncher{URL: fmt.Sprintf("http://127.0.0.1:%d/play?x=1", port), LogPath: logPath, Allow: e.ctrl.AllowOrigin,
		Server: &Launcher{Command: []string{node, "-e", server}, LogPath: logPath}, TempDir: tmp}
	if err := b.Start(e.ctrl.Endpoint(), e.ctrl.Token()); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(tmp, "crosscode-browser-1"), staleSock} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("the launch left %s of a killed one (%v)", p, err)
		}
	}
	eventually(t, "the page's console in the log", func() bool { return strings.Contains(b.Tail(4096), "[console.error] page says hi") })
	tail := b.Tail(4096)
	if !strings.Contains(tail, "GET /play?x=1") || strings.Contains(tail, e.ctrl.Token()) {
		t.Fatalf("log:\n%s", tail)
	}
	in := b.Info()
	if !in.Running || in.PID == 0 || in.Starts != 1 || !b.Server.Running() {
		t.Fatalf("after Start: %+v, dev server running %v", in, b.Server.Running())
	}
	profiles, _ := filepath.Glob(filepath.Join(tmp, "crosscode-browser-*", "profile", "SingletonSocket"))
	if len(profiles) != 1 {
		t.Fatalf("the browser's profile in %s: %v", tmp, profiles)
	}
	sock, err := os.Readlink(profiles[0])
	if err != nil {
		t.Fatal(err)
	}
	b.Stop(5 * time.Second)
	if b.Running() || b.Server.Running() || procs.Alive(in.PID) {
		t.Fatalf("after Stop: browser running %v (pid %d alive %v), dev server running %v", b.Running(), in.PID, procs.Alive(in.PID), b.Server.Running())
	}
	// Nothing of the launch stays: its dir (profile and all) and the
	// singleton socket's dir Chromium made in the temp dir.
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("after Stop, %s holds %v", tmp, left)
	}
	if _, err := os.Stat(filepath.Dir(sock)); !os.IsNotExist(err) {
		t.Errorf("after Stop, Chromium's %s is still there (%v)", filepath.Dir(sock), err)
	}
}

// TestBrowserStartedAgainAfterEarlyExit: a browser that exits before it
// listens (as Chromium once did on a loaded machine) is started again, up
// to three times in all; one that never starts is reported with what it
// printed, after the third.
func TestBrowserStartedAgainAfterEarlyExit(t *testing.T) {
	chromium := sysdeps.Need(t, "chromium")
	site := t.TempDir()
	if err := os.WriteFile(filepath.Join(site, "index.html"), []byte("<!doctype html><title>x</title>"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		fails int // how many starts exit at once
		ok    bool
	}{
		{"twice", 2, true},
		{"always", 99, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			count := filepath.Join(dir, "starts")
			exe := filepath.Join(dir, "flaky-chromium")
			script := fmt.Sprintf("#!/bin/sh\necho start >> %s\nif [ \"$(wc -l < %s)\" -le %d ]; then echo 'exiting early' >&2; exit 1; fi\nexec %s \"$@\"\n",
				shellQuoted(count), shellQuoted(count), tc.fails, shellQuoted(chromium))
			if err := os.WriteFile(exe, []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			e := newEnv(t, nil)
			b := &BrowserLauncher{Browser: exe, Serve: site, URL: "/", LogPath: filepath.Join(dir, "game.log"), Allow: e.ctrl.AllowOrigin, TempDir: t.TempDir()}
			err := b.Start(e.ctrl.Endpoint(), e.ctrl.Token())
			defer b.Stop(5 * time.Second)
			b2, _ := os.ReadFile(count)
			starts := strings.Count(string(b2), "start")
			if tc.ok && (err != nil || starts != 3 || !b.Running() || b.Info().Starts != 1) {
				t.Fatalf("after two early exits: err %v, %d starts, running %v, %+v", err, starts, b.Running(), b.Info())
			}
			if !tc.ok && (err == nil || starts != 3 || !strings.Contains(err.Error(), "exiting early")) {
				t.Fatalf("a browser that never starts: err %v after %d starts", err, starts)
			}
		})
	}
}

func shellQuoted(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// TestBrowserLongTempDir: with a temp dir too long for Chromium's
// singleton socket (Chromium then exits at once without a word), the
// browser gets /tmp instead, starts, and leaves nothing there after Stop.
func TestBrowserLongTempDir(t *testing.T) {
	sysdeps.Need(t, "chromium")
	long := filepath.Join(t.TempDir(), strings.Repeat("x", 80))
	if err := os.Mkdir(long, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", long)
	if got := BrowserTempDir(); got != "/tmp" {
		t.Fatalf("BrowserTempDir with TMPDIR %s: %s", long, got)
	}
	before, _ := filepath.Glob("/tmp/org.chromium.Chromium.*")
	site := t.TempDir()
	if err := os.WriteFile(filepath.Join(site, "index.html"), []byte("<!doctype html><title>x</title>"), 0o644); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, nil)
	b := &BrowserLauncher{Serve: site, URL: "/", LogPath: filepath.Join(t.TempDir(), "game.log"), Allow: e.ctrl.AllowOrigin, TempDir: t.TempDir()}
	if err := b.Start(e.ctrl.Endpoint(), e.ctrl.Token()); err != nil {
		t.Fatalf("start with a long temp dir: %v\n%s", err, b.Tail(2000))
	}
	b.Stop(5 * time.Second)
	after, _ := filepath.Glob("/tmp/org.chromium.Chromium.*")
	for _, p := range after {
		if !slices.Contains(before, p) {
			t.Errorf("the browser left %s", p)
		}
	}
	t.Setenv("TMPDIR", "/tmp")
	if got := BrowserTempDir(); got != "/tmp" {
		t.Fatalf("BrowserTempDir with TMPDIR /tmp: %s", got)
	}
}
