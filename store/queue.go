package store

import (
	"cmp"
	"container/heap"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/crosscode/crosscode-mcp/protocol"
)

// Claims that wait their turn (spec section 14).
//
// A claim with waitUntil that would be denied for a conflict is queued
// instead. Everything below is a pure function of the log (in server
// order, with each operation's ingestedAt) and of the time asked about,
// so every replica computes the same grants at the same moments:
//
//   - Two claims conflict when their actors differ, some path matches both
//     pattern sets, and either is exclusive. A claim is live from its
//     ingest until it is done: released (the release's ingestedAt), its
//     lease over, or (never granted) its wait over.
//   - At its ingest, a new claim C meets the live claims it conflicts with
//     (active or queued, all earlier in the log): none, C is granted (its
//     lease is its expiresAt, as it always was); some, C is denied, or,
//     with waitUntil, queued. A queued claim's wait ends at its ingestedAt
//     plus (waitUntil - createdAt); its lease, once granted, lasts
//     (expiresAt - createdAt) from the grant.
//   - A queued claim Q is granted at the first moment no conflicting claim
//     is active and no conflicting claim ahead of it in the log is still
//     queued, if that moment comes before its wait ends. The claims that
//     can hold Q up are those live and conflicting at its ingest (a later
//     one queues behind Q or is denied), and each stops holding it up for
//     good once done. So Q's grant time is the latest of their done times
//     (scheduled): blockers' done times are known from the log so far, in
//     log order, because a claim's blockers are all ahead of it.
//   - A log event at time T changes schedules only at T or later: a
//     release makes its claim done at T; an accepted handoff changes
//     which claims conflict. The claims it may affect are then scheduled
//     again from T (schedule), in log order, each from its blockers at T.
//
// So each queued claim's row holds its schedule as the log so far decides
// it (grant_us, expires_us = when it is done unless released, wait_us),
// and a read at any time needs no more than that row and the time: the
// schedule only changes with a later log event, which only changes it
// from that event's time on.
//
// A deadlock is refused: a claim whose wait would close a cycle in the
// wait-for graph (actors, with an edge X -> Y when a queued claim of X
// waits for a claim Y holds or waits for) is denied with DenialDeadlock,
// naming the cycle. It is the claim that closes the cycle, in log order,
// so every replica refuses the same one.

// queueStatements are the writer's statements of this file, prepared at
// Open with the projections' (see projectionStatements).
var queueStatements = []string{selAnyQueued, selWaitingOf, selClaimByID, updSchedule}

const (
	// Whether any claim is queued and not done at a time: one probe of
	// the partial index, so the common case (nobody waits) costs little.
	selAnyQueued = "SELECT EXISTS (SELECT 1 FROM proj INDEXED BY proj_queued WHERE ws = ? AND kind = ? AND status = 'queued' AND expires_us > ?)"
	// An actor's claims that wait at a time, in log order.
	selWaitingOf = "SELECT " + entityCols + " FROM proj INDEXED BY proj_by_actor WHERE ws = ? AND kind = ? AND actor = ? AND status = 'queued' AND expires_us > ? AND NOT (grant_us > 0 AND grant_us <= ?) ORDER BY created_seq"
	selClaimByID = "SELECT " + entityCols + " FROM proj WHERE ws = ? AND kind = ? AND id = ?"
	updSchedule  = "UPDATE proj SET grant_us = ?, expires_us = ?, seq = ?, updated_us = ? WHERE ws = ? AND kind = ? AND id = ?"
)

// query runs q in the projector's transaction.
func (p *projector) query(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	return p.s.txQuery(ctx, p.tx, q, args...)
}

// claim applies a claim.created: granted, denied or queued.
func (p *projector) claim(e *protocol.Envelope, c *protocol.Claim, at time.Time) error {
	d, err := p.arbitrate(c, at)
	if err != nil {
		return err
	}
	switch {
	case d.denial != nil:
		return p.insertRow(e, c.ActorID, "", ClaimDenied, c.Exclusive, micros(c.ExpiresAt), string(mustJSON(d.denial)), 0, d.wait)
	case d.queued:
		if err := p.insertRow(e, c.ActorID, "", ClaimQueued, c.Exclusive, d.expires, "", d.grant, d.wait); err != nil {
			return err
		}
	default:
		if err := p.insertRow(e, c.ActorID, "", ClaimActive, c.Exclusive, micros(c.ExpiresAt), "", 0, d.wait); err != nil {
			return err
		}
	}
	return p.index(e.ID, c.Patterns, at)
}

