package store

import (
	"context"
	"fmt"
	"time"
)

// SweepOptions configure Sweep. A nil *SweepOptions means the defaults.
type SweepOptions struct {
	// BatchSize is how many operations one transaction deletes at most.
	// Small batches keep every write lock short, so ingest never waits long.
	// Default 1000.
	BatchSize int
	// Pause is slept between batches, leaving the write lock to ingest.
	// Default 1ms.
	Pause time.Duration
}

// SweepResult reports what one sweep deleted.
type SweepResult struct {
	Deleted int64
	// Watermarks holds, per workspace that moved, its new highest deleted
	// serverSequence.
	Watermarks map[string]int64
}

// Sweep deletes, in every workspace, the operations older than the
// retention that retentionFor returns for the workspace's plan (zero or
// less: keep everything). It deletes in serverSequence order, in small
// batches, and records per workspace the highest deleted serverSequence,
// below which cursors are refused as too old.
func (s *Store) Sweep(ctx context.Context, now time.Time, retentionFor func(plan string) time.Duration, opts *SweepOptions) (*SweepResult, error) {
	return SweepWith(ctx, now, retentionFor, opts, s.Workspaces, s.sweepBatch)
}

// SweepBatch deletes up to limit of the oldest operations of workspace id
// ws ingested before cutoff (unix microseconds), stopping at the first
// that is not, in one short transaction, and returns how many it deleted
// and the new watermark.
type SweepBatch func(ctx context.Context, ws, cutoff int64, limit int) (deleted, watermark int64, err error)

// SweepWith is the retention sweep of any store: per workspace of list,
// batches of batch until one deletes less than a batch, pausing between.
func SweepWith(ctx context.Context, now time.Time, retentionFor func(plan string) time.Duration, opts *SweepOptions,
	list func(context.Context) ([]*Workspace, error), batch SweepBatch) (*SweepResult, error) {
	o := SweepOptions{BatchSize: 1000, Pause: time.Millisecond}
	if opts != nil {
		if opts.BatchSize > 0 {
			o.BatchSize = opts.BatchSize
		}
		if opts.Pause > 0 {
			o.Pause = opts.Pause
		}
	}
	wss, err := list(ctx)
	if err != nil {
		return nil, fmt.Errorf("sweep: %w", err)
	}
	res := &SweepResult{Watermarks: map[string]int64{}}
	for _, ws := range wss {
		keep := retentionFor(ws.Plan)
		if keep <= 0 {
			continue
		}
		cutoff := micros(now.Add(-keep))
		for {
			n, mark, err := batch(ctx, ws.ID, cutoff, o.BatchSize)
			if err != nil {
				return res, fmt.Errorf("sweep %q: %w", ws.Name, err)
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
func (s *Store) sweepBatch(ctx context.Context, ws, cutoff int64, limit int) (int64, int64, error) {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return 0, 0, err
	}
	defer tx.Rollback()
	var mark, lastUs int64
	if err := tx.QueryRowContext(ctx, "SELECT retained_through, last_ingested_us FROM workspaces WHERE id = ?", ws).Scan(&mark, &lastUs); err != nil {
		return 0, 0, err
	}
	// The highest serverSequence among the next `limit` operations that is
	// still part of an unbroken run of aged ones.
	rows, err := tx.QueryContext(ctx, "SELECT id, ingested_us FROM ops WHERE id > ? AND id < ? ORDER BY id LIMIT ?", opID(ws, mark), opID(ws+1, 0), limit)
	if err != nil {
		return 0, 0, err
	}
	upto, n := mark, int64(0)
	for rows.Next() {
		var id, us int64
		if err := rows.Scan(&id, &us); err != nil {
			rows.Close()
			return 0, 0, err
		}
		if us >= cutoff {
			break
		}
		upto, n, lastUs = opSeq(id), n+1, max(lastUs, us)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, 0, err
	}
	if n == 0 {
		return 0, mark, nil
	}
	if _, err := tx.ExecContext(ctx, "DELETE FROM ops WHERE id > ? AND id <= ?", opID(ws, mark), opID(ws, upto)); err != nil {
		return 0, 0, err
	}
	// The watermark, and the newest deleted ingestedAt, so ingestedAt never
	// goes back even when retention deleted every operation.
	if _, err := tx.ExecContext(ctx, "UPDATE workspaces SET retained_through = ?, last_ingested_us = ? WHERE id = ?", upto, lastUs, ws); err != nil {
		return 0, 0, err
	}
	return n, upto, tx.Commit()
}
