package cappy

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/crosscode/crosscode-mcp/protocol"
	"github.com/crosscode/crosscode-mcp/store"
)

// The frames extension (spec section 7) over real loopback WebSockets.

var frameCaps = append([]string{protocol.CapFrames}, allCaps...)

func framesReq() *protocol.FramesRequest {
	return &protocol.FramesRequest{FPS: 2, MaxWidth: 640, Formats: []string{protocol.MimeJPEG, protocol.MimePNG}}
}

// picture encodes a w x h image of one colour as mime.
func picture(t *testing.T, mime string, w, h int, c color.RGBA) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for i := 0; i < len(img.Pix); i += 4 {
		img.Pix[i], img.Pix[i+1], img.Pix[i+2], img.Pix[i+3] = c.R, c.G, c.B, 255
	}
	var b bytes.Buffer
	var err error
	if mime == protocol.MimePNG {
		err = png.Encode(&b, img)
	} else {
		err = jpeg.Encode(&b, img, nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func frameMsg(op string, tt float64, mime string, w, h int, data []byte) map[string]any {
	return map[string]any{"type": "frame", "op": op, "t": tt, "mime": mime, "width": w, "height": h, "data": base64.StdEncoding.EncodeToString(data)}
}

// runningWithFrames starts boss_intro with frames asked and brings it to
// running; it returns the operation and the prepare_scenario it got.
func runningWithFrames(t *testing.T, e *env, a *testAdapter, fr *protocol.FramesRequest) (*Operation, msg) {
	t.Helper()
	r := scenarioReq()
	r.Frames = fr
	o := start(t, e, r)
	p := a.expect(t, "prepare_scenario")
	a.send(t, map[string]any{"type": "ready", "op": o.ID})
	a.expect(t, "start")
	a.send(t, map[string]any{"type": "started", "op": o.ID})
	waitStatus(t, o, StatusRunning)
	return o, p
}

func storedFrames(t *testing.T, e *env, op string) []store.CaptureFrame {
	t.Helper()
	fs, err := e.st.Frames(context.Background(), store.FrameQuery{Op: op, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

func TestFramesStoredWithTheOperation(t *testing.T) {
	e := newEnv(t, nil)
	a := connect(t, e, frameCaps...)
	o, p := runningWithFrames(t, e, a, framesReq())
	want := map[string]any{"fps": 2.0, "maxWidth": 640.0, "formats": []any{"image/jpeg", "image/png"}}
	if !reflect.DeepEqual(p.M["frames"], want) {
		t.Fatalf("prepare_scenario frames %v, want %v", p.M["frames"], want)
	}
	if o.FramesAsked() == nil {
		t.Fatal("FramesAsked is nil")
	}
	red := picture(t, protocol.MimeJPEG, 64, 36, color.RGBA{200, 30, 30, 255})
	blue := picture(t, protocol.MimePNG, 32, 18, color.RGBA{30, 30, 200, 255})
	a.send(t, map[string]any{"type": "event", "op": o.ID, "t": 0, "event": "SPAWN"})
	a.send(t, frameMsg(o.ID, 0, protocol.MimeJPEG, 64, 36, red))
	a.send(t, map[string]any{"type": "event", "op": o.ID, "t": 400, "event": "HIT"})
	f2 := frameMsg(o.ID, 500, protocol.MimePNG, 32, 18, blue)
	f2["reason"] = "HIT"
	a.send(t, f2)
	a.send(t, map[string]any{"type": "event", "op": o.ID, "t": 900, "event": "BOSS_DOWN"})
	a.send(t, map[string]any{"type": "completed", "op": o.ID})
	out := wantOutcome(t, e, o, StatusCompleted, "")
	if out.Events != 3 {
		t.Fatalf("events %d, want 3", out.Events)
	}
	fs := storedFrames(t, e, o.ID)
	if len(fs) != 2 {
		t.Fatalf("stored %d frames, want 2", len(fs))
	}
	// seq is receipt order, shared with the events: 1 SPAWN, 2 frame, 3 HIT, 4 frame, 5 BOSS_DOWN.
	if fs[0].Seq != 2 || fs[1].Seq != 4 || fs[0].T != 0 || fs[1].T != 500 || fs[1].Reason != "HIT" || fs[0].Mime != protocol.MimeJPEG || fs[1].Width != 32 {
		t.Fatalf("frames %+v", fs)
	}
	evs, _ := e.st.Events(context.Background(), store.EventQuery{Op: o.ID})
	if len(evs) != 3 || evs[0].Seq != 1 || evs[1].Seq != 3 || evs[2].Seq != 5 {
		t.Fatalf("events %+v", evs)
	}
	for i, data := range [][]byte{red, blue} {
		got, err := os.ReadFile(filepath.Join(e.frameDir, fs[i].File))
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("frame %d file %s: %v (%d bytes, want %d)", i, fs[i].File, err, len(got), len(data))
		}
	}
	c, _ := e.st.Capture(context.Background(), o.ID)
	if c.Frames != 2 || c.FrameBytes != int64(len(red)+len(blue)) || c.FramesDropped.Total() != 0 || c.Events != 3 || c.LastSeq != 5 {
		t.Fatalf("capture frames %d bytes %d dropped %+v events %d lastSeq %d", c.Frames, c.FrameBytes, c.FramesDropped, c.Events, c.LastSeq)
	}
	var req protocol.FramesRequest
	if err := json.Unmarshal(c.FramesRequest, &req); err != nil || req.FPS != 2 {
		t.Fatalf("capture framesRequest %s (%v)", c.FramesRequest, err)
	}
	// Nearest lookups, used for keyframes.
	if f, err := e.st.NearestFrame(context.Background(), o.ID, 320); err != nil || f.T != 500 {
		t.Fatalf("nearest frame to 320: %+v %v", f, err)
	}
	if ev, err := e.st.EventAtOrBefore(context.Background(), o.ID, 480); err != nil || ev.Event != "HIT" {
		t.Fatalf("the event at or before 480: %+v %v", ev, err)
	}
}

// An adapter that does not advertise frames is never asked for them.
func TestFramesOnlyFromAdaptersThatAdvertiseThem(t *testing.T) {
	e := newEnv(t, nil)
	a := connect(t, e, allCaps...)
	o, p := runningWithFrames(t, e, a, framesReq())
	if _, ok := p.M["frames"]; ok || o.FramesAsked() != nil {
		t.Fatalf("asked an adapter without the capability for frames: %s", p.Raw)
	}
	// A frame it sends anyway is out of state.
	a.send(t, frameMsg(o.ID, 0, protocol.MimeJPEG, 64, 36, picture(t, protocol.MimeJPEG, 64, 36, color.RGBA{1, 2, 3, 255})))
	a.expectError(t, protocol.CappyOutOfState)
	wantOutcome(t, e, o, StatusFailed, protocol.CappyOutOfState)
}

func TestFramesRequestChecked(t *testing.T) {
	e := newEnv(t, nil)
	connect(t, e, frameCaps...)
	r := scenarioReq()
	r.Frames = &protocol.FramesRequest{FPS: 60, MaxWidth: 640, Formats: []string{protocol.MimeJPEG}}
	startErr(t, e, r, protocol.CappyInvalidParameters)
}

// Each way a frame can break the rules fails the operation with its code.
func TestFrameViolations(t *testing.T) {
	jpg := func(t *testing.T) []byte { return picture(t, protocol.MimeJPEG, 64, 36, color.RGBA{9, 9, 9, 255}) }
	pngb := func(t *testing.T) []byte { return picture(t, protocol.MimePNG, 64, 36, color.RGBA{9, 9, 9, 255}) }
	cases := []struct {
		name    string
		req     *protocol.FramesRequest
		started bool
		frame   func(t *testing.T, op string) any
		code    string
	}{
		{"bad base64", framesReq(), true, func(t *testing.T, op string) any {
			m := frameMsg(op, 0, protocol.MimeJPEG, 64, 36, jpg(t))
			m["data"] = "!!not base64!!"
			return m
		}, protocol.CappyInvalidMessage},
		{"mime mismatch", framesReq(), true, func(t *testing.T, op string) any { return frameMsg(op, 0, protocol.MimePNG, 64, 36, jpg(t)) }, protocol.CappyInvalidMessage},
		{"dimensions mismatch", framesReq(), true, func(t *testing.T, op string) any { return frameMsg(op, 0, protocol.MimeJPEG, 640, 360, jpg(t)) }, protocol.CappyInvalidMessage},
		{"huge dimensions", framesReq(), true, func(t *testing.T, op string) any { return frameMsg(op, 0, protocol.MimeJPEG, 100000, 36, jpg(t)) }, protocol.CappyInvalidMessage},
		{"over 1 MiB", framesReq(), true, func(t *testing.T, op string) any {
			return frameMsg(op, 0, protocol.MimeJPEG, 64, 36, append(jpg(t), make([]byte, protocol.MaxFrameBytes)...))
		}, protocol.CappyInvalidMessage},
		{"a format not offered", &protocol.FramesRequest{FPS: 2, MaxWidth: 640, Formats: []string{protocol.MimeJPEG}}, true,
			func(t *testing.T, op string) any { return frameMsg(op, 0, protocol.MimePNG, 64, 36, pngb(t)) }, protocol.CappyInvalidMessage},
		{"wider than asked", &protocol.FramesRequest{FPS: 2, MaxWidth: 32, Formats: []string{protocol.MimeJPEG}}, true,
			func(t *testing.T, op string) any { return frameMsg(op, 0, protocol.MimeJPEG, 64, 36, jpg(t)) }, protocol.CappyInvalidMessage},
		{"unasked frame", nil, true, func(t *testing.T, op string) any { return frameMsg(op, 0, protocol.MimeJPEG, 64, 36, jpg(t)) }, protocol.CappyOutOfState},
		{"frame before started", framesReq(), false, func(t *testing.T, op string) any { return frameMsg(op, 0, protocol.MimeJPEG, 64, 36, jpg(t)) }, protocol.CappyOutOfState},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, nil)
			a := connect(t, e, frameCaps...)
			r := scenarioReq()
			r.Frames = tc.req
			o := start(t, e, r)
			a.expect(t, "prepare_scenario")
			if tc.started {
				a.send(t, map[string]any{"type": "ready", "op": o.ID})
				a.expect(t, "start")
				a.send(t, map[string]any{"type": "started", "op": o.ID})
				waitStatus(t, o, StatusRunning)
			}
			a.send(t, tc.frame(t, o.ID))
			if m := a.expectError(t, tc.code); m.str("op") != o.ID || m.str("message") == "" {
				t.Fatalf("error %s", m.Raw)
			}
			wantOutcome(t, e, o, StatusFailed, tc.code)
			if fs := storedFrames(t, e, o.ID); len(fs) != 0 {
				t.Fatalf("a bad frame was stored: %+v", fs)
			}
			completeScenario(t, e, a) // the adapter stays, the next operation runs
		})
	}
	t.Run("t going back", func(t *testing.T) {
		e := newEnv(t, nil)
		a := connect(t, e, frameCaps...)
		o, _ := runningWithFrames(t, e, a, framesReq())
		a.send(t, frameMsg(o.ID, 1000, protocol.MimeJPEG, 64, 36, jpg(t)))
		a.send(t, frameMsg(o.ID, 999, protocol.MimeJPEG, 64, 36, jpg(t)))
		a.expectError(t, protocol.CappyInvalidMessage)
		wantOutcome(t, e, o, StatusFailed, protocol.CappyInvalidMessage)
		if fs := storedFrames(t, e, o.ID); len(fs) != 1 || fs[0].T != 1000 {
			t.Fatalf("frames %+v, want the first one only", fs)
		}
	})
}

// A flood over twice the asked rate is dropped and counted; the
// operation goes on and completes.
func TestFrameFloodDropped(t *testing.T) {
	e := newEnv(t, nil)
	a := connect(t, e, frameCaps...)
	o, _ := runningWithFrames(t, e, a, framesReq()) // 2 fps: at most 4 a second, 4 at once
	img := picture(t, protocol.MimeJPEG, 64, 36, color.RGBA{50, 90, 10, 255})
	for i := range 100 {
		a.send(t, frameMsg(o.ID, float64(i), protocol.MimeJPEG, 64, 36, img)) // 100 frames in 100 ms
	}
	// Then frames at the asked rate again, and extras within twice it.
	for i := range 10 {
		a.send(t, frameMsg(o.ID, 1000+float64(i)*250, protocol.MimeJPEG, 64, 36, img))
	}
	a.send(t, map[string]any{"type": "event", "op": o.ID, "t": 4000, "event": "END"})
	a.send(t, map[string]any{"type": "completed", "op": o.ID})
	wantOutcome(t, e, o, StatusCompleted, "")
	fs := storedFrames(t, e, o.ID)
	c, _ := e.st.Capture(context.Background(), o.ID)
	// In the first 100 ms the bucket's 4 frames, plus what 100 ms refill
	// at 4/s: 4; then one every 250 ms: all 10.
	if len(fs) != 14 || c.Frames != 14 || c.FramesDropped.Rate != 96 || c.FramesDropped.Total() != 96 {
		t.Fatalf("stored %d (capture says %d), dropped %+v; want 14 stored, 96 dropped for the rate", len(fs), c.Frames, c.FramesDropped)
	}
	if c.Events != 1 {
		t.Fatalf("events %d", c.Events)
	}
}

func TestFrameBudget(t *testing.T) {
	img := picture(t, protocol.MimeJPEG, 64, 36, color.RGBA{50, 90, 10, 255})
	e := newEnv(t, func(c *Config) { c.FrameBudget = int64(3*len(img) + 1) })
	a := connect(t, e, frameCaps...)
	o, _ := runningWithFrames(t, e, a, framesReq())
	for i := range 8 {
		a.send(t, frameMsg(o.ID, float64(i)*500, protocol.MimeJPEG, 64, 36, img))
	}
	a.send(t, map[string]any{"type": "completed", "op": o.ID})
	wantOutcome(t, e, o, StatusCompleted, "")
	c, _ := e.st.Capture(context.Background(), o.ID)
	if c.Frames != 3 || c.FrameBytes != int64(3*len(img)) || c.FramesDropped.Budget != 5 {
		t.Fatalf("frames %d bytes %d dropped %+v; want 3 kept, 5 over the budget", c.Frames, c.FrameBytes, c.FramesDropped)
	}
}

// A disk that cannot keep up drops frames, never events: with the frame
// writer stuck, events go on being stored.
func TestSlowDiskDropsFramesNotEvents(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	e := newEnv(t, func(c *Config) { c.hooks.writingFrame = func() { <-release } })
	t.Cleanup(unblock) // before the controller's Close, even when the test fails
	a := connect(t, e, frameCaps...)
	o, _ := runningWithFrames(t, e, a, &protocol.FramesRequest{FPS: 30, MaxWidth: 640, Formats: []string{protocol.MimeJPEG}})
	img := picture(t, protocol.MimeJPEG, 64, 36, color.RGBA{50, 90, 10, 255})
	const n = 200
	for i := range n {
		tt := float64(i) * 1000 / 30
		a.send(t, frameMsg(o.ID, tt, protocol.MimeJPEG, 64, 36, img))
		a.send(t, map[string]any{"type": "event", "op": o.ID, "t": tt, "event": "TICK"})
	}
	// Every event is stored while the writer is still stuck on the first frame.
	eventually(t, "the events are stored while frames wait", func() bool {
		c, err := e.st.Capture(context.Background(), o.ID)
		return err == nil && c.Events == n
	})
	unblock()
	a.send(t, map[string]any{"type": "completed", "op": o.ID})
	wantOutcome(t, e, o, StatusCompleted, "")
	c, _ := e.st.Capture(context.Background(), o.ID)
	// The writer holds one frame and the queue frameQueue more; the rest dropped.
	if c.Frames != frameQueue+1 || c.FramesDropped.Slow != n-frameQueue-1 || c.FramesDropped.Rate != 0 {
		t.Fatalf("frames %d dropped %+v; want %d kept and %d dropped for the disk", c.Frames, c.FramesDropped, frameQueue+1, n-frameQueue-1)
	}
}

// Frames survive a restart: a new controller over the same store and
// directory finds them.
func TestFramesSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "c.db")
	img := picture(t, protocol.MimeJPEG, 64, 36, color.RGBA{50, 90, 10, 255})
	st, err := store.Open(context.Background(), db, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Store: st, ReplayDir: filepath.Join(dir, "replays"), HelloTimeout: wait, PingEvery: 50e6, PongTimeout: wait}
	ctrl, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{ctrl: ctrl, st: st, replayDir: cfg.ReplayDir, frameDir: filepath.Join(dir, "frames")}
	a := connect(t, e, frameCaps...)
	o, _ := runningWithFrames(t, e, a, framesReq())
	for i := range 3 {
		a.send(t, frameMsg(o.ID, float64(i)*500, protocol.MimeJPEG, 64, 36, img))
	}
	eventually(t, "frames indexed", func() bool { return len(storedFrames(t, e, o.ID)) == 3 })
	// The controller goes away mid-operation (the operation fails); what
	// was indexed stays.
	ctrl.Close()
	st.Close()
	st2, err := store.Open(context.Background(), db, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close()
	fs, err := st2.Frames(context.Background(), store.FrameQuery{Op: o.ID})
	if err != nil || len(fs) != 3 {
		t.Fatalf("after restart: %d frames (%v)", len(fs), err)
	}
	for _, f := range fs {
		if b, err := os.ReadFile(filepath.Join(dir, "frames", f.File)); err != nil || !bytes.Equal(b, img) {
			t.Fatalf("frame file %s: %v", f.File, err)
		}
		if strings.Contains(f.File, "..") || filepath.IsAbs(f.File) {
			t.Fatalf("frame file %q is not inside the frame directory", f.File)
		}
	}
}