// decision is what arbitration decided for a new claim.
type decision struct {
	denial *Denial
	queued bool
	// A queued claim's schedule; wait also for a denied one that asked
	// to wait.
	grant, expires, wait int64
}

// waitEnd is the end of a claim's wait ingested at `at`: the wait it
// asked for (waitUntil - createdAt), from its ingest. 0 without waitUntil.
func waitEnd(c *protocol.Claim, at time.Time) int64 {
	if c.WaitUntil == nil {
		return 0
	}
	return micros(at) + micros(*c.WaitUntil) - micros(c.CreatedAt)
}

// leaseOf is a claim's lease length in microseconds.
func leaseOf(c *protocol.Claim) int64 { return micros(c.ExpiresAt) - micros(c.CreatedAt) }

// arbitrate decides a new claim against the live claims at its ingest
// time: denied when its actor already holds or waits for MaxActiveClaims
// claims; else granted when it conflicts with no live claim of another
// actor; else denied, or (with waitUntil) queued unless its wait would
// close a cycle.
func (p *projector) arbitrate(c *protocol.Claim, at time.Time) (decision, error) {
	d := decision{wait: waitEnd(c, at)}
	var held int
	if err := p.s.txQueryRow(p.ctx, p.tx, countHeld,
		p.ws, kindCode(protocol.KindClaim), c.ActorID, micros(at)).Scan(&held); err != nil {
		return d, fmt.Errorf("project: %w", err)
	}
	if held >= MaxActiveClaims {
		d.denial = &Denial{Reason: DenialLimit, Limit: MaxActiveClaims}
		return d, nil
	}
	conflicts, err := overlappingClaims(p.ctx, p.query, p.ws, c.Patterns, c.ActorID, at, func(k Conflict) bool {
		return c.Exclusive || k.Exclusive
	})
	if err != nil || len(conflicts) == 0 {
		return d, err
	}
	if c.WaitUntil == nil {
		d.denial = &Denial{Reason: DenialConflict, Conflicts: conflicts}
		return d, nil
	}
	cycle, err := p.cycle(c, conflicts, at)
	if err != nil {
		return d, err
	}
	if cycle != nil {
		d.denial = &Denial{Reason: DenialDeadlock, Conflicts: conflicts, Cycle: cycle}
		return d, nil
	}
	d.queued = true
	d.grant, d.expires = schedule(micros(at), conflicts, d.wait, leaseOf(c))
	return d, nil
}

// schedule is a waiting claim's grant time and the time it is done, from
// `from` on, given the claims that hold it up: granted when the last of
// them is done, if that is before its wait ends (then done when its lease
// of `lease` ends), else never (done when its wait ends).
func schedule(from int64, blockers []Conflict, wait, lease int64) (grant, done int64) {
	g := from
	for _, b := range blockers {
		g = max(g, micros(b.ExpiresAt))
	}
	if g < wait {
		return g, g + lease
	}
	return 0, wait
}

// release applies a claim.released: the claim is done at `at`, and the
// claims that waited for it are scheduled again from then.
func (p *projector) release(e *protocol.Envelope, c *protocol.Claim, at time.Time) error {
	if err := p.exec(updReleased,
		ClaimReleased, e.ServerSequence, micros(at), mustJSON(c), p.ws, kindCode(protocol.KindClaim), e.ID); err != nil {
		return err
	}
	if err := p.exec(delPatterns, p.ws, e.ID, mustJSON(prefixes(c.Patterns))); err != nil {
		return err
	}
	if ok, err := p.anyQueued(at); err != nil || !ok {
		return err
	}
	// Whose claim it was is the projection's to say (a handoff may have
	// moved it), not the release's.
	k, err := p.claimRow(e.ID)
	if err != nil || k == nil {
		return err
	}
	seeds, err := overlappingClaims(p.ctx, p.query, p.ws, c.Patterns, k.Actor, at, func(q Conflict) bool {
		return q.Queued() && (k.Exclusive || q.Exclusive)
	})
	if err != nil {
		return err
	}
	return p.reschedule(e.ServerSequence, at, seeds)
}

