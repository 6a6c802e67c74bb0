package cappy

import (
	"bytes"
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	_ "image/jpeg" // frame sizes
	_ "image/png"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/inspector"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/crosscode/crosscode-mcp/internal/sanitize"
	"github.com/crosscode/crosscode-mcp/protocol"
)

// A page tab is one fresh browser context with the game's page in it, on
// the page driver's virtual clock (pageclock.js): the driver opens one for
// each recording and replay, so every run starts from the same state.

//go:embed pageclock.js
var pageClockJS string

//go:embed pagesound.js
var pageSoundJS string

// Page driver limits.
const (
	// PageFrameMs is one animation frame of page time (60 Hz).
	PageFrameMs = 1000.0 / 60
	// pageEvalTimeout is how long the page may run inside one call of the
	// driver (a frame, an input, an inspect) before it counts as hung.
	pageEvalTimeout = 5 * time.Second
	// pageLoadTimeout bounds loading the page.
	pageLoadTimeout = 20 * time.Second
	// pagePendingWait is how long the driver waits, between two frames,
	// for the page's loads (fetch, XHR, images) to finish; a load still
	// pending then is left to finish in the background.
	pagePendingWait = 2 * time.Second
	// pageEpoch is Date.now() at page time 0: 2026-01-01T00:00:00Z.
	pageEpoch = 1767225600000
	// DefaultPageWidth, DefaultPageHeight are the page's viewport.
	DefaultPageWidth, DefaultPageHeight = 800, 600
)

// Codes with which a page ends an operation.
const (
	CodePageDialog       = "PAGE_DIALOG"        // alert, confirm, prompt, print
	CodePagePopup        = "PAGE_POPUP"         // window.open, a new window
	CodePageNavigated    = "PAGE_NAVIGATED"     // the page went to another document
	CodePageConsoleFlood = "PAGE_CONSOLE_FLOOD" // too many console messages in one step
	CodePageCrashed      = "PAGE_CRASHED"
	CodePageLoadFailed   = "PAGE_LOAD_FAILED"
)

// pageFault is what ended a tab's usefulness: the page hung, crashed, or
// did what the driver does not allow. Hung faults carry
// ADAPTER_UNRESPONSIVE.
type pageFault struct {
	Code, Message string
}

func (f *pageFault) Error() string { return f.Code + ": " + f.Message }

// pageReport is what the page reported at page time T: an event.
type pageReport struct {
	T       float64         `json:"t"`
	Event   string          `json:"event"`
	Payload json.RawMessage `json:"payload"`
}

// pageState is the clock's answer to advance and state.
type pageState struct {
	Now          float64      `json:"now"`
	Frame        int64        `json:"frame"`
	Pending      int          `json:"pending"`
	Reports      []pageReport `json:"reports"`
	Dropped      int          `json:"dropped"`
	Fault        *pageFault   `json:"fault"`
	ConsoleCalls int          `json:"consoleCalls"`
	// Failed are the URLs of the page's loads that failed since the last
	// state (the network's events of them come later: see
	// loadWatch.caughtUp).
	Failed []string `json:"failed"`
}

// pageTab is one fresh page on virtual time.
type pageTab struct {
	ctx    context.Context // the tab's chromedp context
	cancel func()
	name   string // the clock's global
	api    runtime.RemoteObjectID
	width  int64
	height int64
	url    string
	logf   func(string, ...any) // the game's log

	loads    *loadWatch
	mu       sync.Mutex
	fault    *pageFault // set by the event listener
	loaded   chan struct{}
	loadOnce sync.Once
	keys     map[string]bool // keys held down
	mouse    struct {
		x, y    float64
		pressed map[string]bool
	}
}

