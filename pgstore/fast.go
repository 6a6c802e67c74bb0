package pgstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/crosscode/crosscode-mcp/store"
)

// One-round-trip ingest. The locked path (ingestLocked) spends a round
// trip reading what the rules need (heads, replicas' highest
// clientSequences, entity kinds) and holds the workspaces' counter rows
// locked across the next one, while it decides and writes. Here an
// instance decides a batch at once over what it remembers of the
// replicas and entities (from its own commits and locked reads) and what
// it assumes of the rest, and sends BEGIN, one call of crosscode_ingest
// (migration 3) and COMMIT together. crosscode_ingest, in the database,
// locks the batch's counter rows in id order, verifies every value the
// decisions rest on, numbers the batch's operations from each workspace's
// head and writes them; so the rows stay locked only while the database
// works, and instances sharing a workspace take turns on it without a
// client round trip in between. If a value was wrong (another instance
// logged for the same replica, an id was opened elsewhere), the call
// fails the transaction, nothing is written, and the batch is decided
// again the locked way, which also refreshes what is remembered.
//
// Which values are verified: every replica's highest clientSequence (it
// moves whoever logs for the replica); an entity's kind when the batch
// changes an id remembered as absent or not remembered (assumed to exist
// with its event's kind). Not verified, because they cannot be wrong: a
// kind remembered for an existing id (ids are never deleted, kinds never
// change), and an id the batch opens assumed new (one that exists breaks
// the entities' primary key, which fails the transaction the same way).

// Ingest paths, for IngestPaths.
const (
	pathFast     = iota // one round trip, committed
	pathLocked          // two round trips
	pathFallback        // one round trip tried, check failed, then locked
	numPaths
)

// maxCached bounds the remembered replicas and entities of all
// workspaces; past it, everything is forgotten and relearned.
const maxCached = 100_000

// wsState is what an instance remembers of one workspace's replicas and
// entities.
type wsState struct {
	replicas    map[string]int64 // highest clientSequence, -1 for none
	entities    map[string]int   // store.KindCode, 0 for none
	fails       int              // checks failed in a row
	lockedUntil time.Time        // take the locked path until then
}

type ingestCache struct {
	mu sync.Mutex
	ws map[int64]*wsState
	n  int // remembered replicas and entities
}

// learn remembers the values a committed batch leaves: every value in d
// is what the database held under the batch's lock, or what it wrote.
func (c *ingestCache) learn(d *store.Decider, fast bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ws == nil || c.n > maxCached {
		c.ws, c.n = map[int64]*wsState{}, 0
	}
	get := func(id int64) *wsState {
		w := c.ws[id]
		if w == nil {
			w = &wsState{replicas: map[string]int64{}, entities: map[string]int{}}
			c.ws[id] = w
		}
		return w
	}
	if fast {
		for _, st := range d.WS {
			get(st.ID).fails = 0
		}
	}
	for k, v := range d.MaxClient {
		w := get(k.WS)
		if _, ok := w.replicas[k.Name]; !ok {
			c.n++
		}
		w.replicas[k.Name] = v
	}
	for k, v := range d.EntityKind {
		w := get(k.WS)
		if _, ok := w.entities[k.Name]; !ok {
			c.n++
		}
		w.entities[k.Name] = v
	}
}

// failed records a failed check of workspaces wss: forget what is
// remembered of them, and take the locked path for a while, longer each
// time in a row (50ms to 5s): a workspace whose replicas move between
// instances is not worth a second attempt at once.
func (c *ingestCache) failed(wss []int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ws == nil {
		c.ws = map[int64]*wsState{}
	}
	now := time.Now()
	for _, id := range wss {
		w := c.ws[id]
		if w == nil {
			w = &wsState{}
			c.ws[id] = w
		}
		c.n -= len(w.replicas) + len(w.entities)
		w.fails++
		w.lockedUntil = now.Add(min(50*time.Millisecond<<min(w.fails-1, 7), 5*time.Second))
		w.replicas, w.entities = map[string]int64{}, map[string]int{}
	}
}

// errNeedLookup stops a fast batch that needs a stored receipt (a retry,
// a reused clientSequence): the locked path reads it.
var errNeedLookup = errors.New("needs a receipt lookup")

