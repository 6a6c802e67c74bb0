package cappy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image/jpeg"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/crosscode/crosscode-mcp/internal/gitx"
	"github.com/crosscode/crosscode-mcp/internal/sanitize"
	"github.com/crosscode/crosscode-mcp/protocol"
	"github.com/crosscode/crosscode-mcp/store"
)

// PlayRunWidth is the widest frame a saved play's run asks for: its
// expected pictures are PlayPictureWidth wide, and comparisons reduce both
// to 64 cells.
const PlayRunWidth = 320

// Verdicts of a saved play's run.
const (
	PlayPassed = "passed"
	PlayFailed = "failed"
	// PlayError is a play that could not run: its file, the game's start,
	// an adapter that is not the play's.
	PlayErrored = "error"
)

// HeadCommit is the repository's current commit, or "".
func (s *Service) HeadCommit(ctx context.Context) string {
	if s.repoDir == "" {
		return ""
	}
	r, err := gitx.Open(ctx, s.repoDir)
	if err != nil {
		return ""
	}
	c, _, err := r.Head(ctx)
	if err != nil {
		return ""
	}
	return c
}

// PlayStart is a saved play whose replay runs.
type PlayStart struct {
	Play *LoadedPlay
	// Expected is the operation holding the play's expectation (kind
	// "play"), Op the replay.
	Expected string
	Op       *Operation
	Started  time.Time
}

// StartPlay loads the play name, launches the game afresh for it (with
// its seed), checks that the game is the play's, imports its expectation
// and starts its replay. A play that cannot run is a *PlayError (its
// file) or a *protocol.CappyFailure (the game).
func (s *Service) StartPlay(ctx context.Context, name string, onEvent func(store.CaptureEvent), timeout time.Duration) (*PlayStart, error) {
	begun := time.Now()
	if s.playDir == "" {
		return nil, inputf("no plays folder: crosscode-mcp runs outside a repository")
	}
	lp, err := LoadPlay(s.playDir, name)
	if err != nil {
		return nil, err
	}
	seed := protocol.DefaultSeed
	if lp.Seed != nil {
		seed = *lp.Seed
	}
	a, err := s.EnsureFresh(ctx, seed)
	if err != nil {
		return nil, err
	}
	if a.Game != lp.Game || a.Name != lp.Adapter {
		return nil, playErr(lp.Path, "recorded on game %q with adapter %s; the game connected is %q with adapter %s: run it with the capture config it was recorded with, or record it again",
			sanitize.Line(lp.Game, 80), sanitize.Line(lp.Adapter, 80), sanitize.Line(a.Game, 80), sanitize.Line(a.Name, 80))
	}
	expected, stored, err := s.importPlay(ctx, lp)
	if err != nil {
		return nil, err
	}
	var frames *protocol.FramesRequest
	if f := lp.Frames; f != nil {
		// At the play's rate, and no wider than comparing with its
		// pictures and showing a difference need: the game draws and
		// encodes less.
		frames = s.FramesRequest(f.FPS)
		frames.MaxWidth = PlayRunWidth
		if f.MaxWidth > 0 {
			frames.MaxWidth = min(f.MaxWidth, PlayRunWidth)
		}
	}
	if timeout <= 0 {
		// Never cut a play short: its own length, twice, and a minute.
		timeout = time.Minute + 2*time.Duration(lp.LengthMs*float64(time.Millisecond))
	}
	op, err := s.Controller.Start(ctx, Request{Kind: KindReplay, Replay: stored, ReplayOf: expected, Seed: lp.Seed, Frames: frames, OnEvent: onEvent, Timeout: timeout})
	if err != nil {
		return nil, err
	}
	return &PlayStart{Play: lp, Expected: expected, Op: op, Started: begun}, nil
}

