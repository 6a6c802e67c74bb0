package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/crosscode/crosscode-mcp/protocol"
)

// Entity is one entity's projected state.
type Entity struct {
	Kind       protocol.Kind
	ID         string
	Actor      string // claim: current holder; task: creator; handoff: from; others: author
	Target     string // handoff: toActorId; task: assignee
	Status     string
	Exclusive  bool
	CreatedSeq int64 // serverSequence of the opening event
	Seq        int64 // serverSequence of the last change
	IngestedAt time.Time
	UpdatedAt  time.Time
	ExpiresAt  time.Time       // claims and intents; zero = never. A queued claim: see ClaimQueued
	Body       json.RawMessage // the latest payload
	Detail     string          // claims: the Denial, as JSON
	// GrantAt is, for a queued claim, when the log so far grants it
	// (zero: not before WaitUntil); for one granted after its ingest
	// (status active since), when it was.
	GrantAt time.Time
	// WaitUntil is, for a claim that asked to wait, when its wait ends:
	// its ingestedAt plus waitUntil minus createdAt.
	WaitUntil time.Time
}

// Current reports the claim or intent status at now: an active one whose
// expiry passed is expired; a queued claim is active once its grant time
// has come (and expired after its lease), wait_expired once its wait
// ended without a grant, and queued until then.
func (e *Entity) Current(now time.Time) string {
	if e.Status == ClaimQueued {
		if e.GrantedBy(now) {
			if !e.ExpiresAt.After(now) {
				return ClaimExpired
			}
			return ClaimActive
		}
		if !e.WaitUntil.After(now) {
			return ClaimWaitExpired
		}
		return ClaimQueued
	}
	if e.Status == ClaimActive && !e.ExpiresAt.IsZero() && !e.ExpiresAt.After(now) {
		return ClaimExpired
	}
	return e.Status
}

// GrantedBy reports whether a claim that waited was granted by now.
func (e *Entity) GrantedBy(now time.Time) bool {
	return !e.GrantAt.IsZero() && !e.GrantAt.After(now)
}

// Denial decodes a denied claim's reason.
func (e *Entity) Denial() *Denial {
	if e.Detail == "" {
		return nil
	}
	var d Denial
	if json.Unmarshal([]byte(e.Detail), &d) != nil {
		return nil
	}
	return &d
}

const entityCols = "kind, id, actor, target, status, exclusive, created_seq, seq, ingested_us, updated_us, expires_us, body, detail, grant_us, wait_us"

func scanEntity(rows interface{ Scan(...any) error }) (*Entity, error) {
	var e Entity
	var kind int
	var ing, upd, exp, grant, wait int64
	if err := rows.Scan(&kind, &e.ID, &e.Actor, &e.Target, &e.Status, &e.Exclusive, &e.CreatedSeq, &e.Seq, &ing, &upd, &exp, &e.Body, &e.Detail, &grant, &wait); err != nil {
		return nil, err
	}
	if grant != 0 {
		e.GrantAt = fromMicros(grant)
	}
	if wait != 0 {
		e.WaitUntil = fromMicros(wait)
	}
	if kind >= 1 && kind <= len(protocol.Kinds) {
		e.Kind = protocol.Kinds[kind-1]
	}
	e.IngestedAt, e.UpdatedAt = fromMicros(ing), fromMicros(upd)
	if exp != 0 {
		e.ExpiresAt = fromMicros(exp)
	}
	return &e, nil
}

// ErrNotFound is returned for an entity that is not in the projections.
var ErrNotFound = errors.New("not found")

