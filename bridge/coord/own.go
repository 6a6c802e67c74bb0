package coord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/crosscode/crosscode-mcp/protocol"
	"github.com/crosscode/crosscode-mcp/store"
)

// Read-your-writes in remote mode.
//
// The projections are a pure function of the log in server order, and in
// remote mode they hold only what the mirror pulled. A write of this
// machine's is in the outbox from the moment it is answered: pending until
// the service acknowledges it, then acknowledged (with its serverSequence)
// until the mirror's projections reach that serverSequence, when Mirror
// drops it (a pending one too, once the mirror holds it: its receipt was
// lost). Every read of an entity merges those writes, in their order,
// over the projected state, so an agent always sees its own writes:
// after an upload whose pull failed, while the service is down, and after
// its MCP server restarts (the outbox is in the local database).
//
// What the log has not decided stays undecided: a claim the projections
// do not hold yet is "pending", whatever the service answered, until the
// mirror brings the server's order and with it the arbitration.

// ClaimPending is the status of this machine's claim whose outcome the
// local projections do not know yet: queued for upload, or acknowledged
// by the service and not yet pulled into the mirror.
const ClaimPending = "pending"

// ownKinds are the kinds whose entities tools read back by id or list.
var ownKinds = []protocol.Kind{protocol.KindClaim, protocol.KindTask, protocol.KindHandoff}

// pendingSeq orders writes not yet acknowledged after every logged one,
// in the order they were committed, for paging (created_seq, newest
// first). Tools never show it.
const pendingSeq = int64(1) << 62

// ownWrites are this machine's writes the projections do not hold yet.
type ownWrites struct {
	through int64                           // the projections' serverSequence when read
	byID    map[string][]*protocol.Envelope // in order; ServerSequence set once acknowledged
	ids     []string                        // in order of first write
}

// ownWrites reads this machine's writes of kinds that the projections do
// not hold yet; nil in local mode, where every write is in the log when
// it is answered.
func (c *Coordinator) ownWrites(ctx context.Context) (*ownWrites, error) {
	if c.rem == nil {
		return nil, nil
	}
	entries, through, err := c.cfg.Store.Unmirrored(ctx, c.cfg.Workspace, ownKinds...)
	if err != nil || len(entries) == 0 {
		return nil, err
	}
	o := &ownWrites{through: through, byID: map[string][]*protocol.Envelope{}}
	for _, en := range entries {
		e, err := protocol.DecodeEnvelope(en.Body)
		if err != nil {
			return nil, fmt.Errorf("outbox %s/%d: %w", en.Replica, en.ClientSequence, err)
		}
		if en.Status == store.OutboxAcknowledged {
			at := en.IngestedAt
			e.ServerSequence, e.IngestedAt = en.ServerSequence, &at
		} else {
			e.ServerSequence = pendingSeq + en.ClientSequence
		}
		if _, ok := o.byID[e.ID]; !ok {
			o.ids = append(o.ids, e.ID)
		}
		o.byID[e.ID] = append(o.byID[e.ID], e)
	}
	return o, nil
}

// stable reports whether the projections are still applied through what
// they were when o was read: then what was read of them since is exactly
// what o's writes go over, none of them already applied.
func (c *Coordinator) stable(ctx context.Context, o *ownWrites) bool {
	now, err := c.cfg.Store.ProjectedThrough(ctx, c.cfg.Workspace)
	return err == nil && now == o.through
}

// maxOwnTries bounds how often a read starts over because the mirror moved
// while it read; after that, serverSequences alone tell what is applied.
const maxOwnTries = 3

// over returns the state of entity id of kind with o's writes merged over
// base, its projected state (nil if the projections do not have it); nil
// if neither knows it.
func (o *ownWrites) over(kind protocol.Kind, id string, base *store.Entity) *store.Entity {
	e := base
	for _, w := range o.byID[id] {
		if w.Type.Kind() != kind {
			continue
		}
		if w.IngestedAt != nil && e != nil && e.Seq >= w.ServerSequence {
			continue // the projections hold it (the mirror moved while reading)
		}
		e = applyOwn(e, w)
	}
	return e
}

