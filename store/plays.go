package store

import (
	"context"
	"fmt"
	"time"
)

// PlayResult is the last result of a saved play run here (by the test
// command or the replay tool).
type PlayResult struct {
	Name    string    `json:"name"`
	FileSHA string    `json:"fileSha256"`
	Status  string    `json:"status"`
	Message string    `json:"message,omitempty"`
	Op      string    `json:"op,omitempty"`
	Commit  string    `json:"commit,omitempty"`
	WallMs  int64     `json:"wallMs"`
	At      time.Time `json:"at"`
}

// PutPlayResult records r as its play's last result.
func (s *Store) PutPlayResult(ctx context.Context, r PlayResult) error {
	_, err := s.w.ExecContext(ctx, `INSERT INTO play_results (name, file_sha, status, message, op, commit_sha, wall_ms, at_us) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (name) DO UPDATE SET file_sha = excluded.file_sha, status = excluded.status, message = excluded.message, op = excluded.op,
		commit_sha = excluded.commit_sha, wall_ms = excluded.wall_ms, at_us = excluded.at_us`,
		r.Name, r.FileSHA, r.Status, r.Message, r.Op, r.Commit, r.WallMs, micros(r.At))
	if err != nil {
		return fmt.Errorf("put play result: %w", err)
	}
	return nil
}

// PlayResults returns the last result of every play run here, by name.
func (s *Store) PlayResults(ctx context.Context) (map[string]PlayResult, error) {
	rows, err := s.readQuery(ctx, "SELECT name, file_sha, status, message, op, commit_sha, wall_ms, at_us FROM play_results")
	if err != nil {
		return nil, fmt.Errorf("play results: %w", err)
	}
	defer rows.Close()
	out := map[string]PlayResult{}
	for rows.Next() {
		var r PlayResult
		var us int64
		if err := rows.Scan(&r.Name, &r.FileSHA, &r.Status, &r.Message, &r.Op, &r.Commit, &r.WallMs, &us); err != nil {
			return nil, fmt.Errorf("play results: %w", err)
		}
		r.At = fromMicros(us)
		out[r.Name] = r
	}
	return out, rows.Err()
}
