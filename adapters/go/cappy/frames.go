package cappy

import (
	"context"
	"errors"
	"fmt"
	"image"
	"math"
	"sync"
	"time"

	"github.com/crosscode/crosscode-mcp/protocol"
)

// Frames: what the agent sees (crosscode-mcp spec, section 7).
//
// A game that can show what it renders lists protocol.CapFrames in
// Info.Capabilities. When the controller asks for frames with an
// operation, Op.Frames returns the request and the game hands pictures on
// the operation's presented clock, the clock of its events:
//
//	if op.FrameDue(t) {
//		op.SendFrame(t, img, nil) // or SendFrameFunc(t, render, nil)
//	}
//
// The adapter scales each picture down to the asked maxWidth, encodes it
// (JPEG when the controller offers it, else PNG) and sends it on a worker
// goroutine, off the game loop, through a bounded queue: a frame handed
// while the worker is busy is dropped and counted, never waited for,
// unless the game asks to wait (FrameOptions.Wait). The adapter sends
// frames only between started and the operation's outcome, with t never
// going back, and keeps to the spec's rate: at most one frame per 1/fps
// of presented time, plus extras with a reason within a second 1/fps
// allowance (one at a time); in any window of W ms there are at most
// 2*fps*W/1000 + 2 frames. Before completed (or failed) it sends what is
// still queued, waiting at most 5 s.

// FrameOptions are the options of one frame; nil means none.
type FrameOptions struct {
	// Reason labels a frame the game sends at a moment it chose, beside
	// the ones due at the asked rate: an event name, say ("BOSS_PHASE").
	// A frame with a reason takes the current 1/fps slot when it is still
	// free; otherwise it is an extra, allowed at most fps times per second
	// of presented time (one at a time) and refused (ErrFrameDropped)
	// beyond that. Default none: the frame is the one of its slot, refused
	// when the slot already has one.
	Reason string
	// Wait makes the call wait for room in the encoding queue instead of
	// dropping the frame when the worker is busy: for games that run
	// faster than real time (a simulation stepping as fast as the
	// connection takes its events) and want every due frame. It returns
	// early, with the operation's error, when the operation ends. Default:
	// drop.
	Wait bool
}

// FrameStats counts an operation's frames. Drops are never errors of the
// operation: the controller shows a capture with fewer pictures.
type FrameStats struct {
	// Sent frames were written to the controller.
	Sent int `json:"sent"`
	// Busy frames were dropped because the encoding worker was busy: its
	// queue was full, or it was resting to keep to Options.FrameCPU.
	Busy int `json:"busy,omitempty"`
	// OverRate frames were refused as over the asked rate (a second frame
	// in one 1/fps slot, or an extra beyond the allowance).
	OverRate int `json:"overRate,omitempty"`
	// TooLarge frames were over protocol.MaxFrameBytes even at the lowest
	// JPEG quality.
	TooLarge int `json:"tooLarge,omitempty"`
	// Failed frames had no picture: the renderer returned nil or an empty
	// image, or panicked.
	Failed int `json:"failed,omitempty"`
	// Unsent frames were queued but not sent: the operation was cancelled,
	// the connection was lost, or the wait before its outcome ran out.
	Unsent int `json:"unsent,omitempty"`
}

// Dropped is the number of frames handed and not sent.
func (s FrameStats) Dropped() int { return s.Busy + s.OverRate + s.TooLarge + s.Failed + s.Unsent }

// Errors of SendFrame and SendFrameFunc (wrapped).
var (
	// ErrFrameDropped: the frame was dropped (the worker was busy) or
	// refused (over the asked rate), and counted in FrameStats. A game
	// may ignore it.
	ErrFrameDropped = errors.New("cappy: frame dropped")
	// ErrNoFrames: the controller asked for no frames with this operation.
	ErrNoFrames = errors.New("cappy: no frames were asked for this operation")
)

// Defaults of Options' frame settings.
const (
	DefaultFrameQueue   = 2
	DefaultFrameQuality = 80
	DefaultFrameCPU     = 0.10
)

// minFrameQuality is the lowest JPEG quality tried for a frame over
// protocol.MaxFrameBytes.
const minFrameQuality = 20

// frameDrainWait bounds how long the outcome of an operation waits for its
// queued frames.
const frameDrainWait = 5 * time.Second

