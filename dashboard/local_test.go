package dashboard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/crosscode/crosscode-mcp/dashboard"
	"github.com/crosscode/crosscode-mcp/hub"
	"github.com/crosscode/crosscode-mcp/internal/testing/browsertest"
	"github.com/crosscode/crosscode-mcp/protocol"
	"github.com/crosscode/crosscode-mcp/store"
)

// localDash is a local dashboard over a workspace database that another
// store handle (an agent's process, in effect) writes to.
type localDash struct {
	URL   string // the printed URL, with its one-time secret
	Base  string // http://127.0.0.1:PORT
	Port  int
	agent *store.Ingester // ingests into the workspace file as an agent does
	st    *store.Store    // the agent's handle
	media string          // where the capture tools put the videos they made
}

func newLocal(t testing.TB) *localDash {
	t.Helper()
	ctx := context.Background()
	data := t.TempDir()
	dbPath := filepath.Join(data, "workspace.db")
	st, err := store.Open(ctx, dbPath, &store.Options{Projections: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.EnsureWorkspace(ctx, wsName, ""); err != nil {
		t.Fatal(err)
	}
	// The agent's own handle on the same file.
	agentSt, err := store.Open(ctx, dbPath, &store.Options{Projections: true})
	if err != nil {
		t.Fatal(err)
	}
	caps, err := store.Open(ctx, filepath.Join(data, "capture", "captures.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	frameDir := filepath.Join(data, "capture", "frames")
	seedCapture(t, caps, frameDir)

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	gate := dashboard.NewLocal(wsName, port)
	mediaDir := filepath.Join(data, "capture", "media")
	dash := dashboard.New(&dashboard.Options{Captures: caps, FrameDir: frameDir, VideoDir: t.TempDir(), MediaDir: mediaDir,
		Denials: dashboard.ProjectedDenials{Store: st}, Session: gate.Session})
	srv := hub.New(hub.Config{Store: st, Routes: dash.Routes, Authenticate: gate.Authenticate, Wrap: gate.Wrap,
		Follow: 50 * time.Millisecond, SweepEvery: -1})
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(sctx, l) }()
	in := agentSt.NewIngester(&store.IngesterOptions{GatherWait: -1})
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
		in.Close()
		agentSt.Close()
		caps.Close()
		st.Close()
	})
	return &localDash{URL: gate.URL(), Base: fmt.Sprintf("http://127.0.0.1:%d", port), Port: port, agent: in, st: agentSt, media: mediaDir}
}

// ingest writes envelopes the way a local agent does: into the file, in
// its own process's ingester, with projections.
func (d *localDash) ingest(t testing.TB, envs ...*protocol.Envelope) {
	t.Helper()
	for _, e := range envs {
		res, err := d.agent.Ingest(context.Background(), wsName, e)
		if err == nil {
			err = res.Err
		}
		if err != nil {
			t.Fatalf("ingest %s: %v", e.ID, err)
		}
	}
}

func (d *localDash) presence(t testing.TB, a *agent, status protocol.PresenceStatus) {
	t.Helper()
	_, err := d.st.SetPresence(context.Background(), wsName, &protocol.PresenceUpdate{ReplicaID: a.ID, ActorID: a.Actor, SessionID: "ses_" + a.ID, Status: status,
		Agent: &protocol.Agent{Provider: a.Provider, AdapterID: "crosscode-mcp", SessionReference: "sref_" + a.ID}})
	if err != nil {
		t.Fatal(err)
	}
}

// seedCapture stores one finished scenario with events and three frames.
func seedCapture(t testing.TB, caps *store.Store, frameDir string) {
	t.Helper()
	ctx := context.Background()
	op := "op_jump1"
	start := time.Now().UTC().Add(-2 * time.Minute)
	if err := caps.CreateCapture(ctx, &store.Capture{Op: op, Kind: "scenario", Scenario: "jump_height", Status: "running", Game: "demo-arena", Adapter: "go-adapter", CreatedAt: start}); err != nil {
		t.Fatal(err)
	}
	var evs []store.CaptureEvent
	for i, name := range []string{"SCENARIO_START", "PLAYER_JUMP", "<img src=x onerror=window.pwned=1>", "PLAYER_LAND", "SCENARIO_END"} {
		evs = append(evs, store.CaptureEvent{Seq: int64(i*2 + 1), T: float64(i * 250), Event: name, Payload: json.RawMessage(fmt.Sprintf(`{"height":%d}`, i)), ReceivedAt: start.Add(time.Duration(i) * 250 * time.Millisecond)})
	}
	if err := caps.AppendEvents(ctx, op, evs); err != nil {
		t.Fatal(err)
	}
	var frames []store.CaptureFrame
	for i, c := range []color.RGBA{{200, 60, 60, 255}, {60, 160, 80, 255}, {60, 90, 200, 255}} {
		file := filepath.Join(op, fmt.Sprintf("%08d.png", i*2+2))
		writePNG(t, filepath.Join(frameDir, file), c)
		frames = append(frames, store.CaptureFrame{Seq: int64(i*2 + 2), T: float64(i*400 + 100), Mime: "image/png", Width: 160, Height: 90, Bytes: 100, File: file, ReceivedAt: start})
	}
	if err := caps.AppendFrames(ctx, op, frames); err != nil {
		t.Fatal(err)
	}
	if err := caps.UpdateCapture(ctx, op, store.CaptureUpdate{Status: "completed", StartedAt: start, EndedAt: start.Add(1200 * time.Millisecond)}); err != nil {
		t.Fatal(err)
	}
}

func writePNG(t testing.TB, path string, c color.RGBA) {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 160, 90))
	for y := range 90 {
		for x := range 160 {
			if (x/20+y/15)%2 == 0 {
				img.Set(x, y, c)
			} else {
				img.Set(x, y, color.RGBA{30, 30, 40, 255})
			}
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := png.Encode(f, img); err != nil {
		t.Fatal(err)
	}
}

// noRedirect is a client that shows redirects instead of following them.
var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }, Timeout: wait}