// importPlay puts a play's expectation into the capture store as an
// operation of kind "play", named after the play file's content (so once
// per version of it), with its payload as a stored replay.
func (s *Service) importPlay(ctx context.Context, lp *LoadedPlay) (string, *store.Replay, error) {
	op := "play-" + lp.Name + "-" + lp.SHA256[:12]
	stored, err := s.storePayload(ctx, lp.Payload(), lp.Replay.Format)
	if err != nil {
		return "", nil, err
	}
	switch c, err := s.Store.Capture(ctx, op); {
	case err == nil && c.Status == StatusCompleted:
		return op, stored, nil // imported before
	case err == nil:
		// A half-made import (a crash while importing) starts over under
		// a new name: its rows stay, unused.
		op += "-" + fmt.Sprint(time.Now().UnixNano())
	case !errors.Is(err, store.ErrNotFound):
		return "", nil, err
	}
	now := time.Now()
	c := &store.Capture{Op: op, Kind: KindPlay, Scenario: lp.Name, Status: StatusRunning, Game: lp.Game, Adapter: strings.TrimSpace(lp.Adapter + " " + lp.AdapterVersion),
		Build: lp.Build, ReplaySHA: stored.SHA256, CreatedAt: now, Seed: lp.Seed, Owner: s.Controller.owner.id}
	if err := s.Store.CreateCapture(ctx, c); err != nil {
		return "", nil, err
	}
	// Events and pictures share one seq, in the order of their t.
	var events []store.CaptureEvent
	var frames []store.CaptureFrame
	dir := filepath.Join(s.Controller.FrameDir(), op)
	if len(lp.Pictures) > 0 {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return "", nil, err
		}
	}
	seq := int64(0)
	pi := 0
	addPicture := func(pic PlayPicture) error {
		seq++
		data, err := os.ReadFile(filepath.Join(lp.Dir, filepath.FromSlash(pic.File)))
		if err != nil {
			return err
		}
		name := filepath.Join(op, filepath.Base(pic.File))
		if err := writeFileAtomic(filepath.Join(s.Controller.FrameDir(), name), data); err != nil {
			return err
		}
		mime := protocol.MimeJPEG
		if strings.HasSuffix(pic.File, ".png") {
			mime = protocol.MimePNG
		}
		frames = append(frames, store.CaptureFrame{Seq: seq, T: pic.T, Mime: mime, Width: pic.Width, Height: pic.Height, Bytes: int64(len(data)),
			Reason: pic.Reason, File: name, SHA256: sha256Hex(data), ReceivedAt: now})
		return nil
	}
	for _, e := range lp.Events {
		for ; pi < len(lp.Pictures) && lp.Pictures[pi].T < e.T; pi++ {
			if err := addPicture(lp.Pictures[pi]); err != nil {
				return "", nil, err
			}
		}
		seq++
		events = append(events, store.CaptureEvent{Seq: seq, T: e.T, Event: e.Event, DurationMs: e.DurationMs, Payload: e.Payload, ReceivedAt: now})
	}
	for ; pi < len(lp.Pictures); pi++ {
		if err := addPicture(lp.Pictures[pi]); err != nil {
			return "", nil, err
		}
	}
	for len(events) > 0 {
		n := min(len(events), 1000)
		if err := s.Store.AppendEvents(ctx, op, events[:n]); err != nil {
			return "", nil, err
		}
		events = events[n:]
	}
	for len(frames) > 0 {
		n := min(len(frames), 500)
		if err := s.Store.AppendFrames(ctx, op, frames[:n]); err != nil {
			return "", nil, err
		}
		frames = frames[n:]
	}
	if err := s.Store.UpdateCapture(ctx, op, store.CaptureUpdate{Status: StatusCompleted, StartedAt: now, EndedAt: now}); err != nil {
		return "", nil, err
	}
	return op, stored, nil
}

// storePayload keeps a replay payload in the controller's replay store
// (content-addressed, read-only), as a recording's is.
func (s *Service) storePayload(ctx context.Context, data []byte, format string) (*store.Replay, error) {
	sha := sha256Hex(data)
	if r, err := s.Store.Replay(ctx, sha); err == nil {
		if _, err := os.Stat(r.Path); err == nil {
			return r, nil
		}
	}
	if int64(len(data)) > s.Controller.cfg.MaxReplayBytes {
		return nil, fmt.Errorf("the play's replay is %d bytes, over the %d this controller stores", len(data), s.Controller.cfg.MaxReplayBytes)
	}
	if err := os.MkdirAll(s.Controller.cfg.ReplayDir, 0o700); err != nil {
		return nil, err
	}
	dst := filepath.Join(s.Controller.cfg.ReplayDir, sha)
	if err := writeOnce(dst, func(w io.Writer) error { _, err := w.Write(data); return err }); err != nil {
		return nil, err
	}
	r := store.Replay{SHA256: sha, Bytes: int64(len(data)), Format: format, Path: dst, CreatedAt: time.Now()}
	if err := s.Store.PutReplay(ctx, r); err != nil {
		return nil, err
	}
	return &r, nil
}

