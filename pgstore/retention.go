package pgstore

import (
	"context"
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
	return store.SweepWith(ctx, now, retentionFor, opts, s.Workspaces, func(ctx context.Context, ws, cutoff int64, limit int) (int64, int64, error) {
		n, mark, err := s.sweepBatch(ctx, ws, cutoff, limit)
		return n, mark, Explain(err)
	})
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
