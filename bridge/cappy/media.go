package cappy

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"image/jpeg"
	"iter"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/crosscode/crosscode-mcp/bridge/cappy/visual"
	"github.com/crosscode/crosscode-mcp/internal/sanitize"
	"github.com/crosscode/crosscode-mcp/protocol"
	"github.com/crosscode/crosscode-mcp/store"
)

// What the agent and the human see of a capture's frames: pictures at
// chosen moments, a contact sheet, a video with the events as subtitles,
// and the visual comparison of a replay with its recording.

// Picture is an image for the agent: a stored frame (downscaled), a
// contact sheet or a side-by-side comparison, with where it comes from.
type Picture struct {
	Kind   string  `json:"kind" jsonschema:"enum=keyframe,enum=contact_sheet,enum=divergence"`
	Why    string  `json:"why,omitempty" jsonschema_description:"What it was chosen for: an event, a t, or its place among evenly spaced frames."`
	T      float64 `json:"t" jsonschema_description:"The frame's t (ms); for a contact sheet, its first frame's."`
	Seq    int64   `json:"seq,omitempty"`
	Event  string  `json:"event,omitempty" jsonschema_description:"The last event at or before the frame (game text)."`
	EventT float64 `json:"eventT,omitempty"`
	File   string  `json:"file" jsonschema_description:"The stored frame (or generated image) on disk, full size."`
	Width  int     `json:"width"`
	Height int     `json:"height"`
	Bytes  int     `json:"bytes" jsonschema_description:"Of the JPEG sent."`
	JPEG   []byte  `json:"-"`
}

// AgentWidth is the widest picture an agent gets.
const AgentWidth = 640

const agentQuality = 80

// FrameDir is where frames' images are stored (a directory per operation).
func (c *Controller) FrameDir() string { return c.cfg.FrameDir }

func (s *Service) framePath(f *store.CaptureFrame) string {
	return filepath.Join(s.Controller.FrameDir(), f.File)
}

// picture reads a stored frame for the agent, captioned with the last
// event at or before it (what had happened when it was drawn).
func (s *Service) picture(ctx context.Context, op string, f *store.CaptureFrame, why string) (*Picture, error) {
	path := s.framePath(f)
	jpg, w, h, err := visual.AgentJPEG(path, AgentWidth, agentQuality)
	if err != nil {
		return nil, fmt.Errorf("frame %d of %s: %w", f.Seq, op, err)
	}
	p := &Picture{Kind: "keyframe", Why: why, T: f.T, Seq: f.Seq, File: path, Width: w, Height: h, Bytes: len(jpg), JPEG: jpg}
	if e, err := s.Store.EventAtOrBefore(ctx, op, f.T); err == nil {
		p.Event, p.EventT = sanitize.Line(e.Event, 120), e.T
	}
	return p, nil
}

// KeyframeQuery chooses frames of a capture.
type KeyframeQuery struct {
	Events []string  // the first frame at or after each event of these names
	Ts     []float64 // the frame nearest each t
	Count  int       // Count evenly spaced frames, first and last included
	Max    int       // at most this many in all (default MaxKeyframes)
}

// MaxKeyframes is the most pictures one query returns.
const MaxKeyframes = 8

// ErrNoFrames is a capture without frames.
var ErrNoFrames = errors.New("the capture has no frames")