// PlayOutcome is a saved play's run, judged.
type PlayOutcome struct {
	Name   string `json:"name"`
	File   string `json:"file"`
	Status string `json:"status" jsonschema:"enum=passed,enum=failed,enum=error"`
	// Message is the first divergence of a failed play, or why it could
	// not run.
	Message string `json:"message,omitempty"`
	// LengthMs is the play's own length; WallMs how long its run took
	// here, the game's start included.
	LengthMs float64 `json:"lengthMs"`
	WallMs   int64   `json:"wallMs"`
	// Op is the replay, Expected the play's imported expectation: both
	// are captures (get_capture).
	Op       string            `json:"op,omitempty"`
	Expected string            `json:"expected,omitempty"`
	Events   *Divergence       `json:"events,omitempty"`
	Pictures *VisualDivergence `json:"pictures,omitempty"`
	// PicturesExpected and PicturesGot count the pictures on each side.
	PicturesExpected int   `json:"picturesExpected"`
	PicturesGot      int64 `json:"picturesGot"`
	// Warnings are what the game and the controller warned of in the run.
	Warnings []string `json:"warnings,omitempty"`
	// fileSHA is the play file's (for its last result).
	fileSHA string
}

// JudgePlay compares a finished play run with its expectation and records
// the result as the play's last here.
func (s *Service) JudgePlay(ctx context.Context, ps *PlayStart) (*PlayOutcome, error) {
	lp := ps.Play
	out := &PlayOutcome{Name: lp.Name, File: s.relPlay(lp.Path), LengthMs: lp.LengthMs, Op: ps.Op.ID, Expected: ps.Expected, PicturesExpected: len(lp.Pictures), fileSHA: lp.SHA256}
	defer func() { out.WallMs = time.Since(ps.Started).Milliseconds() }()
	c, err := s.Store.Capture(ctx, ps.Op.ID)
	if err != nil {
		return nil, err
	}
	out.PicturesGot = c.Frames
	out.Warnings = c.Warnings
	if c.Status != StatusCompleted {
		out.Status = PlayFailed
		out.Message = fmt.Sprintf("the replay %s (%s): %s", c.Status, sanitize.Line(c.Code, 80), sanitize.Line(c.Message, 300))
		if c.Code == protocol.CappyReplayUnsupported || c.Code == protocol.CappyReplayInvalid {
			out.Status = PlayErrored
			out.Message += ": the game no longer reads this play's replay; record it again"
		}
		return out, nil
	}
	d, err := Compare(ctx, s.Store, ps.Expected, ps.Op.ID, 1, lp.ToleranceMs())
	if err != nil {
		return nil, err
	}
	out.Events = d
	out.Status = PlayPassed
	if !d.Identical {
		out.Status, out.Message = PlayFailed, DescribeDivergence(d)
	}
	if len(lp.Pictures) > 0 {
		vo := s.Config.Frames.Visual()
		if vo == nil {
			vo = &VisualOptions{}
		}
		if t := lp.Tolerance; t != nil {
			if t.Diff > 0 {
				vo.Threshold = t.Diff
			}
			if t.Cell > 0 {
				vo.CellThreshold = t.Cell
			}
		}
		vd, err := s.CompareFrames(ctx, ps.Expected, ps.Op.ID, vo)
		if err != nil {
			return nil, err
		}
		out.Pictures = vd
		var why string
		switch {
		case c.Frames == 0:
			why = fmt.Sprintf("the game sent no pictures; the play expects %d", len(lp.Pictures))
		case len(vd.Spans) > 0:
			why = "the pictures differ at " + SpanText(vd, true)
		}
		if why != "" {
			if out.Status == PlayPassed {
				out.Status, out.Message = PlayFailed, why
			} else {
				out.Message += "; " + why
			}
		}
	}
	return out, nil
}

