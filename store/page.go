package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/crosscode/crosscode-mcp/protocol"
)

// Page's statements: the workspace's retention watermark and plan, with
// the operations after ?4 (ops ids ?2 to ?3), none when ?4 is below the
// watermark (too old); one row with NULL operation columns when there
// are none. pageKindSQL reads those of kind ?6 only.
const (
	pageSQL = `SELECT w.retained_through, w.plan, o.id, o.ingested_us, o.body
		FROM workspaces w LEFT JOIN ops o ON o.id > ?2 AND o.id < ?3 AND ?4 >= w.retained_through
		WHERE w.id = ?1 ORDER BY o.id LIMIT ?5`
	pageKindSQL = `SELECT w.retained_through, w.plan, o.id, o.ingested_us, o.body
		FROM workspaces w LEFT JOIN ops o ON o.kind = ?6 AND o.id > ?2 AND o.id < ?3 AND ?4 >= w.retained_through
		WHERE w.id = ?1 ORDER BY o.id LIMIT ?5`
)

// readTxStatements are the statements run inside read transactions
// (OverlappingIntents'), prepared on the readers at Open (see readTxQuery).
var readTxStatements = []string{selOverlap, selOverlapAll, selEntitiesByID}

// Page limits.
const (
	DefaultPageLimit = 100
	MaxPageLimit     = 1000
)

// PageQuery selects a page of a workspace's log.
type PageQuery struct {
	Workspace string
	After     int64         // return operations with serverSequence > After
	Limit     int           // 1..MaxPageLimit; 0 means DefaultPageLimit
	Kind      protocol.Kind // "" for every kind
}

// Op is one logged operation as stored.
type Op struct {
	Seq        int64
	IngestedAt time.Time
	Body       []byte // canonical envelope JSON without serverSequence/ingestedAt
}

// AppendJSON appends the whole envelope, with serverSequence and
// ingestedAt, to dst without decoding the stored body.
func (o *Op) AppendJSON(dst []byte) []byte {
	body := o.Body
	if n := len(body); n > 0 && body[n-1] == '}' {
		body = body[:n-1]
	}
	dst = append(dst, body...)
	dst = append(dst, `,"serverSequence":`...)
	dst = strconv.AppendInt(dst, o.Seq, 10)
	dst = append(dst, `,"ingestedAt":"`...)
	dst = o.IngestedAt.AppendFormat(dst, time.RFC3339Nano)
	return append(dst, `"}`...)
}

// Envelope decodes the operation into an envelope.
func (o *Op) Envelope() (*protocol.Envelope, error) {
	e, err := protocol.DecodeEnvelope(o.Body)
	if err != nil {
		return nil, fmt.Errorf("decode stored op %d: %w", o.Seq, err)
	}
	at := o.IngestedAt
	e.ServerSequence, e.IngestedAt = o.Seq, &at
	return e, nil
}

// PageResult is a page, or the news that the cursor is too old.
type PageResult struct {
	Ops        []Op
	NextCursor int64
	HasMore    bool
	// TooOld is set when After is below the retention watermark; then
	// ResyncFrom is the oldest cursor that can be served in full.
	TooOld     bool
	ResyncFrom int64
	// Plan is the workspace's plan, for reporting its retention.
	Plan string
}

// Page reads the operations after q.After in server order, from one
// consistent snapshot: one statement reads the retention watermark and
// the operations (each statement costs about as much as another).
func (s *Store) Page(ctx context.Context, q PageQuery) (*PageResult, error) {
	limit := q.Limit
	if limit <= 0 {
		limit = DefaultPageLimit
	}
	limit = min(limit, MaxPageLimit)
	ws, err := s.workspaceID(ctx, s.r, q.Workspace)
	if errors.Is(err, ErrNoWorkspace) {
		return nil, fmt.Errorf("page %q: %w", q.Workspace, ErrNoWorkspace)
	}
	if err != nil {
		return nil, fmt.Errorf("page: %w", err)
	}
	var rows *sql.Rows
	if q.Kind == "" {
		rows, err = s.readQuery(ctx, pageSQL, ws, opID(ws, q.After), opID(ws+1, 0), q.After, limit+1)
	} else {
		rows, err = s.readQuery(ctx, pageKindSQL, ws, opID(ws, q.After), opID(ws+1, 0), q.After, limit+1, kindCode(q.Kind))
	}
	if err != nil {
		return nil, fmt.Errorf("page: %w", err)
	}
	defer rows.Close()
	res := &PageResult{NextCursor: q.After}
	found := false
	for rows.Next() {
		var watermark int64
		var id, us sql.NullInt64
		var body []byte
		if err := rows.Scan(&watermark, &res.Plan, &id, &us, &body); err != nil {
			return nil, fmt.Errorf("page: %w", err)
		}
		if !found {
			found = true
			if q.After < watermark {
				res.TooOld, res.ResyncFrom = true, watermark
				return res, nil
			}
			res.Ops = make([]Op, 0, min(limit, 64))
		}
		if !id.Valid {
			break // no operation after q.After
		}
		if len(res.Ops) == limit {
			res.HasMore = true
			break
		}
		res.Ops = append(res.Ops, Op{Seq: opSeq(id.Int64), IngestedAt: fromMicros(us.Int64), Body: body})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("page: %w", err)
	}
	if !found {
		return nil, fmt.Errorf("page %q: %w", q.Workspace, ErrNoWorkspace)
	}
	if n := len(res.Ops); n > 0 {
		res.NextCursor = res.Ops[n-1].Seq
	}
	return res, nil
}

// Head is the workspace's highest assigned serverSequence.
func (s *Store) Head(ctx context.Context, workspace string) (int64, error) {
	ws, err := s.Workspace(ctx, workspace)
	if err != nil {
		return 0, err
	}
	return ws.Head, nil
}

// Heads returns the highest assigned serverSequence of each named
// workspace that exists (the others are left out).
func (s *Store) Heads(ctx context.Context, workspaces []string) (map[string]int64, error) {
	out := make(map[string]int64, len(workspaces))
	for _, name := range workspaces {
		ws, err := s.Workspace(ctx, name)
		if errors.Is(err, ErrNoWorkspace) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("heads: %w", err)
		}
		out[name] = ws.Head
	}
	return out, nil
}