// Keyframes returns the chosen frames as pictures, each frame once, in t
// order, at most q.Max; and the choices it could not serve or left out.
func (s *Service) Keyframes(ctx context.Context, op string, q KeyframeQuery) ([]*Picture, []string, error) {
	c, err := s.Store.Capture(ctx, op)
	if err != nil {
		return nil, nil, err
	}
	if c.Frames == 0 {
		return nil, nil, ErrNoFrames
	}
	limit := q.Max
	if limit <= 0 || limit > MaxKeyframes {
		limit = MaxKeyframes
	}
	type pick struct {
		t     float64
		why   string
		event string // the event it was chosen for: its picture is the first frame at or after it
	}
	var picks []pick
	var notes []string
	if len(q.Events) > 0 {
		evs, err := s.Store.Events(ctx, store.EventQuery{Op: op, Names: q.Events, Limit: limit + 1})
		if err != nil {
			return nil, nil, err
		}
		if len(evs) == 0 {
			notes = append(notes, fmt.Sprintf("no event named %v in this capture", sanitizeAll(q.Events)))
		}
		if len(evs) > limit {
			evs = evs[:limit]
			notes = append(notes, fmt.Sprintf("only the first %d matching events are shown", limit))
		}
		for _, e := range evs {
			name := sanitize.Line(e.Event, 120)
			picks = append(picks, pick{e.T, "event " + name + " at t=" + ms(e.T), name})
		}
	}
	for _, t := range q.Ts {
		picks = append(picks, pick{t, "t=" + ms(t), ""})
	}
	if q.Count > 0 {
		first, last, err := s.frameSpan(ctx, op)
		if err != nil {
			return nil, nil, err
		}
		for i, t := range spaced(first, last, min(q.Count, limit)) {
			picks = append(picks, pick{t, fmt.Sprintf("evenly spaced, %d of %d", i+1, min(q.Count, limit)), ""})
		}
	}
	seen := map[int64]bool{}
	var out []*Picture
	for _, p := range picks {
		var f *store.CaptureFrame
		if p.event != "" {
			f, err = s.Store.FrameAtOrAfter(ctx, op, p.t)
		} else {
			f, err = s.Store.NearestFrame(ctx, op, p.t)
		}
		if err != nil {
			return nil, nil, err
		}
		if seen[f.Seq] {
			continue
		}
		seen[f.Seq] = true
		if len(out) == limit {
			notes = append(notes, fmt.Sprintf("left out %s: at most %d pictures", p.why, limit))
			continue
		}
		pic, err := s.picture(ctx, op, f, p.why)
		if err != nil {
			notes = append(notes, fmt.Sprintf("left out %s: %v", p.why, err))
			continue
		}
		if p.event != "" {
			pic.Event, pic.EventT = p.event, p.t // the event it shows, not another at the same t
		}
		out = append(out, pic)
	}
	slices.SortStableFunc(out, func(a, b *Picture) int { return cmpFloat(a.T, b.T) })
	return out, notes, nil
}

func sanitizeAll(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = sanitize.Line(n, 80)
	}
	return out
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// ms formats a t in milliseconds for a label.
func ms(t float64) string { return FormatMs(t) }

// FormatMs formats a time in milliseconds for a person, to a tenth of a
// millisecond and without float noise: 521.6300000000002 is "521.6ms",
// 500 is "500ms".
func FormatMs(t float64) string {
	r := math.Round(t*10) / 10
	if r == 0 {
		r = 0 // not "-0ms"
	}
	return strconv.FormatFloat(r, 'f', -1, 64) + "ms"
}

// seconds formats a t for a contact sheet label.
// FormatSeconds formats a duration in ms as seconds for people: "4.95 s".
func FormatSeconds(ms float64) string {
	return strconv.FormatFloat(ms/1000, 'f', 2, 64) + " s"
}

func seconds(t float64) string { return strconv.FormatFloat(t/1000, 'f', 1, 64) + " s" }

// spaced returns n values evenly from first to last, both included.
func spaced(first, last float64, n int) []float64 {
	if n <= 1 {
		return []float64{first}
	}
	out := make([]float64, n)
	for i := range out {
		out[i] = first + (last-first)*float64(i)/float64(n-1)
	}
	return out
}

// frameSpan is the t of a capture's first and last frames.
func (s *Service) frameSpan(ctx context.Context, op string) (float64, float64, error) {
	first, err := s.Store.NearestFrame(ctx, op, 0)
	if err != nil {
		return 0, 0, err
	}
	last, err := s.Store.NearestFrame(ctx, op, math.MaxFloat64)
	if err != nil {
		return 0, 0, err
	}
	return first.T, last.T, nil
}

// SheetCells is how many thumbnails a contact sheet has at most.
const SheetCells = 24