func status(t *testing.T, req *http.Request) (int, string) {
	t.Helper()
	res, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var b strings.Builder
	buf := make([]byte, 4096)
	n, _ := res.Body.Read(buf)
	b.Write(buf[:n])
	return res.StatusCode, b.String()
}

// TestLocalGate: without the secret, nothing; a wrong secret, a foreign
// Host or a foreign Origin, nothing; the secret works once.
func TestLocalGate(t *testing.T) {
	d := newLocal(t)
	tm := newAgent("rep-alice", "alice@studio.dev", protocol.ProviderClaude)
	d.ingest(t, tm.claim("clm-1", true, "secret work", "src/**"))
	for _, path := range []string{"/", "/assets/main.js", "/v1/events", "/v1/workspace", "/v1/captures", "/v1/subscribe"} {
		req, _ := http.NewRequest("GET", d.Base+path, nil)
		if code, body := status(t, req); code != http.StatusUnauthorized || strings.Contains(body, "secret work") || strings.Contains(body, "<script") {
			t.Errorf("GET %s without the cookie: %d %q", path, code, body)
		}
	}
	// Even the page's own token does not open it without the cookie.
	req, _ := http.NewRequest("POST", d.Base+"/dashboard/session", nil)
	if code, _ := status(t, req); code != http.StatusUnauthorized {
		t.Errorf("POST /dashboard/session without the cookie: %d", code)
	}
	wrong, _ := http.NewRequest("GET", d.Base+"/login?secret=nope", nil)
	if code, _ := status(t, wrong); code != http.StatusForbidden {
		t.Errorf("a wrong secret: %d", code)
	}
	// DNS rebinding: the right port under another name.
	rebind, _ := http.NewRequest("GET", d.URL, nil)
	rebind.Host = fmt.Sprintf("attacker.example:%d", d.Port)
	if code, _ := status(t, rebind); code != http.StatusMisdirectedRequest {
		t.Errorf("a foreign Host: %d", code)
	}
	cross, _ := http.NewRequest("GET", d.URL, nil)
	cross.Header.Set("Origin", "http://attacker.example")
	if code, _ := status(t, cross); code != http.StatusForbidden {
		t.Errorf("a foreign Origin: %d", code)
	}
	// The exchange: a cookie named after the port, a redirect to / without
	// the secret.
	req, _ = http.NewRequest("GET", d.URL, nil)
	res, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/" {
		t.Fatalf("the exchange: %d to %q", res.StatusCode, res.Header.Get("Location"))
	}
	cookies := res.Cookies()
	if len(cookies) != 1 || cookies[0].Name != fmt.Sprintf("crosscode_dashboard_%d", d.Port) || !cookies[0].HttpOnly || cookies[0].SameSite != http.SameSiteStrictMode {
		t.Fatalf("cookie %+v", cookies)
	}
	again, _ := http.NewRequest("GET", d.URL, nil)
	if code, _ := status(t, again); code != http.StatusForbidden {
		t.Errorf("the secret a second time: %d, want 403", code)
	}
	// With the cookie: the page, its token, and reads only.
	withCookie := func(method, path string) *http.Request {
		r, _ := http.NewRequest(method, d.Base+path, nil)
		r.AddCookie(cookies[0])
		return r
	}
	if code, body := status(t, withCookie("GET", "/")); code != http.StatusOK || !strings.Contains(body, "crosscode-mcp dashboard") {
		t.Errorf("GET / with the cookie: %d", code)
	}
	if code, body := status(t, withCookie("GET", "/v1/events")); code != http.StatusOK || !strings.Contains(body, "secret work") {
		t.Errorf("GET /v1/events with the cookie: %d %s", code, body)
	}
	if code, _ := status(t, withCookie("POST", "/v1/claims")); code != http.StatusMethodNotAllowed {
		t.Errorf("POST /v1/claims on the local dashboard: %d, want 405", code)
	}
	code, body := status(t, withCookie("POST", "/dashboard/session"))
	var sess struct{ Mode, Token string }
	if json.Unmarshal([]byte(body), &sess); code != http.StatusOK || sess.Mode != "local" || sess.Token == "" {
		t.Errorf("POST /dashboard/session: %d %s", code, body)
	}
	// A video the capture tools made is served as it is.
	if err := os.MkdirAll(d.media, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d.media, "op_jump1.mp4"), []byte("made by get_capture"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, body := status(t, withCookie("GET", "/v1/captures/op_jump1/video.mp4")); code != http.StatusOK || body != "made by get_capture" {
		t.Errorf("the capture tools' video: %d %q", code, body)
	}
	// A cookie of another dashboard (another port) does not work here.
	forged, _ := http.NewRequest("GET", d.Base+"/v1/events", nil)
	forged.AddCookie(&http.Cookie{Name: cookies[0].Name, Value: "x" + cookies[0].Value})
	if code, _ := status(t, forged); code != http.StatusUnauthorized {
		t.Errorf("a forged cookie: %d", code)
	}
}

