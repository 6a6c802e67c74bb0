package pgstore

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/crosscode/crosscode-mcp/store"
)

// The statements of one ingest transaction. The first three go to the
// server in one round trip with BEGIN, the writes in a second with COMMIT.
const (
	// Lock the batch's counter rows, in id order (two instances locking
	// the same workspaces never deadlock), and read them.
	lockHeadsSQL = `SELECT ws, seq, last_us FROM heads WHERE ws = ANY($1) ORDER BY ws FOR UPDATE`
	// The highest clientSequence of each named (workspace, replica).
	selectReplicasSQL = `SELECT r.ws, r.replica, (SELECT max(x.client_seq) FROM receipts x WHERE x.ws = r.ws AND x.replica = r.replica)
		FROM unnest($1::bigint[], $2::text[]) AS r (ws, replica)`
	// The kinds of the named (workspace, entity id)s that exist.
	selectEntitiesSQL = `SELECT e.ws, e.id, e.kind FROM entities e JOIN unnest($1::bigint[], $2::text[]) AS k (ws, id) ON e.ws = k.ws AND e.id = k.id`
	selectReceiptSQL  = `SELECT id, seq, ingested_us, hash FROM receipts WHERE ws = $1 AND replica = $2 AND client_seq = $3`
	// The receipts logged under the named idempotency keys.
	selectKeysSQL = `SELECT k.ws, k.key, k.kind, r.replica, r.client_seq, r.id, r.seq, r.ingested_us, r.hash
		FROM idem_keys k JOIN unnest($1::bigint[], $2::text[]) AS q (ws, key) ON k.ws = q.ws AND k.key = q.key
		JOIN receipts r ON r.ws = k.ws AND r.replica = k.replica AND r.client_seq = k.client_seq`
	insertKeysSQL = `INSERT INTO idem_keys (ws, key, kind, replica, client_seq)
		SELECT * FROM unnest($1::bigint[], $2::text[], $3::smallint[], $4::text[], $5::bigint[])`

	insertOpsSQL = `INSERT INTO ops (ws, seq, kind, ingested_us, body)
		SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::smallint[], $4::bigint[], $5::bytea[])`
	insertReceiptsSQL = `INSERT INTO receipts (ws, replica, client_seq, id, seq, ingested_us, hash)
		SELECT * FROM unnest($1::bigint[], $2::text[], $3::bigint[], $4::text[], $5::bigint[], $6::bigint[], $7::bytea[])`
	insertEntitiesSQL = `INSERT INTO entities (ws, id, kind) SELECT * FROM unnest($1::bigint[], $2::text[], $3::smallint[])`
	updateHeadsSQL    = `UPDATE heads h SET seq = v.seq, last_us = v.us FROM unnest($1::bigint[], $2::bigint[], $3::bigint[]) AS v (ws, seq, us) WHERE h.ws = v.ws`
)

// IngestBatch decides items in order by the rules of spec section 4 and
// commits what they log in one transaction, returning once COMMIT has
// returned (synchronous_commit is on: the batch is durable). The error is
// for the database only; then nothing of the batch is acknowledged, and if
// the COMMIT's outcome is unknown a retry finds what did commit.
func (s *Store) IngestBatch(ctx context.Context, items []store.Item) ([]store.Result, error) {
	results := make([]store.Result, len(items))
	var names []string
	seen := map[string]bool{}
	for i := range items {
		if err := items[i].PrepareEarly(); err != nil {
			results[i].Err = err
			continue
		}
		if w := items[i].Workspace; !seen[w] {
			seen[w] = true
			names = append(names, w)
		}
	}
	ids, err := s.workspaceIDs(ctx, names)
	if err != nil {
		return nil, fmt.Errorf("ingest: %w", err)
	}
	wsIDs := make([]int64, 0, len(ids))
	for _, id := range ids {
		wsIDs = append(wsIDs, id)
	}
	sort.Slice(wsIDs, func(i, j int) bool { return wsIDs[i] < wsIDs[j] })
	live := false
	for i := range items {
		if results[i].Err == nil {
			if _, ok := ids[items[i].Workspace]; !ok {
				results[i].Err = fmt.Errorf("workspace %q: %w", items[i].Workspace, store.ErrNoWorkspace)
			} else {
				live = true
			}
		}
	}
	if !live {
		return results, nil
	}
	if !s.lockedOnly && !keyed(items) {
		if out, ok, err := s.ingestFast(ctx, items, results, ids, wsIDs); err != nil || ok {
			return out, err
		}
	}
	return s.ingestLocked(ctx, items, results, ids, wsIDs)
}

