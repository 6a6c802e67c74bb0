package store

import (
	"crypto/sha256"
	"fmt"

	"github.com/crosscode/crosscode-mcp/protocol"
)

// KindCode stores a protocol.Kind as a small integer (1..len(Kinds));
// 0 for an unknown kind. Both stores use these codes.
func KindCode(k protocol.Kind) int {
	for i, kk := range protocol.Kinds {
		if kk == k {
			return i + 1
		}
	}
	return 0
}

// kindCode is KindCode, for this package's many SQL arguments.
func kindCode(k protocol.Kind) int { return KindCode(k) }

// WSState is what a batch knows of one workspace: its id, the highest
// serverSequence assigned and the newest ingestedAt (unix microseconds),
// as of the batch's start, then as the batch assigns them.
type WSState struct {
	ID     int64
	Head   int64
	LastUs int64
}

// ReplicaKey names a replica, or (with an entity id as Name) an entity,
// within a workspace id.
type ReplicaKey struct {
	WS   int64
	Name string
}

// ReceiptRow is one stored receipt: what (replicaId, clientSequence) was
// logged as, for ever.
type ReceiptRow struct {
	WS         int64
	Replica    string
	ClientSeq  int64
	ID         string
	Seq        int64
	IngestedUs int64
	Hash       [32]byte // SHA-256 of the canonical envelope
}

// OpRow is one operation a batch logs.
type OpRow struct {
	WS, Seq    int64
	Kind       int
	IngestedUs int64
	Body       []byte // canonical envelope JSON without serverSequence/ingestedAt
}

// EntityRow is one entity a batch opens.
type EntityRow struct {
	WS   int64
	ID   string
	Kind int
}

// ReceiptLookup finds the stored receipt of an exact (replica,
// clientSequence) in workspace ws: the rare path of retries and conflicts.
type ReceiptLookup func(ws int64, replica string, clientSeq int64) (ReceiptRow, bool, error)

// Decider decides a batch of items by the ingest rules of spec section 4,
// in order, over state a database loaded for the batch (under its write
// lock): each workspace's head, each named replica's highest
// clientSequence, the kinds of the entity ids the batch names. The SQLite
// store and the PostgreSQL one load that state and write the rows it
// produces in their own way; the rules are this one code.
type Decider struct {
	now int64 // unix microseconds of the batch

	// WS holds the batch's workspaces by name; set with SetWorkspace.
	WS map[string]*WSState
	// MaxClient is the highest clientSequence per (workspace, replica),
	// -1 for none; Keys fills in every replica the batch names with -1,
	// the loader raises what the database holds.
	MaxClient map[ReplicaKey]int64
	// EntityKind is the KindCode of each (workspace, entity id) the batch
	// names, 0 for none; filled in like MaxClient.
	EntityKind map[ReplicaKey]int

	// Keyed holds the writes logged under the idempotency keys the batch
	// names (Item.Key), by (workspace id, key); the loader fills it in
	// from the database, Decide adds the batch's own.
	Keyed map[ReplicaKey]KeyRow

	inBatch map[ReplicaKey]map[int64]ReceiptRow // receipts this batch wrote

	// The rows to write, in server order.
	Ops      []OpRow
	Receipts []ReceiptRow
	Entities []EntityRow
	KeyRows  []KeyRow
}

// KeyRow is a write logged under an idempotency key (Item.Key).
type KeyRow struct {
	WS      int64
	Key     string
	Kind    int        // KindCode of the write
	Receipt ReceiptRow // what it was logged as
}

// NewDecider starts a batch decided at now (unix microseconds).
func NewDecider(now int64) *Decider {
	return &Decider{now: now, WS: map[string]*WSState{}, MaxClient: map[ReplicaKey]int64{}, EntityKind: map[ReplicaKey]int{}, Keyed: map[ReplicaKey]KeyRow{}, inBatch: map[ReplicaKey]map[int64]ReceiptRow{}}
}

// SetWorkspace records a workspace of the batch as loaded.
func (d *Decider) SetWorkspace(name string, st WSState) { d.WS[name] = &st }

// Keys lists, per workspace id, the replicas and entity ids that the
// items (those without an error and with a loaded workspace) name, each
// once, and enters them in MaxClient and EntityKind as unknown, for the
// loader to read set-wise.
func (d *Decider) Keys(items []Item, results []Result) (replicas, ids map[int64][]string) {
	replicas, ids = map[int64][]string{}, map[int64][]string{}
	for i, it := range items {
		st := d.WS[it.Workspace]
		if results[i].Err != nil || st == nil {
			continue
		}
		rk := ReplicaKey{st.ID, it.Envelope.ReplicaID}
		if _, ok := d.MaxClient[rk]; !ok {
			d.MaxClient[rk] = -1
			replicas[st.ID] = append(replicas[st.ID], rk.Name)
		}
		ek := ReplicaKey{st.ID, it.Envelope.ID}
		if _, ok := d.EntityKind[ek]; !ok {
			d.EntityKind[ek] = 0
			ids[st.ID] = append(ids[st.ID], ek.Name)
		}
	}
	return replicas, ids
}

// IdemKeys lists, per workspace id, the idempotency keys the items
// (those without an error and with a loaded workspace) name, for the
// loader to read set-wise into Keyed.
func (d *Decider) IdemKeys(items []Item, results []Result) map[int64][]string {
	keys := map[int64][]string{}
	for i, it := range items {
		if st := d.WS[it.Workspace]; results[i].Err == nil && st != nil && it.Key != "" {
			keys[st.ID] = append(keys[st.ID], it.Key)
		}
	}
	return keys
}

