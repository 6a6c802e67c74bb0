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
// clientSequences, entity kinds) before it can write. An instance that
// ingests a workspace keeps that state from its own commits, decides a
// batch over it at once, and sends, in one round trip, BEGIN, a check
// that locks the counter rows in id order and verifies every value the
// decisions used (crosscode_ingest_check, migration 3, and the entities'
// primary key; see ingestFast), the writes and COMMIT. If another instance moved the workspace meanwhile, or a value
// was only assumed and is wrong, the check fails the transaction (nothing
// is written) and the batch goes the locked way, which also refreshes the
// state; a workspace that fails so keeps to the locked way for a while
// (two instances feeding one workspace take turns on its row, so their
// state is always stale). Correctness never rests on the remembered
// state: every value a decision used is verified under the lock.

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

// wsState is what an instance remembers of one workspace, as of its last
// commit there.
type wsState struct {
	head, lastUs int64
	replicas     map[string]int64 // highest clientSequence, -1 for none
	entities     map[string]int   // store.KindCode, 0 for none
	fails        int              // checks failed in a row
	lockedUntil  time.Time        // take the locked path until then
}

type ingestCache struct {
	mu sync.Mutex
	ws map[int64]*wsState
	n  int // remembered replicas and entities
}

// learn remembers the state a committed batch leaves: every value in d is
// what the database held under the batch's lock, or what it wrote. locked
// holds the heads read under the lock (the locked path), for dropping what
// is remembered of a workspace another instance moved.
func (c *ingestCache) learn(d *store.Decider, locked map[int64]int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ws == nil || c.n > maxCached {
		c.ws, c.n = map[int64]*wsState{}, 0
	}
	for _, st := range d.WS {
		w := c.ws[st.ID]
		if head, ok := locked[st.ID]; w == nil || ok && head != w.head {
			if w != nil {
				c.n -= len(w.replicas) + len(w.entities)
			}
			fails, until := 0, time.Time{}
			if w != nil {
				fails, until = w.fails, w.lockedUntil
			}
			w = &wsState{replicas: map[string]int64{}, entities: map[string]int{}, fails: fails, lockedUntil: until}
			c.ws[st.ID] = w
		}
		w.head, w.lastUs = st.Head, st.LastUs
		if locked == nil {
			w.fails = 0
		}
	}
	for k, v := range d.MaxClient {
		if w := c.ws[k.WS]; w != nil {
			if _, ok := w.replicas[k.Name]; !ok {
				c.n++
			}
			w.replicas[k.Name] = v
		}
	}
	for k, v := range d.EntityKind {
		if w := c.ws[k.WS]; w != nil {
			if _, ok := w.entities[k.Name]; !ok {
				c.n++
			}
			w.entities[k.Name] = v
		}
	}
}

// failed records a failed check of workspaces wss: forget them, and take
// the locked path for a while, longer each time in a row (50ms to 5s).
func (c *ingestCache) failed(wss []int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	for _, id := range wss {
		w := c.ws[id]
		if w == nil {
			continue
		}
		c.n -= len(w.replicas) + len(w.entities)
		w.fails++
		w.lockedUntil = now.Add(min(50*time.Millisecond<<min(w.fails-1, 7), 5*time.Second))
		w.head = -1 // unknown: relearned by the next locked batch
		w.replicas, w.entities = map[string]int64{}, map[string]int{}
	}
}

// errNeedLookup stops a fast batch that needs a stored receipt (a retry,
// a reused clientSequence): the locked path reads it.
var errNeedLookup = errors.New("needs a receipt lookup")