// ingestSQL runs crosscode_ingest: it returns, per workspace of the batch,
// the head the batch was numbered from and its operations' ingestedAt.
const ingestSQL = `SELECT o_ws, o_base, o_us FROM crosscode_ingest($1, $2, $3, $4, $5, $6, $7, $8, $9,
	$10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22)`

// ingestFast tries the batch in one round trip. ok is false, with nothing
// written, when it cannot (a workspace whose check failed a moment ago, a
// receipt to look up) or its check failed; the caller takes the locked
// path then.
func (s *Store) ingestFast(ctx context.Context, items []store.Item, results0 []store.Result, ids map[string]int64, wsIDs []int64) (_ []store.Result, ok bool, _ error) {
	now := time.Now()
	d := store.NewDecider(micros(now))
	results := slices.Clone(results0)
	// Every workspace is numbered from 0 here (and its ingestedAt from
	// now): the database adds the real head, and takes the later of now
	// and the workspace's newest ingestedAt.
	s.cache.mu.Lock()
	for name, id := range ids {
		if w := s.cache.ws[id]; w != nil && now.Before(w.lockedUntil) {
			s.cache.mu.Unlock()
			return nil, false, nil
		}
		d.SetWorkspace(name, store.WSState{ID: id})
	}
	replicas, entityIDs := d.Keys(items, results)
	// Keys entered every replica as having none (-1) and every entity as
	// absent (0): replace those with what is remembered.
	var rws, rmax []int64
	var rname []string
	for wsID, names := range replicas {
		w := s.cache.ws[wsID]
		for _, n := range names {
			k := store.ReplicaKey{WS: wsID, Name: n}
			if v, ok := w.replicaMax(n); ok {
				d.MaxClient[k] = v
			}
			rws, rname, rmax = append(rws, wsID), append(rname, n), append(rmax, d.MaxClient[k])
		}
	}
	// Not known to exist: remembered as absent (true), or not remembered.
	unsure := map[store.ReplicaKey]bool{}
	for wsID, names := range entityIDs {
		w := s.cache.ws[wsID]
		for _, n := range names {
			k := store.ReplicaKey{WS: wsID, Name: n}
			v, known := w.entityKind(n)
			if v != 0 {
				d.EntityKind[k] = v
			} else {
				unsure[k] = known
			}
		}
	}
	s.cache.mu.Unlock()
	var ews []int64
	var eid []string
	var ekind []int16
	for i := range items {
		if results[i].Err != nil {
			continue
		}
		e := items[i].Envelope
		k := store.ReplicaKey{WS: ids[items[i].Workspace], Name: e.ID}
		if absent, ok := unsure[k]; ok {
			// The first event naming the id says what it was before the
			// batch: an opened id is new (the primary key checks that); a
			// changed one is absent if remembered so, else it exists with
			// its event's kind (verified, either way).
			delete(unsure, k)
			if !e.Type.Opens() {
				kind := store.KindCode(e.Type.Kind())
				if absent {
					kind = 0
				}
				d.EntityKind[k] = kind
				ews, eid, ekind = append(ews, k.WS), append(eid, k.Name), append(ekind, int16(kind))
			}
		}
	}

	noLookup := func(int64, string, int64) (store.ReceiptRow, bool, error) {
		return store.ReceiptRow{}, false, errNeedLookup
	}
	for i := range items {
		if results[i].Err != nil {
			continue
		}
		var err error
		if results[i], err = d.Decide(&items[i], noLookup); err != nil {
			return nil, false, nil // errNeedLookup: nothing sent yet
		}
	}

	// The rows, numbered from 0 per workspace.
	// Each workspace's count of operations.
	count := make(map[int64]int64, len(wsIDs))
	for _, o := range d.Ops {
		count[o.WS]++
	}
	hn := make([]int64, len(wsIDs))
	for i, id := range wsIDs {
		hn[i] = count[id]
	}
	n := len(d.Ops)
	ows, orel, okind, obody := make([]int64, n), make([]int64, n), make([]int16, n), make([][]byte, n)
	for i, o := range d.Ops {
		ows[i], orel[i], okind[i], obody[i] = o.WS, o.Seq, int16(o.Kind), o.Body
	}
	cws, crep, ccs, cid, crel, chash := make([]int64, n), make([]string, n), make([]int64, n), make([]string, n), make([]int64, n), make([][]byte, n)
	for i := range d.Receipts {
		r := &d.Receipts[i]
		cws[i], crep[i], ccs[i], cid[i], crel[i], chash[i] = r.WS, r.Replica, r.ClientSeq, r.ID, r.Seq, r.Hash[:]
	}
	m := len(d.Entities)
	nws, nid, nkind := make([]int64, m), make([]string, m), make([]int16, m)
	for i, e := range d.Entities {
		nws[i], nid[i], nkind[i] = e.WS, e.ID, int16(e.Kind)
	}

	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("ingest: %w", Explain(err))
	}
	defer conn.Release()
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue(ingestSQL, micros(now), wsIDs, hn, rws, rname, rmax, ews, eid, ekind,
		ows, orel, okind, obody, cws, crep, ccs, cid, crel, chash, nws, nid, nkind)
	b.Queue("COMMIT")
	bases, us, err := sendIngest(ctx, conn, b)
	var pe *pgconn.PgError
	switch {
	case err == nil:
	case errors.As(err, &pe), errors.Is(err, errRolledBack):
		// The server refused a statement (the check, or a write that met
		// a row the assumptions missed): the transaction is void.
		s.paths[pathFallback].Add(1)
		s.cache.failed(wsIDs)
		if _, rerr := conn.Exec(ctx, "ROLLBACK"); rerr != nil {
			conn.Conn().Close(context.Background())
		}
		return nil, false, nil
	default:
		// The connection failed: COMMIT's outcome is unknown.
		conn.Conn().Close(context.Background())
		s.cache.failed(wsIDs)
		return nil, false, fmt.Errorf("ingest: %w", Explain(err))
	}

	// Number the answers as the database numbered the rows.
	for i := range items {
		r := &results[i]
		if r.Err != nil || (r.Logged == nil && !r.Receipt.Duplicate) {
			continue
		}
		// What this path answers is logged here or a duplicate of
		// something logged in this batch (a stored one needs a lookup).
		ws := ids[items[i].Workspace]
		at := fromMicros(us[ws])
		r.Receipt.ServerSequence += bases[ws]
		r.Receipt.IngestedAt = at
		if r.Logged != nil {
			r.Logged.ServerSequence = r.Receipt.ServerSequence
			r.Logged.IngestedAt = &at
		}
	}
	s.paths[pathFast].Add(1)
	s.cache.learn(d, true)
	return results, true, nil
}

