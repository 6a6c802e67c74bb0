package pgstore

import (
	"context"
	"fmt"

	"github.com/crosscode/crosscode-mcp/store"
)

// Page reads the operations after q.After in server order. One statement
// reads the watermark and the operations, so from one snapshot: a page
// never mixes a sweep's before and after.
const (
	pageAllSQL = `SELECT w.id, w.retained_through, w.plan, o.seq, o.ingested_us, o.body
		FROM workspaces w LEFT JOIN LATERAL (
			SELECT seq, ingested_us, body FROM ops
			WHERE ops.ws = w.id AND ops.seq > $2 AND $2 >= w.retained_through ORDER BY seq LIMIT $3) o ON true
		WHERE w.name = $1`
	pageKindSQL = `SELECT w.id, w.retained_through, w.plan, o.seq, o.ingested_us, o.body
		FROM workspaces w LEFT JOIN LATERAL (
			SELECT seq, ingested_us, body FROM ops
			WHERE ops.ws = w.id AND ops.kind = $4 AND ops.seq > $2 AND $2 >= w.retained_through ORDER BY seq LIMIT $3) o ON true
		WHERE w.name = $1`
)

// Page reads the operations after q.After in server order, from one
// consistent snapshot, or reports the cursor as below the watermark.
func (s *Store) Page(ctx context.Context, q store.PageQuery) (*store.PageResult, error) {
	limit := q.Limit
	if limit <= 0 {
		limit = store.DefaultPageLimit
	}
	limit = min(limit, store.MaxPageLimit)
	sql, args := pageAllSQL, []any{q.Workspace, q.After, limit + 1}
	if q.Kind != "" {
		sql, args = pageKindSQL, append(args, int16(store.KindCode(q.Kind)))
	}
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("page: %w", Explain(err))
	}
	defer rows.Close()
	res := &store.PageResult{NextCursor: q.After}
	found := false
	for rows.Next() {
		var ws, watermark int64
		var seq, us *int64
		var body []byte
		if err := rows.Scan(&ws, &watermark, &res.Plan, &seq, &us, &body); err != nil {
			return nil, fmt.Errorf("page: %w", err)
		}
		found = true
		if q.After < watermark {
			res.TooOld, res.ResyncFrom = true, watermark
			continue
		}
		if seq == nil {
			continue
		}
		if len(res.Ops) == limit {
			res.HasMore = true
			continue
		}
		res.Ops = append(res.Ops, store.Op{Seq: *seq, IngestedAt: fromMicros(*us), Body: body})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("page: %w", Explain(err))
	}
	if !found {
		return nil, fmt.Errorf("page %q: %w", q.Workspace, store.ErrNoWorkspace)
	}
	if n := len(res.Ops); n > 0 {
		res.NextCursor = res.Ops[n-1].Seq
	}
	return res, nil
}

// Heads returns the highest committed serverSequence of each named
// workspace that exists.
func (s *Store) Heads(ctx context.Context, workspaces []string) (map[string]int64, error) {
	rows, err := s.pool.Query(ctx, "SELECT w.name, h.seq FROM workspaces w JOIN heads h ON h.ws = w.id WHERE w.name = ANY($1)", workspaces)
	if err != nil {
		return nil, fmt.Errorf("heads: %w", Explain(err))
	}
	defer rows.Close()
	out := make(map[string]int64, len(workspaces))
	for rows.Next() {
		var name string
		var seq int64
		if err := rows.Scan(&name, &seq); err != nil {
			return nil, fmt.Errorf("heads: %w", err)
		}
		out[name] = seq
	}
	return out, rows.Err()
}