// openPageTab opens url in a new browser context of the browser, with the
// clock seeded with seed before the page's first script, and waits until
// the page has loaded and its loads are done. It does not run a frame.
func openPageTab(browser context.Context, url string, seed int64, width, height int64, logf func(string, ...any)) (*pageTab, error) {
	var rnd [12]byte
	rand.Read(rnd[:])
	t := &pageTab{name: "__cappy_" + hex.EncodeToString(rnd[:]), width: width, height: height, url: url, loaded: make(chan struct{}), keys: map[string]bool{}, logf: logf, loads: newLoadWatch()}
	t.mouse.pressed = map[string]bool{}
	t.ctx, t.cancel = chromedp.NewContext(browser, chromedp.WithNewBrowserContext())
	ok := false
	defer func() {
		if !ok {
			t.close()
		}
	}()
	cfg, _ := json.Marshal(map[string]any{"name": t.name, "seed": seed, "epoch": pageEpoch})
	src := strings.Replace(strings.Replace(pageClockJS, "(SOUND)", "("+pageSoundJS+")", 1), "(CONFIG)", "("+string(cfg)+")", 1)
	// The first call opens the tab: with the tab's own context, never one
	// with a deadline (its end would close the tab).
	if err := chromedp.Do(t.ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		if _, err := cdp.Call(ctx, tg, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: src}); err != nil {
			return err
		}
		_, err := cdp.Call(ctx, tg, emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{Width: width, Height: height, DeviceScaleFactor: 1})
		return err
	})); err != nil {
		return nil, fmt.Errorf("open the page's tab: %w", err)
	}
	if err := chromedp.Listen(t.ctx, t.event); err != nil {
		return nil, err
	}
	lctx, cancel := context.WithTimeout(t.ctx, pageLoadTimeout)
	defer cancel()
	res, err := chromedp.Call(lctx, page.Navigate, page.NavigateParams{URL: url})
	if err == nil && res.ErrorText != "" {
		err = errors.New(res.ErrorText)
	}
	if err != nil {
		return nil, &pageFault{Code: CodePageLoadFailed, Message: fmt.Sprintf("could not open %s: %v", url, err)}
	}
	select {
	case <-t.loaded:
	case <-lctx.Done():
		if f := t.faulted(); f != nil {
			return nil, f
		}
		return nil, &pageFault{Code: protocol.CappyAdapterUnresponsive, Message: fmt.Sprintf("the page did not finish loading within %s (a script that never ends, or a load that never finishes)", pageLoadTimeout)}
	}
	if f := t.faulted(); f != nil {
		return nil, f
	}
	obj, err := t.eval(t.ctx, "globalThis["+strconv.Quote(t.name)+"]", false)
	if err != nil {
		return nil, err
	}
	if obj.ObjectID == "" {
		return nil, &pageFault{Code: CodePageLoadFailed, Message: "the page driver's clock is missing from the page (its Content-Security-Policy, or a page that is not HTML?)"}
	}
	t.api = obj.ObjectID
	if err := t.settle(); err != nil {
		return nil, err
	}
	ok = true
	return t, nil
}