// frameSettings are Options' frame settings, with defaults applied.
type frameSettings struct {
	queue   int
	quality int
	cpu     float64
}

func (o *Options) frameSettings() frameSettings {
	s := frameSettings{queue: o.FrameQueue, quality: o.FrameQuality, cpu: o.FrameCPU}
	if s.queue <= 0 {
		s.queue = DefaultFrameQueue
	}
	if s.quality <= 0 || s.quality > 100 {
		s.quality = DefaultFrameQuality
	}
	if !(s.cpu > 0) || s.cpu > 1 {
		s.cpu = DefaultFrameCPU
	}
	return s
}

// frameJob is one picture waiting for the worker, or a flush marker.
type frameJob struct {
	t      float64
	reason string
	img    image.Image
	render func() image.Image
	flush  chan struct{} // a marker: closed when the worker reaches it
}

// framer paces, queues and sends one operation's frames.
type framer struct {
	op       *Op
	req      protocol.FramesRequest
	mime     string
	maxWidth int
	fps      float64
	set      frameSettings

	// sub serializes the handing of frames, so that frames enter the
	// queue in the order their t was checked. A waiting hand holds it
	// while it waits; a dropping one only tries it.
	sub sync.Mutex

	mu        sync.Mutex // guards what follows; never held while blocking
	closed    bool       // the operation's Run* returned: no more frames
	hasOrigin bool
	origin    float64 // t of the first FrameDue or frame: slot 0 starts there
	dueSlot   int64   // the last slot FrameDue answered true for
	usedSlot  int64   // the last slot a frame took
	lastT     float64
	tokens    float64 // extras allowance, at most 1
	tokensT   float64
	restUntil time.Time
	stats     FrameStats

	queue  chan *frameJob
	quit   chan struct{} // closed when Run* returned: drain, then exit
	exited chan struct{}

	enc frameEncoder // worker-only
}

// newFramer checks a request and returns its framer (not yet running).
func newFramer(op *Op, req *protocol.FramesRequest, set frameSettings) (*framer, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	f := &framer{
		op: op, req: *req, maxWidth: req.MaxWidth, fps: req.FPS, set: set,
		mime: chooseMime(req.Formats), dueSlot: -1, usedSlot: -1, tokens: 1,
		queue: make(chan *frameJob, set.queue), quit: make(chan struct{}), exited: make(chan struct{}),
	}
	f.req.Formats = append([]string(nil), req.Formats...)
	f.enc.quality = set.quality
	return f, nil
}

// chooseMime picks JPEG when offered (small, and what agents get), else PNG.
func chooseMime(formats []string) string {
	for _, m := range formats {
		if m == protocol.MimeJPEG {
			return m
		}
	}
	return protocol.MimePNG
}

// slot is the 1/fps interval of presented time t falls in; f.mu is held.
func (f *framer) slot(t float64) int64 {
	if !f.hasOrigin {
		f.hasOrigin, f.origin = true, t
	}
	return int64(math.Floor((t-f.origin)*f.fps/1000 + 1e-9))
}

// Frames returns the frames the controller asked for with this operation
// (fps, maxWidth, formats), or nil when it asked for none. The result is
// a copy.
func (o *Op) Frames() *protocol.FramesRequest {
	if o.fr == nil {
		return nil
	}
	r := o.fr.req
	r.Formats = append([]string(nil), r.Formats...)
	return &r
}

// FrameDue reports whether a frame is due at presented time t (ms, the
// clock of the operation's events): true at the first call, then once per
// 1/fps of presented time (the first call at or after each multiple of
// 1/fps from the first call's t; slots the game skipped are not made up).
// It is false when no frames were asked, after the operation ended, and
// for a t before the first call's. Cheap: call it every tick.
func (o *Op) FrameDue(t float64) bool {
	f := o.fr
	if f == nil || !(t >= 0) || math.IsInf(t, 1) {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return false
	}
	k := f.slot(t)
	if k <= f.dueSlot {
		return false
	}
	f.dueSlot = k
	return true
}

// SendFrame hands one picture taken at presented time t (ms, never below
// the previous frame's t). The adapter reads img later, on its worker:
// do not change it afterwards (hand a new image, or use SendFrameFunc).
//
// It returns nil when the frame was queued; an error wrapping
// ErrFrameDropped when it was dropped or refused (counted in FrameStats;
// nothing to do); ErrNoFrames when the controller asked for none; the
// operation's error (ErrCancelled, ErrDisconnected, ErrOpDone) once it is
// over; and an error for an invalid t or reason. It never blocks, unless
// fo.Wait.
func (o *Op) SendFrame(t float64, img image.Image, fo *FrameOptions) error {
	if img == nil {
		return errors.New("cappy: SendFrame with a nil image")
	}
	return o.handFrame(&frameJob{t: t, img: img}, fo)
}

