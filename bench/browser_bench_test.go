package bench

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/coder/websocket"

	"github.com/crosscode/crosscode-mcp/bridge/cappy"
	"github.com/crosscode/crosscode-mcp/internal/testing/sysdeps"
	"github.com/crosscode/crosscode-mcp/store"
)

// webGame copies the benchmarks' page and the adapter library into a
// directory to serve.
func webGame(b *testing.B) string {
	b.Helper()
	dir := b.TempDir()
	for src, dst := range map[string]string{
		filepath.Join("testdata", "web", "index.html"):    "index.html",
		filepath.Join("testdata", "web", "bench.js"):      "bench.js",
		filepath.Join("..", "adapters", "js", "cappy.js"): "cappy.js",
	} {
		data, err := os.ReadFile(src)
		if err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, dst), data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return dir
}

func newController(b *testing.B) *cappy.Controller {
	b.Helper()
	st, err := store.Open(context.Background(), filepath.Join(b.TempDir(), "captures.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	ctrl, err := cappy.New(cappy.Config{Store: st, ReplayDir: filepath.Join(b.TempDir(), "replays")})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ctrl.Close() })
	return ctrl
}

// BenchmarkBrowserLaunch: from launching headless Chromium at the web
// game's page to the adapter's handshake and registry (the page's load
// included), through the browser launcher; "load" is the floor: the same
// browser, flags and page, from its start to the page's load event.
func BenchmarkBrowserLaunch(b *testing.B) {
	exe := sysdeps.Need(b, "chromium")
	dir := webGame(b)
	b.Run("handshake", func(b *testing.B) {
		ctrl := newController(b)
		var total time.Duration
		for i := 0; i < b.N; i++ {
			l := &cappy.BrowserLauncher{Serve: dir, Browser: exe, LogPath: filepath.Join(b.TempDir(), "game.log"), Allow: ctrl.AllowOrigin}
			start := time.Now()
			if err := l.Start(ctrl.Endpoint(), ctrl.Token()); err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			if _, err := ctrl.WaitAdapter(ctx); err != nil {
				b.Fatalf("%v\n%s", err, l.Tail(4096))
			}
			cancel()
			total += time.Since(start)
			b.StopTimer()
			l.Stop(5 * time.Second)
			waitGone(b, ctrl)
			b.StartTimer()
		}
		b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/launch")
	})
	b.Run("load", func(b *testing.B) {
		srv, err := cappy.ServeStatic(dir, "", nil)
		if err != nil {
			b.Fatal(err)
		}
		defer srv.Close()
		var total time.Duration
		for i := 0; i < b.N; i++ {
			start := time.Now()
			actx, acancel := chromedp.NewExecAllocator(context.Background(), cappy.ChromiumOptions(exe, false, slog.New(slog.DiscardHandler))...)
			tctx, tcancel := chromedp.NewContext(actx)
			if err := chromedp.Do(tctx, chromedp.Navigate(srv.URL())); err != nil {
				b.Fatal(err)
			}
			total += time.Since(start)
			b.StopTimer()
			tcancel()
			acancel()
			b.StartTimer()
		}
		b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/launch")
	})
}

// waitGone waits for the controller to see the adapter leave.
func waitGone(b *testing.B, ctrl *cappy.Controller) {
	for deadline := time.Now().Add(10 * time.Second); ctrl.Connected() != nil; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			b.Fatal("the adapter did not disconnect")
		}
	}
}

// BenchmarkBrowserEvents: the page's adapter streams b.N events (at least
// 10,000) through the real controller into the capture store, timed from
// the first event received to the last; "bare" is the same page sending
// the same messages to a bare coder/websocket echo server, timed the same
// way: the floor.
func BenchmarkBrowserEvents(b *testing.B) {
	exe := sysdeps.Need(b, "chromium")
	dir := webGame(b)
	events := func(b *testing.B) int { return min(max(b.N, 10_000), 2_000_000) }
	b.Run("controller", func(b *testing.B) {
		n := events(b)
		ctrl := newController(b)
		l := &cappy.BrowserLauncher{Serve: dir, Browser: exe, LogPath: filepath.Join(b.TempDir(), "game.log"), Allow: ctrl.AllowOrigin}
		defer l.Stop(5 * time.Second)
		if err := l.Start(ctrl.Endpoint(), ctrl.Token()); err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		if _, err := ctrl.WaitAdapter(ctx); err != nil {
			b.Fatal(err)
		}
		var first, last atomic.Int64
		b.ResetTimer()
		op, err := ctrl.Start(ctx, cappy.Request{Kind: cappy.KindScenario, Scenario: "stress", Parameters: map[string]any{"events": float64(n)},
			OnEvent: func(store.CaptureEvent) {
				now := time.Now().UnixNano()
				first.CompareAndSwap(0, now)
				last.Store(now)
			}})
		if err != nil {
			b.Fatal(err)
		}
		out := op.Wait(ctx)
		b.StopTimer()
		if out.Status != cappy.StatusCompleted || out.Events != int64(n) {
			b.Fatalf("stress: %+v\n%s", out, l.Tail(4096))
		}
		b.ReportMetric(float64(n)/time.Duration(last.Load()-first.Load()).Seconds(), "events/s")
	})
	b.Run("bare", func(b *testing.B) {
		n := events(b)
		var got, first, last atomic.Int64
		done := make(chan struct{})
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		echo := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
			if err != nil {
				return
			}
			defer ws.CloseNow()
			for {
				typ, data, err := ws.Read(context.Background())
				if err != nil {
					return
				}
				now := time.Now().UnixNano()
				first.CompareAndSwap(0, now)
				last.Store(now)
				if err := ws.Write(context.Background(), typ, data); err != nil {
					return
				}
				if got.Add(1) == int64(n) {
					close(done)
				}
			}
		})}
		go echo.Serve(l)
		defer echo.Close()
		srv, err := cappy.ServeStatic(dir, "", nil)
		if err != nil {
			b.Fatal(err)
		}
		defer srv.Close()
		actx, acancel := chromedp.NewExecAllocator(context.Background(), cappy.ChromiumOptions(exe, false, nil)...)
		defer acancel()
		tctx, tcancel := chromedp.NewContext(actx)
		defer tcancel()
		if err := chromedp.Do(tctx); err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		if err := chromedp.Do(tctx, chromedp.Navigate(srv.URL()+"?echo=ws://"+l.Addr().String()+"&n="+strconv.Itoa(n))); err != nil {
			b.Fatal(err)
		}
		select {
		case <-done:
		case <-time.After(5 * time.Minute):
			b.Fatalf("the echo server got %d of %d messages", got.Load(), n)
		}
		b.StopTimer()
		b.ReportMetric(float64(n)/time.Duration(last.Load()-first.Load()).Seconds(), "events/s")
	})
}
