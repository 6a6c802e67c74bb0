package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/crosscode/crosscode-mcp/protocol"
)

// Outbox statuses.
const (
	OutboxPending      = 0
	OutboxAcknowledged = 1
	OutboxRefused      = 2 // the service refused it for good (400/409): never retried
)

// OutboxEntry is one envelope committed locally for upload.
type OutboxEntry struct {
	Replica        string
	ClientSequence int64
	Workspace      string
	Kind           protocol.Kind
	Body           []byte // canonical envelope JSON
	CreatedAt      time.Time
	Status         int
	Attempts       int
	LastError      string
	ServerSequence int64
	IngestedAt     time.Time
}

// Enqueue assigns the envelope the replica's next clientSequence and
// commits it to the outbox, in one durable transaction: the number is
// never handed out twice, even across crashes, and the envelope is never
// lost once Enqueue returns.
func (s *Store) Enqueue(ctx context.Context, e *protocol.Envelope) (*OutboxEntry, error) {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("enqueue: %w", err)
	}
	defer tx.Rollback()
	var next int64
	err = tx.QueryRowContext(ctx, "SELECT next FROM replica_seq WHERE replica = ?", e.ReplicaID).Scan(&next)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		next = 1
	case err != nil:
		return nil, fmt.Errorf("enqueue: %w", err)
	}
	e.ClientSequence = next
	body, err := e.Canonical()
	if err != nil {
		return nil, fmt.Errorf("enqueue: %w", err)
	}
	now := time.Now()
	if _, err := tx.ExecContext(ctx, "INSERT INTO replica_seq (replica, next) VALUES (?, ?) ON CONFLICT (replica) DO UPDATE SET next = excluded.next", e.ReplicaID, next+1); err != nil {
		return nil, fmt.Errorf("enqueue: %w", err)
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO outbox (replica, client_seq, workspace, kind, body, created_us) VALUES (?, ?, ?, ?, ?, ?)",
		e.ReplicaID, next, e.WorkspaceID, kindCode(e.Type.Kind()), body, micros(now)); err != nil {
		return nil, fmt.Errorf("enqueue: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("enqueue: %w", err)
	}
	return &OutboxEntry{Replica: e.ReplicaID, ClientSequence: next, Workspace: e.WorkspaceID, Kind: e.Type.Kind(), Body: body, CreatedAt: fromMicros(micros(now))}, nil
}

const outboxCols = "replica, client_seq, workspace, kind, body, created_us, status, attempts, last_error, server_seq, ingested_us"

func scanOutbox(rows interface{ Scan(...any) error }) (*OutboxEntry, error) {
	var o OutboxEntry
	var kind int
	var created, ing int64
	if err := rows.Scan(&o.Replica, &o.ClientSequence, &o.Workspace, &kind, &o.Body, &created, &o.Status, &o.Attempts, &o.LastError, &o.ServerSequence, &ing); err != nil {
		return nil, err
	}
	if kind >= 1 && kind <= len(protocol.Kinds) {
		o.Kind = protocol.Kinds[kind-1]
	}
	o.CreatedAt = fromMicros(created)
	if ing != 0 {
		o.IngestedAt = fromMicros(ing)
	}
	return &o, nil
}

// Pending lists up to limit pending outbox entries of replica in
// clientSequence order: the order they must be uploaded in.
func (s *Store) Pending(ctx context.Context, replica string, limit int) ([]*OutboxEntry, error) {
	rows, err := s.readQuery(ctx, "SELECT "+outboxCols+" FROM outbox WHERE status = 0 AND replica = ? ORDER BY client_seq LIMIT ?", replica, limit)
	if err != nil {
		return nil, fmt.Errorf("outbox: %w", err)
	}
	defer rows.Close()
	var out []*OutboxEntry
	for rows.Next() {
		o, err := scanOutbox(rows)
		if err != nil {
			return nil, fmt.Errorf("outbox: %w", err)
		}
		out = append(out, o)
	}
	return out, rows.Err()
}

// OutboxEntry reads one entry.
func (s *Store) OutboxEntry(ctx context.Context, replica string, clientSeq int64) (*OutboxEntry, error) {
	o, err := scanOutbox(s.readQueryRow(ctx, "SELECT "+outboxCols+" FROM outbox WHERE replica = ? AND client_seq = ?", replica, clientSeq))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("outbox %s/%d: %w", replica, clientSeq, ErrNotFound)
	}
	return o, err
}

