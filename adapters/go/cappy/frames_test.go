package cappy_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/jpeg"
	"image/png"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/crosscode/crosscode-mcp/adapters/go/cappy"
	"github.com/crosscode/crosscode-mcp/adapters/go/cappy/cappytest"
	"github.com/crosscode/crosscode-mcp/protocol"
)

// frameGame advertises frames and runs its script for every operation.
type frameGame struct {
	caps   []string
	script func(ctx context.Context, op *cappy.Op) error
}

func newFrameGame(script func(ctx context.Context, op *cappy.Op) error) *frameGame {
	return &frameGame{
		caps:   []string{protocol.CapScenarios, protocol.CapFreeformRecording, protocol.CapReplay, protocol.CapFrames},
		script: script,
	}
}

func (g *frameGame) Info() cappy.Info {
	return cappy.Info{Game: protocol.GameInfo{ID: "frame-game"}, Capabilities: g.caps}
}
func (g *frameGame) Scenarios() []protocol.Scenario { return []protocol.Scenario{{ID: "run"}} }
func (g *frameGame) RunScenario(ctx context.Context, op *cappy.Op, _ string, _ map[string]any, _ protocol.Presentation) error {
	return g.script(ctx, op)
}
func (g *frameGame) Record(ctx context.Context, op *cappy.Op) (*protocol.ReplayPayload, error) {
	if err := g.script(ctx, op); err != nil {
		return nil, err
	}
	return cappy.InlineReplay([]byte("{}"), "frame-game/v1"), nil
}
func (g *frameGame) Replay(ctx context.Context, op *cappy.Op, _ *protocol.ReplayPayload, _ protocol.Presentation) error {
	return g.script(ctx, op)
}

// halves is a w x h picture, red on the left and blue on the right.
func halves(w, h int) *image.RGBA {
	m := image.NewRGBA(image.Rect(0, 0, w, h))
	draw.Draw(m, image.Rect(0, 0, w/2, h), image.NewUniform(color.RGBA{220, 20, 20, 255}), image.Point{}, draw.Src)
	draw.Draw(m, image.Rect(w/2, 0, w, h), image.NewUniform(color.RGBA{20, 20, 220, 255}), image.Point{}, draw.Src)
	return m
}

// ticker is a script: ticks every step ms of presented time up to end,
// handing a frame whenever one is due, then reports its frame counts in
// the summary.
func ticker(step, end float64, img image.Image, fo *cappy.FrameOptions) func(ctx context.Context, op *cappy.Op) error {
	return func(ctx context.Context, op *cappy.Op) error {
		for t := 0.0; t <= end; t += step {
			if err := op.Emit(t, "TICK", nil, nil); err != nil {
				return err
			}
			if op.FrameDue(t) {
				if err := op.SendFrame(t, img, fo); err != nil && !errors.Is(err, cappy.ErrFrameDropped) {
					return err
				}
			}
		}
		st, err := op.FlushFrames(ctx)
		if err != nil {
			return err
		}
		return op.SetSummary(map[string]any{"frames": st})
	}
}

func framesReq(fps float64, maxWidth int, formats ...string) *protocol.FramesRequest {
	if len(formats) == 0 {
		formats = []string{protocol.MimeJPEG, protocol.MimePNG}
	}
	return &protocol.FramesRequest{FPS: fps, MaxWidth: maxWidth, Formats: formats}
}

// runWithFrames prepares, starts and collects one "run" scenario with req.
func runWithFrames(h *cappytest.Harness, op string, req *protocol.FramesRequest) *cappytest.Capture {
	h.T.Helper()
	p := prepare(op, "run", nil, nil)
	p.Frames = req
	h.Send(p)
	h.Expect("ready", op)
	h.Send(opMsg("start", op))
	h.Expect("started", op) // a frame before started fails here
	c := h.CollectCapture(op, req)
	if c.End.Completed == nil {
		h.T.Fatalf("%s ended with %s %+v", op, c.End.Type, c.End.Failed)
	}
	return c
}

