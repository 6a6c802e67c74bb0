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

// The statements Page runs inside its read transaction.
const (
	pageWorkspaceSQL = "SELECT id, retained_through, plan FROM workspaces WHERE name = ?"
	pageAllSQL       = "SELECT id, ingested_us, body FROM ops WHERE id > ? AND id < ? ORDER BY id LIMIT ?"
	pageKindSQL      = "SELECT id, ingested_us, body FROM ops WHERE kind = ? AND id > ? AND id < ? ORDER BY id LIMIT ?"
)

// readTxStatements are the statements run inside read transactions (Page's
// and OverlappingIntents'), prepared on the readers at Open (see readTxQuery).
var readTxStatements = []string{pageWorkspaceSQL, pageAllSQL, pageKindSQL, selOverlap, selOverlapAll, selEntitiesByID}

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
// consistent snapshot.
func (s *Store) Page(ctx context.Context, q PageQuery) (*PageResult, error) {
	limit := q.Limit
	if limit <= 0 {
		limit = DefaultPageLimit
	}
	limit = min(limit, MaxPageLimit)
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("page: %w", err)
	}
	defer tx.Rollback()
	var ws, watermark int64
	var plan string
	wrows, err := s.readTxQuery(ctx, tx, pageWorkspaceSQL, q.Workspace)
	if err == nil {
		if wrows.Next() {
			err = wrows.Scan(&ws, &watermark, &plan)
		} else {
			err = sql.ErrNoRows
		}
		err = errors.Join(err, wrows.Close())
	}
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("page %q: %w", q.Workspace, ErrNoWorkspace)
	}
	if err != nil {
		return nil, fmt.Errorf("page: %w", err)
	}
	res := &PageResult{Plan: plan, NextCursor: q.After}
	if q.After < watermark {
		res.TooOld, res.ResyncFrom = true, watermark
		return res, nil
	}
	var rows *sql.Rows
	if q.Kind == "" {
		rows, err = s.readTxQuery(ctx, tx, pageAllSQL, opID(ws, q.After), opID(ws+1, 0), limit+1)
	} else {
		rows, err = s.readTxQuery(ctx, tx, pageKindSQL, kindCode(q.Kind), opID(ws, q.After), opID(ws+1, 0), limit+1)
	}
	if err != nil {
		return nil, fmt.Errorf("page: %w", err)
	}
	defer rows.Close()
	res.Ops = make([]Op, 0, min(limit, 64))
	for rows.Next() {
		if len(res.Ops) == limit {
			res.HasMore = true
			break
		}
		var op Op
		var id, us int64
		if err := rows.Scan(&id, &us, &op.Body); err != nil {
			return nil, fmt.Errorf("page: %w", err)
		}
		op.Seq, op.IngestedAt = opSeq(id), fromMicros(us)
		res.Ops = append(res.Ops, op)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("page: %w", err)
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
