package cappy

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/network"

	"github.com/crosscode/crosscode-mcp/internal/sanitize"
)

// A page's failed loads (a missing asset, a host that does not resolve, a
// refused connection, an HTTP error), from the browser's network events:
// the page driver reports each as the event LOAD_FAILED, and every page
// (the driver's or the one a page's own adapter drives) writes it to the
// game's log, in the same words.

// EventLoadFailed is the page driver's event for a failed load.
const EventLoadFailed = "LOAD_FAILED"

// Bounds of what one page's failed loads cost.
const (
	// MaxLoadFailures is how many failed loads one page reports (each
	// URL once); past it one log line says the rest are not reported.
	MaxLoadFailures = 32
	// maxLoadURL caps a failed load's URL.
	maxLoadURL = 300
	// maxLoadsTracked bounds the loads in flight kept by their id.
	maxLoadsTracked = 4096
)

// loadFailure is one failed load: its URL, the HTTP status or the
// browser's reason, and what the page was loading (Image, Script, Fetch,
// XHR, Document, ...).
type loadFailure struct {
	URL    string `json:"url"`
	Status int64  `json:"status,omitempty"`
	Reason string `json:"reason"`
	Type   string `json:"type,omitempty"`
}

// payload is the failure as an event's payload.
func (f *loadFailure) payload() json.RawMessage {
	b, _ := json.Marshal(f)
	return b
}

// line is the failure as the game's log writes it.
func (f *loadFailure) line() string {
	what := f.Type
	if what == "" {
		what = "load"
	}
	return fmt.Sprintf("[page] load failed: %s %s: %s", what, f.URL, f.Reason)
}

// loadWatch follows one page's loads through the network events and
// tells each URL's first failure.
type loadWatch struct {
	mu       sync.Mutex
	inFlight map[network.RequestID]string // URL by request
	told     map[string]bool
	limit    loadLimit
	// failedURL holds every URL whose failure the events told (its
	// repeats too), for caughtUp; failed the failures not yet reported
	// (take), kept under the same lock so that what caughtUp saw is there.
	failedURL map[string]bool
	failed    []loadFailure
	// seen wakes caughtUp (its one waiter, the tab's step) at each failure.
	seen chan struct{}
}

// take returns the failures not yet reported.
func (w *loadWatch) take() []loadFailure {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.failed
	w.failed = nil
	return out
}

func newLoadWatch() *loadWatch {
	return &loadWatch{inFlight: map[network.RequestID]string{}, told: map[string]bool{}, failedURL: map[string]bool{}, seen: make(chan struct{}, 1)}
}

// networkWait bounds how long the driver waits, once the page saw its
// loads end, for the browser's network events of those that failed (they
// come on another channel, a few milliseconds later; a picture that fails
// to decode has no such event, and costs this once).
const networkWait = 500 * time.Millisecond

// caughtUp waits until the network events told the failure of each of
// urls (the page's own loads that it saw fail), at most networkWait: a
// load that failed while page time held is then told at this page time,
// in a recording and in its replay alike, not at a later one when its
// event is late.
func (w *loadWatch) caughtUp(ctx context.Context, urls []string) {
	if len(urls) == 0 {
		return
	}
	timer := time.NewTimer(networkWait)
	defer timer.Stop()
	for {
		w.mu.Lock()
		all := true
		for _, u := range urls {
			all = all && w.failedURL[u]
		}
		w.mu.Unlock()
		if all {
			return
		}
		select {
		case <-w.seen:
		case <-timer.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// event takes one of the page's events and returns the failure it tells,
// or nil. It runs on the tab's event loop: it never blocks.
func (w *loadWatch) event(ev any) *loadFailure {
	w.mu.Lock()
	defer w.mu.Unlock()
	var f *loadFailure
	switch e := ev.(type) {
	case *network.EventRequestWillBeSent:
		if e.Request != nil && len(w.inFlight) < maxLoadsTracked && (strings.HasPrefix(e.Request.URL, "http:") || strings.HasPrefix(e.Request.URL, "https:")) {
			w.inFlight[e.RequestID] = e.Request.URL
		}
	case *network.EventResponseReceived:
		if _, ok := w.inFlight[e.RequestID]; ok && e.Response != nil && e.Response.Status >= 400 {
			delete(w.inFlight, e.RequestID) // told here, not again at its end
			text := e.Response.StatusText
			if text == "" {
				text = http.StatusText(int(e.Response.Status))
			}
			f = &loadFailure{URL: e.Response.URL, Status: e.Response.Status, Reason: strings.TrimSpace(fmt.Sprintf("HTTP %d %s", e.Response.Status, text)), Type: string(e.Type)}
		}
	case *network.EventLoadingFailed:
		u, ok := w.inFlight[e.RequestID]
		delete(w.inFlight, e.RequestID)
		if ok && !e.Canceled { // the page's own abort is no failure
			reason := e.ErrorText
			if e.BlockedReason != "" {
				reason += " (blocked: " + string(e.BlockedReason) + ")"
			}
			f = &loadFailure{URL: u, Reason: reason, Type: string(e.Type)}
		}
	case *network.EventLoadingFinished:
		delete(w.inFlight, e.RequestID)
	}
	if f == nil {
		return nil
	}
	if len(w.failedURL) < maxLoadsTracked {
		w.failedURL[noFragment(f.URL)] = true
		select {
		case w.seen <- struct{}{}:
		default: // a wake is pending already
		}
	}
	f.URL = sanitize.Line(noFragment(f.URL), maxLoadURL)
	f.Reason, f.Type = sanitize.Line(f.Reason, 200), sanitize.Line(f.Type, 40)
	if w.told[f.URL] || len(w.told) >= maxLoadsTracked {
		return nil
	}
	w.told[f.URL] = true
	w.failed = append(w.failed, *f)
	return f
}

// loadLimit lets a page tell MaxLoadFailures failed loads.
type loadLimit struct {
	n      int
	capped bool
}

// admit reports whether the next failure is told, and whether it is the
// first one past the limit (whose log line says the rest are not).
func (l *loadLimit) admit() (tell, capNow bool) {
	if l.n < MaxLoadFailures {
		l.n++
		return true, false
	}
	capNow, l.capped = !l.capped, true
	return false, capNow
}

// logged tells f in the log within the page's limit (as a page that the
// page driver does not drive has it).
func (w *loadWatch) logged(f *loadFailure, logf func(string, ...any)) {
	w.mu.Lock()
	tell, capNow := w.limit.admit()
	w.mu.Unlock()
	switch {
	case tell:
		logf("%s", f.line())
	case capNow:
		logf("%s", loadCapLine)
	}
}

// loadCapLine is the log's line when a page reaches MaxLoadFailures.
var loadCapLine = fmt.Sprintf("[page] load failed: more loads failed on this page; only the first %d are reported", MaxLoadFailures)