// Decide applies the rules of spec section 4 to one item, in order, and
// adds what it logs to the rows. The error is the lookup's only.
func (d *Decider) Decide(it *Item, lookup ReceiptLookup) (Result, error) {
	e := it.Envelope
	st := d.WS[it.Workspace]
	if st == nil {
		return Result{Err: fmt.Errorf("workspace %q: %w", it.Workspace, ErrNoWorkspace)}, nil
	}
	rk := ReplicaKey{st.ID, e.ReplicaID}

	// An idempotency key logged before: the retried write is the original.
	kk := ReplicaKey{st.ID, it.Key}
	if old, ok := d.Keyed[kk]; ok && it.Key != "" {
		if old.Kind != KindCode(e.Type.Kind()) {
			return refuse(protocol.CodeIDConflict, "idempotency key %q was used for a write of another kind (%s)", it.Key, protocol.Kinds[old.Kind-1])
		}
		r := old.Receipt
		return Result{Receipt: protocol.IngestReceipt{ID: r.ID, ServerSequence: r.Seq, IngestedAt: fromMicros(r.IngestedUs), Duplicate: true}}, nil
	}

	if it.NextSequence {
		e.ClientSequence = max(d.MaxClient[rk], 0) + 1
		it.body = nil
		if err := it.Prepare(); err != nil {
			return Result{Err: err}, nil
		}
	}
	// Rules 1 and 2: (replicaId, clientSequence) identifies an envelope for ever.
	if highest, ok := d.MaxClient[rk]; ok && e.ClientSequence <= highest {
		old, found := d.inBatch[rk][e.ClientSequence]
		if !found {
			var err error
			if old, found, err = lookup(st.ID, e.ReplicaID, e.ClientSequence); err != nil {
				return Result{}, err
			}
		}
		switch {
		case !found:
			return refuse(protocol.CodeClientSequenceRegression,
				"clientSequence %d is not above replica %q's highest ingested clientSequence %d", e.ClientSequence, e.ReplicaID, highest)
		case old.Hash == it.hash:
			return Result{Receipt: protocol.IngestReceipt{ID: old.ID, ServerSequence: old.Seq, IngestedAt: fromMicros(old.IngestedUs), Duplicate: true}}, nil
		case old.ID == e.ID:
			return refuse(protocol.CodeIDConflict,
				"replica %q already sent clientSequence %d for id %q with other content (serverSequence %d); a changed envelope needs a new clientSequence",
				e.ReplicaID, e.ClientSequence, old.ID, old.Seq)
		default:
			return refuse(protocol.CodeClientSequenceRegression,
				"replica %q already used clientSequence %d for id %q; clientSequence values are never reused", e.ReplicaID, e.ClientSequence, old.ID)
		}
	}

	// Rule 3: opening events need a new id; changing events an existing one of their kind.
	ek := ReplicaKey{st.ID, e.ID}
	kind, existing := KindCode(e.Type.Kind()), d.EntityKind[ek]
	switch {
	case e.Type.Opens() && existing != 0:
		return refuse(protocol.CodeIDConflict, "%s: id %q already exists (a %s); opening events need a new id", e.Type, e.ID, protocol.Kinds[existing-1])
	case !e.Type.Opens() && existing != kind:
		return refuse(protocol.CodeUnknownEntity, "%s: no %s with id %q exists in this workspace", e.Type, e.Type.Kind(), e.ID)
	}

	seq := st.Head + 1
	ingUs := max(d.now, st.LastUs) // ingestedAt never goes back, even if the clock does
	st.Head, st.LastUs = seq, ingUs
	d.MaxClient[rk] = e.ClientSequence
	rc := ReceiptRow{WS: st.ID, Replica: e.ReplicaID, ClientSeq: e.ClientSequence, ID: e.ID, Seq: seq, IngestedUs: ingUs, Hash: it.hash}
	if d.inBatch[rk] == nil {
		d.inBatch[rk] = map[int64]ReceiptRow{}
	}
	d.inBatch[rk][e.ClientSequence] = rc
	if e.Type.Opens() {
		d.EntityKind[ek] = kind
		d.Entities = append(d.Entities, EntityRow{WS: st.ID, ID: e.ID, Kind: kind})
	}
	d.Ops = append(d.Ops, OpRow{WS: st.ID, Seq: seq, Kind: kind, IngestedUs: ingUs, Body: it.body})
	d.Receipts = append(d.Receipts, rc)
	if it.Key != "" {
		k := KeyRow{WS: st.ID, Key: it.Key, Kind: kind, Receipt: rc}
		d.Keyed[kk] = k
		d.KeyRows = append(d.KeyRows, k)
	}

	logged := *e
	at := fromMicros(ingUs)
	logged.ServerSequence, logged.IngestedAt = seq, &at
	return Result{Receipt: protocol.IngestReceipt{ID: e.ID, ServerSequence: seq, IngestedAt: at}, Logged: &logged}, nil
}

func refuse(code protocol.ErrorCode, format string, args ...any) (Result, error) {
	return Result{Err: &RuleError{Code: code, Message: fmt.Sprintf(format, args...)}}, nil
}

// Prepare computes the item's canonical body and its hash; the stores
// call it (off the writer's path where they can) before deciding.
func (it *Item) Prepare() error {
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

// PrepareEarly is Prepare for callers that encode before taking the
// writer: an item with NextSequence is encoded only once its
// clientSequence is decided, inside the commit (see Decide), so encoding
// it earlier would be wasted.
func (it *Item) PrepareEarly() error {
	if it.NextSequence {
		return nil
	}
	return it.Prepare()
}

// encodeEnvelope is (*protocol.Envelope).Canonical, through a variable so
// that tests can count the encodings.
var encodeEnvelope = (*protocol.Envelope).Canonical
