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
	// NextSequence has the store assign the envelope's clientSequence: the
	// replica's highest ingested one plus one, decided inside the commit,
	// so concurrent processes sharing a replica never collide and a
	// number is never handed out twice. Envelope.ClientSequence is set.
	NextSequence bool
	// Key, if set, is the write's idempotency key: an envelope logged
	// under the same Key before answers with its original receipt
	// (Duplicate) instead of being logged again, whatever its content (a
	// retried MCP tool call over HTTP rebuilds its envelopes); one of
	// another kind is refused with ID_CONFLICT.
	Key string

	body []byte   // canonical encoding, computed by prepare
	hash [32]byte // its SHA-256
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
//
// The batch reads what it needs with a few set-wise queries and writes with
// multi-row inserts, so a commit of many envelopes costs little more than
// one of a single envelope. IngestBatch returns once the batch is durable.
func (s *Store) IngestBatch(ctx context.Context, items []Item) ([]Result, error) {
	results := make([]Result, len(items))
	for i := range items {
		if err := items[i].PrepareEarly(); err != nil {
			results[i].Err = err
		}
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("ingest: begin: %w", err)
	}
	defer tx.Rollback()
	b := &batch{s: s, ctx: ctx, tx: tx, d: NewDecider(micros(time.Now()))}
	if err := b.load(items, results); err != nil {
		return nil, err
	}
	for i := range items {
		if results[i].Err != nil {
			continue
		}
		if results[i], err = b.d.Decide(&items[i], b.receipt); err != nil {
			return nil, err
		}
	}
	if err := b.flush(); err != nil {
		return nil, err
	}
	if s.projections {
		if err := b.project(items, results); err != nil {
			return nil, err
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("ingest: commit: %w", err)
	}
	return results, nil
}

const (
	// The workspace's newest operation, with what retention remembers.
	selectHeadSQL = `SELECT w.retained_through, w.last_ingested_us, coalesce(o.id, 0), coalesce(o.ingested_us, 0)
		FROM workspaces w LEFT JOIN (SELECT id, ingested_us FROM ops WHERE id > ?1 AND id < ?2 ORDER BY id DESC LIMIT 1) o
		WHERE w.id = ?3`
	// What a batch reads of one workspace, in one statement: a row tagged
	// loadHead with selectHeadSQL's columns and how far the projections
	// went (proj_through), a row tagged loadReplica per replica named in
	// the JSON array ?4 with its highest clientSequence (NULL for none),
	// and a row tagged loadEntity per id of the JSON array ?5 that the
	// workspace has, with its kind.
	selectLoadSQL = `SELECT 0, '', w.retained_through, w.last_ingested_us, coalesce(o.id, 0), coalesce(o.ingested_us, 0),
			coalesce((SELECT seq FROM proj_through WHERE ws = ?3), 0)
		FROM workspaces w LEFT JOIN (SELECT id, ingested_us FROM ops WHERE id > ?1 AND id < ?2 ORDER BY id DESC LIMIT 1) o
		WHERE w.id = ?3
		UNION ALL
		SELECT 1, j.value, (SELECT max(client_seq) FROM receipts WHERE ws = ?3 AND replica = j.value), 0, 0, 0, 0 FROM json_each(?4) AS j
		UNION ALL
		SELECT 2, id, kind, 0, 0, 0, 0 FROM entities WHERE ws = ?3 AND id IN (SELECT value FROM json_each(?5))`
	selectReceiptSQL = `SELECT id, seq, ingested_us, hash FROM receipts WHERE ws = ? AND replica = ? AND client_seq = ?`
	// The receipts logged under the named idempotency keys.
	selectKeysSQL = `SELECT k.key, k.kind, r.replica, r.client_seq, r.id, r.seq, r.ingested_us, r.hash
		FROM idem_keys k JOIN receipts r ON r.ws = k.ws AND r.replica = k.replica AND r.client_seq = k.client_seq
		WHERE k.ws = ? AND k.key IN (SELECT value FROM json_each(?))`
	insertKeySQL = `INSERT INTO idem_keys (ws, key, kind, replica, client_seq) VALUES (?, ?, ?, ?, ?)`
)

// The tags of selectLoadSQL's rows.
const (
	loadHead = iota
	loadReplica
	loadEntity
)

// batch is one SQLite ingest transaction around a Decider.
type batch struct {
	s   *Store
	ctx context.Context
	tx  *sql.Tx
	d   *Decider
	// through is how far each workspace's projections went at the
	// batch's start, by workspace id (read by load).
	through map[int64]int64
}

// load resolves the batch's workspaces and reads, set-wise, each replica's
// highest clientSequence and the kinds of the ids the batch names.
func (b *batch) load(items []Item, results []Result) error {
	var names []string // the batch's workspaces, in order
	for i, it := range items {
		if results[i].Err != nil {
			continue
		}
		if _, ok := b.d.WS[it.Workspace]; ok {
			continue
		}
		id, err := b.s.workspaceID(b.ctx, b.tx, it.Workspace)
		if errors.Is(err, ErrNoWorkspace) {
			results[i].Err = fmt.Errorf("workspace %q: %w", it.Workspace, ErrNoWorkspace)
			continue
		} else if err != nil {
			return err
		}
		b.d.SetWorkspace(it.Workspace, WSState{ID: id}) // its head: below
		names = append(names, it.Workspace)
	}
	replicas, ids := b.d.Keys(items, results)
	// One statement per workspace reads its head, how far its projections
	// went, its replicas' highest clientSequence and the kinds of the ids
	// the batch names: each statement costs about as much as another, so
	// the common batch (one workspace) reads all it needs with one.
	b.through = make(map[int64]int64, len(names))
	for _, name := range names {
		st := b.d.WS[name]
		if err := b.loadWorkspace(st, replicas[st.ID], ids[st.ID]); err != nil {
			return err
		}
	}
	for ws, keys := range b.d.IdemKeys(items, results) {
		arg, _ := json.Marshal(keys)
		rows, err := b.s.txQuery(b.ctx, b.tx, selectKeysSQL, ws, string(arg))
		if err != nil {
			return fmt.Errorf("ingest: read keys: %w", err)
		}
		for rows.Next() {
			var k KeyRow
			var hash []byte
			if err := rows.Scan(&k.Key, &k.Kind, &k.Receipt.Replica, &k.Receipt.ClientSeq, &k.Receipt.ID, &k.Receipt.Seq, &k.Receipt.IngestedUs, &hash); err != nil {
				rows.Close()
				return fmt.Errorf("ingest: read keys: %w", err)
			}
			k.WS, k.Receipt.WS = ws, ws
			copy(k.Receipt.Hash[:], hash)
			b.d.Keyed[ReplicaKey{ws, k.Key}] = k
		}
		if err := rows.Close(); err != nil {
			return fmt.Errorf("ingest: read keys: %w", err)
		}
	}
	return nil
}

// loadWorkspace reads, with selectLoadSQL, workspace st's head (into st),
// how far its projections went (into b.through), and the highest
// clientSequence of the replicas and the kinds of the entity ids the
// batch names in it (into the decider).
func (b *batch) loadWorkspace(st *WSState, replicas, ids []string) error {
	if replicas == nil {
		replicas = []string{}
	}
	if ids == nil {
		ids = []string{}
	}
	rarg, _ := json.Marshal(replicas)
	iarg, _ := json.Marshal(ids)
	rows, err := b.s.txQuery(b.ctx, b.tx, selectLoadSQL, opID(st.ID, 0), opID(st.ID+1, 0), st.ID, string(rarg), string(iarg))
	if err != nil {
		return fmt.Errorf("ingest: load: %w", err)
	}
	head := false
	for rows.Next() {
		var tag int
		var name string
		var a sql.NullInt64
		var c, d, e, f int64
		if err := rows.Scan(&tag, &name, &a, &c, &d, &e, &f); err != nil {
			rows.Close()
			return fmt.Errorf("ingest: load: %w", err)
		}
		switch tag {
		case loadHead: // retained_through, last_ingested_us, newest op's id and ingested_us, projected through
			head = true
			st.Head, st.LastUs = max(a.Int64, opSeq(d)), max(c, e)
			b.through[st.ID] = f
		case loadReplica:
			if a.Valid {
				b.d.MaxClient[ReplicaKey{st.ID, name}] = a.Int64
			}
		case loadEntity:
			b.d.EntityKind[ReplicaKey{st.ID, name}] = int(a.Int64)
		}
	}
	if err := rows.Close(); err != nil {
		return fmt.Errorf("ingest: load: %w", err)
	}
	if !head {
		return fmt.Errorf("ingest: read head: %w", sql.ErrNoRows)
	}
	return nil
}

// receipt reads one stored receipt (the Decider's ReceiptLookup).
func (b *batch) receipt(ws int64, replica string, clientSeq int64) (ReceiptRow, bool, error) {
	r := ReceiptRow{WS: ws, Replica: replica, ClientSeq: clientSeq}
	var hash []byte
	err := b.s.txQueryRow(b.ctx, b.tx, selectReceiptSQL, ws, replica, clientSeq).Scan(&r.ID, &r.Seq, &r.IngestedUs, &hash)
	if errors.Is(err, sql.ErrNoRows) {
		return r, false, nil
	}
	if err != nil {
		return r, false, fmt.Errorf("ingest: read receipt: %w", err)
	}
	copy(r.Hash[:], hash)
	return r, true, nil
}

// project applies the batch's logged envelopes to the projections.
func (b *batch) project(items []Item, results []Result) error {
	have := map[int64]map[int64]*protocol.Envelope{}
	for i, r := range results {
		if r.Logged == nil {
			continue
		}
		ws := b.d.WS[items[i].Workspace].ID
		if have[ws] == nil {
			have[ws] = map[int64]*protocol.Envelope{}
		}
		have[ws][r.Logged.ServerSequence] = r.Logged
	}
	for _, st := range b.d.WS {
		if err := b.s.projectFrom(b.ctx, b.tx, st.ID, b.through[st.ID], st.Head, have[st.ID]); err != nil {
			return err
		}
	}
	return nil
}

// flush writes the decider's rows with multi-row inserts.
func (b *batch) flush() error {
	d := b.d
	ops := make([]any, 0, 4*len(d.Ops))
	for _, o := range d.Ops {
		ops = append(ops, opID(o.WS, o.Seq), o.Kind, o.IngestedUs, o.Body)
	}
	receipts := make([]any, 0, 7*len(d.Receipts))
	for i := range d.Receipts {
		r := &d.Receipts[i]
		receipts = append(receipts, r.WS, r.Replica, r.ClientSeq, r.ID, r.Seq, r.IngestedUs, r.Hash[:])
	}
	entities := make([]any, 0, 3*len(d.Entities))
	for _, e := range d.Entities {
		entities = append(entities, e.WS, e.ID, e.Kind)
	}
	for _, w := range [...]struct {
		table int
		rows  []any
	}{{insOps, ops}, {insReceipts, receipts}, {insEntities, entities}} {
		if err := b.s.insertRows(b.ctx, b.tx, w.table, w.rows); err != nil {
			return fmt.Errorf("ingest: %w", err)
		}
	}
	for _, k := range d.KeyRows {
		if _, err := b.s.txExec(b.ctx, b.tx, insertKeySQL, k.WS, k.Key, k.Kind, k.Receipt.Replica, k.Receipt.ClientSeq); err != nil {
			return fmt.Errorf("ingest: key: %w", err)
		}
	}
	return nil
}

// insertChunks are the row counts of the prepared multi-row inserts; a
// batch of n rows is written as n's binary decomposition.
var insertChunks = [...]int{128, 64, 32, 16, 8, 4, 2, 1}

// The tables written with multi-row inserts, indexes into insertTables.
const (
	insOps = iota
	insReceipts
	insEntities
	insCaptureEvents
)

var insertTables = [...]struct {
	table string
	cols  int
}{
	insOps:           {"ops (id, kind, ingested_us, body)", 4},
	insReceipts:      {"receipts (ws, replica, client_seq, id, seq, ingested_us, hash)", 7},
	insEntities:      {"entities (ws, id, kind)", 3},
	insCaptureEvents: {"capture_events (op, seq, t, event, duration_ms, payload, received_us)", 7},
}

// insertStmts are the multi-row inserts prepared at Open: [t][k] writes
// insertChunks[k] rows into insertTables[t].
type insertStmts [len(insertTables)][len(insertChunks)]*sql.Stmt

// insertSQL is the text of a multi-row insert of rows rows into table.
func insertSQL(table string, cols, rows int) string {
	row := "(" + strings.TrimSuffix(strings.Repeat("?,", cols), ",") + ")"
	return "INSERT INTO " + table + " VALUES " + strings.TrimSuffix(strings.Repeat(row+",", rows), ",")
}

// writerStatements lists the statements, other than the multi-row
// inserts, that the writer's transactions run: prepareWriter prepares
// them at Open.
func writerStatements() []string {
	qs := []string{selectLoadSQL, selectHeadSQL, selectReceiptSQL, selectKeysSQL, insertKeySQL}
	qs = append(qs, projectionStatements...)
	qs = append(qs, captureStatements...)
	return append(qs, mirrorStatements...)
}

// insertRows writes args (insertTables[t].cols values per row) into table
// t in tx with the prepared multi-row inserts.
func (s *Store) insertRows(ctx context.Context, tx *sql.Tx, t int, args []any) error {
	cols := insertTables[t].cols
	if len(args)%cols != 0 {
		return fmt.Errorf("insert into %s: %d values are not whole rows of %d", insertTables[t].table, len(args), cols)
	}
	for k, n := range insertChunks {
		for len(args) >= n*cols {
			st := s.inserts[t][k]
			if st == nil { // Options.Lazy
				var err error
				if st, err = tx.PrepareContext(ctx, insertSQL(insertTables[t].table, insertTables[t].cols, n)); err != nil {
					return fmt.Errorf("insert into %s: %w", insertTables[t].table, err)
				}
				defer st.Close()
			} else {
				st = tx.StmtContext(ctx, st)
			}
			if _, err := st.ExecContext(ctx, args[:n*cols]...); err != nil {
				return fmt.Errorf("insert into %s: %w", insertTables[t].table, err)
			}
			args = args[n*cols:]
		}
	}
	return nil
}