// applyOwn returns e (nil: not known) changed as the log will change it
// with w, this machine's write, as far as that does not depend on the
// server's order: a claim's arbitration does, so a new claim is pending;
// a handoff's response decides it only if it is still requested here.
func applyOwn(e *store.Entity, w *protocol.Envelope) *store.Entity {
	if e != nil && w.Type.Opens() {
		return e // the log has it already
	}
	var n store.Entity
	if e != nil {
		n = *e
	} else {
		n = store.Entity{Kind: w.Type.Kind(), ID: w.ID, CreatedSeq: w.ServerSequence}
		if w.IngestedAt != nil {
			n.IngestedAt = *w.IngestedAt
		}
	}
	n.Seq = w.ServerSequence
	if w.IngestedAt != nil {
		n.UpdatedAt = *w.IngestedAt
	}
	body, _ := json.Marshal(w.Payload)
	switch p := w.Payload.(type) {
	case *protocol.Claim:
		if w.Type == protocol.EventClaimReleased {
			n.Status, n.Body = store.ClaimReleased, body
			if e == nil {
				n.Actor, n.Exclusive, n.ExpiresAt = p.ActorID, p.Exclusive, p.ExpiresAt
			}
			return &n
		}
		n.Actor, n.Status, n.Exclusive, n.ExpiresAt, n.Body = p.ActorID, ClaimPending, p.Exclusive, p.ExpiresAt, body
	case *protocol.Task:
		n.Target, n.Status, n.Body = p.AssigneeActorID, string(p.Status), body
		if e == nil {
			n.Actor = p.CreatedByActor
		}
	case *protocol.Handoff:
		if w.Type == protocol.EventHandoffRequested || e == nil {
			n.Actor, n.Target, n.Status, n.Body = p.FromActorID, p.ToActorID, string(p.Status), body
		} else if e.Status == string(protocol.HandoffRequested) {
			n.Status, n.Body = string(p.Status), body
		} else {
			return e // answered before: the first answer decides
		}
	default:
		return e
	}
	return &n
}

// matches reports whether e is one q selects (its Workspace and Limit aside).
func matches(e *store.Entity, q store.EntityQuery) bool {
	switch {
	case e.Kind != q.Kind,
		q.Actor != "" && e.Actor != q.Actor,
		q.NotActor != "" && e.Actor == q.NotActor,
		q.Target != "" && e.Target != q.Target,
		len(q.Status) > 0 && !slices.Contains(q.Status, e.Status),
		!q.LiveAt.IsZero() && !e.ExpiresAt.IsZero() && !e.ExpiresAt.After(q.LiveAt),
		q.Before > 0 && e.CreatedSeq >= q.Before:
		return false
	}
	return true
}

// entity reads one entity of this workspace: its projected state with
// this machine's writes the projections do not hold yet merged over it.
func (c *Coordinator) entity(ctx context.Context, kind protocol.Kind, id string) (*store.Entity, error) {
	c.counts.entityReads.Add(1)
	for try := 1; ; try++ {
		own, err := c.ownWrites(ctx)
		if err != nil {
			return nil, err
		}
		base, err := c.cfg.Store.Entity(ctx, c.cfg.Workspace, kind, id)
		if own == nil || own.byID[id] == nil {
			return base, err
		}
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return nil, err
		}
		if try < maxOwnTries && !c.stable(ctx, own) {
			continue
		}
		if e := own.over(kind, id, base); e != nil {
			return e, nil
		}
		return nil, fmt.Errorf("%s %q: %w", kind, id, store.ErrNotFound)
	}
}

