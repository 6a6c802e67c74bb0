package cappy

import (
	"context"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/crosscode/crosscode-mcp/internal/testing/sysdeps"
	"github.com/crosscode/crosscode-mcp/internal/testing/webgames"
	"github.com/crosscode/crosscode-mcp/protocol"
)

// BenchmarkPageStep: a step of an agent-controlled recording of a game
// with no adapter code (internal/testing/webgames/pickup), through the
// controller and the page driver in headless Chromium, frames asked at
// 2 fps (640 px wide JPEG), beside its floor measured in the same
// iterations on a page of its own in a second browser with the same flags:
//
//   - ms0: a step of 0 ms (apply and look: one picture); floor: a bare
//     DevTools round trip (Runtime.evaluate of 1) plus one screenshot.
//   - ms500: a step of 500 ms (30 frames; its picture is the paused
//     page's, which is also the one due at 2 fps); floor: the same 500 ms
//     of page time in one evaluation (the game's own 30 frames on the
//     driver's clock) plus one screenshot.
//
// It reports the p50 of each and its floor, in ms.
func BenchmarkPageStep(b *testing.B) {
	exe := sysdeps.Need(b, "chromium")
	dir := webgames.Dir(b, "pickup")
	cfg := &CaptureConfig{Game: &GameConfig{Serve: dir, Adapter: AdapterPage, Browser: exe}}
	s, err := NewService(context.Background(), ServiceConfig{Data: b.TempDir(), Config: cfg, Version: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if _, err := s.EnsureAdapter(context.Background()); err != nil {
		b.Fatal(err)
	}
	seed := int64(1)
	op, err := s.Controller.Start(context.Background(), Request{Kind: KindRecording, Control: ControlAgent, Seed: &seed, Frames: s.FramesRequest(2), Timeout: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	for op.Status().Status != StatusRunning {
		time.Sleep(5 * time.Millisecond)
	}
	defer s.Controller.Cancel(op)

	// The floor's browser and page.
	actx, acancel := chromedp.NewExecAllocator(context.Background(), append(ChromiumOptions(exe, false, nil), chromedp.UserDataDir(filepath.Join(b.TempDir(), "profile")))...)
	defer acancel()
	bctx, bcancel := chromedp.NewContext(actx)
	defer bcancel()
	if err := chromedp.Do(bctx); err != nil {
		b.Fatal(err)
	}
	static, err := ServeStatic(dir, "", nil)
	if err != nil {
		b.Fatal(err)
	}
	defer static.Close()
	floor, err := openPageTab(bctx, static.URL(), 1, DefaultPageWidth, DefaultPageHeight, func(string, ...any) {})
	if err != nil {
		b.Fatal(err)
	}
	defer floor.close()

	step := func(ms float64) time.Duration {
		start := time.Now()
		r, err := s.Controller.Step(context.Background(), op, []protocol.ActionInput{}, ms)
		if err != nil || r.Frame == nil {
			b.Fatalf("step: %v", err)
		}
		return time.Since(start)
	}
	shot := func() {
		if _, _, _, err := floor.screenshot(DefaultMaxWidth, protocol.MimeJPEG); err != nil {
			b.Fatal(err)
		}
	}
	floor0 := func() time.Duration {
		start := time.Now()
		if _, err := chromedp.Call(floor.ctx, runtime.Evaluate, runtime.EvaluateParams{Expression: "1", ReturnByValue: ptrTo(true)}); err != nil {
			b.Fatal(err)
		}
		shot()
		return time.Since(start)
	}
	simT := 0.0
	floor500 := func() time.Duration {
		simT += 500
		start := time.Now()
		if _, err := floor.evalAwait(floor.ctx, "globalThis["+quote(floor.name)+"].advance("+ftoa(simT)+", 1e9)"); err != nil {
			b.Fatal(err)
		}
		shot()
		return time.Since(start)
	}
	var s0, f0, s500, f500 []time.Duration
	step(0) // the first look
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s0 = append(s0, step(0))
		f0 = append(f0, floor0())
		s500 = append(s500, step(500))
		f500 = append(f500, floor500())
	}
	b.StopTimer()
	p50 := func(d []time.Duration) float64 {
		slices.Sort(d)
		return float64(d[len(d)/2]) / float64(time.Millisecond)
	}
	b.ReportMetric(p50(s0), "ms0-p50-ms")
	b.ReportMetric(p50(f0), "ms0-floor-p50-ms")
	b.ReportMetric(p50(s500), "ms500-p50-ms")
	b.ReportMetric(p50(f500), "ms500-floor-p50-ms")
}

func quote(s string) string { return strconv.Quote(s) }

func ftoa(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