// quiet checks that nothing more comes for the last operation: the next
// message answers a list_scenarios sent now.
func quiet(h *cappytest.Harness) {
	h.T.Helper()
	h.Send(&protocol.ListScenarios{Type: "list_scenarios"})
	h.Expect("scenarios", "")
}

func frameTimes(fs []protocol.Frame) []float64 {
	out := make([]float64, len(fs))
	for i, f := range fs {
		out[i] = f.T
	}
	return out
}

func decodeFrame(t *testing.T, f protocol.Frame) image.Image {
	t.Helper()
	var img image.Image
	var err error
	if f.Mime == protocol.MimePNG {
		img, err = png.Decode(bytes.NewReader(f.Data))
	} else {
		img, err = jpeg.Decode(bytes.NewReader(f.Data))
	}
	if err != nil {
		t.Fatalf("frame t=%v: %v", f.T, err)
	}
	return img
}

func TestFramesAtTheAskedRateOnThePresentedClock(t *testing.T) {
	// 20 ms ticks over 2 s of presented time at 10 fps: a frame at 0,
	// 100, ..., 2000, whatever the wall clock did.
	h := startRun(t, newFrameGame(ticker(20, 2000, halves(320, 180), &cappy.FrameOptions{Wait: true})))
	hello, _ := h.Handshake()
	if !hello.HasCapability(protocol.CapFrames) {
		t.Fatalf("hello capabilities %v lack %s", hello.Capabilities, protocol.CapFrames)
	}
	req := framesReq(10, 640)
	c := runWithFrames(h, "op_1", req)
	if len(c.Events) != 101 {
		t.Fatalf("%d events, want 101", len(c.Events))
	}
	got := frameTimes(c.Frames)
	if len(got) != 21 {
		t.Fatalf("frames at %v, want 21 (every 100 ms)", got)
	}
	for i, f := range c.Frames {
		if f.T != float64(i*100) || f.Mime != protocol.MimeJPEG || f.Width != 320 || f.Height != 180 || f.Reason != "" {
			t.Fatalf("frame %d = t %v %s %dx%d reason %q", i, f.T, f.Mime, f.Width, f.Height, f.Reason)
		}
	}
	if err := cappytest.CheckFrameRate(c.Frames, req.FPS); err != nil {
		t.Fatal(err)
	}
	if want := `{"frames":{"sent":21}}`; string(c.End.Completed.Summary) != want {
		t.Errorf("summary %s, want %s", c.End.Completed.Summary, want)
	}
	quiet(h) // none after completed

	// 0.5 fps over the same 2 s: slots start at the first call.
	c = runWithFrames(h, "op_2", framesReq(0.5, 640))
	if got := frameTimes(c.Frames); fmt.Sprint(got) != "[0 2000]" {
		t.Fatalf("frames at %v at 0.5 fps over 2 s, want [0 2000]", got)
	}
	quiet(h)
}

func TestNoFramesWhenNotAsked(t *testing.T) {
	var frames *protocol.FramesRequest
	var due bool
	var sendErr error
	h := startRun(t, newFrameGame(func(ctx context.Context, op *cappy.Op) error {
		frames, due = op.Frames(), op.FrameDue(0)
		sendErr = op.SendFrame(0, halves(64, 36), nil)
		return op.Emit(0, "TICK", nil, nil)
	}))
	h.Handshake()
	h.Send(prepare("op_1", "run", nil, nil), opMsg("start", "op_1"))
	h.Expect("ready", "op_1")
	h.Expect("started", "op_1")
	evs, end := h.Collect("op_1") // fails on a frame
	if end.Completed == nil || len(evs) != 1 {
		t.Fatalf("ended with %s after %d events", end.Type, len(evs))
	}
	if frames != nil || due || !errors.Is(sendErr, cappy.ErrNoFrames) {
		t.Fatalf("without frames: Frames %v, FrameDue %v, SendFrame %v", frames, due, sendErr)
	}
}