// ContactSheet makes one picture of a whole capture: up to SheetCells
// frames evenly spaced over it, each labelled with its t and the last
// event at or before it. It is kept beside the capture (Picture.File).
func (s *Service) ContactSheet(ctx context.Context, op string) (*Picture, error) {
	c, err := s.Store.Capture(ctx, op)
	if err != nil {
		return nil, err
	}
	if c.Frames == 0 {
		return nil, ErrNoFrames
	}
	path := filepath.Join(s.mediaDir(), op+"-sheet.jpg")
	why := fmt.Sprintf("%d frames of %d, evenly spaced", min(c.Frames, SheetCells), c.Frames)
	if Final(c.Status) {
		// A finished capture never changes: its sheet is made once.
		if jpg, err := os.ReadFile(path); err == nil {
			if cfg, err := jpeg.DecodeConfig(bytes.NewReader(jpg)); err == nil {
				return &Picture{Kind: "contact_sheet", Why: why, File: path, Width: cfg.Width, Height: cfg.Height, Bytes: len(jpg), JPEG: jpg}, nil
			}
		}
	}
	items, first, err := s.sheetItems(ctx, op, int(min(c.Frames, SheetCells)))
	if err != nil {
		return nil, err
	}
	jpg, w, h, err := visual.ContactSheet(items, &visual.SheetOptions{Width: AgentWidth, MaxCells: SheetCells})
	if err != nil {
		return nil, fmt.Errorf("contact sheet of %s: %w", op, err)
	}
	if err := writeFileAtomic(path, jpg); err != nil {
		return nil, fmt.Errorf("contact sheet of %s: %w", op, err)
	}
	return &Picture{Kind: "contact_sheet", Why: fmt.Sprintf("%d frames of %d, evenly spaced", len(items), c.Frames), T: first,
		File: path, Width: w, Height: h, Bytes: len(jpg), JPEG: jpg}, nil
}

// sheetItems are a contact sheet's cells: up to n frames evenly spaced
// over the capture, each once, labelled with its t and the last event at
// or before it; and the first frame's t.
func (s *Service) sheetItems(ctx context.Context, op string, n int) ([]visual.SheetItem, float64, error) {
	first, last, err := s.frameSpan(ctx, op)
	if err != nil {
		return nil, 0, err
	}
	var items []visual.SheetItem
	seen := map[int64]bool{}
	for _, t := range spaced(first, last, n) {
		f, err := s.Store.NearestFrame(ctx, op, t)
		if err != nil {
			return nil, 0, err
		}
		if seen[f.Seq] {
			continue
		}
		seen[f.Seq] = true
		label := []string{seconds(f.T)}
		if e, err := s.Store.EventAtOrBefore(ctx, op, f.T); err == nil {
			label = append(label, e.Event) // sanitised by the sheet
		}
		items = append(items, visual.SheetItem{Path: s.framePath(f), Label: label})
	}
	return items, first, nil
}

// mediaDir holds what is made from frames (sheets, videos, comparisons).
func (s *Service) mediaDir() string {
	dir := filepath.Join(filepath.Dir(s.Controller.FrameDir()), "media")
	os.MkdirAll(dir, 0o700)
	return dir
}

// VideoInfo is a capture's video and its subtitles.
type VideoInfo struct {
	MP4        string  `json:"mp4"`
	VTT        string  `json:"vtt" jsonschema_description:"WebVTT subtitles: the events at their t."`
	Frames     int     `json:"frames"`
	DurationMs float64 `json:"durationMs"`
	Width      int     `json:"width"`
	Height     int     `json:"height"`
}

