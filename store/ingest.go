package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/crosscode/crosscode-mcp/protocol"
)

// kindCode stores a protocol.Kind as a small integer.
func kindCode(k protocol.Kind) int {
	for i, kk := range protocol.Kinds {
		if kk == k {
			return i + 1
		}
	}
	return 0
}

// RuleError is an ingest refused by one of the protocol's rules
// (ID_CONFLICT, CLIENT_SEQUENCE_REGRESSION, UNKNOWN_ENTITY): the client's
// fault, answered with 409, never retried as is.
type RuleError struct {
	Code    protocol.ErrorCode
	Message string
}

func (e *RuleError) Error() string { return string(e.Code) + ": " + e.Message }

// Item is one envelope to ingest into a workspace.
type Item struct {
	Workspace string
	Envelope  *protocol.Envelope // validated
}

// Result is the outcome of one Item.
type Result struct {
	Receipt protocol.IngestReceipt
	// Logged is the envelope as logged, with ServerSequence and IngestedAt
	// set; nil for duplicates and refusals.
	Logged *protocol.Envelope
	// Err is a *RuleError, ErrNoWorkspace, or an encoding failure.
	Err error
}

// IngestBatch ingests items in one transaction, in order, deciding each by
// the rules of the protocol: a duplicate (same replicaId and clientSequence,
// same content) gets its original receipt; conflicts get a *RuleError in
// its Result. The error return is for the database only, and then nothing
// of the batch was written.
func (s *Store) IngestBatch(ctx context.Context, items []Item) ([]Result, error) {
	results := make([]Result, len(items))
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("ingest: begin: %w", err)
	}
	defer tx.Rollback()
	b := batch{tx: tx, ctx: ctx, heads: map[int64]*head{}}
	if err := b.prepare(); err != nil {
		return nil, err
	}
	defer b.close()
	now := micros(time.Now())
	for i, it := range items {
		results[i], err = b.ingest(s, it, now)
		if err != nil {
			return nil, err
		}
	}
	for ws, h := range b.heads {
		if !h.dirty {
			continue
		}
		if _, err := tx.ExecContext(ctx, "UPDATE workspaces SET head = ?, last_ingested_us = ? WHERE id = ?", h.seq, h.lastUs, ws); err != nil {
			return nil, fmt.Errorf("ingest: update head: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("ingest: commit: %w", err)
	}
	return results, nil
}

type head struct {
	seq    int64
	lastUs int64
	dirty  bool
}

type batch struct {
	ctx   context.Context
	tx    *sql.Tx
	heads map[int64]*head

	receipt, maxClient, entity, insOp, insReceipt, insEntity *sql.Stmt
}

func (b *batch) prepare() error {
	var err error
	p := func(q string) *sql.Stmt {
		if err != nil {
			return nil
		}
		var st *sql.Stmt
		st, err = b.tx.PrepareContext(b.ctx, q)
		return st
	}
	// The lowest clientSequence at or above ours tells rules 1 and 2 at once:
	// equal means this (replica, clientSequence) exists; above means ours regressed.
	b.receipt = p("SELECT client_seq, id, seq, ingested_us, hash FROM receipts WHERE ws = ? AND replica = ? AND client_seq >= ? ORDER BY client_seq LIMIT 1")
	b.maxClient = p("SELECT max(client_seq) FROM receipts WHERE ws = ? AND replica = ?")
	b.entity = p("SELECT kind FROM entities WHERE ws = ? AND id = ?")
	b.insOp = p("INSERT INTO ops (ws, seq, kind, ingested_us, body) VALUES (?, ?, ?, ?, ?)")
	b.insReceipt = p("INSERT INTO receipts (ws, replica, client_seq, id, seq, ingested_us, hash) VALUES (?, ?, ?, ?, ?, ?, ?)")
	b.insEntity = p("INSERT INTO entities (ws, id, kind) VALUES (?, ?, ?)")
	if err != nil {
		b.close()
		return fmt.Errorf("ingest: prepare: %w", err)
	}
	return nil
}

func (b *batch) close() {
	for _, st := range []*sql.Stmt{b.receipt, b.maxClient, b.entity, b.insOp, b.insReceipt, b.insEntity} {
		if st != nil {
			st.Close()
		}
	}
}

func (b *batch) head(ws int64) (*head, error) {
	if h, ok := b.heads[ws]; ok {
		return h, nil
	}
	h := &head{}
	if err := b.tx.QueryRowContext(b.ctx, "SELECT head, last_ingested_us FROM workspaces WHERE id = ?", ws).Scan(&h.seq, &h.lastUs); err != nil {
		return nil, fmt.Errorf("ingest: read head: %w", err)
	}
	b.heads[ws] = h
	return h, nil
}

func (b *batch) ingest(s *Store, it Item, now int64) (Result, error) {
	e := it.Envelope
	ws, err := s.workspaceID(b.ctx, b.tx, it.Workspace)
	if errors.Is(err, ErrNoWorkspace) {
		return Result{Err: fmt.Errorf("workspace %q: %w", it.Workspace, ErrNoWorkspace)}, nil
	}
	if err != nil {
		return Result{}, fmt.Errorf("ingest: %w", err)
	}
	body, err := e.Canonical()
	if err != nil {
		return Result{Err: fmt.Errorf("encode envelope: %w", err)}, nil
	}
	hash := sha256.Sum256(body)

	// Rules 1 and 2: (replicaId, clientSequence) identifies an envelope for ever.
	var (
		clientSeq, seq, ingUs int64
		id                    string
		oldHash               []byte
	)
	err = b.receipt.QueryRowContext(b.ctx, ws, e.ReplicaID, e.ClientSequence).Scan(&clientSeq, &id, &seq, &ingUs, &oldHash)
	switch {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return Result{}, fmt.Errorf("ingest: read receipt: %w", err)
	case clientSeq == e.ClientSequence && bytes.Equal(oldHash, hash[:]):
		return Result{Receipt: protocol.IngestReceipt{ID: id, ServerSequence: seq, IngestedAt: fromMicros(ingUs), Duplicate: true}}, nil
	case clientSeq == e.ClientSequence && id == e.ID:
		return Result{Err: &RuleError{protocol.CodeIDConflict, fmt.Sprintf(
			"replica %q already sent clientSequence %d for id %q with other content (serverSequence %d); a changed envelope needs a new clientSequence",
			e.ReplicaID, e.ClientSequence, id, seq)}}, nil
	case clientSeq == e.ClientSequence:
		return Result{Err: &RuleError{protocol.CodeClientSequenceRegression, fmt.Sprintf(
			"replica %q already used clientSequence %d for id %q; clientSequence values are never reused",
			e.ReplicaID, e.ClientSequence, id)}}, nil
	default:
		var highest int64
		if err := b.maxClient.QueryRowContext(b.ctx, ws, e.ReplicaID).Scan(&highest); err != nil {
			return Result{}, fmt.Errorf("ingest: read highest clientSequence: %w", err)
		}
		return Result{Err: &RuleError{protocol.CodeClientSequenceRegression, fmt.Sprintf(
			"clientSequence %d is not above replica %q's highest ingested clientSequence %d",
			e.ClientSequence, e.ReplicaID, highest)}}, nil
	}

	// Rule 3: opening events need a new id; changing events an existing one of their kind.
	kind := kindCode(e.Type.Kind())
	var existing int
	err = b.entity.QueryRowContext(b.ctx, ws, e.ID).Scan(&existing)
	found := err == nil
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return Result{}, fmt.Errorf("ingest: read entity: %w", err)
	}
	switch {
	case e.Type.Opens() && found:
		return Result{Err: &RuleError{protocol.CodeIDConflict, fmt.Sprintf(
			"%s: id %q already exists (a %s); opening events need a new id", e.Type, e.ID, protocol.Kinds[existing-1])}}, nil
	case !e.Type.Opens() && (!found || existing != kind):
		return Result{Err: &RuleError{protocol.CodeUnknownEntity, fmt.Sprintf(
			"%s: no %s with id %q exists in this workspace", e.Type, e.Type.Kind(), e.ID)}}, nil
	}

	h, err := b.head(ws)
	if err != nil {
		return Result{}, err
	}
	seq = h.seq + 1
	ingUs = max(now, h.lastUs) // ingestedAt never goes back, even if the clock does
	if _, err := b.insOp.ExecContext(b.ctx, ws, seq, kind, ingUs, body); err != nil {
		return Result{}, fmt.Errorf("ingest: insert op: %w", err)
	}
	if _, err := b.insReceipt.ExecContext(b.ctx, ws, e.ReplicaID, e.ClientSequence, e.ID, seq, ingUs, hash[:]); err != nil {
		return Result{}, fmt.Errorf("ingest: insert receipt: %w", err)
	}
	if e.Type.Opens() {
		if _, err := b.insEntity.ExecContext(b.ctx, ws, e.ID, kind); err != nil {
			return Result{}, fmt.Errorf("ingest: insert entity: %w", err)
		}
	}
	h.seq, h.lastUs, h.dirty = seq, ingUs, true

	logged := *e
	at := fromMicros(ingUs)
	logged.ServerSequence, logged.IngestedAt = seq, &at
	return Result{
		Receipt: protocol.IngestReceipt{ID: e.ID, ServerSequence: seq, IngestedAt: at},
		Logged:  &logged,
	}, nil
}
