package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Capture is one operation of the Cappy controller.
type Capture struct {
	Op           string          `json:"op"`
	Kind         string          `json:"kind"`
	Scenario     string          `json:"scenario,omitempty"`
	Parameters   json.RawMessage `json:"parameters,omitempty"`
	Presentation json.RawMessage `json:"presentation,omitempty"`
	Status       string          `json:"status"`
	Code         string          `json:"code,omitempty"`
	Message      string          `json:"message,omitempty"`
	Game         string          `json:"game,omitempty"`
	Adapter      string          `json:"adapter,omitempty"`
	Build        string          `json:"build,omitempty"`
	ReplaySHA    string          `json:"replaySha256,omitempty"`
	ReplayOf     string          `json:"replayOf,omitempty"`
	Events       int64           `json:"events"`
	LastSeq      int64           `json:"lastSeq"` // the last receipt (events and frames share seq)
	LastT        float64         `json:"lastT"`
	CreatedAt    time.Time       `json:"createdAt"`
	StartedAt    *time.Time      `json:"startedAt,omitempty"`
	EndedAt      *time.Time      `json:"endedAt,omitempty"`
	Summary      json.RawMessage `json:"summary,omitempty"`
	// Frames: what was asked (JSON of a protocol.FramesRequest, or empty),
	// how many were kept and their bytes, and what was dropped.
	FramesRequest json.RawMessage `json:"framesRequest,omitempty"`
	Frames        int64           `json:"frames"`
	FrameBytes    int64           `json:"frameBytes"`
	FramesDropped FrameDrops      `json:"framesDropped"`
	// Owner is the controller that ran it (see cappy's RecoverAbandoned).
	Owner string `json:"-"`
	// Seed is the seed of the game's randomness the adapter was given
	// (a recording's, or the one a replay played with); nil when the
	// adapter takes none.
	Seed *int64 `json:"seed,omitempty"`
	// Warnings are what the game and the controller warned of while it
	// ran, in order, each once (text from the game: data).
	Warnings []string `json:"warnings,omitempty"`
	// EndT is where it ended on its presented clock (the clock of its
	// events); nil until it ended.
	EndT *float64 `json:"endT,omitempty"`
}

// FrameDrops counts the frames a controller dropped, by why: over the
// asked rate, over the operation's byte budget, or because the disk was
// behind (frames never slow events down).
type FrameDrops struct {
	Rate   int64 `json:"rate,omitempty"`
	Budget int64 `json:"budget,omitempty"`
	Slow   int64 `json:"slow,omitempty"`
}

// Total is every dropped frame.
func (d FrameDrops) Total() int64 { return d.Rate + d.Budget + d.Slow }

// CaptureEvent is one event of a capture.
type CaptureEvent struct {
	Seq        int64           `json:"seq"`
	T          float64         `json:"t"`
	Event      string          `json:"event"`
	DurationMs *float64        `json:"durationMs,omitempty"`
	Payload    json.RawMessage `json:"payload,omitempty"`
	ReceivedAt time.Time       `json:"receivedAt"`
}

