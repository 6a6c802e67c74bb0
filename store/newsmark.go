package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// News marks: how far in the workspace log one agent session has been
// told the news, shared by every process of the machine that speaks for
// that session (its MCP server, and the hooks its client runs), so news a
// hook put in the agent's context is not repeated in its next tool result,
// and the other way round. A mark is a row of cursors named
// "news:<workspace>:<key>"; it only moves forward.

// newsMarkTTL is how long an unused mark is kept.
const newsMarkTTL = 30 * 24 * time.Hour

func newsMarkName(workspace, key string) string { return "news:" + workspace + ":" + key }

// NewsMark returns the log position through which the session key was
// told the news of workspace; ok is false when it never was.
func (s *Store) NewsMark(ctx context.Context, workspace, key string) (seq int64, ok bool, err error) {
	seq, _, ok, err = s.NewsMarkAt(ctx, workspace, key)
	return seq, ok, err
}

// NewsMarkAt is NewsMark with the time the mark was last set: what
// happened by then without a log event (a queued claim granted at a
// lease's end) was told too.
func (s *Store) NewsMarkAt(ctx context.Context, workspace, key string) (seq int64, at time.Time, ok bool, err error) {
	var us int64
	err = s.readQueryRow(ctx, "SELECT seq, updated_us FROM cursors WHERE name = ?", newsMarkName(workspace, key)).Scan(&seq, &us)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, time.Time{}, false, nil
	}
	if err != nil {
		return 0, time.Time{}, false, fmt.Errorf("news mark: %w", err)
	}
	return seq, fromMicros(us), true, nil
}

// SetNewsMark moves the session key's mark to seq (never back), and drops
// marks unused for 30 days.
func (s *Store) SetNewsMark(ctx context.Context, workspace, key string, seq int64) error {
	return s.SetNewsMarkAt(ctx, workspace, key, seq, time.Now())
}

// SetNewsMarkAt is SetNewsMark, told through time now.
func (s *Store) SetNewsMarkAt(ctx context.Context, workspace, key string, seq int64, now time.Time) error {
	return s.writeTx(ctx, "news mark", func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, upsMirrorCursor, newsMarkName(workspace, key), seq, micros(now)); err != nil {
			return err
		}
		// The range of names that start with "news:" (";" follows ":").
		_, err := tx.ExecContext(ctx, "DELETE FROM cursors WHERE name >= 'news:' AND name < 'news;' AND updated_us < ?", micros(now.Add(-newsMarkTTL)))
		return err
	})
}
