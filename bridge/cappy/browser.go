package cappy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chromedp/cdproto/inspector"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/crosscode/crosscode-mcp/internal/scratch"
)

// Browsers are the programs looked for on PATH when game.browser is not
// given, in order; then the places where Chrome, Edge and Chromium install
// themselves on Windows and macOS (InstalledBrowsers).
var Browsers = []string{"chromium", "chromium-browser", "google-chrome", "chrome", "microsoft-edge", "msedge"}

// FindBrowser returns the browser to launch: path when given (a name is
// looked up on PATH), else the first of Browsers on PATH, else the first of
// InstalledBrowsers that exists.
func FindBrowser(path string) (string, error) {
	if path != "" {
		p, err := exec.LookPath(path)
		if err != nil {
			return "", fmt.Errorf("game.browser %q: %w", path, err)
		}
		return p, nil
	}
	for _, name := range Browsers {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	installed := InstalledBrowsers()
	for _, p := range installed {
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p, nil
		}
	}
	where := "on PATH"
	if len(installed) > 0 {
		where += " nor in " + strings.Join(installed, ", ")
	}
	return "", fmt.Errorf("no browser found: none of %s is %s (install Chrome, Edge or Chromium, or set game.browser to its path)", strings.Join(Browsers, ", "), where)
}

// BrowserLauncher opens a web game in a browser it launches (Chromium,
// through the DevTools protocol): headless unless Headed, with a fresh
// profile and the flags a closed network needs, at URL with the
// controller's endpoint and token in the fragment. It serves Serve itself
// and starts Server (a dev server) first when given. The page's console
// and uncaught errors go to the game's log; a crashed page or a dead
// browser counts as exited, so the next Start launches it again.
type BrowserLauncher struct {
	// URL is the page: absolute (a loopback http(s) URL), or relative to
	// Serve's root ("" is its index).
	URL string
	// Serve is a directory to serve on a loopback port ("" serves nothing).
	Serve string
	// Server, when set, is started before the browser and URL is waited
	// for (a dev server); it writes into the same log.
	Server *Launcher
	// Browser is the browser's path or name ("" finds one: Browsers).
	Browser string
	Headed  bool
	LogPath string
	// MaxLogBytes caps the log (default 8 MiB), as Launcher's.
	MaxLogBytes int64
	// Allow allows an Origin on the controller for this launch; the
	// returned func withdraws it.
	Allow func(origin string) (withdraw func())
	// TempDir is where each launch gets a directory of its own for the
	// browser's profile and temporary files (its TMPDIR), removed when the
	// browser exits, or by the next launch after a crash or a kill -9
	// (default os.TempDir()).
	TempDir string
	Logger  *slog.Logger
	// Adapter is who drives the game: AdapterPage (the page driver, with
	// no adapter code in the game) or AdapterAuto ("" too: the page's own
	// adapter when one says hello within PageAdapterWait of the load,
	// else the page driver).
	Adapter string
	// Connected reports whether an adapter is connected to the controller
	// (for AdapterAuto).
	Connected func() bool
	// GameID names the game in the page driver's hello; Version is
	// crosscode-mcp's.
	GameID, Version string
	// Actions are the keys and "pointer" the page driver offers
	// (game.actions; nil: all).
	Actions []string

	mu       sync.Mutex
	log      *cappedLog
	static   *StaticServer
	run      *browserRun // the latest launch
	starts   int
	withdraw func()
	token    atomic.Pointer[string] // redacted from the log
	driving  atomic.Bool            // the page driver is the game's adapter
}

// PageAdapterWait is how long after its load a page may take to say hello
// before the page driver drives it (game.adapter "auto").
const PageAdapterWait = 5 * time.Second

// Driven reports whether the page driver drives the game now (rather
// than the page's own adapter).
func (b *BrowserLauncher) Driven() bool { return b.driving.Load() && b.Running() }

// browserRun is one launch of the browser.
type browserRun struct {
	cancel  func()        // ends the browser: kills it, waits, removes its profile and temp dir
	exited  chan struct{} // closed when the browser or its page died
	why     string        // why, written before exited closes
	pid     int
	page    string // the URL opened, without the fragment
	started time.Time
	died    func(why string) // marks the run ended, once
	// closing is closed when the run is about to end (Running is false
	// from then on).
	closing     chan struct{}
	closingOnce sync.Once
}

// dying marks the run as ending, before it is killed.
func (r *browserRun) dying() { r.closingOnce.Do(func() { close(r.closing) }) }