// An operation left open by a controller that stopped without ending it
// (its process killed) is ended as failed by the next controller to start,
// with its frames kept; one whose controller still runs is left alone.
func TestAbandonedOperationsEnded(t *testing.T) {
	dir := t.TempDir()
	st, err := store.Open(context.Background(), filepath.Join(dir, "c.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	cfg := Config{Store: st, ReplayDir: filepath.Join(dir, "replays"), HelloTimeout: wait, PingEvery: 50e6, PongTimeout: wait}
	ctrlA, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	eA := &env{ctrl: ctrlA, st: st, frameDir: ctrlA.FrameDir()}
	a := connect(t, eA, frameCaps...)
	o, _ := runningWithFrames(t, eA, a, framesReq())
	a.send(t, frameMsg(o.ID, 0, protocol.MimeJPEG, 64, 36, picture(t, protocol.MimeJPEG, 64, 36, color.RGBA{1, 2, 3, 255})))
	eventually(t, "the frame is indexed", func() bool { return len(storedFrames(t, eA, o.ID)) == 1 })

	// A second controller on the same store while A runs: A's operation stays.
	ctrlB, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer ctrlB.Close()
	if n, err := ctrlB.RecoverAbandoned(context.Background()); err != nil || n != 0 {
		t.Fatalf("recovered %d (%v) while its controller runs", n, err)
	}
	// A dies without a word: its lock goes with its process.
	ctrlA.owner.fl.Close()
	ctrlC, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer ctrlC.Close()
	if n, err := ctrlC.RecoverAbandoned(context.Background()); err != nil || n != 1 {
		t.Fatalf("recovered %d (%v), want A's operation", n, err)
	}
	c, _ := st.Capture(context.Background(), o.ID)
	if c.Status != StatusFailed || c.Code != protocol.CappyAdapterDisconnected || c.EndedAt == nil || c.Frames != 1 {
		t.Fatalf("abandoned capture %+v", c)
	}
	ctrlA.Close()
}