// event notes what the tab's page does that matters to the driver. It
// runs on the tab's event loop: it must not block.
func (t *pageTab) event(ev any) {
	switch e := ev.(type) {
	case *page.EventLoadEventFired:
		t.loadOnce.Do(func() { close(t.loaded) })
	case *page.EventFrameNavigated:
		if e.Frame != nil && e.Frame.ParentID == "" && e.Type == page.NavigationTypeNavigation {
			select {
			case <-t.loaded: // the page's own load is over: this is another document
				t.setFault(CodePageNavigated, "the page navigated away to "+noFragment(e.Frame.URL))
			default:
			}
		}
	case *page.EventJavascriptDialogOpening:
		t.setFault(CodePageDialog, fmt.Sprintf("the page opened a %s dialog: %s", e.Type, capLine(e.Message)))
		go chromedp.Call(t.ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
	case *page.EventWindowOpen:
		t.setFault(CodePagePopup, "the page opened a window at "+noFragment(e.URL))
	case *runtime.EventConsoleAPICalled:
		t.logf("%s", consoleLine(e))
	case *runtime.EventExceptionThrown:
		t.logf("%s", uncaughtLine(e))
	case *inspector.EventTargetCrashed:
		t.setFault(CodePageCrashed, "the page crashed")
	case *inspector.EventDetached:
		t.setFault(CodePageCrashed, "the page was detached: "+e.Reason)
	case *network.EventRequestWillBeSent, *network.EventResponseReceived, *network.EventLoadingFailed, *network.EventLoadingFinished:
		f := t.loads.event(ev) // kept by the watch until loadReports takes it
		if f == nil {
			return
		}
		if f.Type == string(network.ResourceTypeDocument) && f.URL == sanitize.Line(noFragment(t.url), maxLoadURL) {
			t.setFault(CodePageLoadFailed, fmt.Sprintf("the game's page %s: %s (check game.url and game.serve; crosscode-mcp doctor names the file it opens)", f.URL, f.Reason))
		}
	}
}

// loadReports are the failed loads not yet reported, as LOAD_FAILED at
// page time now, within the page's limit, each also told in the log.
func (t *pageTab) loadReports(now float64) []pageReport {
	failed := t.loads.take()
	// In the order of their URLs: loads that end together in real time
	// end in any order, and a replay must tell the same ones in the same
	// order.
	slices.SortFunc(failed, func(a, b loadFailure) int { return strings.Compare(a.URL, b.URL) })
	out := make([]pageReport, 0, len(failed))
	for i := range failed {
		f := &failed[i]
		tell, capNow := t.loads.limit.admit() // the tab's loop alone drains
		switch {
		case tell:
			t.logf("%s", f.line())
			out = append(out, pageReport{T: now, Event: EventLoadFailed, Payload: f.payload()})
		case capNow:
			t.logf("%s", loadCapLine)
		}
	}
	return out
}

func (t *pageTab) setFault(code, msg string) {
	t.mu.Lock()
	if t.fault == nil {
		t.fault = &pageFault{Code: code, Message: msg}
	}
	t.mu.Unlock()
}

func (t *pageTab) faulted() *pageFault {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.fault
}

// eval evaluates the driver's own expression in the page, within
// pageEvalTimeout (V8 ends a script that runs longer); a page that does
// not answer then is hung.
func (t *pageTab) eval(ctx context.Context, expr string, byValue bool) (*runtime.RemoteObject, error) {
	p := runtime.EvaluateParams{Expression: expr, Timeout: runtime.TimeDelta(pageEvalTimeout.Milliseconds()), Silent: ptrTo(true)}
	if byValue {
		p.ReturnByValue = ptrTo(true)
	}
	return t.evaluate(ctx, p, pageEvalTimeout+3*time.Second)
}

// evalAwait evaluates the driver's expression whose value is a promise
// and answers its value. V8's limit ends only a script's first turn, so
// a page that has not settled it within pageEvalTimeout is hung.
func (t *pageTab) evalAwait(ctx context.Context, expr string) (*runtime.RemoteObject, error) {
	p := runtime.EvaluateParams{Expression: expr, Timeout: runtime.TimeDelta(pageEvalTimeout.Milliseconds()), Silent: ptrTo(true),
		ReturnByValue: ptrTo(true), AwaitPromise: ptrTo(true)}
	return t.evaluate(ctx, p, pageEvalTimeout)
}

func (t *pageTab) evaluate(ctx context.Context, p runtime.EvaluateParams, timeout time.Duration) (*runtime.RemoteObject, error) {
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res, err := chromedp.Call(cctx, runtime.Evaluate, p)
	return t.result(cctx, res.Result, res.ExceptionDetails, err)
}

// result turns a call's answer into its value or the fault it shows.
func (t *pageTab) result(ctx context.Context, obj *runtime.RemoteObject, exc *runtime.ExceptionDetails, err error) (*runtime.RemoteObject, error) {
	if f := t.faulted(); f != nil {
		return nil, f
	}
	switch {
	case err != nil && (ctx.Err() != nil || strings.Contains(err.Error(), "Execution was terminated")):
		return nil, t.hung()
	case err != nil:
		return nil, &pageFault{Code: CodePageCrashed, Message: "the browser stopped answering: " + err.Error()}
	case exc != nil:
		text := exc.Text
		if exc.Exception != nil && exc.Exception.Description != "" {
			text += " " + exc.Exception.Description
		}
		if strings.Contains(text, "Execution was terminated") || strings.Contains(text, "terminated") {
			return nil, t.hung()
		}
		return nil, &pageFault{Code: CodePageCrashed, Message: "the page driver's clock failed: " + capLine(text)}
	case obj == nil:
		return nil, &pageFault{Code: CodePageCrashed, Message: "the page gave no answer"}
	}
	return obj, nil
}

func (t *pageTab) hung() *pageFault {
	return &pageFault{Code: protocol.CappyAdapterUnresponsive, Message: fmt.Sprintf("the page ran for more than %s inside one frame (an endless loop?); the browser was closed", pageEvalTimeout)}
}

// call calls a method of the clock's API with JSON arguments (data, never
// code) and decodes its answer into out.
func (t *pageTab) call(method string, out any, args ...any) error {
	cctx, cancel := context.WithTimeout(t.ctx, pageEvalTimeout+3*time.Second)
	defer cancel()
	if args == nil {
		args = []any{}
	}
	// One argument, the array of them: the protocol's JSON leaves out a
	// value that is empty ("", {}, []), so a lone "" would not arrive.
	b, err := json.Marshal(args)
	if err != nil {
		return err
	}
	res, err := chromedp.Call(cctx, runtime.CallFunctionOn, runtime.CallFunctionOnParams{
		FunctionDeclaration: "function(a) { return this[" + strconv.Quote(method) + "](...(a || [])); }",
		ObjectID:            t.api, Arguments: []*runtime.CallArgument{{Value: b}}, ReturnByValue: ptrTo(true), Silent: ptrTo(true)})
	obj, err := t.result(cctx, res.Result, res.ExceptionDetails, err)
	if err != nil {
		return err
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(obj.Value, out)
}

// advance runs page time on to the time to (ms), frame by frame, waiting
// for the page's loads between frames, and returns what the page reported
// meanwhile.
func (t *pageTab) advance(to float64) (*pageState, error) {
	var all pageState
	for {
		var st pageState
		// Numbers only in this expression: the driver's own code.
		expr := "globalThis[" + strconv.Quote(t.name) + "].advance(" + strconv.FormatFloat(to, 'g', -1, 64) + ", 50)"
		obj, err := t.evalAwait(t.ctx, expr)
		if err != nil {
			return &all, err
		}
		if err := json.Unmarshal(obj.Value, &st); err != nil {
			return &all, fmt.Errorf("the clock's answer: %w", err)
		}
		all.Now, all.Frame, all.Pending, all.ConsoleCalls = st.Now, st.Frame, st.Pending, st.ConsoleCalls
		all.Reports = append(all.Reports, st.Reports...)
		all.Dropped += st.Dropped
		if st.Fault != nil {
			all.Reports = append(all.Reports, t.loadReports(st.Now)...)
			return &all, st.Fault
		}
		failed := st.Failed
		if st.Pending > 0 {
			if err = t.settle(); err == nil {
				var more []string
				more, err = t.failedLoads()
				failed = append(failed, more...)
			}
		}
		// The loads end in real time while the page's time holds, before
		// the next frame: what failed by now failed at this page time,
		// once the network's events of it are in.
		t.loads.caughtUp(t.ctx, failed)
		all.Reports = append(all.Reports, t.loadReports(st.Now)...)
		if err != nil {
			return &all, err
		}
		if st.Now >= to-1e-6 && st.Pending == 0 {
			return &all, nil
		}
	}
}

// settle waits (in real time) for the page's pending loads, at most
// pagePendingWait; the ones still pending then no longer count.
func (t *pageTab) settle() error {
	deadline := time.Now().Add(pagePendingWait)
	for wait := time.Millisecond; ; wait = min(2*wait, 20*time.Millisecond) {
		var pending int
		obj, err := t.eval(t.ctx, "globalThis["+strconv.Quote(t.name)+"].pending()", true)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(obj.Value, &pending); err != nil {
			return err
		}
		if pending == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return t.call("forgetPending", nil)
		}
		time.Sleep(wait)
	}
}

// failedLoads are the URLs of the page's loads that failed since it last
// said.
func (t *pageTab) failedLoads() ([]string, error) {
	obj, err := t.eval(t.ctx, "globalThis["+strconv.Quote(t.name)+"].failed()", true)
	if err != nil {
		return nil, err
	}
	var urls []string
	err = json.Unmarshal(obj.Value, &urls)
	return urls, err
}

// screenshot takes the page's picture, at most maxWidth wide, as mime
// (protocol.MimeJPEG or MimePNG).
func (t *pageTab) screenshot(maxWidth int, mime string) (data []byte, w, h int, err error) {
	scale := 1.0
	if maxWidth > 0 && int64(maxWidth) < t.width {
		scale = float64(maxWidth) / float64(t.width)
	}
	p := page.CaptureScreenshotParams{Format: page.CaptureScreenshotFormatPng, FromSurface: ptrTo(true),
		Clip: &page.Viewport{Width: float64(t.width), Height: float64(t.height), Scale: scale}}
	if mime == protocol.MimeJPEG {
		p.Format, p.Quality = page.CaptureScreenshotFormatJpeg, ptrTo(int64(80))
	}
	cctx, cancel := context.WithTimeout(t.ctx, pageEvalTimeout+3*time.Second)
	defer cancel()
	res, err := chromedp.Call(cctx, page.CaptureScreenshot, p)
	if _, ferr := t.result(cctx, &runtime.RemoteObject{}, nil, err); ferr != nil {
		return nil, 0, 0, ferr
	}
	c, _, err := image.DecodeConfig(bytes.NewReader(res.Data))
	if err != nil {
		return nil, 0, 0, fmt.Errorf("the page's picture: %w", err)
	}
	return res.Data, c.Width, c.Height, nil
}

// inspect answers a query of the page's state (see pageclock.js).
func (t *pageTab) inspect(query string) (json.RawMessage, *protocol.InspectError, error) {
	var ans struct {
		Value json.RawMessage        `json:"value"`
		Error *protocol.InspectError `json:"error"`
	}
	if err := t.call("inspect", &ans, query); err != nil {
		return nil, nil, err
	}
	if ans.Error != nil {
		return nil, ans.Error, nil
	}
	if len(ans.Value) == 0 {
		ans.Value = json.RawMessage("null")
	}
	return ans.Value, nil, nil
}

// newStep starts a step's console count.
func (t *pageTab) newStep() error { return t.call("newStep", nil) }

// close closes the tab and its browser context.
func (t *pageTab) close() {
	if t.cancel != nil {
		t.cancel()
	}
}

func ptrTo[T any](v T) *T { return &v }