// ingestLocked is ingest in two round trips: it locks and reads the
// batch's state, decides the items over it, and writes what they log.
func (s *Store) ingestLocked(ctx context.Context, items []store.Item, results []store.Result, ids map[string]int64, wsIDs []int64) ([]store.Result, error) {
	s.paths[pathLocked].Add(1)
	byID := make(map[int64]string, len(ids))
	for n, id := range ids {
		byID[id] = n
	}
	d := store.NewDecider(micros(time.Now()))
	for i := range items {
		if results[i].Err == nil {
			// Placeholders, so Keys lists the item; the locked rows
			// below replace them.
			d.SetWorkspace(items[i].Workspace, store.WSState{ID: ids[items[i].Workspace]})
		}
	}
	replicas, entityIDs := d.Keys(items, results)

	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("ingest: %w", Explain(err))
	}
	// Release destroys a connection left inside a transaction (after an
	// error), so the pool never hands out a broken one.
	defer conn.Release()

	// Round trip 1: BEGIN, lock and read the heads, read the replicas'
	// highest clientSequences and the entities' kinds.
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue(lockHeadsSQL, wsIDs)
	rw, rn := pairs(replicas)
	b.Queue(selectReplicasSQL, rw, rn)
	ew, en := pairs(entityIDs)
	b.Queue(selectEntitiesSQL, ew, en)
	if err := s.readState(ctx, conn, b, d, byID); err != nil {
		conn.Conn().Close(context.Background())
		return nil, fmt.Errorf("ingest: %w", Explain(err))
	}
	if keys := d.IdemKeys(items, results); len(keys) > 0 {
		if err := readKeys(ctx, conn, d, keys); err != nil {
			conn.Conn().Close(context.Background())
			return nil, fmt.Errorf("ingest: %w", Explain(err))
		}
	}

	lookup := func(ws int64, replica string, clientSeq int64) (store.ReceiptRow, bool, error) {
		r := store.ReceiptRow{WS: ws, Replica: replica, ClientSeq: clientSeq}
		var hash []byte
		err := conn.QueryRow(ctx, selectReceiptSQL, ws, replica, clientSeq).Scan(&r.ID, &r.Seq, &r.IngestedUs, &hash)
		if errors.Is(err, pgx.ErrNoRows) {
			return r, false, nil
		}
		if err != nil {
			return r, false, fmt.Errorf("read receipt: %w", err)
		}
		copy(r.Hash[:], hash)
		return r, true, nil
	}
	for i := range items {
		if results[i].Err != nil {
			continue
		}
		if results[i], err = d.Decide(&items[i], lookup); err != nil {
			conn.Conn().Close(context.Background())
			return nil, fmt.Errorf("ingest: %w", Explain(err))
		}
	}

	// Round trip 2: the rows, the counters, COMMIT.
	if err := s.write(ctx, conn, d, nil); err != nil {
		conn.Conn().Close(context.Background())
		return nil, fmt.Errorf("ingest: %w", Explain(err))
	}
	s.cache.learn(d, false)
	return results, nil
}

// keyed reports whether an item has an idempotency key: such a batch
// takes the locked path, which reads the keys under the counter rows'
// locks.
func keyed(items []store.Item) bool {
	for i := range items {
		if items[i].Key != "" {
			return true
		}
	}
	return false
}