// SpanText names a visual divergence's spans: "t=500ms-1000ms (2 frames,
// up to 12% changed), ...", at the replay's t, or with recordingClock at
// the recording's (a saved play's expectation).
func SpanText(vd *VisualDivergence, recordingClock bool) string {
	var parts []string
	for _, sp := range vd.Spans {
		from, to := sp.T, sp.EndT
		if recordingClock {
			from, to = sp.RecordingT, sp.RecordingT+sp.EndSimT-sp.SimT
		}
		when := "t=" + FormatMs(from)
		if to != from {
			when += "-" + FormatMs(to)
		}
		parts = append(parts, fmt.Sprintf("%s (%d frames, up to %.0f%% changed)", when, sp.Frames, 100*sp.MaxDiff))
	}
	if vd.SpansOmitted > 0 {
		parts = append(parts, fmt.Sprintf("and %d more", vd.SpansOmitted))
	}
	return strings.Join(parts, ", ")
}

// DescribeDivergence says in one line how a replay's events first differ
// from what was expected.
func DescribeDivergence(d *Divergence) string {
	ev := func(e *store.CaptureEvent) string {
		return sanitize.Line(e.Event, 80) + " at t=" + FormatMs(e.T)
	}
	switch d.Field {
	case "missing":
		return fmt.Sprintf("event %d: expected %s, the replay ended before it", d.Index, ev(d.Expected))
	case "extra":
		return fmt.Sprintf("event %d: the replay went on with %s, which was not expected", d.Index, ev(d.Actual))
	case "event":
		return fmt.Sprintf("event %d: expected %s, got %s", d.Index, ev(d.Expected), ev(d.Actual))
	case "payload":
		return fmt.Sprintf("event %d (%s): its payload differs: expected %s, got %s", d.Index, ev(d.Expected), sanitize.Line(string(d.Expected.Payload), 160), sanitize.Line(string(d.Actual.Payload), 160))
	case "t":
		return fmt.Sprintf("event %d (%s): at t=%s, %+.0f ms from where it was expected", d.Index, sanitize.Line(d.Expected.Event, 80), FormatMs(d.Actual.T), d.DeltaMs)
	}
	return "the events differ"
}

// RecordPlayResult keeps a play's result as its last here.
func (s *Service) RecordPlayResult(ctx context.Context, o *PlayOutcome) {
	err := s.Store.PutPlayResult(ctx, store.PlayResult{Name: o.Name, FileSHA: o.fileSHA, Status: o.Status, Message: o.Message, Op: o.Op,
		Commit: s.HeadCommit(ctx), WallMs: o.WallMs, At: time.Now()})
	if err != nil {
		s.log.Warn("keep the play's result", "play", o.Name, "err", err)
	}
}

// FailedPlay is the outcome of a play that could not run, or whose run
// could not be judged.
func (s *Service) FailedPlay(name string, err error, begun time.Time) *PlayOutcome {
	o := &PlayOutcome{Name: name, Status: PlayErrored, File: s.relPlay(PlayPath(s.playDir, name)), WallMs: time.Since(begun).Milliseconds()}
	if pe := (*PlayError)(nil); errors.As(err, &pe) {
		o.Message = s.relPlay(pe.File) + ": " + pe.Msg // the file named from the repository
	} else {
		o.Message = err.Error()
	}
	return o
}

// UpdatePlay rewrites a play's expectation (events, pictures, length) from
// its finished run, keeping what it replays, and returns what changed.
func (s *Service) UpdatePlay(ctx context.Context, ps *PlayStart, o *PlayOutcome) ([]string, error) {
	lp := ps.Play
	if o.Status == PlayErrored {
		return nil, playErr(lp.Path, "not updated: %s", o.Message)
	}
	c, err := s.Store.Capture(ctx, ps.Op.ID)
	if err != nil {
		return nil, err
	}
	if c.Status != StatusCompleted {
		return nil, playErr(lp.Path, "not updated: its replay did not complete (%s %s): fix the game, or record the play again", c.Status, sanitize.Line(c.Code, 80))
	}
	if a, v, _ := strings.Cut(c.Adapter, " "); a != lp.Adapter {
		return nil, playErr(lp.Path, "not updated: recorded with adapter %s, run with %s %s: record it again", lp.Adapter, a, v)
	}
	old := *lp.Play
	p := *lp.Play
	p.Updated = &PlayOrigin{At: time.Now().UTC().Truncate(time.Second), Commit: s.HeadCommit(ctx), Op: ps.Op.ID}
	if err := s.fillExpectation(ctx, &p, ps.Op.ID); err != nil {
		return nil, err
	}
	// The same input plays as long: a replay may just not show the last
	// look of an agent's play.
	p.LengthMs = max(p.LengthMs, old.LengthMs)
	changes := eventChanges(old.Events, p.Events, lp.ToleranceMs())
	if vd := o.Pictures; vd != nil {
		for _, sp := range vd.Spans {
			changes = append(changes, fmt.Sprintf("pictures changed at t=%s-%s (%d frames, up to %.0f%%)", FormatMs(sp.RecordingT), FormatMs(sp.RecordingT+sp.EndSimT-sp.SimT), sp.Frames, 100*sp.MaxDiff))
		}
		if vd.SpansOmitted > 0 {
			changes = append(changes, fmt.Sprintf("pictures changed in %d more spans", vd.SpansOmitted))
		}
	}
	if len(old.Pictures) != len(p.Pictures) {
		changes = append(changes, fmt.Sprintf("%d pictures, were %d", len(p.Pictures), len(old.Pictures)))
	}
	if _, err := s.writePlay(lp.Name, &p, true); err != nil {
		return nil, err
	}
	return changes, nil
}

