package cappy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/crosscode/crosscode-mcp/protocol"
	"github.com/crosscode/crosscode-mcp/store"
)

// DefaultFrameBudget is Config.FrameBudget by default: the most frame
// bytes one operation keeps (256 MiB).
const DefaultFrameBudget = 256 << 20

// Frames are written to disk by a writer of their own, so a slow disk
// drops frames instead of slowing the events down: the reader hands a
// frame over without waiting, and a full queue drops it.
const (
	frameQueue      = 32 // frames waiting for the disk
	frameBatch      = 32 // index rows per commit
	frameBatchEvery = 100 * time.Millisecond
	frameDrain      = 10 * time.Second // the most an operation's end waits for its frames
)

// frameState is an operation's frames: what was asked, the rate bucket,
// and what was kept and dropped. Guarded by Operation.mu.
type frameState struct {
	req       *protocol.FramesRequest
	stepsOnly bool    // only each step's picture is kept (Request.Frames FPS 0)
	tokens    float64 // the rate bucket, in frames
	lastT     float64 // of the last frame taken
	taken     bool    // a frame was taken (lastT means something)
	bytes     int64   // kept or queued
	drops     store.FrameDrops
	queue     chan frameJob
	done      chan struct{} // closed when the writer has indexed the last frame
}

type frameJob struct {
	seq int64
	f   *protocol.Frame
	at  time.Time
}

// frameBurst is the rate bucket's size: a frame may come early by up to a
// second at twice the rate (the spec allows extra frames within twice the
// asked rate), and at least two in a row.
func frameBurst(fps float64) float64 { return max(2, 2*fps) }

// frame checks one frame against the operation's state and request, and
// hands it to the writer, or drops it (over the rate, over the budget, or
// the disk behind) and counts that. The checks and the seq are one
// critical section with the events', as for events.
func (o *Operation) frame(ctx context.Context, c *Controller, a *adapterConn, f *protocol.Frame) {
	now := time.Now()
	o.mu.Lock()
	fs := &o.frames
	violation := ""
	code := protocol.CappyInvalidMessage
	switch status := o.status; {
	case Final(status):
		o.mu.Unlock()
		c.over(ctx, a, o.ID)
		return
	case fs.req == nil:
		violation, code = "a frame, but no frames were asked for this operation", protocol.CappyOutOfState
	case status != StatusRunning && status != StatusStopping:
		violation, code = fmt.Sprintf("a frame while the operation is %s (frames come between started and the end)", status), protocol.CappyOutOfState
	case !slices.Contains(fs.req.Formats, f.Mime):
		violation = fmt.Sprintf("a %s frame; the formats asked for are %v", f.Mime, fs.req.Formats)
	case f.Width > fs.req.MaxWidth:
		violation = fmt.Sprintf("a frame %d px wide; at most %d were asked for", f.Width, fs.req.MaxWidth)
	case fs.taken && f.T < fs.lastT:
		violation = fmt.Sprintf("a frame whose t (%g) went back from %g", f.T, fs.lastT)
	}
	if violation != "" {
		o.mu.Unlock()
		c.violation(ctx, a, o.ID, code, violation)
		return
	}
	stepPicture := o.stepFrame(f) // one per step, whatever the rate
	if fs.stepsOnly && !stepPicture {
		// Asked of the adapter only for the steps' pictures: neither
		// kept nor counted as dropped.
		fs.lastT, fs.taken = f.T, true
		o.mu.Unlock()
		return
	}
	// The bucket fills at twice the asked rate on the presented clock.
	if fs.taken {
		fs.tokens = min(frameBurst(fs.req.FPS), fs.tokens+(f.T-fs.lastT)/1000*2*fs.req.FPS)
	}
	fs.lastT, fs.taken = f.T, true
	size := int64(len(f.Data))
	switch {
	case fs.tokens < 1 && !stepPicture:
		fs.drops.Rate++
	case fs.bytes+size > c.cfg.FrameBudget:
		fs.drops.Budget++
	default:
		select {
		case fs.queue <- frameJob{seq: o.seq + 1, f: f, at: now}:
			o.seq++
			if !stepPicture {
				fs.tokens--
			} else {
				o.play.pending.seq = o.seq
			}
			fs.bytes += size
		default:
			fs.drops.Slow++
		}
	}
	o.mu.Unlock()
}