func TestFramesMaxWidthAndFormat(t *testing.T) {
	h := startRun(t, newFrameGame(ticker(100, 0, halves(320, 180), nil)))
	h.Handshake()
	for i, tc := range []struct {
		maxWidth int
		formats  []string
		mime     string
		w, h     int
	}{
		{160, []string{protocol.MimeJPEG, protocol.MimePNG}, protocol.MimeJPEG, 160, 90},
		{160, []string{protocol.MimePNG, protocol.MimeJPEG}, protocol.MimeJPEG, 160, 90}, // JPEG whenever offered
		{50, []string{protocol.MimePNG}, protocol.MimePNG, 50, 28},
		{1280, []string{protocol.MimePNG}, protocol.MimePNG, 320, 180}, // never scaled up
	} {
		req := framesReq(2, tc.maxWidth, tc.formats...)
		c := runWithFrames(h, fmt.Sprintf("op_%d", i), req)
		if len(c.Frames) != 1 {
			t.Fatalf("%+v: %d frames", tc, len(c.Frames))
		}
		f := c.Frames[0]
		if f.Mime != tc.mime || f.Width != tc.w || f.Height != tc.h {
			t.Fatalf("%+v: frame %s %dx%d", tc, f.Mime, f.Width, f.Height)
		}
		// Scaled, not cropped: red on the left, blue on the right.
		img := decodeFrame(t, f)
		l, r := img.At(tc.w/8, tc.h/2), img.At(tc.w*7/8, tc.h/2)
		if lr, _, lb, _ := l.RGBA(); lr < lb {
			t.Errorf("%+v: left pixel %v is not red", tc, l)
		}
		if rr, _, rb, _ := r.RGBA(); rr > rb {
			t.Errorf("%+v: right pixel %v is not blue", tc, r)
		}
	}
	quiet(h)
}

// gate is a renderer that blocks until released, to hold the worker.
type gate struct {
	entered chan float64
	release chan struct{}
}

func newGate() *gate { return &gate{entered: make(chan float64, 16), release: make(chan struct{})} }

func (g *gate) render(t float64) func() image.Image {
	return func() image.Image {
		g.entered <- t
		<-g.release
		return halves(64, 36)
	}
}

func TestFramesDroppedWhileTheWorkerIsBusy(t *testing.T) {
	gt := newGate()
	results := make(chan []error, 1)
	h := startRun(t, newFrameGame(func(ctx context.Context, op *cappy.Op) error {
		var errs []error
		for i := range 6 {
			t := float64(i * 100)
			errs = append(errs, op.SendFrameFunc(t, gt.render(t), nil))
			if i == 0 {
				<-gt.entered // the worker holds frame 0
			}
		}
		results <- errs
		close(gt.release)
		st, err := op.FlushFrames(ctx)
		if err != nil {
			return err
		}
		return op.SetSummary(map[string]any{"frames": st})
	}))
	h.Handshake()
	c := runWithFrames(h, "op_1", framesReq(10, 640))
	errs := <-results
	// Frame 0 in the worker, 1 and 2 in the queue (DefaultFrameQueue), the
	// rest dropped at once.
	for i, err := range errs {
		if want := i >= 1+cappy.DefaultFrameQueue; errors.Is(err, cappy.ErrFrameDropped) != want {
			t.Errorf("frame %d: %v, dropped want %v", i, err, want)
		}
	}
	if got := frameTimes(c.Frames); fmt.Sprint(got) != "[0 100 200]" {
		t.Fatalf("frames at %v, want [0 100 200]", got)
	}
	if want := `{"frames":{"sent":3,"busy":3}}`; string(c.End.Completed.Summary) != want {
		t.Errorf("summary %s, want %s", c.End.Completed.Summary, want)
	}
}