// Start launches the browser at the game's page unless it is running.
func (b *BrowserLauncher) Start(endpoint, token string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.runningLocked() {
		return nil
	}
	if b.Logger == nil {
		b.Logger = slog.New(slog.DiscardHandler)
	}
	if b.log == nil {
		if err := os.MkdirAll(filepath.Dir(b.LogPath), 0o700); err != nil {
			return err
		}
		lw, err := newCappedLog(b.LogPath, b.MaxLogBytes)
		if err != nil {
			return err
		}
		b.log = lw
	}
	exe, err := FindBrowser(b.Browser)
	if err != nil {
		return err
	}
	base := ""
	if b.Serve != "" {
		if b.static == nil {
			if b.static, err = ServeStatic(b.Serve, "", b.Logger); err != nil {
				return err
			}
		}
		base = b.static.URL()
	}
	pageURL, err := resolvePage(base, b.URL)
	if err != nil {
		return err
	}
	if b.Server != nil {
		b.Server.Output = b.log
		if err := b.Server.Start(endpoint, token); err != nil {
			return err
		}
		if err := waitHTTP(pageURL, LaunchWait-5*time.Second, b.Server); err != nil {
			return err
		}
	}
	u, _ := url.Parse(pageURL)
	if b.withdraw != nil {
		b.withdraw()
		b.withdraw = nil
	}
	if b.Allow != nil {
		b.withdraw = b.Allow(u.Scheme + "://" + u.Host)
	}
	b.token.Store(&token)
	frag := url.Values{"cappy-endpoint": {endpoint}, "cappy-token": {token}}.Encode()
	full := pageURL
	if u.Fragment != "" {
		full += "&" + frag
	} else {
		full += "#" + frag
	}
	b.logf("--- %s: launching %s at %s", time.Now().Format(time.RFC3339), exe, pageURL)

	// A browser that exits before it listens (no reason printed; seen on a
	// loaded 2-core machine, once in a few hundred starts) is started
	// again, twice at most: a user's game should not fail on it.
	var run *browserRun
	var tctx context.Context
	for try := 1; ; try++ {
		run, tctx, err = b.startBrowser(exe, pageURL)
		if err == nil {
			break
		}
		b.logf("--- browser did not start: %v", err)
		if try == 3 || !strings.Contains(err.Error(), "chrome failed to start") {
			return fmt.Errorf("launch browser %s: %w", exe, err)
		}
	}
	died := run.died
	if p := chromedp.FromContext(tctx).Browser.Process(); p != nil {
		run.pid = p.Pid
	}
	run.started = time.Now()
	b.run = run
	b.starts++
	go func() {
		<-tctx.Done()
		died("the browser exited")
	}()
	b.driving.Store(false)
	drive := func() {
		b.driving.Store(true)
		b.logf("--- %s: crosscode-mcp drives the page (no adapter code): %s", time.Now().Format(time.RFC3339), pageURL)
		err := runPageDriver(tctx, pageDriverConfig{Browser: tctx, URL: pageURL, Game: b.GameID, Version: b.Version,
			Actions: b.Actions, Endpoint: endpoint, Token: token, Logger: b.Logger, Logf: b.logf, Kill: died, Dying: run.dying})
		if tctx.Err() == nil {
			// Without its driver the browser is of no use: the next launch
			// starts afresh.
			why := "the page driver's connection ended"
			if err != nil {
				why += ": " + err.Error()
			}
			died(why)
		}
	}
	if b.Adapter == AdapterPage {
		go drive()
		return nil
	}
	// Navigate without waiting for load: the handshake is what counts.
	loaded := make(chan struct{})
	var loadOnce sync.Once
	chromedp.Listen(tctx, func(ev any) {
		if _, ok := ev.(*page.EventLoadEventFired); ok {
			loadOnce.Do(func() { close(loaded) })
		}
	})
	go func() {
		res, err := chromedp.Call(tctx, page.Navigate, page.NavigateParams{URL: full})
		if err == nil && res.ErrorText != "" {
			err = errors.New(res.ErrorText)
		}
		if err != nil && tctx.Err() == nil {
			b.logf("[page] cannot open %s: %v", pageURL, err)
		}
	}()
	if b.Connected != nil {
		// auto: the page driver drives a page whose own adapter does not
		// say hello within PageAdapterWait of its load.
		go func() {
			select {
			case <-loaded:
			case <-tctx.Done():
				return
			case <-time.After(LaunchWait - PageAdapterWait - 5*time.Second):
			}
			deadline := time.Now().Add(PageAdapterWait)
			for time.Now().Before(deadline) {
				if b.Connected() {
					return
				}
				select {
				case <-tctx.Done():
					return
				case <-time.After(50 * time.Millisecond):
				}
			}
			if b.Connected() {
				return
			}
			b.logf("--- no adapter said hello within %s of the page's load", PageAdapterWait)
			// The page's own run stops: the driver opens pages of its own.
			chromedp.Call(tctx, page.Navigate, page.NavigateParams{URL: "about:blank"})
			drive()
		}()
	}
	return nil
}