// entities lists entities of this workspace (q.Workspace is set), newest
// first, with this machine's writes the projections do not hold yet
// merged in.
func (c *Coordinator) entities(ctx context.Context, q store.EntityQuery) ([]*store.Entity, error) {
	c.counts.entityLists.Add(1)
	q.Workspace = c.cfg.Workspace
	for try := 1; ; try++ {
		own, err := c.ownWrites(ctx)
		if err != nil {
			return nil, err
		}
		var ids []string
		if own != nil {
			for _, id := range own.ids {
				if slices.ContainsFunc(own.byID[id], func(w *protocol.Envelope) bool { return w.Type.Kind() == q.Kind }) {
					ids = append(ids, id)
				}
			}
		}
		if len(ids) == 0 {
			return c.cfg.Store.Entities(ctx, q)
		}
		limit := q.Limit
		if limit <= 0 {
			limit = 50
		}
		wide := q
		wide.Limit = limit + len(ids) // those own writes take out of q
		list, err := c.cfg.Store.Entities(ctx, wide)
		if err != nil {
			return nil, err
		}
		bases := make(map[string]*store.Entity, len(ids))
		for _, e := range list {
			if own.byID[e.ID] != nil {
				bases[e.ID] = e
			}
		}
		for _, id := range ids {
			if bases[id] != nil {
				continue
			}
			switch e, err := c.cfg.Store.Entity(ctx, c.cfg.Workspace, q.Kind, id); {
			case err == nil:
				bases[id] = e
			case !errors.Is(err, store.ErrNotFound):
				return nil, err
			}
		}
		if try < maxOwnTries && !c.stable(ctx, own) {
			continue
		}
		out := slices.DeleteFunc(list, func(e *store.Entity) bool { return own.byID[e.ID] != nil })
		for _, id := range ids {
			if e := own.over(q.Kind, id, bases[id]); e != nil && matches(e, q) {
				out = append(out, e)
			}
		}
		slices.SortStableFunc(out, func(a, b *store.Entity) int { return compareSeqDesc(a.CreatedSeq, b.CreatedSeq) })
		return out[:min(len(out), limit)], nil
	}
}

func compareSeqDesc(a, b int64) int {
	switch {
	case a > b:
		return -1
	case a < b:
		return 1
	}
	return 0
}

// countEntities counts what q selects, this machine's writes the
// projections do not hold yet included.
func (c *Coordinator) countEntities(ctx context.Context, q store.EntityQuery) (int, error) {
	q.Workspace = c.cfg.Workspace
	for try := 1; ; try++ {
		own, err := c.ownWrites(ctx)
		if err != nil {
			return 0, err
		}
		n, err := c.cfg.Store.CountEntities(ctx, q)
		if err != nil || own == nil {
			return n, err
		}
		delta := 0
		for _, id := range own.ids {
			base, err := c.cfg.Store.Entity(ctx, c.cfg.Workspace, q.Kind, id)
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				return 0, err
			}
			if base != nil && matches(base, q) {
				delta--
			}
			if e := own.over(q.Kind, id, base); e != nil && matches(e, q) {
				delta++
			}
		}
		if try < maxOwnTries && !c.stable(ctx, own) {
			continue
		}
		return n + delta, nil
	}
}

// ClaimState is a claim's status at now: active, queued (waiting its
// turn), pending (this machine's, not decided here yet), denied, released,
// expired (an active or pending one whose lease ended) or wait_expired (a
// queued one whose wait ended first).
func ClaimState(e *store.Entity, now time.Time) string {
	if e.Status == ClaimPending {
		if !e.ExpiresAt.IsZero() && !e.ExpiresAt.After(now) {
			return store.ClaimExpired
		}
		return ClaimPending
	}
	return e.Current(now)
}

// liveClaims are the stored statuses of claims that may hold or wait for
// their paths (with LiveAt, those not over).
var liveClaims = []string{store.ClaimActive, store.ClaimQueued, ClaimPending}

// holding reports whether a claim in state st may hold its paths: active,
// or pending (this machine's, not decided here yet).
func holding(st string) bool { return st == store.ClaimActive || st == ClaimPending }

// acceptedHandoffOf returns the handoff, if any, whose acceptance by this
// machine moves claim id and is not in the projections yet. Whether it
// moves the claim is the log's to say (the first answer to a handoff
// decides it), so the claim is not shown moved before.
func (c *Coordinator) acceptedHandoffOf(ctx context.Context, id string) string {
	own, err := c.ownWrites(ctx)
	if err != nil || own == nil {
		return ""
	}
	for _, hid := range own.ids {
		for _, w := range own.byID[hid] {
			if h := w.Handoff(); h != nil && w.Type == protocol.EventHandoffResponded && h.Status == protocol.HandoffAccepted && slices.Contains(h.ClaimIDs, id) {
				return hid
			}
		}
	}
	return ""
}