// TestLocalDashboard drives the local page in Chromium: it opens with the
// printed URL (which then leaves the address bar), shows what an agent
// process writes to the workspace file as it happens, denials with the
// claims that caused them, and this machine's captures with their
// timeline, frames and video.
func TestLocalDashboard(t *testing.T) {
	d := newLocal(t)
	alice := newAgent("rep-alice", "alice@studio.dev", protocol.ProviderClaude)
	bob := newAgent("rep-bob", "bob@studio.dev", protocol.ProviderCodex)
	d.presence(t, alice, protocol.PresenceOnline)
	d.presence(t, bob, protocol.PresenceOnline)
	d.ingest(t,
		alice.claim("clm-alice", true, "physics rewrite", "src/physics/**"),
		alice.intent("int-alice", "make the jump snappier", "src/physics/jump.gd"),
		bob.task("tsk-hud", "Score panel overlaps the minimap", protocol.TaskOpen, "", "ui"),
		alice.validation("val-1", "scenario jump_height", protocol.ValidationPassed, "4b825dc642cb6eb9a060e54bf8d69288fbee4904", "peak 3.2 m"),
	)
	b := browsertest.New(t, 1280, 900)
	shots := browsertest.ArtifactDir(t)
	b.Must(chromedp.Navigate(d.URL))
	b.WaitTrue(wait, `document.querySelector('#live').dataset.state === 'live'`)
	if loc := browsertest.Eval[string](b, `location.href`); strings.Contains(loc, "secret") {
		t.Errorf("the secret stayed in the address bar: %s", loc)
	}
	hist, err := chromedp.Run(b.Ctx, chromedp.NavigationEntries())
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range hist.Entries {
		if strings.Contains(e.URL, "secret") {
			t.Errorf("the secret URL is in the history: %s", e.URL)
		}
	}
	if !browsertest.Eval[bool](b, `document.getElementById('login').hidden && document.getElementById('signout').hidden`) {
		t.Error("the local page asks for a token")
	}
	b.WaitTrue(wait, `document.querySelectorAll('tr[data-replica]').length === 2`)

	// An agent claims, another is denied: both show, live.
	view(t, b, "2", "claims")
	b.WaitTrue(wait, `document.querySelector('tr[data-claim="clm-alice"]') !== null`)
	d.ingest(t, bob.claim("clm-bob", false, "tune gravity", "src/physics/gravity.gd"))
	b.WaitTrue(wait, `document.querySelector('tr[data-denied="clm-bob"]') !== null`)
	b.WaitTrue(wait, `document.querySelector('tr[data-claim="clm-bob"]') === null`)
	wantText(t, browsertest.Eval[string](b, `document.querySelector('tr[data-claim="clm-alice"]').innerText`), "1 (bob@studio.dev)")
	wantText(t, browsertest.Eval[string](b, `document.querySelector('tr[data-denied="clm-bob"]').innerText`), "bob@studio.dev", "src/physics/gravity.gd", "alice@studio.dev (exclusive)")
	d.ingest(t, bob.claim("clm-bob-ui", false, "HUD", "src/ui/**"))
	b.WaitTrue(wait, `document.querySelector('tr[data-claim="clm-bob-ui"]') !== null`)
	b.Screenshot(shots, "claims")
	if os.Getenv("CROSSCODE_UPDATE_SCREENSHOT") != "" {
		writeREADMEShot(t, b)
	}

	// Presence an agent process writes shows too.
	view(t, b, "1", "agents")
	d.presence(t, bob, protocol.PresenceIdle)
	b.WaitTrue(wait, `document.querySelector('tr[data-replica="rep-bob"]').dataset.status === 'idle'`)

	// Captures: the list, the timeline, the frames, the video.
	view(t, b, "7", "captures")
	b.WaitTrue(wait, `document.querySelector('button[data-op="op_jump1"]') !== null`)
	b.Click(`button[data-op="op_jump1"]`)
	b.WaitTrue(wait, `document.querySelectorAll('tr[data-event-seq]').length === 5`)
	wantText(t, mainText(b), "jump_height", "PLAYER_JUMP", "<img src=x onerror=window.pwned=1>", `{"height":1}`)
	b.WaitTrue(wait, `[...document.querySelectorAll('.frames img')].filter((i) => i.complete && i.naturalWidth === 160).length === 3`)
	if p := browsertest.Eval[any](b, `window.pwned ?? null`); p != nil {
		t.Errorf("game text ran: %v", p)
	}
	video := browsertest.Eval[string](b, `document.querySelector('a.video').getAttribute('href')`)
	if video != "/v1/captures/op_jump1/video.mp4" {
		t.Errorf("video link %q", video)
	}
	b.Screenshot(shots, "captures")
	got := browsertest.Eval[string](b, `fetch('/v1/captures/op_jump1/video.mp4').then(async (r) => r.status + ' ' + r.headers.get('content-type') + ' ' + (await r.arrayBuffer()).byteLength)`, chromedp.EvalAwaitPromise)
	if !strings.HasPrefix(got, "200 video/mp4 ") || strings.HasSuffix(got, " 0") {
		t.Errorf("the video: %s", got)
	}
	if errs := b.Errors(); len(errs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(errs, "\n"))
	}
}

// writeREADMEShot regenerates docs/dashboard.png, the README's picture.
func writeREADMEShot(t *testing.T, b *browsertest.Browser) {
	t.Helper()
	path := b.Screenshot(t.TempDir(), "dashboard")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join("..", "docs", "dashboard.png"), data, 0o644); err != nil {
		t.Fatal(err)
	}
}
