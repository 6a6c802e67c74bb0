// Package browsertest drives a real headless Chromium (Debian's chromium
// package) with github.com/chromedp/chromedp for the dashboard's tests and
// benchmarks: a fresh profile per browser, the flags Chromium needs as
// root in a container, every console message and exception collected, and
// screenshots kept as test artifacts.
package browsertest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/crosscode/crosscode-mcp/bridge/cappy"
	"github.com/crosscode/crosscode-mcp/internal/testing/sysdeps"
)

// Browser is one headless Chromium with one tab.
type Browser struct {
	Ctx context.Context // the tab's chromedp context

	t       testing.TB
	mu      sync.Mutex
	console []chromedp.ConsoleMessage
}

// New starts Chromium with a fresh profile under t.TempDir(), opens a tab
// of width x height and collects its console. The browser stops when the
// test ends.
func New(t testing.TB, width, height int64) *Browser {
	t.Helper()
	exe := "/usr/bin/chromium"
	if _, err := os.Stat(exe); err != nil {
		exe = sysdeps.Need(t, "chromium")
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe),
		chromedp.Flag("headless", "new"),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("no-default-browser-check", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("disable-breakpad", true),
		chromedp.Flag("disable-features", "Translate,MediaRouter,OptimizationHints"),
		chromedp.Flag("metrics-recording-only", true),
		chromedp.Flag("password-store", "basic"),
		chromedp.Flag("mute-audio", true),
		chromedp.WindowSize(int(width), int(height)),
	}
	// Chromium now and then exits before it listens when the machine is
	// busy with other browsers and engines (seen once in CI: "chrome
	// failed to start", no crash reason): a test gets three tries, each
	// with a fresh profile.
	var ctx context.Context
	for try := 1; ; try++ {
		// A fresh profile, and a runtime dir of its own (PulseAudio makes
		// one in the temp dir otherwise, and leaves it).
		dir := t.TempDir()
		profile, run := filepath.Join(dir, "profile"), filepath.Join(dir, "run")
		if err := os.Mkdir(run, 0o700); err != nil {
			t.Fatal(err)
		}
		actx, cancelAlloc0 := chromedp.NewExecAllocator(context.Background(), append(opts,
			chromedp.UserDataDir(profile), chromedp.Env("XDG_RUNTIME_DIR="+run, "TMPDIR="+cappy.BrowserTempDir()))...)
		cancelAlloc := func() {
			cancelAlloc0() // waits for the browser to exit
			cappy.RemoveSingletonDir(profile)
		}
		var cancel context.CancelFunc
		ctx, cancel = chromedp.NewContext(actx)
		// The first Run starts the browser; it must not carry a timeout.
		err := chromedp.Do(ctx, chromedp.EmulateViewport(width, height))
		if err == nil {
			t.Cleanup(func() {
				cancel()
				cancelAlloc()
			})
			break
		}
		cancel()
		cancelAlloc()
		if try == 3 || !strings.Contains(err.Error(), "failed to start") {
			t.Fatalf("start chromium (try %d): %v", try, err)
		}
		t.Logf("start chromium (try %d, trying again): %v", try, err)
		time.Sleep(time.Duration(try) * 500 * time.Millisecond)
	}
	b := &Browser{Ctx: ctx, t: t}
	go func() {
		for m, err := range chromedp.Console(ctx) {
			if err != nil {
				return
			}
			b.mu.Lock()
			b.console = append(b.console, m)
			b.mu.Unlock()
		}
	}()
	return b
}

// Do runs steps within d.
func (b *Browser) Do(d time.Duration, steps ...chromedp.Action[chromedp.Void]) error {
	ctx, cancel := context.WithTimeout(b.Ctx, d)
	defer cancel()
	return chromedp.Do(ctx, steps...)
}

// Must runs steps within 60 s and fails the test on an error.
func (b *Browser) Must(steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := b.Do(60*time.Second, steps...); err != nil {
		b.t.Fatalf("browser: %v\nconsole:\n%s", err, b.ConsoleText())
	}
}

// Click clicks what sel matches as a user would (trusted input at its
// middle), within 60 s, and fails the test on an error. A page that
// renders again can replace the element between the query and the click
// (the click then fails with "Could not find node with given id"): a
// user's click lands on the new one, so the query is made again.
func (b *Browser) Click(sel string) {
	b.t.Helper()
	var err error
	for range 5 {
		err = b.Do(60*time.Second, chromedp.Click(chromedp.CSS(sel)))
		if err == nil || !strings.Contains(err.Error(), "Could not find node") {
			break
		}
	}
	if err != nil {
		b.t.Fatalf("browser: click %s: %v\nconsole:\n%s", sel, err, b.ConsoleText())
	}
}

// Eval evaluates a JavaScript expression and returns its value (with
// chromedp.EvalAwaitPromise, a promise's).
func Eval[T any](b *Browser, expr string, opts ...chromedp.EvaluateOption) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.Ctx, 60*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, opts...))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// WaitTrue waits until the JavaScript expression is true, for at most d,
// and fails the test with what describe tells otherwise.
func (b *Browser) WaitTrue(d time.Duration, expr string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.Ctx, d)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingInterval(10*time.Millisecond))); err != nil {
		b.t.Fatalf("waiting for %s: %v\nconsole:\n%s", expr, err, b.ConsoleText())
	}
}

// Console returns the console messages and exceptions so far.
func (b *Browser) Console() []chromedp.ConsoleMessage {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]chromedp.ConsoleMessage(nil), b.console...)
}

// ConsoleText is the console, one message a line.
func (b *Browser) ConsoleText() string {
	var sb strings.Builder
	for _, m := range b.Console() {
		fmt.Fprintf(&sb, "  %s (%s:%d)\n", m, m.URL, m.Line)
	}
	return sb.String()
}

// Errors returns the console errors, warnings and exceptions, except those
// matching allow (for the refusals a test provokes on purpose).
func (b *Browser) Errors(allow ...*regexp.Regexp) []string {
	var out []string
next:
	for _, m := range b.Console() {
		switch m.Type {
		case chromedp.ConsoleError, chromedp.ConsoleException, chromedp.ConsoleWarning:
		default:
			continue
		}
		s := m.String()
		if m.Exception != nil && m.Exception.Exception != nil {
			s += " " + m.Exception.Exception.Description
		}
		for _, re := range allow {
			if re.MatchString(s) || re.MatchString(m.URL) {
				continue next
			}
		}
		out = append(out, s)
	}
	return out
}

// ColorScheme emulates prefers-color-scheme: "light" or "dark".
func (b *Browser) ColorScheme(scheme string) {
	b.t.Helper()
	b.Must(chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}},
		})
		return err
	}))
}

// ArtifactDir is where screenshots go: $CROSSCODE_TEST_ARTIFACTS/<test
// name>, else a directory of t.TempDir().
func ArtifactDir(t testing.TB) string {
	t.Helper()
	base := os.Getenv("CROSSCODE_TEST_ARTIFACTS")
	if base == "" {
		return t.TempDir()
	}
	dir := filepath.Join(base, regexp.MustCompile(`[^A-Za-z0-9._-]+`).ReplaceAllString(t.Name(), "_"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Screenshot writes a PNG of the whole page to dir/name.png and returns
// its path.
func (b *Browser) Screenshot(dir, name string) string {
	b.t.Helper()
	var png []byte
	b.Must(chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		var err error
		png, err = chromedp.FullScreenshot(100)(ctx, t)
		return err
	}))
	path := filepath.Join(dir, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	return path
}