// startBrowser starts the browser with a blank page and attaches to it,
// within browserStartWait; the run's cancel stops it and removes its
// profile.
func (b *BrowserLauncher) startBrowser(exe, pageURL string) (*browserRun, context.Context, error) {
	scr, err := scratch.New(b.TempDir, "crosscode-browser-", endLaunch)
	if err != nil {
		return nil, nil, fmt.Errorf("launch browser: %w", err)
	}
	opts := append(ChromiumOptions(exe, b.Headed, b.Logger), browserDirs(scr.Path())...)
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	tctx, tcancel := chromedp.NewContext(actx)
	var ended sync.Once
	run := &browserRun{cancel: func() {
		tcancel()
		acancel() // waits for the browser to exit
		ended.Do(func() {
			endLaunch(scr.Path())
			if err := scr.Remove(); err != nil {
				b.Logger.Warn("remove the browser's profile", "error", err)
			}
		})
	}, exited: make(chan struct{}), closing: make(chan struct{}), page: pageURL}
	var once sync.Once
	died := func(why string) {
		once.Do(func() {
			run.why = why
			b.logf("--- %s: %s", time.Now().Format(time.RFC3339), why)
			close(run.exited)
			go run.cancel() // not on the event loop: cancelling waits for it
		})
	}
	cancel := run.cancel
	run.died = died
	loads := newLoadWatch() // the page's failed loads, told in the log as the page driver's pages tell them
	if err := chromedp.Listen(tctx, func(ev any) { b.event(ev, died, loads) }); err != nil {
		cancel()
		return nil, nil, fmt.Errorf("browser: %w", err)
	}
	// The first Run starts the browser (with a blank page) and attaches,
	// within browserStartWait.
	slow := time.AfterFunc(browserStartWait, cancel)
	err = chromedp.Do(tctx)
	if !slow.Stop() {
		err = fmt.Errorf("it did not start within %s", browserStartWait)
	}
	if err != nil {
		cancel()
		return nil, nil, err
	}
	return run, tctx, nil
}

// browserDirs puts the browser's profile in dir/profile and, when the
// environment names none, its runtime dir in dir/run (PulseAudio makes
// one in the temp dir otherwise, and leaves it there).
func browserDirs(dir string) []chromedp.ExecAllocatorOption {
	opts := []chromedp.ExecAllocatorOption{chromedp.UserDataDir(filepath.Join(dir, "profile"))}
	if tmp := BrowserTempDir(); tmp != filepath.Clean(os.TempDir()) {
		opts = append(opts, chromedp.Env("TMPDIR="+tmp))
	}
	if os.Getenv("XDG_RUNTIME_DIR") == "" {
		run := filepath.Join(dir, "run")
		if os.Mkdir(run, 0o700) == nil {
			opts = append(opts, chromedp.Env("XDG_RUNTIME_DIR="+run))
		}
	}
	return opts
}

// BrowserTempDir is the temp dir a browser is given: the process's own,
// unless it is too long for Chromium's singleton socket. Chromium makes
// TMPDIR/org.chromium.Chromium.XXXXXX/SingletonSocket, a unix socket whose
// address holds at most 107 bytes, and a Chromium that cannot make it
// exits at once without a word ("chrome failed to start"): then /tmp. (A
// test's temp dir under scripts/test's was 3 bytes too long.) Windows has
// no such socket.
func BrowserTempDir() string {
	dir := filepath.Clean(os.TempDir())
	if goruntime.GOOS == "windows" || len(dir)+len("/org.chromium.Chromium.XXXXXX/SingletonSocket") <= 107 {
		return dir
	}
	return "/tmp"
}

// RemoveSingletonDir removes the directory of the socket by which
// Chromium keeps to one process per profile (profile is the user data
// dir): Chromium makes it in its temp dir (BrowserTempDir, a short path,
// as a socket's must be), links it from the profile, and leaves it there
// when it is killed.
func RemoveSingletonDir(profile string) {
	target, err := os.Readlink(filepath.Join(profile, "SingletonSocket"))
	if err != nil {
		return
	}
	sock := filepath.Dir(target)
	name := filepath.Base(sock)
	ours := strings.HasPrefix(name, "org.chromium.") || strings.HasPrefix(name, "com.google.") || strings.HasPrefix(name, "com.microsoft.")
	if ours && filepath.Dir(sock) == BrowserTempDir() {
		os.RemoveAll(sock)
	}
}