func TestFrameExtrasStayWithinTwiceTheRate(t *testing.T) {
	// At 2 fps over 5 s, the game asks for an extra frame every 50 ms.
	var dropped int
	h := startRun(t, newFrameGame(func(ctx context.Context, op *cappy.Op) error {
		img := halves(64, 36)
		for t := 0.0; t <= 5000; t += 50 {
			if op.FrameDue(t) {
				if err := op.SendFrame(t, img, &cappy.FrameOptions{Wait: true}); err != nil {
					return err
				}
			}
			err := op.SendFrame(t, img, &cappy.FrameOptions{Reason: "HIT", Wait: true})
			switch {
			case errors.Is(err, cappy.ErrFrameDropped):
				dropped++
			case err != nil:
				return err
			}
		}
		// A second frame without a reason in a slot is refused too.
		if err := op.SendFrame(5000, img, nil); !errors.Is(err, cappy.ErrFrameDropped) {
			return fmt.Errorf("a second unlabelled frame in a slot: %v", err)
		}
		st, err := op.FlushFrames(ctx)
		if err != nil {
			return err
		}
		return op.SetSummary(map[string]any{"frames": st})
	}))
	h.Handshake()
	req := framesReq(2, 640)
	c := runWithFrames(h, "op_1", req)
	if err := cappytest.CheckFrameRate(c.Frames, req.FPS); err != nil {
		t.Fatal(err)
	}
	due, extras := 0, 0
	for _, f := range c.Frames {
		if f.Reason == "" {
			due++
		} else if f.Reason == "HIT" {
			extras++
		}
	}
	// 11 due frames (0, 500, ..., 5000) and one extra per 500 ms.
	if due != 11 || extras < 9 || extras > 11 || len(c.Frames) > 2*2*5+2 {
		t.Fatalf("%d due and %d extra frames at %v", due, extras, frameTimes(c.Frames))
	}
	if want := fmt.Sprintf(`{"frames":{"sent":%d,"overRate":%d}}`, len(c.Frames), dropped+1); string(c.End.Completed.Summary) != want {
		t.Errorf("summary %s, want %s", c.End.Completed.Summary, want)
	}

	// A labelled frame in a free slot takes it: no extra needed.
	h2 := startRun(t, newFrameGame(func(ctx context.Context, op *cappy.Op) error {
		img := halves(64, 36)
		for _, t := range []float64{0, 600, 1100} {
			if err := op.SendFrame(t, img, &cappy.FrameOptions{Reason: "BEAT", Wait: true}); err != nil {
				return err
			}
		}
		return nil
	}))
	h2.Handshake()
	if c := runWithFrames(h2, "op_1", req); len(c.Frames) != 3 {
		t.Fatalf("labelled frames at %v, want 3", frameTimes(c.Frames))
	}
}

func TestCancelWhileAFrameIsEncoding(t *testing.T) {
	gt := newGate()
	returned := make(chan error, 1)
	first := true
	var mu sync.Mutex
	h := startRun(t, newFrameGame(func(ctx context.Context, op *cappy.Op) error {
		mu.Lock()
		f := first
		first = false
		mu.Unlock()
		if !f {
			return ticker(100, 300, halves(64, 36), &cappy.FrameOptions{Wait: true})(ctx, op)
		}
		op.SendFrameFunc(0, gt.render(0), nil)
		op.SendFrameFunc(100, gt.render(100), nil) // queued behind it
		<-ctx.Done()
		err := op.SendFrame(200, halves(64, 36), &cappy.FrameOptions{Wait: true})
		returned <- err
		return ctx.Err()
	}))
	h.Handshake()
	p := prepare("op_1", "run", nil, nil)
	p.Frames = framesReq(10, 640)
	h.Send(p, opMsg("start", "op_1"))
	h.Expect("ready", "op_1")
	h.Expect("started", "op_1")
	<-gt.entered // frame 0 is being rendered
	h.Send(opMsg("cancel", "op_1"))
	if err := <-returned; !errors.Is(err, cappy.ErrCancelled) {
		t.Fatalf("SendFrame after cancel = %v, want ErrCancelled", err)
	}
	close(gt.release) // the frame in progress finishes; it must not be sent
	// The next messages are the new operation's: nothing of op_1.
	c := runWithFrames(h, "op_2", framesReq(10, 640))
	if got := frameTimes(c.Frames); fmt.Sprint(got) != "[0 100 200 300]" {
		t.Fatalf("frames after a cancel at %v", got)
	}
	select {
	case t0 := <-gt.entered:
		t.Fatalf("the frame queued behind the cancelled one (t=%v) was rendered", t0)
	default:
	}
}

