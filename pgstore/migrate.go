package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// migrations are applied in order; crosscode_schema.version counts how many
// ran. Never edit a released migration: append a new one.
var migrations = []string{
	// 1: the workspace log.
	`
CREATE TABLE workspaces (
	id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	name             text NOT NULL UNIQUE,
	plan             text NOT NULL,
	retained_through bigint NOT NULL DEFAULT 0, -- highest serverSequence retention deleted
	created_us       bigint NOT NULL
);
-- Each workspace's counter: ingest locks the row, numbers the batch from
-- seq and raises it in the same transaction, so a workspace's commits are
-- in serverSequence order, without gaps. last_us (the newest ingestedAt)
-- keeps ingestedAt from going back, whatever retention deletes.
CREATE TABLE heads (
	ws      bigint PRIMARY KEY REFERENCES workspaces (id),
	seq     bigint NOT NULL DEFAULT 0,
	last_us bigint NOT NULL DEFAULT 0
);
CREATE TABLE tokens (
	hash       bytea PRIMARY KEY, -- SHA-256 of the token; the token itself is never stored
	ws         bigint NOT NULL REFERENCES workspaces (id),
	created_us bigint NOT NULL
);
-- The ordered log; retention deletes old rows in serverSequence order.
CREATE TABLE ops (
	ws          bigint NOT NULL,
	seq         bigint NOT NULL,
	kind        smallint NOT NULL,
	ingested_us bigint NOT NULL,
	body        bytea NOT NULL, -- canonical envelope JSON without serverSequence/ingestedAt
	PRIMARY KEY (ws, seq)
);
CREATE INDEX ops_by_kind ON ops (ws, kind, seq);
-- One row per envelope ever ingested, kept for ever: (replicaId,
-- clientSequence) identifies an envelope, and a retried upload gets its
-- original receipt even after retention deleted the operation.
CREATE TABLE receipts (
	ws          bigint NOT NULL,
	replica     text NOT NULL,
	client_seq  bigint NOT NULL,
	id          text NOT NULL,
	seq         bigint NOT NULL,
	ingested_us bigint NOT NULL,
	hash        bytea NOT NULL, -- SHA-256 of the canonical envelope
	PRIMARY KEY (ws, replica, client_seq)
);
-- Every entity id ever opened, with its kind, kept for ever.
CREATE TABLE entities (
	ws   bigint NOT NULL,
	id   text NOT NULL,
	kind smallint NOT NULL,
	PRIMARY KEY (ws, id)
);
CREATE TABLE presence (
	ws         bigint NOT NULL,
	replica    text NOT NULL,
	actor      text NOT NULL,
	session    text NOT NULL,
	agent      text NOT NULL, -- JSON, or ''
	status     text NOT NULL,
	updated_us bigint NOT NULL,
	PRIMARY KEY (ws, replica)
);
`,
	// 2: which instance holds each replica's subscriptions, so that a
	// replica goes offline when its last one ends on any instance, and
	// when the instance holding it dies (its heartbeat stops).
	`
CREATE TABLE instances (
	id      text PRIMARY KEY,
	seen_us bigint NOT NULL -- the instance's last heartbeat
);
CREATE INDEX instances_by_seen ON instances (seen_us);
CREATE TABLE connections (
	ws       bigint NOT NULL,
	replica  text NOT NULL,
	instance text NOT NULL,
	PRIMARY KEY (ws, replica, instance)
);
CREATE INDEX connections_by_instance ON connections (instance);
`,
	// 3: one-round-trip ingest numbers in the database (fast.go):
	// crosscode_ingest locks the batch's counter rows in id order, fails
	// the transaction with serialization_failure unless the replicas'
	// highest clientSequences (-1 for none) and the entities' kinds (0 for
	// none) are what the instance decided on, numbers each workspace's
	// operations (relative numbers 1..n from the instance) from its head,
	// writes the rows and returns each workspace's head before the batch
	// and the batch's ingestedAt.
	`
CREATE FUNCTION crosscode_ingest(now_us bigint, hws bigint[], hn bigint[],
	rws bigint[], rname text[], rmax bigint[], ews bigint[], eid text[], ekind smallint[],
	ows bigint[], orel bigint[], okind smallint[], obody bytea[],
	cws bigint[], crep text[], ccs bigint[], cid text[], crel bigint[], chash bytea[],
	nws bigint[], nid text[], nkind smallint[])
RETURNS TABLE (o_ws bigint, o_base bigint, o_us bigint) LANGUAGE plpgsql AS $$
BEGIN
	PERFORM 1 FROM heads h WHERE h.ws = ANY (hws) ORDER BY h.ws FOR UPDATE;
	IF EXISTS (SELECT 1 FROM unnest(rws, rname, rmax) AS v (ws, replica, mx)
			WHERE coalesce((SELECT max(x.client_seq) FROM receipts x WHERE x.ws = v.ws AND x.replica = v.replica), -1) <> v.mx)
		OR EXISTS (SELECT 1 FROM unnest(ews, eid, ekind) AS v (ws, id, kind)
			WHERE coalesce((SELECT e.kind FROM entities e WHERE e.ws = v.ws AND e.id = v.id), 0) <> v.kind)
	THEN
		RAISE EXCEPTION 'crosscode: a replica or an entity moved since this instance read it' USING ERRCODE = 'serialization_failure';
	END IF;
	RETURN QUERY
	WITH moved AS (
		UPDATE heads h SET seq = h.seq + v.n, last_us = greatest(h.last_us, now_us)
		FROM unnest(hws, hn) AS v (ws, n) WHERE h.ws = v.ws AND v.n > 0
		RETURNING h.ws, h.seq - v.n AS base, h.last_us AS us
	), o AS (
		INSERT INTO ops (ws, seq, kind, ingested_us, body)
		SELECT x.ws, m.base + x.rel, x.kind, m.us, x.body
		FROM unnest(ows, orel, okind, obody) AS x (ws, rel, kind, body) JOIN moved m ON m.ws = x.ws
	), r AS (
		INSERT INTO receipts (ws, replica, client_seq, id, seq, ingested_us, hash)
		SELECT x.ws, x.replica, x.cs, x.id, m.base + x.rel, m.us, x.hash
		FROM unnest(cws, crep, ccs, cid, crel, chash) AS x (ws, replica, cs, id, rel, hash) JOIN moved m ON m.ws = x.ws
	), e AS (
		INSERT INTO entities (ws, id, kind) SELECT * FROM unnest(nws, nid, nkind)
	)
	SELECT m.ws, m.base, m.us FROM moved m;
END
$$;
`,
	// 4: idempotency keys (a write logged under a key, the n-th write of
	// one MCP tool call over HTTP, is logged once; kept for ever, like
	// receipts), and each MCP session's news position.
	`
CREATE TABLE idem_keys (
	ws         bigint NOT NULL,
	key        text NOT NULL,
	kind       smallint NOT NULL,
	replica    text NOT NULL,
	client_seq bigint NOT NULL,
	PRIMARY KEY (ws, key)
);
CREATE TABLE news_marks (
	ws         bigint NOT NULL,
	key        text NOT NULL,
	seq        bigint NOT NULL,
	updated_us bigint NOT NULL,
	PRIMARY KEY (ws, key)
);
CREATE INDEX news_marks_by_age ON news_marks (updated_us);
`,
}