// endLaunch ends what is left of a launch in dir (its profile is
// dir/profile) once its browser is gone, or its process was (a stale dir):
// the browser's helpers, and its singleton socket dir.
func endLaunch(dir string) {
	profile := filepath.Join(dir, "profile")
	killLeftovers(profile)
	RemoveSingletonDir(profile)
}

// ChromiumOptions are the browser's flags: a fresh profile (chromedp's
// temporary one, unless the options add UserDataDir), headless unless headed, what a closed network needs
// (no background networking, component updates, sync or first-run
// dialogs), no sandbox only as root (where Chromium refuses it), software
// WebGL, and its own output to log at debug level.
func ChromiumOptions(exe string, headed bool, log *slog.Logger) []chromedp.ExecAllocatorOption {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe),
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-breakpad", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-background-timer-throttling", true),
		chromedp.Flag("disable-backgrounding-occluded-windows", true),
		chromedp.Flag("disable-renderer-backgrounding", true),
		chromedp.Flag("disable-features", "Translate,MediaRouter,OptimizationHints"),
		chromedp.Flag("metrics-recording-only", true),
		chromedp.Flag("password-store", "basic"),
		chromedp.Flag("autoplay-policy", "no-user-gesture-required"),
		chromedp.Flag("no-sandbox", os.Getuid() == 0), // only as root, where Chromium refuses its sandbox
		chromedp.CombinedOutput(slogWriter{log}),
	}
	if !headed {
		// Software WebGL (SwiftShader) for machines without a GPU: the
		// page is the user's own game, in a fresh profile.
		opts = append(opts, chromedp.Flag("headless", "new"), chromedp.Flag("mute-audio", true), chromedp.Flag("enable-unsafe-swiftshader", true))
	}
	return opts
}

// resolvePage is the page's URL: url against the served root when there
// is one. It must be an http(s) URL on a loopback host.
func resolvePage(base, page string) (string, error) {
	if base == "" && page == "" {
		return "", errors.New("game.url or game.serve is required for a web game")
	}
	ref, err := url.Parse(page)
	if err != nil {
		return "", fmt.Errorf("game.url %q: %w", page, err)
	}
	u := ref
	if base != "" {
		b, _ := url.Parse(base)
		u = b.ResolveReference(ref)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("game.url %q: must be an http:// or https:// URL (or a path under game.serve)", page)
	}
	if !isLoopbackHost(u.Host) {
		return "", fmt.Errorf("game.url %q: the game's page must be on this machine (127.0.0.1, ::1 or localhost): its origin gets the session token", page)
	}
	return u.String(), nil
}