func TestFramesOfRecordingsAndReplays(t *testing.T) {
	h := startRun(t, newFrameGame(ticker(50, 1000, halves(160, 90), &cappy.FrameOptions{Wait: true})))
	h.Handshake()
	req := framesReq(4, 640, protocol.MimePNG)
	h.Send(&protocol.RecordStart{Type: "record_start", Op: "op_r", Frames: req})
	h.Expect("started", "op_r")
	rec := h.CollectCapture("op_r", req)
	if rec.End.Completed == nil || len(rec.Frames) != 5 {
		t.Fatalf("recording: %s, %d frames", rec.End.Type, len(rec.Frames))
	}
	h.Send(&protocol.PrepareReplay{Type: "prepare_replay", Op: "op_p", Replay: rec.End.Completed.Replay, Frames: req}, opMsg("start", "op_p"))
	h.Expect("ready", "op_p")
	h.Expect("started", "op_p")
	rep := h.CollectCapture("op_p", req)
	if rep.End.Completed == nil || len(rep.Frames) != 5 {
		t.Fatalf("replay: %s, %d frames", rep.End.Type, len(rep.Frames))
	}
	for i := range rep.Frames {
		if !bytes.Equal(rep.Frames[i].Data, rec.Frames[i].Data) {
			t.Fatalf("frame %d differs between recording and replay", i)
		}
	}
}

func TestFramesRequestIsChecked(t *testing.T) {
	g := newFrameGame(ticker(100, 100, halves(64, 36), nil))
	g.caps = []string{protocol.CapScenarios, protocol.CapFreeformRecording}
	h := startRun(t, g)
	h.Handshake()
	p := prepare("op_1", "run", nil, nil)
	p.Frames = framesReq(2, 640)
	h.Send(p)
	if m := h.Expect("failed", "op_1"); m.Failed.Code != protocol.CappyCapabilityMissing {
		t.Fatalf("frames without the capability: %+v", m.Failed)
	}
	h.Send(&protocol.RecordStart{Type: "record_start", Op: "op_r", Frames: framesReq(2, 640)})
	if m := h.Expect("failed", "op_r"); m.Failed.Code != protocol.CappyCapabilityMissing {
		t.Fatalf("recording frames without the capability: %+v", m.Failed)
	}

	h2 := startRun(t, newFrameGame(ticker(100, 100, halves(64, 36), nil)))
	h2.Handshake()
	for i, req := range []*protocol.FramesRequest{framesReq(60, 640), framesReq(2, 8), framesReq(2, 640, "image/gif"), {FPS: 2, MaxWidth: 640}} {
		op := fmt.Sprintf("op_%d", i)
		p := prepare(op, "run", nil, nil)
		p.Frames = req
		h2.Send(p)
		if m := h2.Expect("failed", op); m.Failed.Code != protocol.CappyInvalidMessage {
			t.Fatalf("request %+v: %+v", req, m.Failed)
		}
	}
}