// handedOver schedules again, after an accepted handoff moved claims ids,
// the waiting claims that overlap them: a claim of the new holder no
// longer waits for them, one of the old holder now does.
func (p *projector) handedOver(seq int64, ids []string, at time.Time) error {
	if ok, err := p.anyQueued(at); err != nil || !ok {
		return err
	}
	var seeds []Conflict
	for _, id := range ids {
		m, err := p.claimRow(id)
		if err != nil {
			return err
		}
		if m == nil || m.Seq != seq {
			continue // not moved
		}
		var mc protocol.Claim
		if err := json.Unmarshal(m.Body, &mc); err != nil {
			return fmt.Errorf("project: %w", err)
		}
		s, err := overlappingClaims(p.ctx, p.query, p.ws, mc.Patterns, "", at, func(k Conflict) bool {
			return k.Queued() && (m.Exclusive || k.Exclusive)
		})
		if err != nil {
			return err
		}
		seeds = append(seeds, s...)
	}
	return p.reschedule(seq, at, seeds)
}

// anyQueued reports whether some claim waits (or is scheduled) after `at`.
func (p *projector) anyQueued(at time.Time) (bool, error) {
	var ok bool
	if err := p.s.txQueryRow(p.ctx, p.tx, selAnyQueued, p.ws, kindCode(protocol.KindClaim), micros(at)).Scan(&ok); err != nil {
		return false, fmt.Errorf("project: %w", err)
	}
	return ok, nil
}

// claimRow reads a claim's row; nil if there is none.
func (p *projector) claimRow(id string) (*Entity, error) {
	e, err := scanEntity(p.s.txQueryRow(p.ctx, p.tx, selClaimByID, p.ws, kindCode(protocol.KindClaim), id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("project: %w", err)
	}
	return e, nil
}

// reschedule schedules again, from `at`, the waiting claims in seeds and,
// transitively, those behind a claim whose schedule changed, in log order
// (a claim's blockers are ahead of it, so each is scheduled from its
// blockers' final schedules). A changed row records seq as its last change.
func (p *projector) reschedule(seq int64, at time.Time, seeds []Conflict) error {
	work := &bySeq{}
	for _, s := range seeds {
		heap.Push(work, s)
	}
	seen := map[string]bool{}
	for work.Len() > 0 {
		k := heap.Pop(work).(Conflict)
		if seen[k.ClaimID] {
			continue
		}
		seen[k.ClaimID] = true
		q, err := p.claimRow(k.ClaimID)
		if err != nil {
			return err
		}
		if q == nil || q.Current(at) != ClaimQueued {
			continue
		}
		var qc protocol.Claim
		if err := json.Unmarshal(q.Body, &qc); err != nil {
			return fmt.Errorf("project: %w", err)
		}
		blockers, err := blockersOf(p.ctx, p.query, p.ws, q, &qc, at)
		if err != nil {
			return err
		}
		grant, done := schedule(micros(at), blockers, micros(q.WaitUntil), leaseOf(&qc))
		if grant == microsOrZero(q.GrantAt) && done == micros(q.ExpiresAt) {
			continue
		}
		if err := p.exec(updSchedule, grant, done, seq, micros(at), p.ws, kindCode(protocol.KindClaim), q.ID); err != nil {
			return err
		}
		behind, err := overlappingClaims(p.ctx, p.query, p.ws, qc.Patterns, q.Actor, at, func(b Conflict) bool {
			return b.Queued() && b.Seq > q.CreatedSeq && (q.Exclusive || b.Exclusive)
		})
		if err != nil {
			return err
		}
		for _, b := range behind {
			heap.Push(work, b)
		}
	}
	return nil
}

func microsOrZero(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return micros(t)
}

// bySeq is a heap of claims in log order.
type bySeq []Conflict

func (h bySeq) Len() int           { return len(h) }
func (h bySeq) Less(i, j int) bool { return h[i].Seq < h[j].Seq }
func (h bySeq) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *bySeq) Push(x any)        { *h = append(*h, x.(Conflict)) }
func (h *bySeq) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// blockersOf returns what holds up q (a claim waiting at `at`, whose
// payload is c) at `at`: the live claims of other actors it conflicts
// with that are active, or queued ahead of it.
func blockersOf(ctx context.Context, qf queryFunc, ws int64, q *Entity, c *protocol.Claim, at time.Time) ([]Conflict, error) {
	return overlappingClaims(ctx, qf, ws, c.Patterns, q.Actor, at, func(k Conflict) bool {
		return (q.Exclusive || k.Exclusive) && (!k.Queued() || k.Seq < q.CreatedSeq)
	})
}

