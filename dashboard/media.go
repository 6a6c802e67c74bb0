package dashboard

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/crosscode/crosscode-mcp/bridge/cappy/visual"
	"github.com/crosscode/crosscode-mcp/protocol"
	"github.com/crosscode/crosscode-mcp/store"
)

// frameFile finds frame seq of op and the path of its image, inside FrameDir.
func (d *Dashboard) frameFile(ctx context.Context, op string, seq int64) (*store.CaptureFrame, string, error) {
	fs, err := d.opts.Captures.Frames(ctx, store.FrameQuery{Op: op, AfterSeq: seq - 1, Limit: 1})
	if err != nil {
		return nil, "", err
	}
	if len(fs) == 0 || fs[0].Seq != seq {
		return nil, "", store.ErrNotFound
	}
	return &fs[0], d.framePath(fs[0].File), nil
}

// framePath is a stored frame's file, or "" for a name that would leave
// FrameDir.
func (d *Dashboard) framePath(file string) string {
	if !filepath.IsLocal(file) {
		return ""
	}
	return filepath.Join(d.opts.FrameDir, file)
}

// captureFrame serves GET /v1/captures/{op}/frames/{seq}: one frame image,
// as the JPEG or PNG the controller checked and stored.
func (d *Dashboard) captureFrame(w http.ResponseWriter, r *http.Request, _ string) {
	seq, err := strconv.ParseInt(r.PathValue("seq"), 10, 64)
	if err != nil || seq < 1 || d.opts.FrameDir == "" {
		writeError(w, http.StatusNotFound, protocol.CodeNotFound, "no such frame")
		return
	}
	f, path, err := d.frameFile(r.Context(), r.PathValue("op"), seq)
	if errors.Is(err, store.ErrNotFound) || (err == nil && path == "") {
		writeError(w, http.StatusNotFound, protocol.CodeNotFound, "no such frame")
		return
	}
	if err != nil {
		d.internal(w, "frame", err)
		return
	}
	if f.Mime != protocol.MimeJPEG && f.Mime != protocol.MimePNG {
		writeError(w, http.StatusNotFound, protocol.CodeNotFound, "no such frame")
		return
	}
	serveFileAs(w, r, path, f.Mime)
}

// serveFileAs serves a file with a fixed type, never sniffed, with ranges.
func serveFileAs(w http.ResponseWriter, r *http.Request, path, mime string) {
	file, err := os.Open(path)
	if err != nil {
		writeError(w, http.StatusNotFound, protocol.CodeNotFound, "the file is gone")
		return
	}
	defer file.Close()
	fi, err := file.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		writeError(w, http.StatusNotFound, protocol.CodeNotFound, "the file is gone")
		return
	}
	w.Header().Set("Content-Type", mime)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; sandbox")
	http.ServeContent(w, r, "", fi.ModTime(), file)
}

// videos makes each operation's MP4 once per frame count, one at a time
// per operation.
type videos struct {
	mu   sync.Mutex
	busy map[string]*sync.Mutex // op -> its maker's lock
}

func (v *videos) lock(op string) func() {
	v.mu.Lock()
	if v.busy == nil {
		v.busy = map[string]*sync.Mutex{}
	}
	m := v.busy[op]
	if m == nil {
		m = &sync.Mutex{}
		v.busy[op] = m
	}
	v.mu.Unlock()
	m.Lock()
	return m.Unlock
}

// videoWait bounds making one video.
const videoWait = 2 * time.Minute

// captureVideo serves GET /v1/captures/{op}/video.mp4: an MP4 of the
// operation's frames on its own clock (visual.MakeMP4Seq, ffmpeg), made on
// the first request and again when more frames arrived.
func (d *Dashboard) captureVideo(w http.ResponseWriter, r *http.Request, _ string) {
	op := r.PathValue("op")
	c, err := d.opts.Captures.Capture(r.Context(), op)
	if errors.Is(err, store.ErrNotFound) || (err == nil && (c.Frames == 0 || d.opts.VideoDir == "" || d.opts.FrameDir == "")) {
		writeError(w, http.StatusNotFound, protocol.CodeNotFound, fmt.Sprintf("no video of %q: it has no frames", op))
		return
	}
	if err != nil {
		d.internal(w, "capture", err)
		return
	}
	// The op id is the controller's own (checked like every protocol id),
	// but it names a file here: keep only what is safe in a name.
	if d.opts.MediaDir != "" && safeName(op) == op {
		// The capture tools made one already (bridge/cappy's Service.Video).
		if made := filepath.Join(d.opts.MediaDir, op+".mp4"); fileExists(made) {
			serveFileAs(w, r, made, "video/mp4")
			return
		}
	}
	out := filepath.Join(d.opts.VideoDir, safeName(op)+"-"+strconv.FormatInt(c.Frames, 10)+".mp4")
	unlock := d.videos.lock(op)
	defer unlock()
	if _, err := os.Stat(out); err != nil {
		ctx, cancel := context.WithTimeout(r.Context(), videoWait)
		defer cancel()
		_, err := visual.MakeMP4Seq(ctx, d.frameSeq(ctx, op), max(c.LastT, 0), out, nil)
		switch {
		case errors.Is(err, visual.ErrNoFFmpeg):
			writeError(w, http.StatusServiceUnavailable, protocol.CodeUnavailable, "videos need ffmpeg: install it (scripts/deps does)")
			return
		case errors.Is(err, visual.ErrNoFrames):
			writeError(w, http.StatusNotFound, protocol.CodeNotFound, "no frame of this operation could be read")
			return
		case err != nil:
			d.internal(w, "make video", err)
			return
		}
	}
	serveFileAs(w, r, out, "video/mp4")
}

// frameSeq yields the operation's frames in order, a page at a time.
func (d *Dashboard) frameSeq(ctx context.Context, op string) iter.Seq[visual.Frame] {
	return func(yield func(visual.Frame) bool) {
		var after int64
		for {
			fs, err := d.opts.Captures.Frames(ctx, store.FrameQuery{Op: op, AfterSeq: after, Limit: 500})
			if err != nil || len(fs) == 0 {
				if err != nil {
					d.log.Warn("video frames", "op", op, "err", err)
				}
				return
			}
			for _, f := range fs {
				path := d.framePath(f.File)
				if path == "" {
					continue
				}
				if !yield(visual.Frame{T: f.T, Path: path, Mime: f.Mime, Width: f.Width, Height: f.Height}) {
					return
				}
			}
			after = fs[len(fs)-1].Seq
		}
	}
}

// safeName keeps letters, digits, '-' and '_' of s.
func safeName(s string) string {
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s) && len(b) < 100; i++ {
		c := s[i]
		if c == '-' || c == '_' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') {
			b = append(b, c)
		}
	}
	return string(b)
}

func fileExists(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}
