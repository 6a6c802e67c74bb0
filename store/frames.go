package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// CaptureFrame is one frame of a capture: its index row. The image is the
// file File, relative to the controller's frame directory.
type CaptureFrame struct {
	Seq        int64     `json:"seq"`
	T          float64   `json:"t"`
	Mime       string    `json:"mime"`
	Width      int       `json:"width"`
	Height     int       `json:"height"`
	Bytes      int64     `json:"bytes"`
	Reason     string    `json:"reason,omitempty"`
	File       string    `json:"file"`
	SHA256     string    `json:"sha256"`
	Sig        []byte    `json:"-"` // the visual signature, once computed (SetFrameSig)
	ReceivedAt time.Time `json:"receivedAt"`
}

const (
	frameCols         = "seq, t, mime, width, height, bytes, reason, file, sha256, sig, received_us"
	insFrameSQL       = "INSERT INTO capture_frames (op, " + frameCols + ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
	updFrameProgress  = "UPDATE captures SET frames = frames + ?, frame_bytes = frame_bytes + ?, last_seq = max(last_seq, ?) WHERE op = ?"
	selFrameBeforeSQL = "SELECT " + frameCols + " FROM capture_frames WHERE op = ? AND t <= ? ORDER BY t DESC, seq DESC LIMIT 1"
	selFrameAfterSQL  = "SELECT " + frameCols + " FROM capture_frames WHERE op = ? AND t >= ? ORDER BY t, seq LIMIT 1"
	selEventFromSQL   = "SELECT seq, t, event, duration_ms, payload, received_us FROM capture_events WHERE op = ? AND seq >= ? ORDER BY seq LIMIT 1"
)

func init() {
	captureStatements = append(captureStatements, insFrameSQL, updFrameProgress)
}

// AppendFrames indexes a batch of an operation's frames, whose files are
// written, in one commit, and moves its frame counters.
func (s *Store) AppendFrames(ctx context.Context, op string, frames []CaptureFrame) error {
	if len(frames) == 0 {
		return nil
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("append frames: %w", err)
	}
	defer tx.Rollback()
	var bytes, last int64
	for _, f := range frames {
		if _, err := s.txExec(ctx, tx, insFrameSQL, op, f.Seq, f.T, f.Mime, f.Width, f.Height, f.Bytes, f.Reason, f.File, f.SHA256, f.Sig, micros(f.ReceivedAt)); err != nil {
			return fmt.Errorf("append frames: %w", err)
		}
		bytes += f.Bytes
		last = max(last, f.Seq)
	}
	if _, err := s.txExec(ctx, tx, updFrameProgress, len(frames), bytes, last, op); err != nil {
		return fmt.Errorf("append frames: %w", err)
	}
	return tx.Commit()
}

func scanFrame(row interface{ Scan(...any) error }) (CaptureFrame, error) {
	var f CaptureFrame
	var us int64
	err := row.Scan(&f.Seq, &f.T, &f.Mime, &f.Width, &f.Height, &f.Bytes, &f.Reason, &f.File, &f.SHA256, &f.Sig, &us)
	f.ReceivedAt = fromMicros(us)
	return f, err
}

// SetFrameSig keeps a frame's visual signature, so it is computed once.
func (s *Store) SetFrameSig(ctx context.Context, op string, seq int64, sig []byte) error {
	if _, err := s.w.ExecContext(ctx, "UPDATE capture_frames SET sig = ? WHERE op = ? AND seq = ?", sig, op, seq); err != nil {
		return fmt.Errorf("set frame signature: %w", err)
	}
	return nil
}

// FrameQuery selects frames of a capture.
type FrameQuery struct {
	Op       string
	AfterSeq int64
	FromT    *float64 // only t >= FromT
	ToT      *float64 // only t <= ToT
	Limit    int      // default 100
}