// Video makes (once) an MP4 of a finished capture's frames, each held
// until the next one's t, with a WebVTT file of its events beside it. It
// needs ffmpeg: without it the error says how to get it
// (visual.ErrNoFFmpeg).
func (s *Service) Video(ctx context.Context, op string) (*VideoInfo, error) {
	c, err := s.Store.Capture(ctx, op)
	if err != nil {
		return nil, err
	}
	if !Final(c.Status) {
		return nil, errorf(protocol.CappyOutOfState, "operation %s is %s: its video is made once it ends", op, c.Status)
	}
	if c.Frames == 0 {
		return nil, ErrNoFrames
	}
	ffmpeg, err := visual.FindFFmpeg()
	if err != nil {
		return nil, err
	}
	base := filepath.Join(s.mediaDir(), op)
	info := &VideoInfo{MP4: base + ".mp4", VTT: base + ".vtt"}
	meta := base + ".video.json"
	if b, err := os.ReadFile(meta); err == nil && json.Unmarshal(b, info) == nil {
		if _, err := os.Stat(info.MP4); err == nil {
			return info, nil // made before: a finished capture does not change
		}
	}
	// The last frame is held for one frame's time, or to the last event.
	_, lastFrame, err := s.frameSpan(ctx, op)
	if err != nil {
		return nil, err
	}
	hold := 1000 / DefaultFPS
	var req protocol.FramesRequest
	if json.Unmarshal(c.FramesRequest, &req) == nil && req.FPS > 0 {
		hold = 1000 / req.FPS
	}
	endT := max(c.LastT, lastFrame+hold)
	v, err := visual.MakeMP4Seq(ctx, s.frameSeq(ctx, op), endT, info.MP4, &visual.VideoOptions{FFmpeg: ffmpeg})
	if err != nil {
		return nil, fmt.Errorf("video of %s: %w", op, err)
	}
	info.Frames, info.DurationMs, info.Width, info.Height = v.Frames, v.DurationMs, v.Width, v.Height
	if err := s.writeVTT(ctx, op, info.VTT); err != nil {
		return nil, err
	}
	b, _ := json.Marshal(info)
	if err := writeFileAtomic(meta, b); err != nil {
		return nil, err
	}
	return info, nil
}

// frameSeq streams a capture's frames in order, a page at a time.
func (s *Service) frameSeq(ctx context.Context, op string) iter.Seq[visual.Frame] {
	return func(yield func(visual.Frame) bool) {
		var after int64
		for {
			page, err := s.Store.Frames(ctx, store.FrameQuery{Op: op, AfterSeq: after, Limit: 500})
			if err != nil || len(page) == 0 {
				return
			}
			for i := range page {
				f := &page[i]
				if !yield(visual.Frame{T: f.T, Path: s.framePath(f), Mime: f.Mime, Width: f.Width, Height: f.Height}) {
					return
				}
			}
			after = page[len(page)-1].Seq
		}
	}
}

func (s *Service) writeVTT(ctx context.Context, op, path string) error {
	events := func(yield func(visual.Event) bool) {
		var after int64
		for {
			page, err := s.Store.Events(ctx, store.EventQuery{Op: op, AfterSeq: after, Limit: 1000})
			if err != nil || len(page) == 0 {
				return
			}
			for _, e := range page {
				if !yield(visual.Event{T: e.T, Name: e.Event, Payload: e.Payload}) {
					return
				}
			}
			after = page[len(page)-1].Seq
		}
	}
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	err = visual.WriteVTTSeq(f, visual.EventCues(events, nil))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("subtitles of %s: %w", op, err)
	}
	return os.Rename(tmp, path)
}

// VisualSpan is one stretch of a replay whose pictures differ from its
// recording's: the compared frames from T to EndT (the replay's t) are all
// over the thresholds, with none under them in between.
type VisualSpan struct {
	T          float64 `json:"t" jsonschema_description:"The replay's t of the span's first differing frame."`
	EndT       float64 `json:"endT" jsonschema_description:"The replay's t of its last differing frame."`
	SimT       float64 `json:"simT" jsonschema_description:"Simulation time (t x timeScale) of its first differing frame."`
	EndSimT    float64 `json:"endSimT"`
	RecordingT float64 `json:"recordingT" jsonschema_description:"The recording's t of its first differing frame."`
	Frames     int     `json:"frames" jsonschema_description:"Differing frames in it."`
	MaxDiff    float64 `json:"maxDiff" jsonschema_description:"The largest share of the picture that changed (0-1)."`
	MaxCell    float64 `json:"maxCell" jsonschema_description:"The largest change of one small area (0-1)."`
	Event      string  `json:"event,omitempty" jsonschema_description:"The last replay event at or before its most different frame."`
	Image      string  `json:"image,omitempty" jsonschema_description:"Its most different frame beside the recording's (on disk)."`
	worst      pairCopy
}

// pairCopy is a compared pair of frames, kept beyond pairFrames' call.
type pairCopy struct {
	rec, rep store.CaptureFrame
	diff     float64
}

// MaxVisualSpans is the most differing spans a VisualDivergence lists
// (SpansOmitted counts the rest).
const MaxVisualSpans = 20