// SendFrameFunc is SendFrame with a renderer: render is called on the
// adapter's worker, off the game loop, and only for a frame that is
// queued, so a game can snapshot its state cheaply on the loop and draw
// it there. render must not touch state the game loop changes. The
// renderers of one operation are called one at a time, in order, and the
// image one returns is done with before the next is called: a game may
// draw every frame into the same image. A nil result (or a panic) counts
// as a failed frame.
func (o *Op) SendFrameFunc(t float64, render func() image.Image, fo *FrameOptions) error {
	if render == nil {
		return errors.New("cappy: SendFrameFunc with a nil renderer")
	}
	return o.handFrame(&frameJob{t: t, render: render}, fo)
}

func (o *Op) handFrame(j *frameJob, fo *FrameOptions) error {
	f := o.fr
	if f == nil {
		return ErrNoFrames
	}
	var opt FrameOptions
	if fo != nil {
		opt = *fo
	}
	if !(j.t >= 0) || math.IsInf(j.t, 1) {
		return fmt.Errorf("cappy: frame t must be a finite, non-negative number of milliseconds, got %v", j.t)
	}
	if opt.Reason != "" {
		if err := protocol.CheckEventFields(0, opt.Reason, nil); err != nil {
			return fmt.Errorf("cappy: frame reason %.64q: %w", opt.Reason, err)
		}
	}
	j.reason = opt.Reason
	if o.ctx.Err() != nil {
		return o.closedErr()
	}
	if opt.Wait {
		f.sub.Lock()
		defer f.sub.Unlock()
	} else if !f.sub.TryLock() {
		// A waiting hand holds the queue: it is full.
		return f.drop(&f.stats.Busy, "the encoding worker is busy")
	} else {
		defer f.sub.Unlock()
	}

	f.mu.Lock()
	if err := f.admit(j, opt); err != nil {
		f.mu.Unlock()
		return err
	}
	if !opt.Wait {
		defer f.mu.Unlock()
		select {
		case f.queue <- j:
			f.commit(j)
			return nil
		default:
			f.stats.Busy++
			return fmt.Errorf("%w: the encoding worker is busy", ErrFrameDropped)
		}
	}
	f.commit(j)
	f.mu.Unlock()
	select {
	case f.queue <- j:
		return nil
	case <-o.ctx.Done():
		return o.closedErr()
	case <-f.quit:
		return ErrOpDone
	}
}

// admit checks a frame against the operation's state, the clock and the
// rate; f.mu is held. It records which allowance the frame takes in j.
func (f *framer) admit(j *frameJob, opt FrameOptions) error {
	if f.closed {
		return ErrOpDone
	}
	if j.t < f.lastT {
		return fmt.Errorf("cappy: frame t %v goes back from %v", j.t, f.lastT)
	}
	k := f.slot(j.t)
	if k <= f.usedSlot {
		if opt.Reason == "" {
			f.stats.OverRate++
			return fmt.Errorf("%w: over the asked %g fps (this 1/fps slot has its frame)", ErrFrameDropped, f.fps)
		}
		f.tokens = min(1, f.tokens+(j.t-f.tokensT)*f.fps/1000)
		f.tokensT = j.t
		if f.tokens < 1-1e-9 {
			f.stats.OverRate++
			return fmt.Errorf("%w: extra frames over the asked %g fps", ErrFrameDropped, f.fps)
		}
	}
	if !opt.Wait && time.Now().Before(f.restUntil) {
		f.stats.Busy++
		return fmt.Errorf("%w: the encoding worker is busy", ErrFrameDropped)
	}
	return nil
}

// commit takes the allowance admit found for j; f.mu is held.
func (f *framer) commit(j *frameJob) {
	f.lastT = j.t
	if k := f.slot(j.t); k > f.usedSlot {
		f.usedSlot = k
	} else {
		f.tokens--
	}
}

func (f *framer) drop(counter *int, why string) error {
	f.mu.Lock()
	*counter++
	f.mu.Unlock()
	return fmt.Errorf("%w: %s", ErrFrameDropped, why)
}