// noise is a w x h picture of seeded random pixels: it compresses badly.
func noise(w, h int) *image.RGBA {
	m := image.NewRGBA(image.Rect(0, 0, w, h))
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i+8 <= len(m.Pix); i += 8 {
		binary.LittleEndian.PutUint64(m.Pix[i:], r.Uint64())
	}
	return m
}

func TestFramesOverOneMebibyte(t *testing.T) {
	// A JPEG over 1 MiB at the set quality is sent at a lower one; a PNG
	// over 1 MiB is dropped.
	// (900x640 of noise is about 1.1 MB at quality 100, 0.25 MB at 50.)
	big := noise(900, 640)
	h := cappytest.StartWith(t, newFrameGame(ticker(100, 0, big, &cappy.FrameOptions{Wait: true})), &cappy.Options{FrameQuality: 100})
	h.Handshake()
	c := runWithFrames(h, "op_1", framesReq(2, 900))
	if len(c.Frames) != 1 || c.Frames[0].Width != 900 || len(c.Frames[0].Data) > protocol.MaxFrameBytes {
		t.Fatalf("%d frames", len(c.Frames))
	}
	if q := jpegLuma0(t, c.Frames[0].Data); q <= 1 {
		t.Fatalf("the frame was sent at quality 100 (first quantizer %d)", q)
	}

	h2 := startRun(t, newFrameGame(ticker(100, 0, noise(600, 450), &cappy.FrameOptions{Wait: true})))
	h2.Handshake()
	c = runWithFrames(h2, "op_2", framesReq(2, 600, protocol.MimePNG))
	if len(c.Frames) != 0 || string(c.End.Completed.Summary) != `{"frames":{"sent":0,"tooLarge":1}}` {
		t.Fatalf("%d frames, summary %s", len(c.Frames), c.End.Completed.Summary)
	}
}

// jpegLuma0 is the first value of a JPEG's first quantization table: 1
// at quality 100, larger below.
func jpegLuma0(t *testing.T, b []byte) int {
	t.Helper()
	i := bytes.Index(b, []byte{0xFF, 0xDB})
	if i < 0 || i+5 >= len(b) {
		t.Fatal("no quantization table in the JPEG")
	}
	return int(b[i+5]) // marker, 2 bytes of length, precision/table id
}

func TestFramesKeepToTheirCPUShare(t *testing.T) {
	// At a share of 0.001, a frame that took 2 ms to draw rests the
	// worker for 2 s: the next frame handed without Wait is dropped, one
	// handed with Wait is not.
	var errs []error
	h := cappytest.StartWith(t, newFrameGame(func(ctx context.Context, op *cappy.Op) error {
		slow := func() image.Image {
			time.Sleep(2 * time.Millisecond) // the cost of drawing, not a synchronisation
			return halves(64, 36)
		}
		errs = append(errs, op.SendFrameFunc(0, slow, nil))
		if _, err := op.FlushFrames(ctx); err != nil {
			return err
		}
		errs = append(errs, op.SendFrame(100, halves(64, 36), nil))
		errs = append(errs, op.SendFrame(200, halves(64, 36), &cappy.FrameOptions{Wait: true}))
		st, err := op.FlushFrames(ctx)
		if err != nil {
			return err
		}
		return op.SetSummary(map[string]any{"frames": st})
	}), &cappy.Options{FrameCPU: 0.001})
	h.Handshake()
	c := runWithFrames(h, "op_1", framesReq(10, 640))
	if errs[0] != nil || !errors.Is(errs[1], cappy.ErrFrameDropped) || errs[2] != nil {
		t.Fatalf("hands: %v", errs)
	}
	if got := frameTimes(c.Frames); fmt.Sprint(got) != "[0 200]" {
		t.Fatalf("frames at %v, want [0 200]", got)
	}
	if want := `{"frames":{"sent":2,"busy":1}}`; string(c.End.Completed.Summary) != want {
		t.Errorf("summary %s, want %s", c.End.Completed.Summary, want)
	}
}