// Frames reads a capture's frames in seq order (which is t order: a
// frame's t never goes back).
func (s *Store) Frames(ctx context.Context, q FrameQuery) ([]CaptureFrame, error) {
	where, args := "op = ? AND seq > ?", []any{q.Op, q.AfterSeq}
	if q.FromT != nil {
		where, args = where+" AND t >= ?", append(args, *q.FromT)
	}
	if q.ToT != nil {
		where, args = where+" AND t <= ?", append(args, *q.ToT)
	}
	limit := q.Limit
	if limit <= 0 {
		limit = 100
	}
	rows, err := s.readQuery(ctx, "SELECT "+frameCols+" FROM capture_frames WHERE "+where+" ORDER BY seq LIMIT ?", append(args, limit)...)
	if err != nil {
		return nil, fmt.Errorf("frames: %w", err)
	}
	defer rows.Close()
	var out []CaptureFrame
	for rows.Next() {
		f, err := scanFrame(rows)
		if err != nil {
			return nil, fmt.Errorf("frames: %w", err)
		}
		out = append(out, f)
	}
	return out, rows.Err()
}

// NearestFrame returns the frame whose t is nearest t (the earlier one on
// a tie), or ErrNotFound when the capture has no frames.
func (s *Store) NearestFrame(ctx context.Context, op string, t float64) (*CaptureFrame, error) {
	var best *CaptureFrame
	for _, q := range []string{selFrameBeforeSQL, selFrameAfterSQL} {
		f, err := scanFrame(s.readQueryRow(ctx, q, op, t))
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("nearest frame: %w", err)
		}
		if best == nil || abs(f.T-t) < abs(best.T-t) {
			best = &f
		}
	}
	if best == nil {
		return nil, fmt.Errorf("frames of %s: %w", op, ErrNotFound)
	}
	return best, nil
}

// FrameAtOrAfter returns the first frame at or after t (a picture of an
// event: the first drawn once it happened), else the last frame, or
// ErrNotFound when the capture has no frames.
func (s *Store) FrameAtOrAfter(ctx context.Context, op string, t float64) (*CaptureFrame, error) {
	f, err := scanFrame(s.readQueryRow(ctx, selFrameAfterSQL, op, t))
	if errors.Is(err, sql.ErrNoRows) {
		f, err = scanFrame(s.readQueryRow(ctx, selFrameBeforeSQL, op, t))
	}
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("frames of %s: %w", op, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("frame at or after: %w", err)
	}
	return &f, nil
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// EventAtOrBefore returns the last event whose t is at or before t (a
// picture's caption: what had happened when it was drawn), or ErrNotFound
// when there is none. An operation's events never go back in t, so seq
// order is t order: it binary-searches seq with point reads, never
// scanning the events, whatever their number.
func (s *Store) EventAtOrBefore(ctx context.Context, op string, t float64) (*CaptureEvent, error) {
	c, err := s.Capture(ctx, op)
	if err != nil {
		return nil, err
	}
	// The first event at or after seq: the bound is the receipts so far.
	at := func(seq int64) (*CaptureEvent, error) {
		e, err := scanEvent(s.readQueryRow(ctx, selEventFromSQL, op, seq))
		if errors.Is(err, sql.ErrNoRows) {
			return nil, nil
		}
		return e, err
	}
	// Find the first event with t > target: lo..hi brackets its seq.
	lo, hi := int64(1), max(c.LastSeq, c.Events)+1
	for lo < hi {
		mid := lo + (hi-lo)/2
		e, err := at(mid)
		if err != nil {
			return nil, fmt.Errorf("event at or before: %w", err)
		}
		if e == nil || e.T > t {
			hi = mid // every event from mid on is later
		} else {
			lo = e.Seq + 1
		}
	}
	// The one before it: the last event with t <= target.
	q := "SELECT seq, t, event, duration_ms, payload, received_us FROM capture_events WHERE op = ? AND seq < ? ORDER BY seq DESC LIMIT 1"
	e, err := scanEvent(s.readQueryRow(ctx, q, op, hi))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("events of %s at or before t=%g: %w", op, t, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("event at or before: %w", err)
	}
	return e, nil
}

// LastEvents returns the last n events of a capture, in seq order.
func (s *Store) LastEvents(ctx context.Context, op string, n int) ([]CaptureEvent, error) {
	rows, err := s.readQuery(ctx, "SELECT seq, t, event, duration_ms, payload, received_us FROM capture_events WHERE op = ? ORDER BY seq DESC LIMIT ?", op, n)
	if err != nil {
		return nil, fmt.Errorf("last events: %w", err)
	}
	defer rows.Close()
	var out []CaptureEvent
	for rows.Next() {
		e, err := scanEvent(rows)
		if err != nil {
			return nil, fmt.Errorf("last events: %w", err)
		}
		out = append(out, *e)
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, rows.Err()
}