// waitHTTP waits until u answers (any HTTP status), while the dev server runs.
func waitHTTP(u string, d time.Duration, server *Launcher) error {
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(d)
	for {
		resp, err := client.Get(u)
		if err == nil {
			resp.Body.Close()
			return nil
		}
		if !server.Running() {
			return fmt.Errorf("the dev server exited before %s answered (%s)", u, server.Info().LastExit)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not answer within %s: %v", u, d, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// browserStartWait bounds the browser's start, before the page opens.
const browserStartWait = 30 * time.Second

// maxConsoleLine caps one console line in the log.
const maxConsoleLine = 4 << 10

// event writes console messages, uncaught errors and failed loads to the
// log and notices a crashed page. It runs on the tab's event loop: it
// must not block.
func (b *BrowserLauncher) event(ev any, died func(string), loads *loadWatch) {
	switch e := ev.(type) {
	case *network.EventRequestWillBeSent, *network.EventResponseReceived, *network.EventLoadingFailed, *network.EventLoadingFinished:
		if f := loads.event(ev); f != nil {
			loads.logged(f, b.logf)
		}
	case *runtime.EventConsoleAPICalled:
		b.logf("%s", consoleLine(e))
	case *runtime.EventExceptionThrown:
		b.logf("%s", uncaughtLine(e))
	case *cdplog.EventEntryAdded:
		// Errors only: the warnings are Chromium's (software WebGL and
		// the like), not the game's; failed loads have their own line.
		if e.Entry.Level == cdplog.EntryLevelError && !(e.Entry.Source == cdplog.EntrySourceNetwork && strings.HasPrefix(e.Entry.Text, "Failed to load resource")) {
			b.logf("[browser.error] %s %s", capLine(e.Entry.Text), noFragment(e.Entry.URL))
		}
	case *inspector.EventTargetCrashed:
		died("the page crashed")
	case *inspector.EventDetached:
		died("the page was detached: " + e.Reason)
	}
}

// remoteText renders one console argument.
func remoteText(a *runtime.RemoteObject) string {
	switch {
	case a == nil:
		return ""
	case a.Type == runtime.RemoteObjectTypeString && len(a.Value) > 0:
		var s string
		if err := json.Unmarshal(a.Value, &s); err == nil {
			return s
		}
	case len(a.Value) > 0:
		return string(a.Value)
	case a.UnserializableValue != "":
		return string(a.UnserializableValue)
	case a.Description != "":
		return a.Description
	}
	return string(a.Type)
}

// noFragment drops a URL's fragment, where the page's token is.
func noFragment(u string) string {
	if i := strings.IndexByte(u, '#'); i >= 0 {
		return u[:i]
	}
	return u
}

func capLine(s string) string {
	if len(s) > maxConsoleLine {
		return s[:maxConsoleLine] + "…"
	}
	return s
}

// logf writes one line to the game's log, without the session token
// (a page may print its own URL).
func (b *BrowserLauncher) logf(format string, args ...any) {
	if b.log == nil {
		return
	}
	line := fmt.Sprintf(format, args...)
	if tok := b.token.Load(); tok != nil && *tok != "" {
		line = strings.ReplaceAll(line, *tok, "<token>")
	}
	fmt.Fprintln(b.log, line)
}

// Running reports whether the browser and its page are alive.
func (b *BrowserLauncher) Running() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.runningLocked()
}

func (b *BrowserLauncher) runningLocked() bool {
	if b.run == nil {
		return false
	}
	select {
	case <-b.run.exited:
		return false
	case <-b.run.closing:
		return false
	default:
		return true
	}
}

// Exited is closed when the browser last launched (or its page) dies.
func (b *BrowserLauncher) Exited() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.run == nil {
		return nil
	}
	return b.run.exited
}

// Info reports the browser's state. Command is the browser and the page,
// without the fragment (which holds the token).
func (b *BrowserLauncher) Info() LaunchInfo {
	b.mu.Lock()
	defer b.mu.Unlock()
	cmd := []string{b.Browser}
	if b.Browser == "" {
		cmd[0] = "chromium"
	}
	running := b.runningLocked()
	in := LaunchInfo{Command: cmd, Running: running, Starts: b.starts, LogPath: b.LogPath}
	switch {
	case b.run != nil:
		in.Command, in.PID, in.Started = append(cmd, b.run.page), b.run.pid, b.run.started
		if !running {
			in.LastExit = b.run.why
		}
	case b.URL != "":
		in.Command = append(cmd, b.URL)
	}
	return in
}

// Stop closes the browser (and its child processes, and its profile), the
// dev server and the static server.
func (b *BrowserLauncher) Stop(grace time.Duration) {
	b.mu.Lock()
	run := b.run
	static := b.static
	b.static = nil
	withdraw := b.withdraw
	b.withdraw = nil
	b.mu.Unlock()
	if run != nil {
		done := make(chan struct{})
		go func() { run.cancel(); close(done) }()
		select {
		case <-done:
		case <-time.After(grace):
			if p, err := os.FindProcess(run.pid); err == nil && run.pid > 0 {
				p.Kill()
			}
			<-done
		}
	}
	if withdraw != nil {
		withdraw()
	}
	if b.Server != nil {
		b.Server.Stop(grace)
	}
	if static != nil {
		static.Close()
	}
}

// Tail returns up to n bytes from the end of the log.
func (b *BrowserLauncher) Tail(n int64) string { return tailFile(b.LogPath, n) }

// slogWriter sends the browser's own output to the logger (debug): it is
// Chromium's noise, not the game's.
type slogWriter struct{ log *slog.Logger }

func (w slogWriter) Write(p []byte) (int, error) {
	for _, line := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		if line != "" {
			w.log.Debug("browser", "output", line)
		}
	}
	return len(p), nil
}

// consoleLine is the browser log's line for a console message.
func consoleLine(e *runtime.EventConsoleAPICalled) string {
	parts := make([]string, 0, len(e.Args))
	for _, a := range e.Args {
		parts = append(parts, remoteText(a))
	}
	return fmt.Sprintf("[console.%s] %s", e.Type, capLine(strings.Join(parts, " ")))
}

// uncaughtLine is the browser log's line for an uncaught exception.
func uncaughtLine(e *runtime.EventExceptionThrown) string {
	d := e.ExceptionDetails
	text := d.Text
	if d.Exception != nil && d.Exception.Description != "" {
		text += " " + d.Exception.Description
	}
	return fmt.Sprintf("[uncaught] %s (%s:%d)", capLine(text), noFragment(d.URL), d.LineNumber+1)
}