// Entity reads one entity's projected state.
func (s *Store) Entity(ctx context.Context, workspace string, kind protocol.Kind, id string) (*Entity, error) {
	ws, err := s.workspaceID(ctx, s.r, workspace)
	if err != nil {
		return nil, err
	}
	e, err := scanEntity(s.readQueryRow(ctx, "SELECT "+entityCols+" FROM proj WHERE ws = ? AND kind = ? AND id = ?", ws, kindCode(kind), id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%s %q: %w", kind, id, ErrNotFound)
	}
	return e, err
}

// EntityQuery selects projected entities of one kind.
type EntityQuery struct {
	Workspace string
	Kind      protocol.Kind
	Status    []string  // any of these; empty = all
	Actor     string    // only this actor's
	NotActor  string    // not this actor's
	Target    string    // only those targeting this actor (handoff to, task assignee)
	LiveAt    time.Time // non-zero: only those not expired at this time (a queued claim: still waiting, or granted and not expired)
	// HeldAt non-zero: only claims that hold their paths at this time:
	// active and not expired, or queued and granted by then (Status is
	// then ignored).
	HeldAt time.Time
	Before int64 // paging, newest first: created_seq below this (0 = from the newest)
	Limit  int   // default 50
}

// Entities lists projected entities, newest first.
func (s *Store) Entities(ctx context.Context, q EntityQuery) ([]*Entity, error) {
	ws, err := s.workspaceID(ctx, s.r, q.Workspace)
	if err != nil {
		return nil, err
	}
	query, args := entitiesSQL(ws, q, false)
	rows, err := s.readQuery(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("entities: %w", err)
	}
	defer rows.Close()
	var out []*Entity
	for rows.Next() {
		e, err := scanEntity(rows)
		if err != nil {
			return nil, fmt.Errorf("entities: %w", err)
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// CountEntities counts the entities q selects (its Before and Limit aside).
func (s *Store) CountEntities(ctx context.Context, q EntityQuery) (int, error) {
	ws, err := s.workspaceID(ctx, s.r, q.Workspace)
	if err != nil {
		return 0, err
	}
	q.Before = 0
	query, args := entitiesSQL(ws, q, true)
	var n int
	if err := s.readQueryRow(ctx, query, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("count entities: %w", err)
	}
	return n, nil
}

// entitiesSQL builds q's statement, naming the index that serves it: the
// projections keep every entity's history (released claims, superseded
// intents, done tasks), and without statistics SQLite's planner prefers
// the primary key's (ws, kind) range, reading that whole history. Each
// index starts with (ws, kind) and the most selective filter q has.
func entitiesSQL(ws int64, q EntityQuery, count bool) (string, []any) {
	var index string
	switch {
	case q.Actor != "":
		index = "proj_by_actor" // (ws, kind, actor, status)
	case q.Target != "":
		index = "proj_by_target" // (ws, kind, target, status)
	case len(q.Status) > 0 || !q.HeldAt.IsZero():
		index = "proj_by_status" // (ws, kind, status, created_seq)
	default:
		index = "proj_by_created" // (ws, kind, created_seq)
	}
	where := []string{"ws = ?", "kind = ?"}
	args := []any{ws, kindCode(q.Kind)}
	if q.Actor != "" {
		where, args = append(where, "actor = ?"), append(args, q.Actor)
	}
	if q.Target != "" {
		where, args = append(where, "target = ?"), append(args, q.Target)
	}
	if !q.HeldAt.IsZero() {
		q.Status = nil
		where = append(where, "status IN ('active', 'queued') AND expires_us > ? AND (status = 'active' OR (grant_us > 0 AND grant_us <= ?))")
		args = append(args, micros(q.HeldAt), micros(q.HeldAt))
	}
	switch len(q.Status) {
	case 0:
	case 1:
		where, args = append(where, "status = ?"), append(args, q.Status[0])
	default:
		where = append(where, "status IN (SELECT value FROM json_each(?))")
		args = append(args, string(mustJSON(q.Status)))
	}
	if q.NotActor != "" {
		where, args = append(where, "actor != ?"), append(args, q.NotActor)
	}
	if !q.LiveAt.IsZero() {
		where, args = append(where, "(expires_us = 0 OR expires_us > ?)"), append(args, micros(q.LiveAt))
	}
	if q.Before > 0 {
		where, args = append(where, "created_seq < ?"), append(args, q.Before)
	}
	from := " FROM proj INDEXED BY " + index + " WHERE " + strings.Join(where, " AND ")
	if count {
		return "SELECT count(*)" + from, args
	}
	limit := q.Limit
	if limit <= 0 {
		limit = 50
	}
	return "SELECT " + entityCols + from + " ORDER BY created_seq DESC LIMIT ?", append(args, limit)
}

// ConflictingClaims returns the claims active at `at`, of actors other than
// skipActor, that overlap patterns (any exclusivity).
func (s *Store) ConflictingClaims(ctx context.Context, workspace string, patterns []string, skipActor string, at time.Time) ([]Conflict, error) {
	ws, err := s.workspaceID(ctx, s.r, workspace)
	if err != nil {
		return nil, err
	}
	return overlappingClaims(ctx, s.readQuery, ws, patterns, skipActor, at, nil)
}

// selEntitiesByID reads the entities of one kind named in a JSON array,
// by id.
const selEntitiesByID = "SELECT " + entityCols + " FROM proj WHERE ws = ? AND kind = ? AND id IN (SELECT value FROM json_each(?)) ORDER BY id"

// OverlappingIntents returns the intents current at `at`, of actors other
// than skipActor, whose paths overlap patterns, by id. It reads them from
// one snapshot: the overlap lookup and then the hits' entities in one query
// (in a read transaction, when the lookup found some or takes several
// statements).
func (s *Store) OverlappingIntents(ctx context.Context, workspace string, patterns []string, skipActor string, at time.Time) ([]*Entity, error) {
	ws, err := s.workspaceID(ctx, s.r, workspace)
	if err != nil {
		return nil, err
	}
	if prefixes, all := lookupPrefixes(patterns); all || len(prefixes) == 1 {
		// The lookup is one statement, a snapshot of its own: when it
		// finds none (the usual answer), no transaction is needed.
		hits, err := overlapping(ctx, s.readQuery, ws, protocol.KindIntent, [2]string{"active", "active"}, patterns, skipActor, at)
		if err != nil || len(hits) == 0 {
			return nil, err
		}
	}
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("intents: %w", err)
	}
	defer tx.Rollback()
	q := func(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
		return s.readTxQuery(ctx, tx, query, args...)
	}
	return overlappingIntents(ctx, q, ws, patterns, skipActor, at)
}

// overlappingIntents is OverlappingIntents on q.
func overlappingIntents(ctx context.Context, q queryFunc, ws int64, patterns []string, skipActor string, at time.Time) ([]*Entity, error) {
	hits, err := overlapping(ctx, q, ws, protocol.KindIntent, [2]string{"active", "active"}, patterns, skipActor, at)
	if err != nil || len(hits) == 0 {
		return nil, err
	}
	ids := make([]string, len(hits))
	for i, h := range hits {
		ids[i] = h.id
	}
	rows, err := q(ctx, selEntitiesByID, ws, kindCode(protocol.KindIntent), string(mustJSON(ids)))
	if err != nil {
		return nil, fmt.Errorf("intents: %w", err)
	}
	defer rows.Close()
	out := make([]*Entity, 0, len(hits))
	for rows.Next() {
		e, err := scanEntity(rows)
		if err != nil {
			return nil, fmt.Errorf("intents: %w", err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("intents: %w", err)
	}
	return out, nil
}

// ProjectedThrough is the serverSequence the workspace's projections have applied.
func (s *Store) ProjectedThrough(ctx context.Context, workspace string) (int64, error) {
	ws, err := s.workspaceID(ctx, s.r, workspace)
	if err != nil {
		return 0, err
	}
	var seq int64
	err = s.readQueryRow(ctx, "SELECT seq FROM proj_through WHERE ws = ?", ws).Scan(&seq)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return seq, err
}

// Project brings the workspace's projections up to its head (operations
// logged by processes that do not project, or mirrored).
func (s *Store) Project(ctx context.Context, workspace string) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("project: %w", err)
	}
	defer tx.Rollback()
	ws, err := s.workspaceID(ctx, tx, workspace)
	if err != nil {
		return err
	}
	// The newest logged operation (selectHeadSQL also reads what retention
	// remembers, which projecting does not need).
	var retained, retainedUs, last, lastUs int64
	if err := s.txQueryRow(ctx, tx, selectHeadSQL, opID(ws, 0), opID(ws+1, 0), ws).Scan(&retained, &retainedUs, &last, &lastUs); err != nil {
		return fmt.Errorf("project: %w", err)
	}
	if err := s.projectThrough(ctx, tx, ws, opSeq(last), nil); err != nil {
		return err
	}
	return tx.Commit()
}