// OutboxCounts counts the replica's entries by status.
func (s *Store) OutboxCounts(ctx context.Context, replica string) (pending, refused int, err error) {
	err = s.readQueryRow(ctx, "SELECT count(*) FILTER (WHERE status = 0), count(*) FILTER (WHERE status = 2) FROM outbox WHERE replica = ?", replica).Scan(&pending, &refused)
	return pending, refused, err
}

// Acknowledge records the service's receipt for an entry. The entry stays
// in the outbox, acknowledged, until the local projections hold its
// serverSequence (see Unmirrored): until then it is the only local record
// of a write the service has. If they hold it already (a pull raced the
// upload), it goes now.
func (s *Store) Acknowledge(ctx context.Context, replica string, clientSeq int64, r protocol.IngestReceipt) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("acknowledge: %w", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, "UPDATE outbox SET status = 1, server_seq = ?, ingested_us = ?, last_error = '' WHERE replica = ? AND client_seq = ?",
		r.ServerSequence, micros(r.IngestedAt), replica, clientSeq); err != nil {
		return fmt.Errorf("acknowledge: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM outbox WHERE replica = ? AND client_seq = ? AND status = 1 AND server_seq <= coalesce(
		(SELECT t.seq FROM proj_through t JOIN workspaces w ON w.id = t.ws WHERE w.name = outbox.workspace), 0)`, replica, clientSeq); err != nil {
		return fmt.Errorf("acknowledge: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("acknowledge: %w", err)
	}
	return nil
}

// Unmirrored lists the workspace's outbox entries of the given kinds (all
// when none is given) that the local projections do not hold yet: those
// acknowledged at a serverSequence above through, in server order, then
// those still pending, in the order they were committed. through is what
// the projections were applied through when the entries were read; it is
// read first, so an entry mirrored meanwhile is either listed or held by
// the projections read after this call (compare their ProjectedThrough
// with through to tell whether one was).
func (s *Store) Unmirrored(ctx context.Context, workspace string, kinds ...protocol.Kind) (entries []*OutboxEntry, through int64, err error) {
	ws, err := s.workspaceID(ctx, s.r, workspace)
	if err != nil {
		return nil, 0, fmt.Errorf("unmirrored: %w", err)
	}
	err = s.readQueryRow(ctx, "SELECT seq FROM proj_through WHERE ws = ?", ws).Scan(&through)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, 0, fmt.Errorf("unmirrored: %w", err)
	}
	codes := make([]int, 0, len(protocol.Kinds))
	if len(kinds) == 0 {
		kinds = protocol.Kinds
	}
	for _, k := range kinds {
		codes = append(codes, kindCode(k))
	}
	rows, err := s.readQuery(ctx, "SELECT "+outboxCols+` FROM outbox INDEXED BY outbox_by_status
		WHERE status IN (0, 1) AND workspace = ? AND kind IN (SELECT value FROM json_each(?)) AND (status = 0 OR server_seq > ?)
		ORDER BY status DESC, server_seq, created_us, client_seq`, workspace, string(mustJSON(codes)), through)
	if err != nil {
		return nil, 0, fmt.Errorf("unmirrored: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		o, err := scanOutbox(rows)
		if err != nil {
			return nil, 0, fmt.Errorf("unmirrored: %w", err)
		}
		entries = append(entries, o)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("unmirrored: %w", err)
	}
	return entries, through, nil
}

// Refuse marks an entry refused for good, with why.
func (s *Store) Refuse(ctx context.Context, replica string, clientSeq int64, why string) error {
	_, err := s.w.ExecContext(ctx, "UPDATE outbox SET status = 2, last_error = ? WHERE replica = ? AND client_seq = ?", why, replica, clientSeq)
	if err != nil {
		return fmt.Errorf("refuse: %w", err)
	}
	return nil
}

// Attempted records a failed upload attempt (to retry).
func (s *Store) Attempted(ctx context.Context, replica string, clientSeq int64, why string) error {
	_, err := s.w.ExecContext(ctx, "UPDATE outbox SET attempts = attempts + 1, last_error = ? WHERE replica = ? AND client_seq = ?", why, replica, clientSeq)
	if err != nil {
		return fmt.Errorf("attempted: %w", err)
	}
	return nil
}

// Cursor reads a named cursor (0 if unset).
func (s *Store) Cursor(ctx context.Context, name string) (int64, error) {
	var seq int64
	err := s.readQueryRow(ctx, "SELECT seq FROM cursors WHERE name = ?", name).Scan(&seq)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return seq, err
}