// FrameStats returns the operation's frame counts so far (zero when no
// frames were asked). Call FlushFrames first for final counts.
func (o *Op) FrameStats() FrameStats {
	if o.fr == nil {
		return FrameStats{}
	}
	o.fr.mu.Lock()
	defer o.fr.mu.Unlock()
	return o.fr.stats
}

// FlushFrames waits until the frames handed so far are sent (or dropped)
// and returns the counts, for a summary: the adapter sends queued frames
// before completed anyway. It returns early with ctx's error, or the
// operation's once it is over.
func (o *Op) FlushFrames(ctx context.Context) (FrameStats, error) {
	f := o.fr
	if f == nil {
		return FrameStats{}, nil
	}
	j := &frameJob{flush: make(chan struct{})}
	f.sub.Lock()
	f.mu.Lock()
	closed := f.closed
	f.mu.Unlock()
	if closed {
		f.sub.Unlock()
		return o.FrameStats(), nil
	}
	select {
	case f.queue <- j:
	case <-ctx.Done():
		f.sub.Unlock()
		return o.FrameStats(), ctx.Err()
	case <-o.ctx.Done():
		f.sub.Unlock()
		return o.FrameStats(), o.closedErr()
	}
	f.sub.Unlock()
	select {
	case <-j.flush:
		return o.FrameStats(), nil
	case <-ctx.Done():
		return o.FrameStats(), ctx.Err()
	case <-f.exited:
		return o.FrameStats(), o.closedErr()
	}
}

// run is the worker: it renders, scales, encodes and sends queued frames
// until the operation's Run* returns (then it sends what is queued) or
// the operation is cancelled (then it drops it).
func (f *framer) run() {
	defer close(f.exited)
	for {
		select {
		case j := <-f.queue:
			f.process(j)
		case <-f.quit:
			for {
				select {
				case j := <-f.queue:
					f.process(j)
				default:
					return
				}
			}
		case <-f.op.ctx.Done():
			for {
				select {
				case j := <-f.queue:
					f.unsent(j)
				default:
					return
				}
			}
		}
	}
}

// finish ends the worker after Run* returned: it sends the queued frames,
// waiting at most d, unless the operation was cancelled.
func (f *framer) finish(d time.Duration) {
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
	close(f.quit)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-f.exited:
	case <-t.C:
		f.op.log.Warn("cappy: frames still queued when the operation ended were not sent", "op", f.op.id, "waited", d)
	}
}

func (f *framer) unsent(j *frameJob) {
	if j.flush != nil {
		close(j.flush)
		return
	}
	f.mu.Lock()
	f.stats.Unsent++
	f.mu.Unlock()
}

// process turns one job into a frame message and writes it.
func (f *framer) process(j *frameJob) {
	if j.flush != nil {
		close(j.flush)
		return
	}
	if f.op.ctx.Err() != nil {
		f.unsent(j)
		return
	}
	start := time.Now()
	img := j.img
	if j.render != nil {
		img = f.render(j.render)
	}
	var counter *int
	sent := false
	if img == nil || img.Bounds().Empty() {
		counter = &f.stats.Failed
	} else if data, w, h, ok := f.enc.encode(img, f.mime, f.maxWidth); !ok {
		counter = &f.stats.TooLarge
	} else {
		msg := f.enc.message(f.op.id, j.t, f.mime, w, h, data, j.reason)
		if sent = f.op.writeFrame(msg); !sent {
			counter = &f.stats.Unsent
		}
	}
	end := time.Now()
	f.mu.Lock()
	if sent {
		f.stats.Sent++
	} else {
		*counter++
	}
	f.restUntil = end.Add(time.Duration(float64(end.Sub(start)) * (1/f.set.cpu - 1)))
	f.mu.Unlock()
}

func (f *framer) render(r func() image.Image) (img image.Image) {
	defer func() {
		if p := recover(); p != nil {
			f.op.log.Error("cappy: the frame renderer panicked", "op", f.op.id, "panic", p)
			img = nil
		}
	}()
	return r()
}

// writeFrame writes one frame message through the session's write path,
// unless the operation is over; it reports whether it was written.
func (o *Op) writeFrame(b []byte) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.finished || o.ctx.Err() != nil {
		return false
	}
	return o.write(b) == nil
}