// VisualDivergence says where a replay's pictures differ from its
// recording's at the same simulation time: every span of differing
// frames, and the first such frame.
type VisualDivergence struct {
	// Identical is true when every compared pair is under the threshold.
	Identical bool `json:"identical"`
	// Compared counts the frame pairs compared. The replay's frames not
	// compared are Unpaired (no recording frame within MaxSkewMs of
	// simulation time, or the nearest one is nearer another replay frame,
	// which is compared with it) or Skewed (the nearest recording frame is
	// within MaxSkewMs but at another simulation time, while most pairs
	// share theirs: the game shows fixed ticks, so the two show different
	// ticks, and the same tick's frame was not sent on one side, dropped
	// when its encoder was behind).
	Compared  int     `json:"compared"`
	Unpaired  int     `json:"unpaired,omitempty"`
	Skewed    int     `json:"skewed,omitempty" jsonschema_description:"Replay frames within maxSkewMs of a recording frame but at another tick, not compared (most pairs share their simulation time): a moving sprite is elsewhere a tick later."`
	Threshold float64 `json:"threshold" jsonschema_description:"Of diff: the share of the picture that changed."`
	// CellThreshold is the largest change one small area may have.
	CellThreshold float64 `json:"cellThreshold"`
	MaxSkewMs     float64 `json:"maxSkewMs"`
	// MaxDiff and MaxCell are the largest of the pairs compared (0-1).
	MaxDiff float64 `json:"maxDiff"`
	MaxCell float64 `json:"maxCell"`
	// Skipped says why the pictures were not compared (no frames on one
	// side, another camera).
	Skipped string `json:"skipped,omitempty"`
	// Spans are the stretches whose pictures differ, in order (at most
	// MaxVisualSpans; SpansOmitted counts the others).
	Spans        []VisualSpan `json:"spans,omitempty"`
	SpansOmitted int          `json:"spansOmitted,omitempty"`
	// The first pair over the threshold.
	T          float64 `json:"t,omitempty" jsonschema_description:"The replay frame's t."`
	RecordingT float64 `json:"recordingT,omitempty"`
	SimT       float64 `json:"simT,omitempty" jsonschema_description:"Their simulation time (t x timeScale)."`
	Diff       float64 `json:"diff,omitempty"`
	Cell       float64 `json:"cell,omitempty" jsonschema_description:"The largest change of one small area of that pair."`
	Event      string  `json:"event,omitempty" jsonschema_description:"The last replay event at or before that frame."`
	Image      string  `json:"image,omitempty" jsonschema_description:"The two frames side by side (on disk)."`
	picture    *Picture
}

// Picture is the side-by-side image of the divergence, or nil.
func (d *VisualDivergence) Picture() *Picture { return d.picture }

// VisualOptions tune CompareFrames.
type VisualOptions struct {
	// Threshold is the Diff (the share of the picture that changed) over
	// which two frames differ (default visual.DefaultDiffThreshold).
	Threshold float64
	// CellThreshold is the DiffMax (the largest change of one small area:
	// a sprite in another place) over which two frames differ (default
	// visual.DefaultDiffMaxThreshold).
	CellThreshold float64
	// MaxSkewMs is how far apart in simulation time two frames may be to
	// be compared (default 20, about a frame at 50 Hz) when the two sides'
	// frames do not mostly share their simulation times (see CompareFrames).
	MaxSkewMs float64
	// Budget bounds the comparison's time (default 10 s): a very long
	// capture is compared as far as it goes, and says so.
	Budget time.Duration
}

