package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// newsMarkTTL is how long an unused news mark is kept.
const newsMarkTTL = 30 * 24 * time.Hour

// NewsMark returns the log position through which the session key was
// told the news of workspace; ok is false when it never was (or the
// workspace does not exist).
func (s *Store) NewsMark(ctx context.Context, workspace, key string) (seq int64, ok bool, err error) {
	err = s.pool.QueryRow(ctx, `SELECT m.seq FROM news_marks m JOIN workspaces w ON w.id = m.ws WHERE w.name = $1 AND m.key = $2`, workspace, key).Scan(&seq)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("news mark: %w", Explain(err))
	}
	return seq, true, nil
}

// SetNewsMark moves the session key's mark to seq (never back), and drops
// marks unused for 30 days.
func (s *Store) SetNewsMark(ctx context.Context, workspace, key string, seq int64) error {
	now := time.Now()
	b := &pgx.Batch{}
	b.Queue(`INSERT INTO news_marks (ws, key, seq, updated_us) SELECT id, $2, $3, $4 FROM workspaces WHERE name = $1
		ON CONFLICT (ws, key) DO UPDATE SET seq = greatest(news_marks.seq, excluded.seq), updated_us = excluded.updated_us`,
		workspace, key, seq, micros(now))
	b.Queue(`DELETE FROM news_marks WHERE updated_us < $1`, micros(now.Add(-newsMarkTTL)))
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("news mark: %w", Explain(err))
	}
	return nil
}