// cycle returns the wait-for cycle that c, a new claim that would wait
// for blockers at `at`, would close, shortest first (breadth first, in
// the order of the blockers' ids and of each actor's waiting claims, so
// every replica finds the same); nil if there is none.
func (p *projector) cycle(c *protocol.Claim, blockers []Conflict, at time.Time) ([]WaitEdge, error) {
	type step struct {
		edge WaitEdge
		prev *step
	}
	var frontier []*step
	for _, b := range blockers {
		frontier = append(frontier, &step{edge: WaitEdge{ClaimID: c.ID, Actor: c.ActorID, WaitsFor: b.ClaimID, Holder: b.Actor}})
	}
	seen := map[string]bool{}
	for len(frontier) > 0 {
		s := frontier[0]
		frontier = frontier[1:]
		x := s.edge.Holder
		if x == c.ActorID {
			var path []WaitEdge
			for ; s != nil; s = s.prev {
				path = append([]WaitEdge{s.edge}, path...)
			}
			return path, nil
		}
		if seen[x] {
			continue
		}
		seen[x] = true
		waiting, err := p.waitingOf(x, at)
		if err != nil {
			return nil, err
		}
		for _, q := range waiting {
			var qc protocol.Claim
			if err := json.Unmarshal(q.Body, &qc); err != nil {
				return nil, fmt.Errorf("project: %w", err)
			}
			bs, err := blockersOf(p.ctx, p.query, p.ws, q, &qc, at)
			if err != nil {
				return nil, err
			}
			for _, b := range bs {
				frontier = append(frontier, &step{edge: WaitEdge{ClaimID: q.ID, Actor: x, WaitsFor: b.ClaimID, Holder: b.Actor}, prev: s})
			}
		}
	}
	return nil, nil
}