// CompareFrames compares a replay's frames with its recording's at the
// same simulation time: each side's t times its own timeScale. A replay
// frame is paired with the recording frame nearest it, within MaxSkewMs,
// unless another replay frame is nearer that one.
//
// A game that steps in fixed ticks draws each frame at a tick, so most
// pairs are at the very same simulation time (within sameTimeMs). Then
// only those are compared: a frame a tick away shows the world moved on (a
// moving sprite elsewhere), not another picture, and it is counted as
// Skewed. That happens when one side did not send the same tick's frame
// (an adapter drops frames when its encoder is behind). A game whose
// frames mostly do not share their simulation times is compared pair by
// nearest pair within MaxSkewMs.
//
// Frames with equal bytes are equal without decoding; others are compared
// by visual signature (computed once per frame and kept).
func (s *Service) CompareFrames(ctx context.Context, recording, replay string, o *VisualOptions) (*VisualDivergence, error) {
	var opt VisualOptions
	if o != nil {
		opt = *o
	}
	if opt.Threshold <= 0 {
		opt.Threshold = visual.DefaultDiffThreshold
	}
	if opt.CellThreshold <= 0 {
		opt.CellThreshold = visual.DefaultDiffMaxThreshold
	}
	if opt.MaxSkewMs <= 0 {
		opt.MaxSkewMs = 20
	}
	if opt.Budget <= 0 {
		opt.Budget = 10 * time.Second
	}
	d := &VisualDivergence{Identical: true, Threshold: opt.Threshold, CellThreshold: opt.CellThreshold, MaxSkewMs: opt.MaxSkewMs}
	rec, err := s.Store.Capture(ctx, recording)
	if err != nil {
		return nil, err
	}
	rep, err := s.Store.Capture(ctx, replay)
	if err != nil {
		return nil, err
	}
	switch {
	case rec.Frames == 0 && rep.Frames == 0:
		d.Skipped = "neither the recording nor the replay has frames"
	case rec.Frames == 0:
		d.Skipped = "the recording has no frames (record with frames to compare pictures)"
	case rep.Frames == 0:
		d.Skipped = "the replay has no frames"
	}
	recPres, repPres := presentationOf(rec), presentationOf(rep)
	if d.Skipped == "" {
		if a, b := cameraOf(recPres), cameraOf(repPres); a != b {
			d.Skipped = fmt.Sprintf("the replay shows another camera (%s, the recording %s): pictures are not compared", b, a)
		}
	}
	if d.Skipped != "" {
		d.Identical = false
		return d, nil
	}
	recScale, repScale := recPres.TimeScale(), repPres.TimeScale()
	labels := [2]string{"recording", "replay"}
	if rec.Kind == KindPlay {
		labels = [2]string{"expected", "got"} // a saved play's expectation
	}
	deadline := time.Now().Add(opt.Budget)
	// First the times alone (nothing decoded): do most pairs share their
	// simulation time?
	var same, skewed int
	pairFrames(s.framePager(ctx, recording), s.framePager(ctx, replay), recScale, repScale, opt.MaxSkewMs, func(_, _ *store.CaptureFrame, _ float64, k pairKind) bool {
		switch k {
		case pairSame:
			same++
		case pairSkewed:
			skewed++
		}
		return time.Now().Before(deadline)
	})
	ticks := same > skewed
	var ferr error
	var open *VisualSpan // the span being walked through
	closeSpan := func() {
		if open == nil {
			return
		}
		if len(d.Spans) < MaxVisualSpans {
			s.spanPicture(ctx, replay, open, len(d.Spans), labels)
			d.Spans = append(d.Spans, *open)
		} else {
			d.SpansOmitted++
		}
		open = nil
	}
	pairFrames(s.framePager(ctx, recording), s.framePager(ctx, replay), recScale, repScale, opt.MaxSkewMs, func(best, f *store.CaptureFrame, sim float64, k pairKind) bool {
		switch {
		case k == pairNone || k == pairBeside:
			d.Unpaired++
			return true
		case k == pairSkewed && ticks:
			d.Skewed++
			return true
		}
		if time.Now().After(deadline) {
			d.Skipped = fmt.Sprintf("compared for %s and stopped at t=%s: the rest is not compared", opt.Budget, ms(f.T))
			return false
		}
		diff, cell, err := s.frameDiff(ctx, recording, best, replay, f)
		if err != nil {
			ferr = err
			return false
		}
		d.Compared++
		d.MaxDiff, d.MaxCell = max(d.MaxDiff, diff), max(d.MaxCell, cell)
		if diff <= opt.Threshold && cell <= opt.CellThreshold {
			closeSpan()
			return true
		}
		simT := math.Round(sim*1000) / 1000 // t x timeScale, less its float noise
		if open == nil {
			open = &VisualSpan{T: f.T, SimT: simT, RecordingT: best.T}
		}
		open.EndT, open.EndSimT = f.T, simT
		open.Frames++
		open.MaxDiff, open.MaxCell = max(open.MaxDiff, diff), max(open.MaxCell, cell)
		if open.Frames == 1 || diff > open.worst.diff {
			open.worst = pairCopy{rec: *best, rep: *f, diff: diff}
		}
		if d.Identical {
			d.Identical = false
			d.T, d.RecordingT, d.SimT, d.Diff, d.Cell = f.T, best.T, simT, diff, cell
			if e, err := s.Store.EventAtOrBefore(ctx, replay, f.T); err == nil {
				d.Event = sanitize.Line(e.Event, 120)
			}
			jpg, w, h, err := visual.SideBySide(s.framePath(best), s.framePath(f), labels[0]+" t="+ms(best.T), labels[1]+" t="+ms(f.T), AgentWidth)
			if err == nil {
				path := filepath.Join(s.mediaDir(), replay+"-divergence.jpg")
				if writeFileAtomic(path, jpg) == nil {
					d.Image = path
					d.picture = &Picture{Kind: "divergence", Why: fmt.Sprintf("the first frame that differs from the recording's (diff %.3f, largest area change %.3f)", diff, cell),
						T: f.T, Seq: f.Seq, Event: d.Event, File: path, Width: w, Height: h, Bytes: len(jpg), JPEG: jpg}
				}
			}
		}
		return true
	})
	closeSpan()
	if ferr != nil {
		return nil, ferr
	}
	if d.Compared == 0 && d.Skipped == "" {
		d.Identical = false
		d.Skipped = fmt.Sprintf("no replay frame was within %gms of simulation time of a recording frame", opt.MaxSkewMs)
	}
	return d, nil
}