// SchemaVersion is the schema version this binary writes.
var SchemaVersion = len(migrations)

// migrationLock is the advisory lock key that serialises migrations of
// instances starting at once.
const migrationLock = 0x63636d5f6d6967 // "ccm_mig"

// migrate applies the missing migrations in one transaction (PostgreSQL's
// DDL is transactional: a failed migration leaves the schema as it was),
// under an advisory lock, so instances starting together apply them once.
func (s *Store) migrate(ctx context.Context) error {
	err := s.tx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", int64(migrationLock)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "CREATE TABLE IF NOT EXISTS crosscode_schema (version int NOT NULL)"); err != nil {
			return err
		}
		v, err := version(ctx, tx)
		if err != nil {
			return err
		}
		if v > len(migrations) {
			return fmt.Errorf("database schema version %d is newer than this binary supports (%d): upgrade crosscode-mcp", v, len(migrations))
		}
		for i := v; i < len(migrations); i++ {
			if _, err := tx.Exec(ctx, migrations[i]); err != nil {
				return fmt.Errorf("migration %d failed, nothing was changed: %w", i+1, err)
			}
		}
		if v == len(migrations) {
			return nil
		}
		if _, err := tx.Exec(ctx, "DELETE FROM crosscode_schema"); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, "INSERT INTO crosscode_schema (version) VALUES ($1)", len(migrations))
		return err
	})
	if err != nil {
		return fmt.Errorf("migrate database: %w", Explain(err))
	}
	return nil
}

type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func version(ctx context.Context, q querier) (int, error) {
	var v int
	err := q.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM crosscode_schema").Scan(&v)
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "42P01" { // no table: a new database
		return 0, nil
	}
	return v, err
}

// Version reports the database's schema version (0 for a new database).
func (s *Store) Version(ctx context.Context) (int, error) {
	v, err := version(ctx, s.pool)
	return v, Explain(err)
}
