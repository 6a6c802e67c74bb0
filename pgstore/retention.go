package pgstore

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/crosscode/crosscode-mcp/store"
)

// Sweep deletes, in every workspace, the operations older than the
// retention that retentionFor returns for the workspace's plan (zero or
// less: keep everything), in serverSequence order, in small transactions
// that lock only the workspace's row in workspaces (never its counter,
// which ingest holds), and raises the watermark below which cursors are
// refused as too old. Instances sweeping at once take turns per batch.
func (s *Store) Sweep(ctx context.Context, now time.Time, retentionFor func(plan string) time.Duration, opts *store.SweepOptions) (*store.SweepResult, error) {
	o := store.SweepOptions{BatchSize: 1000, Pause: time.Millisecond}
	if opts != nil {
		if opts.BatchSize > 0 {
			o.BatchSize = opts.BatchSize
		}
		if opts.Pause > 0 {
			o.Pause = opts.Pause
		}
	}
	wss, err := s.Workspaces(ctx)
	if err != nil {
		return nil, fmt.Errorf("sweep: %w", err)
	}
	res := &store.SweepResult{Watermarks: map[string]int64{}}
	for _, ws := range wss {
		keep := retentionFor(ws.Plan)
		if keep <= 0 {
			continue
		}
		cutoff := micros(now.Add(-keep))
		for {
			n, mark, err := s.sweepBatch(ctx, ws.ID, cutoff, o.BatchSize)
			if err != nil {
				return res, fmt.Errorf("sweep %q: %w", ws.Name, Explain(err))
			}
			if n > 0 {
				res.Deleted += n
				res.Watermarks[ws.Name] = mark
			}
			if n < int64(o.BatchSize) {
				break
			}
			select {
			case <-ctx.Done():
				return res, ctx.Err()
			case <-time.After(o.Pause):
			}
		}
	}
	return res, nil
}

// sweepBatch deletes up to limit of the oldest operations of ws ingested
// before cutoff, stopping at the first one that is not, so what remains is
// always a suffix of the log.
func (s *Store) sweepBatch(ctx context.Context, ws, cutoff int64, limit int) (n, upto int64, err error) {
	err = s.tx(ctx, func(tx pgx.Tx) error {
		var mark int64
		if err := tx.QueryRow(ctx, "SELECT retained_through FROM workspaces WHERE id = $1 FOR UPDATE", ws).Scan(&mark); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, "SELECT seq, ingested_us FROM ops WHERE ws = $1 AND seq > $2 ORDER BY seq LIMIT $3", ws, mark, limit)
		if err != nil {
			return err
		}
		upto, n = mark, 0
		for rows.Next() {
			var seq, us int64
			if err := rows.Scan(&seq, &us); err != nil {
				rows.Close()
				return err
			}
			if us >= cutoff {
				break
			}
			upto, n = seq, n+1
		}
		rows.Close()
		if err := rows.Err(); err != nil || n == 0 {
			return err
		}
		if _, err := tx.Exec(ctx, "DELETE FROM ops WHERE ws = $1 AND seq > $2 AND seq <= $3", ws, mark, upto); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, "UPDATE workspaces SET retained_through = $2 WHERE id = $1", ws, upto)
		return err
	})
	return n, upto, err
}