// eventChanges lists how the events of a play's expectation changed:
// added, removed, moved (an event that matches but at another t).
func eventChanges(old, cur []PlayEvent, tol float64) []string {
	key := func(e PlayEvent) string { return e.Event + "\x00" + string(e.Payload) }
	// The longest common subsequence of the two, by name and payload.
	n, m := len(old), len(cur)
	const maxCells = 4 << 20
	var out []string
	if n*m > maxCells {
		if n != m {
			out = append(out, fmt.Sprintf("%d events, were %d", m, n))
		}
		return append(out, "events changed (too many to list)")
	}
	l := make([][]int32, n+1)
	for i := range l {
		l[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if key(old[i]) == key(cur[j]) {
				l[i][j] = l[i+1][j+1] + 1
			} else {
				l[i][j] = max(l[i+1][j], l[i][j+1])
			}
		}
	}
	const maxLines = 50
	more := 0
	add := func(s string) {
		if len(out) < maxLines {
			out = append(out, s)
		} else {
			more++
		}
	}
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && key(old[i]) == key(cur[j]):
			if d := cur[j].T - old[i].T; d > tol || d < -tol {
				add(fmt.Sprintf("moved: %s from t=%s to t=%s", sanitize.Line(old[i].Event, 80), FormatMs(old[i].T), FormatMs(cur[j].T)))
			}
			i, j = i+1, j+1
		case j < m && (i == n || l[i][j+1] >= l[i+1][j]):
			add(fmt.Sprintf("added: %s at t=%s", sanitize.Line(cur[j].Event, 80), FormatMs(cur[j].T)))
			j++
		default:
			add(fmt.Sprintf("removed: %s at t=%s", sanitize.Line(old[i].Event, 80), FormatMs(old[i].T)))
			i++
		}
	}
	if more > 0 {
		out = append(out, fmt.Sprintf("and %d more event changes", more))
	}
	return out
}

// SpanPictures are the side-by-side images of a visual divergence's spans
// (expected and got at the span's most different moment), as pictures for
// an agent.
func SpanPictures(vd *VisualDivergence) []*Picture {
	var out []*Picture
	if vd == nil {
		return nil
	}
	for i, sp := range vd.Spans {
		if sp.Image == "" {
			continue
		}
		jpg, err := os.ReadFile(sp.Image)
		if err != nil {
			continue
		}
		cfg, err := jpeg.DecodeConfig(bytes.NewReader(jpg))
		if err != nil {
			continue
		}
		out = append(out, &Picture{Kind: "divergence", Why: fmt.Sprintf("span %d of %d whose pictures differ: expected (left) and got (right), at its most different frame (up to %.0f%% changed)", i+1, len(vd.Spans)+vd.SpansOmitted, 100*sp.MaxDiff),
			T: sp.T, Event: sp.Event, File: sp.Image, Width: cfg.Width, Height: cfg.Height, Bytes: len(jpg), JPEG: jpg})
	}
	return out
}

// SpanFrames are the files of a span's most different pair of frames: the
// expected (recording's) and the got (replay's).
func (s *Service) SpanFrames(sp *VisualSpan) (expected, got string) {
	return s.framePath(&sp.worst.rec), s.framePath(&sp.worst.rep)
}