// CreateCapture records a new operation.
func (s *Store) CreateCapture(ctx context.Context, c *Capture) error {
	params, pres := orJSON(c.Parameters, "{}"), orJSON(c.Presentation, "{}")
	var seed any
	if c.Seed != nil {
		seed = *c.Seed
	}
	_, err := s.w.ExecContext(ctx, `INSERT INTO captures (op, kind, scenario, parameters, presentation, status, game, adapter, build, replay_sha, replay_of, created_us, frames_request, owner, seed, warnings)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, c.Op, c.Kind, c.Scenario, string(params), string(pres), c.Status, c.Game, c.Adapter, c.Build, c.ReplaySHA, c.ReplayOf, micros(c.CreatedAt), string(c.FramesRequest), c.Owner, seed, warningsJSON(c.Warnings))
	if err != nil {
		return fmt.Errorf("create capture: %w", err)
	}
	return nil
}

func orJSON(b json.RawMessage, def string) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage(def)
	}
	return b
}

// CaptureUpdate changes a capture's state; zero fields are left alone.
type CaptureUpdate struct {
	Status    string
	Code      string
	Message   string
	StartedAt time.Time
	EndedAt   time.Time
	ReplaySHA string
	Summary   json.RawMessage
	// FramesDropped, when set, replaces the capture's drop counts.
	FramesDropped *FrameDrops
	// Warnings, when not nil, replaces the capture's warnings.
	Warnings []string
	// EndT, when set, is where it ended on its presented clock.
	EndT *float64
}

// warningsJSON is the warnings column's text: "" for none.
func warningsJSON(w []string) string {
	if len(w) == 0 {
		return ""
	}
	return string(mustJSON(w))
}

// UpdateCapture applies u.
func (s *Store) UpdateCapture(ctx context.Context, op string, u CaptureUpdate) error {
	sets, args := []string{}, []any{}
	add := func(col string, v any) { sets, args = append(sets, col+" = ?"), append(args, v) }
	if u.Status != "" {
		add("status", u.Status)
	}
	if u.Code != "" {
		add("code", u.Code)
	}
	if u.Message != "" {
		add("message", u.Message)
	}
	if !u.StartedAt.IsZero() {
		add("started_us", micros(u.StartedAt))
	}
	if !u.EndedAt.IsZero() {
		add("ended_us", micros(u.EndedAt))
	}
	if u.ReplaySHA != "" {
		add("replay_sha", u.ReplaySHA)
	}
	if len(u.Summary) > 0 {
		add("summary", string(u.Summary))
	}
	if u.FramesDropped != nil {
		add("frames_dropped", string(mustJSON(u.FramesDropped)))
	}
	if u.Warnings != nil {
		add("warnings", warningsJSON(u.Warnings))
	}
	if u.EndT != nil {
		add("end_t", *u.EndT)
	}
	if len(sets) == 0 {
		return nil
	}
	_, err := s.w.ExecContext(ctx, "UPDATE captures SET "+strings.Join(sets, ", ")+" WHERE op = ?", append(args, op)...)
	if err != nil {
		return fmt.Errorf("update capture: %w", err)
	}
	return nil
}

// The statements AppendEvents runs besides the capture_events inserts,
// prepared on the writer at Open (see writerStatements).
const updCaptureProgress = "UPDATE captures SET events = events + ?, last_seq = ?, last_t = ? WHERE op = ?"

var captureStatements = []string{updCaptureProgress}

// appendChunk is how many events AppendEvents encodes at a time: the
// largest prepared multi-row insert.
const appendChunk = 128

// AppendEvents stores a batch of an operation's events in one commit and
// moves its counters. Events arrive in seq order.
func (s *Store) AppendEvents(ctx context.Context, op string, events []CaptureEvent) error {
	if len(events) == 0 {
		return nil
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("append events: %w", err)
	}
	defer tx.Rollback()
	args := make([]any, 0, min(len(events), appendChunk)*insertTables[insCaptureEvents].cols)
	for rest := events; len(rest) > 0; {
		n := min(len(rest), appendChunk)
		args = args[:0]
		for _, e := range rest[:n] {
			var dur any
			if e.DurationMs != nil {
				dur = *e.DurationMs
			}
			var payload any
			if len(e.Payload) > 0 {
				payload = []byte(e.Payload)
			}
			args = append(args, op, e.Seq, e.T, e.Event, dur, payload, micros(e.ReceivedAt))
		}
		if err := s.insertRows(ctx, tx, insCaptureEvents, args); err != nil {
			return fmt.Errorf("append events: %w", err)
		}
		rest = rest[n:]
	}
	last := events[len(events)-1]
	if _, err := s.txExec(ctx, tx, updCaptureProgress, len(events), last.Seq, last.T, op); err != nil {
		return fmt.Errorf("append events: %w", err)
	}
	return tx.Commit()
}

const captureCols = "op, kind, scenario, parameters, presentation, status, code, message, game, adapter, build, replay_sha, replay_of, events, last_seq, last_t, created_us, started_us, ended_us, summary, frames_request, frames, frame_bytes, frames_dropped, owner, seed, warnings, end_t"

func scanCapture(row interface{ Scan(...any) error }) (*Capture, error) {
	var c Capture
	var params, pres, summary, framesReq, drops, warnings string
	var created, started, ended int64
	var seed sql.NullInt64
	var endT sql.NullFloat64
	if err := row.Scan(&c.Op, &c.Kind, &c.Scenario, &params, &pres, &c.Status, &c.Code, &c.Message, &c.Game, &c.Adapter, &c.Build,
		&c.ReplaySHA, &c.ReplayOf, &c.Events, &c.LastSeq, &c.LastT, &created, &started, &ended, &summary, &framesReq, &c.Frames, &c.FrameBytes, &drops, &c.Owner, &seed,
		&warnings, &endT); err != nil {
		return nil, err
	}
	if endT.Valid {
		c.EndT = &endT.Float64
	}
	if warnings != "" {
		if err := json.Unmarshal([]byte(warnings), &c.Warnings); err != nil {
			return nil, fmt.Errorf("capture %s: warnings: %w", c.Op, err)
		}
	}
	if seed.Valid {
		c.Seed = &seed.Int64
	}
	if framesReq != "" {
		c.FramesRequest = json.RawMessage(framesReq)
	}
	if drops != "" {
		if err := json.Unmarshal([]byte(drops), &c.FramesDropped); err != nil {
			return nil, fmt.Errorf("capture %s: frames_dropped: %w", c.Op, err)
		}
	}
	c.Parameters, c.Presentation = json.RawMessage(params), json.RawMessage(pres)
	if summary != "" {
		c.Summary = json.RawMessage(summary)
	}
	c.CreatedAt = fromMicros(created)
	if started != 0 {
		t := fromMicros(started)
		c.StartedAt = &t
	}
	if ended != 0 {
		t := fromMicros(ended)
		c.EndedAt = &t
	}
	return &c, nil
}

// Capture reads one capture.
func (s *Store) Capture(ctx context.Context, op string) (*Capture, error) {
	c, err := scanCapture(s.readQueryRow(ctx, "SELECT "+captureCols+" FROM captures WHERE op = ?", op))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("capture %q: %w", op, ErrNotFound)
	}
	return c, err
}

// Captures lists captures, newest first, created before `before` (zero: now).
func (s *Store) Captures(ctx context.Context, kind string, before time.Time, limit int) ([]*Capture, error) {
	if before.IsZero() {
		before = time.Now().Add(time.Hour)
	}
	q := "SELECT " + captureCols + " FROM captures WHERE created_us < ?"
	args := []any{micros(before)}
	if kind != "" {
		q, args = q+" AND kind = ?", append(args, kind)
	} else {
		q += " AND kind != 'play'" // a saved play's imported expectation: listed as the play
	}
	rows, err := s.readQuery(ctx, q+" ORDER BY created_us DESC LIMIT ?", append(args, limit)...)
	if err != nil {
		return nil, fmt.Errorf("captures: %w", err)
	}
	defer rows.Close()
	var out []*Capture
	for rows.Next() {
		c, err := scanCapture(rows)
		if err != nil {
			return nil, fmt.Errorf("captures: %w", err)
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// OpenCaptures lists the captures that have not ended.
func (s *Store) OpenCaptures(ctx context.Context) ([]*Capture, error) {
	rows, err := s.readQuery(ctx, "SELECT "+captureCols+" FROM captures WHERE status NOT IN ('completed', 'failed', 'cancelled')")
	if err != nil {
		return nil, fmt.Errorf("open captures: %w", err)
	}
	defer rows.Close()
	var out []*Capture
	for rows.Next() {
		c, err := scanCapture(rows)
		if err != nil {
			return nil, fmt.Errorf("open captures: %w", err)
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// EventQuery selects events of a capture.
type EventQuery struct {
	Op       string
	AfterSeq int64
	Names    []string // only these event names
	FromT    *float64 // only t >= FromT
	ToT      *float64 // only t <= ToT
	Limit    int
}

// Events reads a capture's events in seq order.
func (s *Store) Events(ctx context.Context, q EventQuery) ([]CaptureEvent, error) {
	query, args := eventsSQL(q)
	rows, err := s.readQuery(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("events: %w", err)
	}
	defer rows.Close()
	var out []CaptureEvent
	for rows.Next() {
		e, err := scanEvent(rows)
		if err != nil {
			return nil, fmt.Errorf("events: %w", err)
		}
		out = append(out, *e)
	}
	return out, rows.Err()
}

// eventsSQL is the query of Events. By name, it reads the matching events
// through their index (the planner would walk the whole capture in seq
// order instead, to spare a sort of the few it keeps).
func eventsSQL(q EventQuery) (string, []any) {
	from := "capture_events"
	where := []string{"op = ?", "seq > ?"}
	args := []any{q.Op, q.AfterSeq}
	if len(q.Names) > 0 {
		from += " INDEXED BY capture_events_by_name"
		where = append(where, "event IN (SELECT value FROM json_each(?))")
		args = append(args, string(mustJSON(q.Names)))
	}
	if q.FromT != nil {
		where, args = append(where, "t >= ?"), append(args, *q.FromT)
	}
	if q.ToT != nil {
		where, args = append(where, "t <= ?"), append(args, *q.ToT)
	}
	limit := q.Limit
	if limit <= 0 {
		limit = 100
	}
	return "SELECT seq, t, event, duration_ms, payload, received_us FROM " + from + " WHERE " + strings.Join(where, " AND ") + " ORDER BY seq LIMIT ?", append(args, limit)
}

// scanEvent reads seq, t, event, duration_ms, payload, received_us.
func scanEvent(row interface{ Scan(...any) error }) (*CaptureEvent, error) {
	var e CaptureEvent
	var dur sql.NullFloat64
	var payload []byte
	var us int64
	if err := row.Scan(&e.Seq, &e.T, &e.Event, &dur, &payload, &us); err != nil {
		return nil, err
	}
	if dur.Valid {
		d := dur.Float64
		e.DurationMs = &d
	}
	if len(payload) > 0 {
		e.Payload = json.RawMessage(payload)
	}
	e.ReceivedAt = fromMicros(us)
	return &e, nil
}

// Replay is a stored replay payload.
type Replay struct {
	SHA256    string
	Bytes     int64
	Format    string
	Path      string
	CreatedAt time.Time
}

// PutReplay records a replay stored at path (content-addressed by its hash).
func (s *Store) PutReplay(ctx context.Context, r Replay) error {
	_, err := s.w.ExecContext(ctx, "INSERT OR IGNORE INTO replays (sha256, bytes, format, path, created_us) VALUES (?, ?, ?, ?, ?)",
		r.SHA256, r.Bytes, r.Format, r.Path, micros(r.CreatedAt))
	if err != nil {
		return fmt.Errorf("put replay: %w", err)
	}
	return nil
}

// Replay reads a stored replay.
func (s *Store) Replay(ctx context.Context, sha string) (*Replay, error) {
	var r Replay
	var us int64
	err := s.readQueryRow(ctx, "SELECT sha256, bytes, format, path, created_us FROM replays WHERE sha256 = ?", sha).Scan(&r.SHA256, &r.Bytes, &r.Format, &r.Path, &us)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("replay %s: %w", sha, ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	r.CreatedAt = fromMicros(us)
	return &r, nil
}