// sendIngest sends BEGIN, crosscode_ingest and COMMIT and returns each
// workspace's base and ingestedAt once COMMIT has returned.
func sendIngest(ctx context.Context, conn interface {
	SendBatch(context.Context, *pgx.Batch) pgx.BatchResults
}, b *pgx.Batch) (bases, us map[int64]int64, err error) {
	br := conn.SendBatch(ctx, b)
	defer br.Close()
	if _, err := br.Exec(); err != nil {
		return nil, nil, err
	}
	rows, err := br.Query()
	if err != nil {
		return nil, nil, err
	}
	bases, us = map[int64]int64{}, map[int64]int64{}
	for rows.Next() {
		var ws, base, at int64
		if err := rows.Scan(&ws, &base, &at); err != nil {
			rows.Close()
			return nil, nil, err
		}
		bases[ws], us[ws] = base, at
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, nil, err
	}
	tag, err := br.Exec()
	if err != nil {
		return nil, nil, err
	}
	// COMMIT of a transaction that failed answers ROLLBACK, not an error.
	if tag.String() != "COMMIT" {
		return nil, nil, fmt.Errorf("commit: the server answered %q: %w", tag.String(), errRolledBack)
	}
	return bases, us, br.Close()
}

func (w *wsState) replicaMax(name string) (int64, bool) {
	if w == nil {
		return 0, false
	}
	v, ok := w.replicas[name]
	return v, ok
}

func (w *wsState) entityKind(id string) (int, bool) {
	if w == nil {
		return 0, false
	}
	v, ok := w.entities[id]
	return v, ok
}

// IngestPaths reports how many batches committed in one round trip, how
// many took the locked path from the start, and how many tried one round
// trip, failed its check and then took the locked path.
func (s *Store) IngestPaths() (fast, locked, fallback int64) {
	return s.paths[pathFast].Load(), s.paths[pathLocked].Load() - s.paths[pathFallback].Load(), s.paths[pathFallback].Load()
}