// frameFile names a frame's image, relative to the frame directory.
func frameFile(op string, seq int64, mime string) string {
	ext := ".jpg"
	if mime == protocol.MimePNG {
		ext = ".png"
	}
	return filepath.Join(op, fmt.Sprintf("%08d", seq)+ext)
}

// frameWriter writes an operation's frames to disk and indexes them, in
// batches, until the queue is closed and drained.
func (c *Controller) frameWriter(o *Operation, queue <-chan frameJob, done chan<- struct{}) {
	defer close(done)
	ctx := context.Background()
	dir := filepath.Join(c.cfg.FrameDir, o.ID)
	var batch []store.CaptureFrame
	index := func() {
		if len(batch) == 0 {
			return
		}
		if err := c.st.AppendFrames(ctx, o.ID, batch); err != nil {
			c.log.Error("index frames", "op", o.ID, "err", err)
			o.dropSlow(int64(len(batch)))
		}
		batch = batch[:0]
	}
	tick := time.NewTicker(frameBatchEvery)
	defer tick.Stop()
	made := false
	for {
		select {
		case j, ok := <-queue:
			if !ok {
				index()
				return
			}
			if !made {
				if err := os.MkdirAll(dir, 0o700); err != nil {
					c.log.Error("frame directory", "op", o.ID, "err", err)
					o.dropSlow(1)
					continue
				}
				made = true
			}
			if h := c.cfg.hooks.writingFrame; h != nil {
				h()
			}
			name := frameFile(o.ID, j.seq, j.f.Mime)
			if err := writeFileAtomic(filepath.Join(c.cfg.FrameDir, name), j.f.Data); err != nil {
				c.log.Error("store frame", "op", o.ID, "seq", j.seq, "err", err)
				o.dropSlow(1)
				continue
			}
			batch = append(batch, store.CaptureFrame{Seq: j.seq, T: j.f.T, Mime: j.f.Mime, Width: j.f.Width, Height: j.f.Height,
				Bytes: int64(len(j.f.Data)), Reason: j.f.Reason, File: name, SHA256: sha256Hex(j.f.Data), ReceivedAt: j.at})
			if len(batch) >= frameBatch {
				index()
			}
		case <-tick.C:
			index()
		}
	}
}

func sha256Hex(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// dropSlow counts frames the disk could not take.
func (o *Operation) dropSlow(n int64) {
	o.mu.Lock()
	o.frames.drops.Slow += n
	o.mu.Unlock()
}

// writeFileAtomic writes data to path through a temporary file, so a
// crash never leaves a partial image under the final name.
func writeFileAtomic(path string, data []byte) error {
	tmp := path + ".tmp" + strconv.Itoa(os.Getpid())
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, path)
}

// startFrames sets an operation up to take the frames of req (with
// stepsOnly, only its steps' pictures); o.mu is held.
func (c *Controller) startFrames(o *Operation, req *protocol.FramesRequest, stepsOnly bool) {
	q, done := make(chan frameJob, frameQueue), make(chan struct{})
	o.frames = frameState{req: req, stepsOnly: stepsOnly, tokens: frameBurst(req.FPS), queue: q, done: done}
	go c.frameWriter(o, q, done)
}

// endFrames closes the frame queue once the operation is final (no frame
// is taken after that), waits for the writer, and returns the drops.
func (o *Operation) endFrames() *store.FrameDrops {
	o.mu.Lock()
	fs := o.frames
	q := o.frames.queue
	o.frames.queue = nil
	o.mu.Unlock()
	if q == nil {
		return nil
	}
	close(q)
	select {
	case <-fs.done:
	case <-time.After(frameDrain):
		// A disk that hangs must not hold the operation's end: the writer
		// indexes what it still writes, later.
	}
	o.mu.Lock()
	d := o.frames.drops
	o.mu.Unlock()
	return &d
}
