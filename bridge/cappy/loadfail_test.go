package cappy

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"

	"github.com/crosscode/crosscode-mcp/internal/testing/sysdeps"
	"github.com/crosscode/crosscode-mcp/internal/testing/webgames"
	"github.com/crosscode/crosscode-mcp/protocol"
)

// missingService is a capture service whose web game
// (internal/testing/webgames/missing) loads what is not there.
func missingService(t *testing.T, adapter string) *Service {
	t.Helper()
	sysdeps.Need(t, "chromium")
	// A port nothing listens on (Chromium refuses some ports itself).
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	cfg := &CaptureConfig{Game: &GameConfig{Serve: webgames.Dir(t, "missing"), URL: fmt.Sprintf("/?refused=%d", l.Addr().(*net.TCPAddr).Port), Adapter: adapter}}
	s, err := NewService(context.Background(), ServiceConfig{Data: t.TempDir(), Config: cfg, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// loadFailed is a LOAD_FAILED event: its page time and payload.
func loadFailed(t *testing.T, evs []protocol.Event) []string {
	t.Helper()
	var out []string
	for _, e := range evs {
		if e.Event != EventLoadFailed {
			continue
		}
		var f loadFailure
		if err := json.Unmarshal(e.Payload, &f); err != nil {
			t.Fatal(err)
		}
		u := f.URL[strings.LastIndex(f.URL, "/")+1:]
		out = append(out, fmt.Sprintf("%g %s %d %s %s", e.T, u, f.Status, f.Type, f.Reason))
	}
	return out
}

func stepEvents(r *StepResult) []protocol.Event {
	var out []protocol.Event
	for _, e := range r.Events {
		out = append(out, protocol.Event{T: e.T, Event: e.Event, Payload: e.Payload})
	}
	return out
}

// TestPageLoadFailures: a page driven with no adapter code whose loads
// fail (a missing image in its markup, a missing fetch at load, a refused
// connection, then 40 more) reports each failed URL once as the event
// LOAD_FAILED (its URL, HTTP status or the browser's reason, and what
// was loading) at the page time it failed, and writes it to the game's
// log, at most MaxLoadFailures a page (the log says when the rest are
// not reported); a replay reports them the same.
func TestPageLoadFailures(t *testing.T) {
	s := missingService(t, AdapterPage)
	ctx := context.Background()
	op := pageRecording(t, s, 1)
	got := loadFailed(t, stepEvents(step(t, s, op, 0)))
	if strings.Join(got, "; ") != "0 missing.png 404 Image HTTP 404 Not Found; 0 nope.json 404 Fetch HTTP 404 Not Found" {
		t.Fatalf("the page's load: %q", got)
	}
	// A fetch the step's input starts: the driver waits for it at the
	// step's start, and tells its failure there, however soon it failed.
	got = loadFailed(t, stepEvents(step(t, s, op, 100, key("KeyF", true))))
	if len(got) != 1 || !strings.HasPrefix(got[0], "0 ") || !strings.HasSuffix(got[0], " refused.json 0 Fetch net::ERR_CONNECTION_REFUSED") {
		t.Fatalf("a refused fetch: %q", got)
	}
	got = loadFailed(t, stepEvents(step(t, s, op, 100, key("KeyF", false), key("KeyM", true), key("KeyG", true))))
	if len(got) != MaxLoadFailures-3 || !strings.Contains(got[0], "many-") {
		t.Fatalf("40 more failed loads, one twice, and one told before: %d events %q", len(got), got)
	}
	log := s.Launcher.Tail(1 << 20)
	for _, want := range []string{"[page] load failed: Image http://127.0.0.1:", "/missing.png: HTTP 404 Not Found",
		"/refused.json: net::ERR_CONNECTION_REFUSED", loadCapLine} {
		if !strings.Contains(log, want) {
			t.Fatalf("the game's log lacks %q:\n%s", want, log)
		}
	}
	if n := strings.Count(log, "[page] load failed:"); n != MaxLoadFailures+1 {
		t.Fatalf("%d log lines of failed loads, want %d and the cap's:\n%s", n, MaxLoadFailures, log)
	}
	if err := s.Controller.Stop(ctx, op); err != nil {
		t.Fatal(err)
	}
	out := op.Wait(ctxTimeout(t, 30*time.Second))
	stored, err := s.Store.Replay(ctx, out.Replay.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := s.Controller.Start(ctx, Request{Kind: KindReplay, Replay: stored, ReplayOf: op.ID, Seed: ptrTo(int64(1))})
	if err != nil {
		t.Fatal(err)
	}
	if rout := rep.Wait(ctxTimeout(t, 60*time.Second)); rout.Status != StatusCompleted || rout.Events != int64(MaxLoadFailures) {
		t.Fatalf("replay: %+v", rout)
	}
	if d, err := Compare(ctx, s.Store, op.ID, rep.ID, 1, 1); err != nil || !d.Identical {
		t.Fatalf("the replay's failed loads: %+v %v", d, err)
	}
}

// TestPageLoadFailuresAuto: with game.adapter "auto", the page's own
// load (the one its adapter would drive) writes its failed loads to the
// game's log in the same words; when no adapter says hello, the page
// driver's page reports them as events as in page mode.
func TestPageLoadFailuresAuto(t *testing.T) {
	s := missingService(t, AdapterAuto)
	op := pageRecording(t, s, 1)
	if got := loadFailed(t, stepEvents(step(t, s, op, 0))); len(got) != 2 {
		t.Fatalf("the page's load: %q", got)
	}
	log := s.Launcher.Tail(1 << 20)
	if n := strings.Count(log, "/missing.png: HTTP 404 Not Found"); n != 2 || strings.Contains(log, "Failed to load resource") {
		t.Fatalf("the game's log: %d lines of the missing image, one for each page, and no other:\n%s", n, log)
	}
}

// TestLoadWatch: what the network events of a page come to: an HTTP
// error or the browser's reason, once a URL, never a load the page
// cancelled, a fragment, or a data: URL; and a page tells at most
// MaxLoadFailures of them in the log, then says so once.
func TestLoadWatch(t *testing.T) {
	w := newLoadWatch()
	sent := func(id, u string) {
		w.event(&network.EventRequestWillBeSent{RequestID: network.RequestID(id), Request: &network.Request{URL: u}})
	}
	sent("1", "http://no-such-host.invalid/a.png#frag")
	f := w.event(&network.EventLoadingFailed{RequestID: "1", ErrorText: "net::ERR_NAME_NOT_RESOLVED", Type: network.ResourceTypeImage})
	if f == nil || f.URL != "http://no-such-host.invalid/a.png" || f.Reason != "net::ERR_NAME_NOT_RESOLVED" || f.Status != 0 || f.Type != "Image" {
		t.Fatalf("an unresolvable host: %+v", f)
	}
	sent("2", "http://127.0.0.1/x.js")
	if f := w.event(&network.EventLoadingFailed{RequestID: "2", ErrorText: "net::ERR_ABORTED", Canceled: true}); f != nil {
		t.Fatalf("a cancelled load: %+v", f)
	}
	sent("3", "http://127.0.0.1/y.json")
	f = w.event(&network.EventResponseReceived{RequestID: "3", Type: network.ResourceTypeFetch, Response: &network.Response{URL: "http://127.0.0.1/y.json", Status: 503}})
	if f == nil || f.Status != 503 || f.Reason != "HTTP 503 Service Unavailable" {
		t.Fatalf("an HTTP error: %+v", f)
	}
	if f := w.event(&network.EventLoadingFinished{RequestID: "3"}); f != nil {
		t.Fatalf("its end: %+v", f)
	}
	sent("4", "data:image/png;base64,xx")
	if f := w.event(&network.EventLoadingFailed{RequestID: "4", ErrorText: "net::ERR_INVALID_URL"}); f != nil {
		t.Fatalf("a data: URL: %+v", f)
	}
	sent("5", "http://no-such-host.invalid/a.png")
	if f := w.event(&network.EventLoadingFailed{RequestID: "5", ErrorText: "net::ERR_NAME_NOT_RESOLVED"}); f != nil {
		t.Fatalf("the same URL again: %+v", f)
	}
	sent("6", "http://127.0.0.1/"+strings.Repeat("é", 400)+"\u202e")
	if f := w.event(&network.EventLoadingFailed{RequestID: "6", ErrorText: "net::ERR_FAILED"}); f == nil || len(f.URL) > maxLoadURL+4 || strings.Contains(f.URL, "\u202e") {
		t.Fatalf("a long URL: %+v", f)
	}
	var lines []string
	logf := func(format string, args ...any) { lines = append(lines, fmt.Sprintf(format, args...)) }
	for i := range MaxLoadFailures + 5 {
		w.logged(&loadFailure{URL: fmt.Sprint(i), Reason: "HTTP 404 Not Found"}, logf)
	}
	if len(lines) != MaxLoadFailures+1 || lines[len(lines)-1] != loadCapLine {
		t.Fatalf("%d lines, the last %q", len(lines), lines[len(lines)-1])
	}
}

// TestPageMissingDocument: a game.url that names a page that is not
// there ends the recording at once with PAGE_LOAD_FAILED and the page's
// HTTP status, rather than playing a "404 page not found".
func TestPageMissingDocument(t *testing.T) {
	sysdeps.Need(t, "chromium")
	cfg := &CaptureConfig{Game: &GameConfig{Serve: webgames.Dir(t, "missing"), URL: "/index-debug.html", Adapter: AdapterPage}}
	s, err := NewService(context.Background(), ServiceConfig{Data: t.TempDir(), Config: cfg, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ctx := context.Background()
	if _, err := s.EnsureAdapter(ctx); err != nil {
		t.Fatal(err)
	}
	op, err := s.Controller.Start(ctx, Request{Kind: KindRecording, Control: ControlAgent})
	if err != nil {
		t.Fatal(err)
	}
	out := op.Wait(ctxTimeout(t, 30*time.Second))
	if out.Status != StatusFailed || out.Code != CodePageLoadFailed || !strings.Contains(out.Message, "/index-debug.html: HTTP 404 Not Found") {
		t.Fatalf("a missing page: %+v", out)
	}
}