// ingestFast tries the batch in one round trip over the remembered state.
// ok is false, with nothing written, when it cannot (a workspace not
// remembered or recently contended, a receipt to look up) or its check
// failed; the caller takes the locked path then.
func (s *Store) ingestFast(ctx context.Context, items []store.Item, results0 []store.Result, ids map[string]int64, wsIDs []int64) (_ []store.Result, ok bool, _ error) {
	now := time.Now()
	d := store.NewDecider(micros(now))
	results := slices.Clone(results0)
	s.cache.mu.Lock()
	for name, id := range ids {
		w := s.cache.ws[id]
		if w == nil || w.head < 0 || now.Before(w.lockedUntil) {
			s.cache.mu.Unlock()
			return nil, false, nil
		}
		d.SetWorkspace(name, store.WSState{ID: id, Head: w.head, LastUs: w.lastUs})
	}
	replicas, entityIDs := d.Keys(items, results)
	// Keys entered every replica as having none (-1) and every entity as
	// absent (0): replace those with what is remembered. What is not is
	// assumed: a replica without receipts, an opened id new, a changed id
	// existing with its event's kind.
	//
	// The check verifies the heads under their lock. What is remembered
	// holds as long as the head it was learned at does: every write of a
	// receipt or an entity raises its workspace's head in the same
	// transaction, under that lock. Of the assumptions, an opened id that
	// exists breaks the entities' primary key (the transaction fails as
	// the check would); the others are verified by the check: a replica
	// assumed without receipts, a changed id assumed to exist.
	var rws, rmax []int64
	var rname []string
	for wsID, names := range replicas {
		w := s.cache.ws[wsID]
		for _, n := range names {
			if v, ok := w.replicas[n]; ok {
				d.MaxClient[store.ReplicaKey{WS: wsID, Name: n}] = v
			} else {
				rws, rname, rmax = append(rws, wsID), append(rname, n), append(rmax, -1)
			}
		}
	}
	assumed := map[store.ReplicaKey]bool{}
	for wsID, names := range entityIDs {
		w := s.cache.ws[wsID]
		for _, n := range names {
			k := store.ReplicaKey{WS: wsID, Name: n}
			if v, ok := w.entities[n]; ok {
				d.EntityKind[k] = v
			} else {
				assumed[k] = true
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
		if assumed[k] {
			delete(assumed, k) // the first event naming the id says what it was before the batch
			if !e.Type.Opens() {
				kind := store.KindCode(e.Type.Kind())
				d.EntityKind[k] = kind
				ews, eid, ekind = append(ews, k.WS), append(eid, k.Name), append(ekind, int16(kind))
			}
		}
	}
	hws, hseq := make([]int64, 0, len(wsIDs)), make([]int64, 0, len(wsIDs))
	for _, id := range wsIDs {
		for _, st := range d.WS {
			if st.ID == id {
				hws, hseq = append(hws, id), append(hseq, st.Head)
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

	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("ingest: %w", Explain(err))
	}
	defer conn.Release()
	err = s.write(ctx, conn, d, func(b *pgx.Batch) {
		b.Queue("BEGIN")
		b.Queue("SELECT crosscode_ingest_check($1, $2, $3, $4, $5, $6, $7, $8)", hws, hseq, rws, rname, rmax, ews, eid, ekind)
	})
	var pe *pgconn.PgError
	switch {
	case err == nil:
		s.paths[pathFast].Add(1)
		s.cache.learn(d, nil)
		return results, true, nil
	case errors.As(err, &pe), isRolledBack(err):
		// The server refused a statement (the check, or a write that
		// met a row the assumptions missed): the transaction is void.
		s.paths[pathFallback].Add(1)
		s.cache.failed(hws)
		if _, rerr := conn.Exec(ctx, "ROLLBACK"); rerr != nil {
			conn.Conn().Close(context.Background())
		}
		return nil, false, nil
	default:
		// The connection failed: COMMIT's outcome is unknown.
		conn.Conn().Close(context.Background())
		s.cache.failed(hws)
		return nil, false, fmt.Errorf("ingest: %w", Explain(err))
	}
}

// isRolledBack reports write's error for a COMMIT that answered ROLLBACK.
func isRolledBack(err error) bool { return errors.Is(err, errRolledBack) }

// IngestPaths reports how many batches committed in one round trip, how
// many took the locked path from the start, and how many tried one round
// trip, failed its check and then took the locked path.
func (s *Store) IngestPaths() (fast, locked, fallback int64) {
	return s.paths[pathFast].Load(), s.paths[pathLocked].Load() - s.paths[pathFallback].Load(), s.paths[pathFallback].Load()
}
