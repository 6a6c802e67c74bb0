package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
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
	// NextSequence has the store assign the envelope's clientSequence: the
	// replica's highest ingested one plus one, decided inside the commit,
	// so concurrent processes sharing a replica never collide and a
	// number is never handed out twice. Envelope.ClientSequence is set.
	NextSequence bool

	body []byte   // canonical encoding, computed by prepare
	hash [32]byte // its SHA-256
}

// prepare computes the item's canonical body and hash, off the writer's path.
func (it *Item) prepare() error {
	if it.body != nil {
		return nil
	}
	body, err := encodeEnvelope(it.Envelope)
	if err != nil {
		return fmt.Errorf("encode envelope: %w", err)
	}
	it.body, it.hash = body, sha256.Sum256(body)
	return nil
}

// prepareEarly is prepare for the callers that encode before taking the
// writer: an item with NextSequence is encoded only once its
// clientSequence is decided, inside the commit (see decide), so encoding
// it earlier would be wasted.
func (it *Item) prepareEarly() error {
	if it.NextSequence {
		return nil
	}
	return it.prepare()
}

// encodeEnvelope is (*protocol.Envelope).Canonical, through a variable so
// that tests can count the encodings.
var encodeEnvelope = (*protocol.Envelope).Canonical

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
		if err := items[i].prepareEarly(); err != nil {
			results[i].Err = err
		}
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("ingest: begin: %w", err)
	}
	defer tx.Rollback()
	b := &batch{s: s, ctx: ctx, tx: tx, now: micros(time.Now()), ws: map[string]*wsState{}}
	if err := b.load(items, results); err != nil {
		return nil, err
	}
	for i := range items {
		if results[i].Err != nil {
			continue
		}
		if results[i], err = b.decide(&items[i]); err != nil {
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
	// The highest clientSequence of each replica named in a JSON array.
	selectReplicasSQL = `SELECT j.value, (SELECT max(client_seq) FROM receipts WHERE ws = ? AND replica = j.value) FROM json_each(?) AS j`
	selectEntitiesSQL = `SELECT id, kind FROM entities WHERE ws = ? AND id IN (SELECT value FROM json_each(?))`
	// The workspace's newest operation, with what retention remembers.
	selectHeadSQL = `SELECT w.retained_through, w.last_ingested_us, coalesce(o.id, 0), coalesce(o.ingested_us, 0)
		FROM workspaces w LEFT JOIN (SELECT id, ingested_us FROM ops WHERE id > ?1 AND id < ?2 ORDER BY id DESC LIMIT 1) o
		WHERE w.id = ?3`
	selectReceiptSQL = `SELECT id, seq, ingested_us, hash FROM receipts WHERE ws = ? AND replica = ? AND client_seq = ?`
)

type replicaKey struct {
	ws      int64
	replica string
}

type receiptKey struct {
	replicaKey
	clientSeq int64
}

type receiptRow struct {
	id    string
	seq   int64
	ingUs int64
	hash  [32]byte
}

// wsState is what a batch knows of one workspace.
type wsState struct {
	id     int64
	head   int64
	lastUs int64
}

type batch struct {
	s   *Store
	ctx context.Context
	tx  *sql.Tx
	now int64

	ws         map[string]*wsState
	maxClient  map[replicaKey]int64      // highest clientSequence per replica, DB and batch
	inBatch    map[receiptKey]receiptRow // receipts written by this batch
	entityKind map[replicaKey]int        // (ws, id) -> kind, for ids the batch touches; 0 = none
	ops        []any                     // rows for the ops insert
	receipts   []any                     // rows for the receipts insert
	entities   []any                     // rows for the entities insert
}

// load resolves the batch's workspaces and reads, set-wise, each replica's
// highest clientSequence and the kinds of the ids the batch names.
func (b *batch) load(items []Item, results []Result) error {
	b.maxClient = map[replicaKey]int64{}
	b.inBatch = map[receiptKey]receiptRow{}
	b.entityKind = map[replicaKey]int{}
	replicas := map[int64][]string{}
	ids := map[int64][]string{}
	for i, it := range items {
		if results[i].Err != nil {
			continue
		}
		st, err := b.workspace(it.Workspace)
		if errors.Is(err, ErrNoWorkspace) {
			results[i].Err = fmt.Errorf("workspace %q: %w", it.Workspace, ErrNoWorkspace)
			continue
		}
		if err != nil {
			return err
		}
		rk := replicaKey{st.id, it.Envelope.ReplicaID}
		if _, ok := b.maxClient[rk]; !ok {
			b.maxClient[rk] = -1
			replicas[st.id] = append(replicas[st.id], rk.replica)
		}
		ek := replicaKey{st.id, it.Envelope.ID}
		if _, ok := b.entityKind[ek]; !ok {
			b.entityKind[ek] = 0
			ids[st.id] = append(ids[st.id], ek.replica)
		}
	}
	for ws, names := range replicas {
		arg, _ := json.Marshal(names)
		rows, err := b.s.txQuery(b.ctx, b.tx, selectReplicasSQL, ws, string(arg))
		if err != nil {
			return fmt.Errorf("ingest: read replicas: %w", err)
		}
		for rows.Next() {
			var name string
			var highest sql.NullInt64
			if err := rows.Scan(&name, &highest); err != nil {
				rows.Close()
				return fmt.Errorf("ingest: read replicas: %w", err)
			}
			if highest.Valid {
				b.maxClient[replicaKey{ws, name}] = highest.Int64
			}
		}
		if err := rows.Close(); err != nil {
			return fmt.Errorf("ingest: read replicas: %w", err)
		}
	}
	for ws, names := range ids {
		arg, _ := json.Marshal(names)
		rows, err := b.s.txQuery(b.ctx, b.tx, selectEntitiesSQL, ws, string(arg))
		if err != nil {
			return fmt.Errorf("ingest: read entities: %w", err)
		}
		for rows.Next() {
			var id string
			var kind int
			if err := rows.Scan(&id, &kind); err != nil {
				rows.Close()
				return fmt.Errorf("ingest: read entities: %w", err)
			}
			b.entityKind[replicaKey{ws, id}] = kind
		}
		if err := rows.Close(); err != nil {
			return fmt.Errorf("ingest: read entities: %w", err)
		}
	}
	return nil
}

func (b *batch) workspace(name string) (*wsState, error) {
	if st, ok := b.ws[name]; ok {
		return st, nil
	}
	id, err := b.s.workspaceID(b.ctx, b.tx, name)
	if err != nil {
		return nil, err
	}
	st := &wsState{id: id}
	var retained, retainedUs, last, lastUs int64
	if err := b.s.txQueryRow(b.ctx, b.tx, selectHeadSQL, opID(id, 0), opID(id+1, 0), id).Scan(&retained, &retainedUs, &last, &lastUs); err != nil {
		return nil, fmt.Errorf("ingest: read head: %w", err)
	}
	st.head, st.lastUs = max(retained, opSeq(last)), max(retainedUs, lastUs)
	b.ws[name] = st
	return st, nil
}

// decide applies the rules of spec section 4 to one item, in order.
func (b *batch) decide(it *Item) (Result, error) {
	e := it.Envelope
	st := b.ws[it.Workspace]
	rk := replicaKey{st.id, e.ReplicaID}

	if it.NextSequence {
		e.ClientSequence = max(b.maxClient[rk], 0) + 1
		it.body = nil
		if err := it.prepare(); err != nil {
			return Result{Err: err}, nil
		}
	}
	// Rules 1 and 2: (replicaId, clientSequence) identifies an envelope for ever.
	if highest := b.maxClient[rk]; e.ClientSequence <= highest {
		old, found, err := b.receipt(receiptKey{rk, e.ClientSequence})
		switch {
		case err != nil:
			return Result{}, err
		case !found:
			return refuse(protocol.CodeClientSequenceRegression,
				"clientSequence %d is not above replica %q's highest ingested clientSequence %d", e.ClientSequence, e.ReplicaID, highest)
		case old.hash == it.hash:
			return Result{Receipt: protocol.IngestReceipt{ID: old.id, ServerSequence: old.seq, IngestedAt: fromMicros(old.ingUs), Duplicate: true}}, nil
		case old.id == e.ID:
			return refuse(protocol.CodeIDConflict,
				"replica %q already sent clientSequence %d for id %q with other content (serverSequence %d); a changed envelope needs a new clientSequence",
				e.ReplicaID, e.ClientSequence, old.id, old.seq)
		default:
			return refuse(protocol.CodeClientSequenceRegression,
				"replica %q already used clientSequence %d for id %q; clientSequence values are never reused", e.ReplicaID, e.ClientSequence, old.id)
		}
	}

	// Rule 3: opening events need a new id; changing events an existing one of their kind.
	ek := replicaKey{st.id, e.ID}
	kind, existing := kindCode(e.Type.Kind()), b.entityKind[ek]
	switch {
	case e.Type.Opens() && existing != 0:
		return refuse(protocol.CodeIDConflict, "%s: id %q already exists (a %s); opening events need a new id", e.Type, e.ID, protocol.Kinds[existing-1])
	case !e.Type.Opens() && existing != kind:
		return refuse(protocol.CodeUnknownEntity, "%s: no %s with id %q exists in this workspace", e.Type, e.Type.Kind(), e.ID)
	}

	seq := st.head + 1
	ingUs := max(b.now, st.lastUs) // ingestedAt never goes back, even if the clock does
	st.head, st.lastUs = seq, ingUs
	b.maxClient[rk] = e.ClientSequence
	b.inBatch[receiptKey{rk, e.ClientSequence}] = receiptRow{id: e.ID, seq: seq, ingUs: ingUs, hash: it.hash}
	if e.Type.Opens() {
		b.entityKind[ek] = kind
		b.entities = append(b.entities, st.id, e.ID, kind)
	}
	b.ops = append(b.ops, opID(st.id, seq), kind, ingUs, it.body)
	b.receipts = append(b.receipts, st.id, e.ReplicaID, e.ClientSequence, e.ID, seq, ingUs, it.hash[:])

	logged := *e
	at := fromMicros(ingUs)
	logged.ServerSequence, logged.IngestedAt = seq, &at
	return Result{Receipt: protocol.IngestReceipt{ID: e.ID, ServerSequence: seq, IngestedAt: at}, Logged: &logged}, nil
}

func refuse(code protocol.ErrorCode, format string, args ...any) (Result, error) {
	return Result{Err: &RuleError{Code: code, Message: fmt.Sprintf(format, args...)}}, nil
}

// receipt finds the receipt of an exact (replica, clientSequence): the
// rare path of retries and conflicts.
func (b *batch) receipt(k receiptKey) (receiptRow, bool, error) {
	if r, ok := b.inBatch[k]; ok {
		return r, true, nil
	}
	var r receiptRow
	var hash []byte
	err := b.s.txQueryRow(b.ctx, b.tx, selectReceiptSQL, k.ws, k.replica, k.clientSeq).Scan(&r.id, &r.seq, &r.ingUs, &hash)
	if errors.Is(err, sql.ErrNoRows) {
		return r, false, nil
	}
	if err != nil {
		return r, false, fmt.Errorf("ingest: read receipt: %w", err)
	}
	copy(r.hash[:], hash)
	return r, true, nil
}

// project applies the batch's logged envelopes to the projections.
func (b *batch) project(items []Item, results []Result) error {
	have := map[int64]map[int64]*protocol.Envelope{}
	for i, r := range results {
		if r.Logged == nil {
			continue
		}
		ws := b.ws[items[i].Workspace].id
		if have[ws] == nil {
			have[ws] = map[int64]*protocol.Envelope{}
		}
		have[ws][r.Logged.ServerSequence] = r.Logged
	}
	for _, st := range b.ws {
		if err := b.s.projectThrough(b.ctx, b.tx, st.id, st.head, have[st.id]); err != nil {
			return err
		}
	}
	return nil
}

// flush writes the batch's rows with multi-row inserts.
func (b *batch) flush() error {
	for _, w := range [...]struct {
		table int
		rows  []any
	}{{insOps, b.ops}, {insReceipts, b.receipts}, {insEntities, b.entities}} {
		if err := b.s.insertRows(b.ctx, b.tx, w.table, w.rows); err != nil {
			return fmt.Errorf("ingest: %w", err)
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
	qs := []string{selectReplicasSQL, selectEntitiesSQL, selectHeadSQL, selectReceiptSQL}
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
			if _, err := tx.StmtContext(ctx, s.inserts[t][k]).ExecContext(ctx, args[:n*cols]...); err != nil {
				return fmt.Errorf("insert into %s: %w", insertTables[t].table, err)
			}
			args = args[n*cols:]
		}
	}
	return nil
}