// readKeys loads the writes logged under keys into d (inside the
// transaction, after the counter rows are locked).
func readKeys(ctx context.Context, conn *pgxpool.Conn, d *store.Decider, keys map[int64][]string) error {
	kw, kn := pairs(keys)
	rows, err := conn.Query(ctx, selectKeysSQL, kw, kn)
	if err != nil {
		return fmt.Errorf("read keys: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var k store.KeyRow
		var kind int16
		var hash []byte
		if err := rows.Scan(&k.WS, &k.Key, &kind, &k.Receipt.Replica, &k.Receipt.ClientSeq, &k.Receipt.ID, &k.Receipt.Seq, &k.Receipt.IngestedUs, &hash); err != nil {
			return fmt.Errorf("read keys: %w", err)
		}
		k.Kind, k.Receipt.WS = int(kind), k.WS
		copy(k.Receipt.Hash[:], hash)
		d.Keyed[store.ReplicaKey{WS: k.WS, Name: k.Key}] = k
	}
	return rows.Err()
}

// errRolledBack is write's error for a COMMIT that answered ROLLBACK.
var errRolledBack = errors.New("the transaction was rolled back")

// pairs flattens a per-workspace list of names into two parallel arrays.
func pairs(m map[int64][]string) ([]int64, []string) {
	var ws []int64
	var names []string
	for id, ns := range m {
		for _, n := range ns {
			ws = append(ws, id)
			names = append(names, n)
		}
	}
	return ws, names
}

// readState sends the first round trip and loads what it reads into d.
func (s *Store) readState(ctx context.Context, conn *pgxpool.Conn, b *pgx.Batch, d *store.Decider, byID map[int64]string) error {
	br := conn.SendBatch(ctx, b)
	defer br.Close()
	if _, err := br.Exec(); err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	rows, err := br.Query()
	if err != nil {
		return fmt.Errorf("lock heads: %w", err)
	}
	locked := 0
	for rows.Next() {
		var st store.WSState
		if err := rows.Scan(&st.ID, &st.Head, &st.LastUs); err != nil {
			rows.Close()
			return fmt.Errorf("lock heads: %w", err)
		}
		d.SetWorkspace(byID[st.ID], st)
		locked++
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("lock heads: %w", err)
	}
	if locked != len(byID) {
		return fmt.Errorf("lock heads: %d of %d workspaces have no counter row", len(byID)-locked, len(byID))
	}
	if rows, err = br.Query(); err != nil {
		return fmt.Errorf("read replicas: %w", err)
	}
	for rows.Next() {
		var k store.ReplicaKey
		var highest *int64
		if err := rows.Scan(&k.WS, &k.Name, &highest); err != nil {
			rows.Close()
			return fmt.Errorf("read replicas: %w", err)
		}
		if highest != nil {
			d.MaxClient[k] = *highest
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read replicas: %w", err)
	}
	if rows, err = br.Query(); err != nil {
		return fmt.Errorf("read entities: %w", err)
	}
	for rows.Next() {
		var k store.ReplicaKey
		var kind int16
		if err := rows.Scan(&k.WS, &k.Name, &kind); err != nil {
			rows.Close()
			return fmt.Errorf("read entities: %w", err)
		}
		d.EntityKind[k] = int(kind)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read entities: %w", err)
	}
	return br.Close()
}

// write sends the decider's rows, the raised counters and COMMIT in one
// round trip, after what pre queues (if not nil), and returns once COMMIT
// has.
func (s *Store) write(ctx context.Context, conn *pgxpool.Conn, d *store.Decider, pre func(*pgx.Batch)) error {
	b := &pgx.Batch{}
	if pre != nil {
		pre(b)
	}
	if n := len(d.Ops); n > 0 {
		ws, seq, kind, us, body := make([]int64, n), make([]int64, n), make([]int16, n), make([]int64, n), make([][]byte, n)
		moved := map[int64]bool{}
		for i, o := range d.Ops {
			ws[i], seq[i], kind[i], us[i], body[i] = o.WS, o.Seq, int16(o.Kind), o.IngestedUs, o.Body
			moved[o.WS] = true
		}
		b.Queue(insertOpsSQL, ws, seq, kind, us, body)
		rws, rep, cs, id, rseq, rus, hash := make([]int64, n), make([]string, n), make([]int64, n), make([]string, n), make([]int64, n), make([]int64, n), make([][]byte, n)
		for i := range d.Receipts {
			r := &d.Receipts[i]
			rws[i], rep[i], cs[i], id[i], rseq[i], rus[i], hash[i] = r.WS, r.Replica, r.ClientSeq, r.ID, r.Seq, r.IngestedUs, r.Hash[:]
		}
		b.Queue(insertReceiptsSQL, rws, rep, cs, id, rseq, rus, hash)
		if m := len(d.Entities); m > 0 {
			ews, eid, ekind := make([]int64, m), make([]string, m), make([]int16, m)
			for i, e := range d.Entities {
				ews[i], eid[i], ekind[i] = e.WS, e.ID, int16(e.Kind)
			}
			b.Queue(insertEntitiesSQL, ews, eid, ekind)
		}
		if m := len(d.KeyRows); m > 0 {
			kws, key, kkind, krep, kcs := make([]int64, m), make([]string, m), make([]int16, m), make([]string, m), make([]int64, m)
			for i, k := range d.KeyRows {
				kws[i], key[i], kkind[i], krep[i], kcs[i] = k.WS, k.Key, int16(k.Kind), k.Receipt.Replica, k.Receipt.ClientSeq
			}
			b.Queue(insertKeysSQL, kws, key, kkind, krep, kcs)
		}
		var hws, hseq, hus []int64
		for _, st := range d.WS {
			if moved[st.ID] {
				hws, hseq, hus = append(hws, st.ID), append(hseq, st.Head), append(hus, st.LastUs)
			}
		}
		b.Queue(updateHeadsSQL, hws, hseq, hus)
	}
	b.Queue("COMMIT")
	br := conn.SendBatch(ctx, b)
	for i := range b.Len() {
		tag, err := br.Exec()
		if err != nil {
			br.Close()
			return err
		}
		// COMMIT of a transaction that failed answers ROLLBACK, not an error.
		if i == b.Len()-1 && tag.String() != "COMMIT" {
			br.Close()
			return fmt.Errorf("commit: the server answered %q: %w", tag.String(), errRolledBack)
		}
	}
	return br.Close()
}