// spanPicture writes the side-by-side image of a span's most different
// pair (the n-th span's) and names the last replay event at or before it.
func (s *Service) spanPicture(ctx context.Context, replay string, sp *VisualSpan, n int, labels [2]string) {
	w := &sp.worst
	if e, err := s.Store.EventAtOrBefore(ctx, replay, w.rep.T); err == nil {
		sp.Event = sanitize.Line(e.Event, 120)
	}
	jpg, _, _, err := visual.SideBySide(s.framePath(&w.rec), s.framePath(&w.rep), labels[0]+" t="+ms(w.rec.T), labels[1]+" t="+ms(w.rep.T), AgentWidth)
	if err != nil {
		return
	}
	path := filepath.Join(s.mediaDir(), fmt.Sprintf("%s-divergence-%d.jpg", replay, n+1))
	if writeFileAtomic(path, jpg) == nil {
		sp.Image = path
	}
}

// sameTimeMs is how close in simulation time two frames are to show the
// same tick: adapters may round t, and a tick is 4 ms or more (240 Hz).
const sameTimeMs = 1

// pairKind is how a replay frame pairs with the recording's frames.
type pairKind int

const (
	pairNone   pairKind = iota // no recording frame within maxSkewMs
	pairBeside                 // the nearest recording frame is nearer another replay frame
	pairSame                   // a recording frame at the same simulation time (within sameTimeMs)
	pairSkewed                 // the nearest recording frame is within maxSkewMs, at another simulation time
)

