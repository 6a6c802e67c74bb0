package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/crosscode/crosscode-mcp/protocol"
)

// The statements Mirror runs, prepared on the writer at Open (see
// writerStatements).
const (
	insMirroredOp = "INSERT OR IGNORE INTO ops (id, kind, ingested_us, body) VALUES (?, ?, ?, ?)"
	// Processes sharing this file mirror the same log; the cursor only moves on.
	upsMirrorCursor = "INSERT INTO cursors (name, seq, updated_us) VALUES (?, ?, ?) ON CONFLICT (name) DO UPDATE SET seq = max(seq, excluded.seq), updated_us = excluded.updated_us"
	// Acknowledged outbox entries are kept until the mirror holds them
	// (see Unmirrored), then dropped.
	delMirroredOutbox = "DELETE FROM outbox WHERE status = 1 AND workspace = ? AND server_seq <= ?"
	// An envelope the log holds is never uploaded again, even when its
	// receipt was lost ((replicaId, clientSequence) is never reused).
	delMirroredEntry = "DELETE FROM outbox WHERE replica = ? AND client_seq = ? AND status IN (0, 1)"
)

var mirrorStatements = []string{insMirroredOp, upsMirrorCursor, delMirroredOutbox, delMirroredEntry}

// ensureWorkspaceID resolves a workspace name to its id (from memory once
// known), creating the workspace only when it does not exist yet.
func (s *Store) ensureWorkspaceID(ctx context.Context, name string) (int64, error) {
	id, err := s.workspaceID(ctx, s.r, name)
	if !errors.Is(err, ErrNoWorkspace) {
		return id, err
	}
	ws, err := s.EnsureWorkspace(ctx, name, "")
	if err != nil {
		return 0, err
	}
	return ws.ID, nil
}

// Mirror records operations read from a coordination service (in server
// order, with their serverSequence and ingestedAt) in the local copy of
// the workspace log, applies them to the projections, and moves the named
// cursor to cursor, all in one transaction. Operations already mirrored
// are skipped, so a page read twice changes nothing. The outbox entries
// the mirror now holds are dropped: pending ones (their receipt was lost)
// are not uploaded again, and acknowledged ones are no longer needed to
// read this replica's own writes (see Unmirrored).
func (s *Store) Mirror(ctx context.Context, workspace string, ops []*protocol.Envelope, cursorName string, cursor int64) error {
	ws, err := s.ensureWorkspaceID(ctx, workspace)
	if err != nil {
		return err
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("mirror: %w", err)
	}
	defer tx.Rollback()
	ins, err := s.wstmt(ctx, tx, insMirroredOp)
	if err != nil {
		return fmt.Errorf("mirror: %w", err)
	}
	del, err := s.wstmt(ctx, tx, delMirroredEntry)
	if err != nil {
		return fmt.Errorf("mirror: %w", err)
	}
	have := make(map[int64]*protocol.Envelope, len(ops))
	for _, e := range ops {
		if e.ServerSequence <= 0 || e.IngestedAt == nil {
			return fmt.Errorf("mirror: operation %q has no serverSequence or ingestedAt", e.ID)
		}
		body, err := e.Canonical()
		if err != nil {
			return fmt.Errorf("mirror: %w", err)
		}
		if _, err := ins.ExecContext(ctx, opID(ws, e.ServerSequence), kindCode(e.Type.Kind()), micros(*e.IngestedAt), body); err != nil {
			return fmt.Errorf("mirror: %w", err)
		}
		if _, err := del.ExecContext(ctx, e.ReplicaID, e.ClientSequence); err != nil {
			return fmt.Errorf("mirror: %w", err)
		}
		have[e.ServerSequence] = e
	}
	if s.projections {
		if err := s.projectThrough(ctx, tx, ws, cursor, have); err != nil {
			return err
		}
	}
	if _, err := s.txExec(ctx, tx, upsMirrorCursor, cursorName, cursor, micros(time.Now())); err != nil {
		return fmt.Errorf("mirror: %w", err)
	}
	if _, err := s.txExec(ctx, tx, delMirroredOutbox, workspace, cursor); err != nil {
		return fmt.Errorf("mirror: %w", err)
	}
	return tx.Commit()
}

// Resync starts the workspace's mirror over at resyncFrom after the
// service reported the cursor too old: the history below it is gone, so
// the mirrored log and the projections are dropped and rebuilt from the
// operations after resyncFrom as they are read again.
func (s *Store) Resync(ctx context.Context, workspace, cursorName string, resyncFrom int64) error {
	ws, err := s.ensureWorkspaceID(ctx, workspace)
	if err != nil {
		return err
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("resync: %w", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, "DELETE FROM ops WHERE id > ? AND id < ?", opID(ws, 0), opID(ws+1, 0)); err != nil {
		return fmt.Errorf("resync: %w", err)
	}
	for _, q := range []string{"DELETE FROM proj WHERE ws = ?", "DELETE FROM proj_claim_patterns WHERE ws = ?"} {
		if _, err := tx.ExecContext(ctx, q, ws); err != nil {
			return fmt.Errorf("resync: %w", err)
		}
	}
	if _, err := tx.ExecContext(ctx, "UPDATE workspaces SET retained_through = ? WHERE id = ?", resyncFrom, ws); err != nil {
		return fmt.Errorf("resync: %w", err)
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO proj_through (ws, seq) VALUES (?, ?) ON CONFLICT (ws) DO UPDATE SET seq = excluded.seq", ws, resyncFrom); err != nil {
		return fmt.Errorf("resync: %w", err)
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO cursors (name, seq, updated_us) VALUES (?, ?, ?) ON CONFLICT (name) DO UPDATE SET seq = excluded.seq, updated_us = excluded.updated_us",
		cursorName, resyncFrom, micros(time.Now())); err != nil {
		return fmt.Errorf("resync: %w", err)
	}
	// This replica's own writes below resyncFrom went with the history.
	if _, err := tx.ExecContext(ctx, delMirroredOutbox, workspace, resyncFrom); err != nil {
		return fmt.Errorf("resync: %w", err)
	}
	return tx.Commit()
}