// waitingOf lists actor's claims that wait at `at`, in log order.
func (p *projector) waitingOf(actor string, at time.Time) ([]*Entity, error) {
	rows, err := p.query(p.ctx, selWaitingOf, p.ws, kindCode(protocol.KindClaim), actor, micros(at), micros(at))
	if err != nil {
		return nil, fmt.Errorf("project: %w", err)
	}
	defer rows.Close()
	var out []*Entity
	for rows.Next() {
		e, err := scanEntity(rows)
		if err != nil {
			return nil, fmt.Errorf("project: %w", err)
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// Reads of the queues.

// Waiter is a claim waiting for another, as its queue shows it.
type Waiter struct {
	ClaimID   string   `json:"claimId"`
	Actor     string   `json:"actor"`
	Patterns  []string `json:"patterns"`
	Exclusive bool     `json:"exclusive"`
	// Reason is the waiter's reason (text another agent wrote).
	Reason string `json:"reason"`
	// Since is when it started waiting (its ingestedAt).
	Since     time.Time `json:"since"`
	WaitUntil time.Time `json:"waitUntil"`
	Seq       int64     `json:"seq"`
}

// MaxQueuesShown bounds how many claims ClaimQueues fills in the queue of.
const MaxQueuesShown = 32

// ClaimQueues fills in the Queue of the active claims among cs (the first
// MaxQueuesShown of them): the claims waiting for each at `at`, in line.
func (s *Store) ClaimQueues(ctx context.Context, workspace string, cs []Conflict, at time.Time) error {
	if !slices.ContainsFunc(cs, func(c Conflict) bool { return !c.Queued() }) {
		return nil // no active claim to fill in
	}
	ws, err := s.workspaceID(ctx, s.r, workspace)
	if err != nil {
		return err
	}
	var ok bool
	if err := s.readQueryRow(ctx, selAnyQueued, ws, kindCode(protocol.KindClaim), micros(at)).Scan(&ok); err != nil || !ok {
		return err
	}
	shown := 0
	for i := range cs {
		if cs[i].Queued() {
			continue
		}
		if shown == MaxQueuesShown {
			break
		}
		shown++
		if cs[i].Queue, err = waitersOf(ctx, s.readQuery, ws, cs[i], at); err != nil {
			return err
		}
	}
	return nil
}

// Queue returns the claims waiting at `at` for claim id (active or
// queued itself), in line.
func (s *Store) Queue(ctx context.Context, workspace, id string, at time.Time) ([]Waiter, error) {
	e, err := s.Entity(ctx, workspace, protocol.KindClaim, id)
	if err != nil {
		return nil, err
	}
	st := e.Current(at)
	if st != ClaimActive && st != ClaimQueued {
		return nil, nil
	}
	var c protocol.Claim
	if err := json.Unmarshal(e.Body, &c); err != nil {
		return nil, fmt.Errorf("queue: %w", err)
	}
	ws, err := s.workspaceID(ctx, s.r, workspace)
	if err != nil {
		return nil, err
	}
	k := Conflict{ClaimID: e.ID, Actor: e.Actor, Patterns: c.Patterns, Exclusive: e.Exclusive, Seq: e.CreatedSeq}
	if st == ClaimQueued {
		k.Status = ClaimQueued
	}
	return waitersOf(ctx, s.readQuery, ws, k, at)
}

// waitersOf returns the claims waiting for k at `at`, in line: those that
// wait, conflict with it, and are behind it (any, when k is active).
func waitersOf(ctx context.Context, qf queryFunc, ws int64, k Conflict, at time.Time) ([]Waiter, error) {
	hits, err := overlapping(ctx, qf, ws, protocol.KindClaim, [2]string{ClaimQueued, ClaimQueued}, k.Patterns, k.Actor, at)
	if err != nil {
		return nil, err
	}
	var out []Waiter
	for _, h := range hits {
		if (h.grantUs > 0 && h.grantUs <= micros(at)) || !(k.Exclusive || h.exclusive) || (k.Queued() && h.seq < k.Seq) {
			continue
		}
		var c protocol.Claim
		if err := json.Unmarshal(h.body, &c); err != nil {
			return nil, fmt.Errorf("queue: %w", err)
		}
		out = append(out, Waiter{ClaimID: h.id, Actor: h.actor, Patterns: c.Patterns, Exclusive: h.exclusive, Reason: c.Reason,
			Since: fromMicros(h.ingestedUs), WaitUntil: fromMicros(h.waitUs), Seq: h.seq})
	}
	slices.SortFunc(out, func(a, b Waiter) int { return cmp.Compare(a.Seq, b.Seq) })
	return out, nil
}

// Wait is where a waiting claim stands.
type Wait struct {
	// Position is its place in line: 1 + the conflicting claims queued
	// ahead of it that still wait.
	Position int
	// Blockers are what holds it up: active claims, and claims queued
	// ahead of it.
	Blockers []Conflict
}

// ClaimWait tells where claim e (read from this store) stands at `at`;
// nil when it does not wait then.
func (s *Store) ClaimWait(ctx context.Context, workspace string, e *Entity, at time.Time) (*Wait, error) {
	if e.Kind != protocol.KindClaim || e.Current(at) != ClaimQueued {
		return nil, nil
	}
	bs, err := s.ClaimBlockers(ctx, workspace, e, at)
	if err != nil {
		return nil, err
	}
	w := &Wait{Position: 1, Blockers: bs}
	for _, b := range bs {
		if b.Queued() {
			w.Position++
		}
	}
	return w, nil
}

// ClaimBlockers returns what holds up claim e (read from this store) at
// `at`, whatever its own state: the live claims of other actors it
// conflicts with that are active, or queued ahead of it. For a claim whose
// wait ended, they are who still holds its paths, and who waits ahead.
func (s *Store) ClaimBlockers(ctx context.Context, workspace string, e *Entity, at time.Time) ([]Conflict, error) {
	ws, err := s.workspaceID(ctx, s.r, workspace)
	if err != nil {
		return nil, err
	}
	var c protocol.Claim
	if err := json.Unmarshal(e.Body, &c); err != nil {
		return nil, fmt.Errorf("wait: %w", err)
	}
	return blockersOf(ctx, s.readQuery, ws, e, &c, at)
}

// selOutcomes reads an actor's claims that asked to wait whose wait ends
// after the earlier of a time and the ingestedAt of an operation (0 when
// retention deleted it: then all of them), in one statement: it runs with
// every tool result's news.
const selOutcomes = "SELECT " + entityCols + " FROM proj INDEXED BY proj_by_wait WHERE ws = ?1 AND kind = ?2 AND actor = ?3 AND wait_us > 0" +
	" AND wait_us > min(?4, coalesce((SELECT ingested_us FROM ops WHERE id = ?5), 0)) ORDER BY created_seq"

// ClaimOutcomes returns actor's claims that asked to wait and whose
// outcome came (granted, wait expired, denied) in (after, now] or became
// known since log position afterSeq: what the actor has not been told
// if it was told everything through afterSeq and `after`. A schedule
// changed by an operation only from that operation's ingestedAt on, and
// every claim's outcome is before its wait's end, so only the claims
// whose wait ends after the earlier of `after` and afterSeq's ingestedAt
// are read.
func (s *Store) ClaimOutcomes(ctx context.Context, workspace, actor string, afterSeq int64, after, now time.Time) ([]*Entity, error) {
	ws, err := s.workspaceID(ctx, s.r, workspace)
	if err != nil {
		return nil, err
	}
	rows, err := s.readQuery(ctx, selOutcomes, ws, kindCode(protocol.KindClaim), actor, micros(after), opID(ws, afterSeq))
	if err != nil {
		return nil, fmt.Errorf("outcomes: %w", err)
	}
	defer rows.Close()
	var out []*Entity
	for rows.Next() {
		e, err := scanEntity(rows)
		if err != nil {
			return nil, fmt.Errorf("outcomes: %w", err)
		}
		at, ok := e.Outcome(now)
		if ok && (at.After(after) || e.Seq > afterSeq) {
			out = append(out, e)
		}
	}
	return out, rows.Err()
}

// Outcome is when a claim that asked to wait got its outcome, if it got
// one by now: its grant, its denial (its ingest), or the end of its wait.
// A released claim has none to tell (its actor released it).
func (e *Entity) Outcome(now time.Time) (time.Time, bool) {
	switch st := e.Current(now); {
	case e.Status == ClaimReleased || e.WaitUntil.IsZero():
		return time.Time{}, false
	case st == ClaimDenied:
		return e.IngestedAt, true
	case e.GrantedBy(now):
		return e.GrantAt, true
	case st == ClaimWaitExpired:
		return e.WaitUntil, true
	}
	return time.Time{}, false
}

// WaitingClaim is a claim that waits its turn, where it stands.
type WaitingClaim struct {
	*Entity
	// Position is its place in line (1: next); WaitsFor, what holds it
	// up (held claims, and claims queued ahead).
	Position int
	WaitsFor []Conflict
}

// Waits is the state of the workspace's lines at a time.
type Waits struct {
	// Waiting are the claims waiting at the time, in log order.
	Waiting []WaitingClaim
	// Granted are the claims that asked to wait (granted at once or after
	// waiting) and hold their paths at the time, with their leases.
	Granted []*Entity
}

// MaxWaitsListed bounds the claims Waits lists of each kind.
const MaxWaitsListed = 1000

const (
	selWaiting = "SELECT " + entityCols + " FROM proj INDEXED BY proj_queued WHERE ws = ? AND kind = ? AND status = 'queued' AND expires_us > ? AND NOT (grant_us > 0 AND grant_us <= ?) ORDER BY created_seq LIMIT ?"
	selWaited  = "SELECT " + entityCols + " FROM proj INDEXED BY proj_waited WHERE ws = ? AND kind = ? AND wait_us > 0 AND expires_us > ? AND status IN ('active', 'queued') AND (status = 'active' OR (grant_us > 0 AND grant_us <= ?)) ORDER BY created_seq LIMIT ?"
)

// Waits returns the workspace's lines at `at`: who waits, in what place,
// for what, and the claims that asked to wait and hold their paths; a
// pure function of the log (this store's copy of it) and `at`, what the
// dashboard shows.
func (s *Store) Waits(ctx context.Context, workspace string, at time.Time) (*Waits, error) {
	ws, err := s.workspaceID(ctx, s.r, workspace)
	if err != nil {
		return nil, err
	}
	read := func(q string) ([]*Entity, error) {
		rows, err := s.readQuery(ctx, q, ws, kindCode(protocol.KindClaim), micros(at), micros(at), MaxWaitsListed)
		if err != nil {
			return nil, fmt.Errorf("waits: %w", err)
		}
		defer rows.Close()
		var out []*Entity
		for rows.Next() {
			e, err := scanEntity(rows)
			if err != nil {
				return nil, fmt.Errorf("waits: %w", err)
			}
			out = append(out, e)
		}
		return out, rows.Err()
	}
	w := &Waits{}
	waiting, err := read(selWaiting)
	if err != nil {
		return nil, err
	}
	for _, e := range waiting {
		cw, err := s.ClaimWait(ctx, workspace, e, at)
		if err != nil {
			return nil, err
		}
		if cw != nil {
			w.Waiting = append(w.Waiting, WaitingClaim{Entity: e, Position: cw.Position, WaitsFor: cw.Blockers})
		}
	}
	if w.Granted, err = read(selWaited); err != nil {
		return nil, err
	}
	return w, nil
}