// pairFrames walks the replay's frames (nextRep) in order, each with the
// recording frame (of nextRec) nearest it in simulation time (each side's
// t times its timeScale) and how the two pair, until fn returns false. The
// recording frame is nil for pairNone. Both pointers are valid during the
// call only.
func pairFrames(nextRec, nextRep func() (store.CaptureFrame, bool), recScale, repScale, maxSkew float64, fn func(best, f *store.CaptureFrame, sim float64, k pairKind) bool) {
	a, aok := nextRec()
	var before *store.CaptureFrame // the recording frame before a
	g, gok := nextRep()
	var last float64 // the simulation time of the replay frame before f
	hasLast := false
	for gok {
		f := g
		g, gok = nextRep() // the replay frame after f
		sim := f.T * repScale
		prevSim, hasPrev := last, hasLast
		last, hasLast = sim, true
		// Move along the recording to the frames around sim.
		for aok && a.T*recScale < sim {
			cp := a
			before = &cp
			a, aok = nextRec()
		}
		best := (*store.CaptureFrame)(nil)
		if aok {
			best = &a
		}
		if before != nil && (best == nil || sim-before.T*recScale <= best.T*recScale-sim) {
			best = before
		}
		var k pairKind
		skew := math.Inf(1)
		if best != nil {
			skew = math.Abs(best.T*recScale - sim)
		}
		switch {
		case skew > maxSkew:
			k, best = pairNone, nil
		case skew <= min(sameTimeMs, maxSkew):
			k = pairSame
		// The replay frames nearest best are f's neighbours: one of them
		// nearer best is compared with it instead.
		case hasPrev && math.Abs(best.T*recScale-prevSim) < skew, gok && math.Abs(best.T*recScale-g.T*repScale) < skew:
			k = pairBeside
		default:
			k = pairSkewed
		}
		if !fn(best, &f, sim, k) {
			return
		}
	}
}

func presentationOf(c *store.Capture) protocol.Presentation {
	var p protocol.Presentation
	json.Unmarshal(c.Presentation, &p)
	return p
}

// cameraOf names the camera of a presentation ("default" when none).
func cameraOf(p protocol.Presentation) string {
	if c, ok := p["camera"].(string); ok && c != "" {
		return c
	}
	return "default"
}

// framePager returns a function that yields a capture's frames in order.
func (s *Service) framePager(ctx context.Context, op string) func() (store.CaptureFrame, bool) {
	var page []store.CaptureFrame
	var after int64
	done := false
	return func() (store.CaptureFrame, bool) {
		if len(page) == 0 && !done {
			p, err := s.Store.Frames(ctx, store.FrameQuery{Op: op, AfterSeq: after, Limit: 500})
			if err != nil || len(p) == 0 {
				done = true
			} else {
				page, after = p, p[len(p)-1].Seq
			}
		}
		if len(page) == 0 {
			return store.CaptureFrame{}, false
		}
		f := page[0]
		page = page[1:]
		return f, true
	}
}

// frameDiff is the visual difference of two stored frames (the share of
// the picture that changed, and the largest change of one area): 0 for
// equal bytes, else from their signatures.
func (s *Service) frameDiff(ctx context.Context, opA string, a *store.CaptureFrame, opB string, b *store.CaptureFrame) (float64, float64, error) {
	if a.SHA256 != "" && a.SHA256 == b.SHA256 {
		return 0, 0, nil
	}
	sa, err := s.signature(ctx, opA, a)
	if err != nil {
		return 0, 0, err
	}
	sb, err := s.signature(ctx, opB, b)
	if err != nil {
		return 0, 0, err
	}
	return visual.Diff(sa, sb), visual.DiffMax(sa, sb), nil
}

// signature is a frame's visual signature, computed once and kept.
func (s *Service) signature(ctx context.Context, op string, f *store.CaptureFrame) (visual.Signature, error) {
	if sig, ok := decodeSig(f.Sig); ok {
		return sig, nil
	}
	sig, err := visual.SignatureOf(s.framePath(f))
	if err != nil {
		// An unreadable frame differs from everything.
		return visual.Signature{}, nil
	}
	if err := s.Store.SetFrameSig(ctx, op, f.Seq, encodeSig(sig)); err != nil {
		s.Controller.log.Warn("keep frame signature", "op", op, "seq", f.Seq, "err", err)
	}
	return sig, nil
}

func encodeSig(s visual.Signature) []byte {
	b := make([]byte, 4, 4+len(s.Pix))
	binary.BigEndian.PutUint16(b, uint16(s.W))
	binary.BigEndian.PutUint16(b[2:], uint16(s.H))
	return append(b, s.Pix...)
}

func decodeSig(b []byte) (visual.Signature, bool) {
	if len(b) < 4 {
		return visual.Signature{}, false
	}
	s := visual.Signature{W: int(binary.BigEndian.Uint16(b)), H: int(binary.BigEndian.Uint16(b[2:])), Pix: b[4:]}
	if s.W <= 0 || s.H <= 0 || len(s.Pix) != 3*s.W*s.H {
		return visual.Signature{}, false
	}
	return s, true
}
