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
	seq, _, ok, err = s.NewsMarkAt(ctx, workspace, key)
	return seq, ok, err
}

// NewsMarkAt is NewsMark with the time the mark was told through.
func (s *Store) NewsMarkAt(ctx context.Context, workspace, key string) (seq int64, at time.Time, ok bool, err error) {
	var us int64
	err = s.pool.QueryRow(ctx, `SELECT m.seq, m.updated_us FROM news_marks m JOIN workspaces w ON w.id = m.ws WHERE w.name = $1 AND m.key = $2`, workspace, key).Scan(&seq, &us)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, time.Time{}, false, nil
	}
	if err != nil {
		return 0, time.Time{}, false, fmt.Errorf("news mark: %w", Explain(err))
	}
	return seq, time.UnixMicro(us).UTC(), true, nil
}

// SetNewsMark moves the session key's mark to seq (never back), and drops
// marks unused for 30 days.
func (s *Store) SetNewsMark(ctx context.Context, workspace, key string, seq int64) error {
	return s.SetNewsMarkAt(ctx, workspace, key, seq, time.Now())
}

// SetNewsMarkAt is SetNewsMark, told through time now.
func (s *Store) SetNewsMarkAt(ctx context.Context, workspace, key string, seq int64, now time.Time) error {
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
