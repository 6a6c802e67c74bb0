package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/crosscode/crosscode-mcp/internal/glob"
	"github.com/crosscode/crosscode-mcp/protocol"
)

// Projection rules. They are part of the protocol's arbitration: every
// replica must use the same values to compute the same projections.
const (
	// MaxActiveClaims is how many active claims one actor may hold; a
	// claim beyond that is denied.
	MaxActiveClaims = 32
	// IntentTTL is how long an intent without expiresAt counts as current.
	IntentTTL = 2 * time.Hour
)

// Claim statuses in the projection. An active claim whose expiresAt has
// passed no longer counts; it is reported as expired. A queued claim's
// row holds its schedule, so its status at a time is computed (see
// Entity.Current): queued, then active once granted (then expired), or
// wait_expired.
const (
	ClaimActive      = "active"
	ClaimDenied      = "denied"
	ClaimReleased    = "released"
	ClaimQueued      = "queued"
	ClaimExpired     = "expired"      // reported, never stored
	ClaimWaitExpired = "wait_expired" // reported, never stored
)

// Denial reasons.
const (
	DenialConflict = "conflict"
	DenialLimit    = "limit"
	DenialDeadlock = "deadlock"
)

// Denial explains why a claim was denied: the earlier active or queued
// claims of other actors it overlaps, the per-actor limit, or (for a claim
// that would have waited) the wait-for cycle its wait would have closed.
type Denial struct {
	Reason    string     `json:"reason"` // DenialConflict, DenialLimit or DenialDeadlock
	Conflicts []Conflict `json:"conflicts,omitempty"`
	Limit     int        `json:"limit,omitempty"`
	Cycle     []WaitEdge `json:"cycle,omitempty"`
}

// Conflict is one claim that denied another, or that another waits for.
type Conflict struct {
	ClaimID   string   `json:"claimId"`
	Actor     string   `json:"actor"`
	Patterns  []string `json:"patterns"`
	Exclusive bool     `json:"exclusive"`
	// ExpiresAt is when an active claim's lease ends; for a queued one,
	// when it stops mattering as the log stands: the end of the lease it
	// is scheduled to get, or the end of its wait.
	ExpiresAt time.Time `json:"expiresAt"`
	// Status is "queued" for a claim waiting its turn; empty for an
	// active one.
	Status string `json:"status,omitempty"`
	// WaitUntil is when a queued claim's wait ends.
	WaitUntil *time.Time `json:"waitUntil,omitempty"`
	// Seq is the claim's serverSequence: its place in line.
	Seq int64 `json:"seq,omitempty"`
	// Queue lists, for an active claim, the claims waiting for it, in
	// order (filled by ClaimQueues, never stored).
	Queue []Waiter `json:"queue,omitempty"`
}

// Queued reports whether the claim waits its turn.
func (c *Conflict) Queued() bool { return c.Status == ClaimQueued }

// WaitEdge is one step of a wait-for cycle: claim ClaimID of Actor waits
// for claim WaitsFor, which Holder holds or waits for.
type WaitEdge struct {
	ClaimID  string `json:"claimId"`
	Actor    string `json:"actor"`
	WaitsFor string `json:"waitsFor"`
	Holder   string `json:"holder"`
}

// projectThrough applies to the projections, inside tx, every operation of
// ws up to seq upto that is not applied yet. have holds envelopes of the
// current batch by serverSequence, so they need not be decoded again.
func (s *Store) projectThrough(ctx context.Context, tx *sql.Tx, ws, upto int64, have map[int64]*protocol.Envelope) error {
	var through int64
	err := s.txQueryRow(ctx, tx, selThrough, ws).Scan(&through)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("project: %w", err)
	}
	return s.projectFrom(ctx, tx, ws, through, upto, have)
}

// projectFrom is projectThrough when tx read already that the projections
// of ws went through seq through.
func (s *Store) projectFrom(ctx context.Context, tx *sql.Tx, ws, through, upto int64, have map[int64]*protocol.Envelope) error {
	if through >= upto {
		return nil
	}
	p := projector{s: s, ctx: ctx, tx: tx, ws: ws}
	next := through + 1
	// The common case: the batch's own envelopes follow what is applied.
	for ; next <= upto; next++ {
		e, ok := have[next]
		if !ok {
			break
		}
		if err := p.apply(e); err != nil {
			return err
		}
	}
	if next <= upto {
		// Operations logged by others since: read them from the log.
		rows, err := s.txQuery(ctx, tx, selOpsRange, opID(ws, next), opID(ws, upto))
		if err != nil {
			return fmt.Errorf("project: %w", err)
		}
		var ops []Op
		for rows.Next() {
			var op Op
			var id, us int64
			if err := rows.Scan(&id, &us, &op.Body); err != nil {
				rows.Close()
				return fmt.Errorf("project: %w", err)
			}
			op.Seq, op.IngestedAt = opSeq(id), fromMicros(us)
			ops = append(ops, op)
		}
		if err := rows.Close(); err != nil {
			return fmt.Errorf("project: %w", err)
		}
		for _, op := range ops {
			e, ok := have[op.Seq]
			if !ok {
				if e, err = op.Envelope(); err != nil {
					return fmt.Errorf("project: %w", err)
				}
			}
			if err := p.apply(e); err != nil {
				return err
			}
		}
	}
	if _, err := s.txExec(ctx, tx, upsThrough, ws, upto); err != nil {
		return fmt.Errorf("project: %w", err)
	}
	return nil
}

type projector struct {
	s   *Store
	ctx context.Context
	tx  *sql.Tx
	ws  int64
}

func (p *projector) exec(q string, args ...any) error {
	_, err := p.s.txExec(p.ctx, p.tx, q, args...)
	if err != nil {
		return fmt.Errorf("project: %w", err)
	}
	return nil
}

// The projections' statements, prepared once on the writer (see
// writerStatements).
const (
	selThrough   = "SELECT seq FROM proj_through WHERE ws = ?"
	selOpsRange  = "SELECT id, ingested_us, body FROM ops WHERE id >= ? AND id <= ? ORDER BY id"
	upsThrough   = "INSERT INTO proj_through (ws, seq) VALUES (?, ?) ON CONFLICT (ws) DO UPDATE SET seq = excluded.seq"
	updReleased  = "UPDATE proj SET status = ?, seq = ?, updated_us = ?, body = ? WHERE ws = ? AND kind = ? AND id = ?"
	delPatterns  = "DELETE FROM proj_claim_patterns WHERE ws = ? AND id = ? AND prefix IN (SELECT value FROM json_each(?))"
	updTask      = "UPDATE proj SET target = ?, status = ?, seq = ?, updated_us = ?, body = ? WHERE ws = ? AND kind = ? AND id = ?"
	updResponded = "UPDATE proj SET status = ?, seq = ?, updated_us = ?, body = ? WHERE ws = ? AND kind = ? AND id = ? AND status = ?"
	// An accepted handoff moves the claims that hold their paths: active
	// ones, and queued ones granted by then.
	updClaimHolder = `UPDATE proj SET actor = ?, seq = ?, updated_us = ? WHERE ws = ? AND kind = ? AND id IN (SELECT value FROM json_each(?))
		AND (status = 'active' OR (status = 'queued' AND grant_us > 0 AND grant_us <= ?))`
	selActiveIntents = "SELECT id, body FROM proj INDEXED BY proj_by_actor WHERE ws = ? AND kind = ? AND actor = ? AND status = 'active'"
	updSuperseded    = "UPDATE proj SET status = ?, seq = ?, updated_us = ? WHERE ws = ? AND kind = ? AND id = ?"
	insPattern       = "INSERT OR IGNORE INTO proj_claim_patterns (ws, prefix, id, pattern) VALUES (?, ?, ?, ?)"
	// The claims an actor holds or waits for (the per-actor limit).
	countHeld          = "SELECT count(*) FROM proj INDEXED BY proj_by_actor WHERE ws = ? AND kind = ? AND actor = ? AND status IN ('active', 'queued') AND expires_us > ?"
	delExpiredPatterns = `DELETE FROM proj_claim_patterns WHERE ws = ?1 AND prefix = ?2 AND EXISTS (
		SELECT 1 FROM proj c WHERE c.ws = ?1 AND c.kind IN (?3, ?4) AND c.id = proj_claim_patterns.id AND c.expires_us > 0 AND c.expires_us <= ?5)`
	// The live entities with an indexed pattern whose literal prefix is an
	// ancestor of the query's (IN) or a descendant of it (the range):
	// two index lookups, not a scan.
	selOverlap = `SELECT c.id, c.actor, c.exclusive, c.expires_us, c.body, p.pattern, c.status, c.grant_us, c.wait_us, c.created_seq, c.ingested_us
		FROM proj_claim_patterns p JOIN proj c ON c.ws = p.ws AND c.kind = ?1 AND c.id = p.id
		WHERE p.ws = ?2 AND p.prefix IN (SELECT value FROM json_each(?3)) AND c.status IN (?6, ?9) AND c.expires_us > ?7 AND c.actor != ?8
		UNION ALL
		SELECT c.id, c.actor, c.exclusive, c.expires_us, c.body, p.pattern, c.status, c.grant_us, c.wait_us, c.created_seq, c.ingested_us
		FROM proj_claim_patterns p JOIN proj c ON c.ws = p.ws AND c.kind = ?1 AND c.id = p.id
		WHERE p.ws = ?2 AND p.prefix >= ?4 AND p.prefix < ?5 AND c.status IN (?6, ?9) AND c.expires_us > ?7 AND c.actor != ?8`
	// Every pattern may overlap a query with no literal prefix.
	selOverlapAll = `SELECT c.id, c.actor, c.exclusive, c.expires_us, c.body, p.pattern, c.status, c.grant_us, c.wait_us, c.created_seq, c.ingested_us
		FROM proj_claim_patterns p JOIN proj c ON c.ws = p.ws AND c.kind = ?1 AND c.id = p.id
		WHERE p.ws = ?2 AND c.status IN (?3, ?6) AND c.expires_us > ?4 AND c.actor != ?5`
)

// projectionStatements are prepared with the writer's statements.
var projectionStatements = append([]string{selThrough, selOpsRange, upsThrough, upsertProj, updReleased, delPatterns, updTask, updResponded,
	updClaimHolder, selActiveIntents, updSuperseded, insPattern, countHeld, delExpiredPatterns, selOverlap, selOverlapAll}, queueStatements...)

const upsertProj = `INSERT INTO proj (ws, kind, id, actor, target, status, exclusive, created_seq, seq, ingested_us, updated_us, expires_us, body, detail, grant_us, wait_us)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
	ON CONFLICT (ws, kind, id) DO UPDATE SET actor = excluded.actor, target = excluded.target, status = excluded.status,
		exclusive = excluded.exclusive, seq = excluded.seq, updated_us = excluded.updated_us,
		expires_us = excluded.expires_us, body = excluded.body, detail = excluded.detail,
		grant_us = excluded.grant_us, wait_us = excluded.wait_us`

// insert records an entity's state. On an update, created_seq and
// ingested_us keep their first values.
func (p *projector) insert(e *protocol.Envelope, actor, target, status string, exclusive bool, expires int64, detail string) error {
	return p.insertRow(e, actor, target, status, exclusive, expires, detail, 0, 0)
}

// insertRow is insert with a claim's schedule: grant and wait (unix
// microseconds, 0 for none).
func (p *projector) insertRow(e *protocol.Envelope, actor, target, status string, exclusive bool, expires int64, detail string, grant, wait int64) error {
	body, err := json.Marshal(e.Payload)
	if err != nil {
		return fmt.Errorf("project: %w", err)
	}
	at := micros(*e.IngestedAt)
	return p.exec(upsertProj, p.ws, kindCode(e.Type.Kind()), e.ID, actor, target, status, exclusive,
		e.ServerSequence, e.ServerSequence, at, at, expires, body, detail, grant, wait)
}

// apply applies one logged envelope.
func (p *projector) apply(e *protocol.Envelope) error {
	at := *e.IngestedAt
	switch pl := e.Payload.(type) {
	case *protocol.Intent:
		exp := at.Add(IntentTTL)
		if pl.ExpiresAt != nil {
			exp = *pl.ExpiresAt
		}
		if err := p.supersedeIntents(pl.ActorID, pl.ReplicaID, e.ServerSequence, at); err != nil {
			return err
		}
		if err := p.insert(e, pl.ActorID, "", "active", false, micros(exp), ""); err != nil {
			return err
		}
		return p.index(e.ID, pl.Paths, at)
	case *protocol.Claim:
		if e.Type == protocol.EventClaimReleased {
			return p.release(e, pl, at)
		}
		return p.claim(e, pl, at)
	case *protocol.Task:
		if e.Type == protocol.EventTaskUpdated {
			return p.exec(updTask,
				pl.AssigneeActorID, string(pl.Status), e.ServerSequence, micros(at), mustJSON(pl), p.ws, kindCode(protocol.KindTask), e.ID)
		}
		return p.insert(e, pl.CreatedByActor, pl.AssigneeActorID, string(pl.Status), false, 0, "")
	case *protocol.Handoff:
		if e.Type == protocol.EventHandoffRequested {
			return p.insert(e, pl.FromActorID, pl.ToActorID, string(pl.Status), false, 0, "")
		}
		// The first response to a requested handoff decides it; later ones
		// (two agents answering at once) change nothing.
		res, err := p.s.txExec(p.ctx, p.tx, updResponded,
			string(pl.Status), e.ServerSequence, micros(at), mustJSON(pl), p.ws, kindCode(protocol.KindHandoff), e.ID, string(protocol.HandoffRequested))
		if err != nil {
			return fmt.Errorf("project: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 || pl.Status != protocol.HandoffAccepted {
			return nil
		}
		// An accepted handoff moves its claims to the accepting actor.
		if err := p.exec(updClaimHolder,
			pl.ResponderActorID, e.ServerSequence, micros(at), p.ws, kindCode(protocol.KindClaim), mustJSON(pl.ClaimIDs), micros(at)); err != nil {
			return err
		}
		return p.handedOver(e.ServerSequence, pl.ClaimIDs, at)
	case *protocol.Validation:
		return p.insert(e, pl.ActorID, "", string(pl.Status), false, 0, "")
	case *protocol.ChangeTransaction:
		return p.insert(e, pl.ActorID, "", "shared", false, 0, "")
	}
	return fmt.Errorf("project: unknown payload %T", e.Payload)
}

// IntentSuperseded is the status of an intent replaced by a newer one of
// the same actor and replica: an intent says what one agent does now.
const IntentSuperseded = "superseded"

// supersedeIntents retires the current intents of actor on replica.
func (p *projector) supersedeIntents(actor, replica string, seq int64, at time.Time) error {
	rows, err := p.s.txQuery(p.ctx, p.tx, selActiveIntents, p.ws, kindCode(protocol.KindIntent), actor)
	if err != nil {
		return fmt.Errorf("project: %w", err)
	}
	type old struct {
		id    string
		paths []string
	}
	var olds []old
	for rows.Next() {
		var id string
		var body []byte
		if err := rows.Scan(&id, &body); err != nil {
			rows.Close()
			return fmt.Errorf("project: %w", err)
		}
		var in protocol.Intent
		if json.Unmarshal(body, &in) == nil && in.ReplicaID == replica {
			olds = append(olds, old{id, in.Paths})
		}
	}
	if err := rows.Close(); err != nil {
		return fmt.Errorf("project: %w", err)
	}
	for _, o := range olds {
		if err := p.exec(updSuperseded,
			IntentSuperseded, seq, micros(at), p.ws, kindCode(protocol.KindIntent), o.id); err != nil {
			return err
		}
		if err := p.exec(delPatterns,
			p.ws, o.id, mustJSON(prefixes(o.paths))); err != nil {
			return err
		}
	}
	return nil
}

// index records an active claim's or intent's patterns by literal prefix.
// It first drops, under the same prefixes, the rows of claims and intents
// that expired before `at`: operations apply in server order with
// ingestedAt never going back, so no later lookup can need them, and the
// prefixes in use stay small. Every replica drops the same rows.
func (p *projector) index(id string, patterns []string, at time.Time) error {
	for _, pat := range patterns {
		prefix := glob.LiteralPrefix(pat)
		if err := p.exec(delExpiredPatterns,
			p.ws, prefix, kindCode(protocol.KindClaim), kindCode(protocol.KindIntent), micros(at)); err != nil {
			return err
		}
		if err := p.exec(insPattern, p.ws, prefix, id, pat); err != nil {
			return err
		}
	}
	return nil
}

// queryFunc runs a query: inside the writer's transaction, or on the readers.
type queryFunc func(ctx context.Context, query string, args ...any) (*sql.Rows, error)

// overlappingClaims returns the claims of actors other than skipActor
// that are live at `at` (active, or queued and still waiting; a queued
// claim granted by then counts as active) with a pattern that overlaps
// one of patterns and for which keep returns true, by id.
func overlappingClaims(ctx context.Context, q queryFunc, ws int64, patterns []string, skipActor string, at time.Time, keep func(Conflict) bool) ([]Conflict, error) {
	hits, err := overlapping(ctx, q, ws, protocol.KindClaim, [2]string{ClaimActive, ClaimQueued}, patterns, skipActor, at)
	if err != nil {
		return nil, err
	}
	var out []Conflict
	for _, h := range hits {
		var cl protocol.Claim
		if err := json.Unmarshal(h.body, &cl); err != nil {
			return nil, fmt.Errorf("claims: %w", err)
		}
		c := Conflict{ClaimID: h.id, Actor: h.actor, Patterns: cl.Patterns, Exclusive: h.exclusive, ExpiresAt: fromMicros(h.expiresUs), Seq: h.seq}
		if h.status == ClaimQueued && (h.grantUs == 0 || h.grantUs > micros(at)) {
			w := fromMicros(h.waitUs)
			c.Status, c.WaitUntil = ClaimQueued, &w
		}
		if keep == nil || keep(c) {
			out = append(out, c)
		}
	}
	return out, nil
}

// hit is one entity whose indexed patterns overlap a query.
type hit struct {
	id, actor, status string
	exclusive         bool
	expiresUs         int64
	grantUs, waitUs   int64 // a queued claim's schedule
	seq, ingestedUs   int64 // created_seq and ingested_us
	body              []byte
}

// overlapping returns the entities of kind in one of statuses, live at
// `at`, of actors other than skipActor, with an indexed pattern
// overlapping one of patterns, sorted by id. It reads only the patterns
// whose literal prefix is an ancestor or a descendant of a query
// pattern's: no other can overlap.
func overlapping(ctx context.Context, q queryFunc, ws int64, kind protocol.Kind, statuses [2]string, patterns []string, skipActor string, at time.Time) ([]hit, error) {
	cands, err := candidates(ctx, q, ws, kind, statuses, patterns, skipActor, at)
	if err != nil || len(cands) == 0 {
		return nil, err
	}
	query := glob.Compile(patterns...) // once, not once per candidate
	var out []hit
	for _, c := range cands {
		if query.OverlapsAny(c.patterns) {
			out = append(out, c.hit)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out, nil
}

// candidate is an entity with the indexed patterns a lookup returned for it.
type candidate struct {
	hit
	patterns []string // without duplicates
}

// candidates reads the entities overlapping could return, with their
// patterns, by the literal prefixes of patterns (see lookupPrefixes): one
// query per prefix, or the one query for every pattern when a query
// pattern has no literal prefix.
func candidates(ctx context.Context, q queryFunc, ws int64, kind protocol.Kind, statuses [2]string, patterns []string, skipActor string, at time.Time) (map[string]*candidate, error) {
	cands := map[string]*candidate{}
	read := func(query string, args ...any) error {
		rows, err := q(ctx, query, args...)
		if err != nil {
			return fmt.Errorf("overlaps: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var h hit
			var pattern string
			if err := rows.Scan(&h.id, &h.actor, &h.exclusive, &h.expiresUs, &h.body, &pattern, &h.status, &h.grantUs, &h.waitUs, &h.seq, &h.ingestedUs); err != nil {
				return fmt.Errorf("overlaps: %w", err)
			}
			c := cands[h.id]
			if c == nil {
				c = &candidate{hit: h}
				cands[h.id] = c
			}
			// Lookups of sibling prefixes both return the patterns under
			// their common ancestors.
			if !slices.Contains(c.patterns, pattern) {
				c.patterns = append(c.patterns, pattern)
			}
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("overlaps: %w", err)
		}
		return nil
	}
	prefixes, all := lookupPrefixes(patterns)
	if all {
		if err := read(selOverlapAll, kindCode(kind), ws, statuses[0], micros(at), skipActor, statuses[1]); err != nil {
			return nil, err
		}
		return cands, nil
	}
	for _, lp := range prefixes {
		if err := read(selOverlap, kindCode(kind), ws, string(mustJSON(ancestors(lp))), lp+"/", lp+"0", statuses[0], micros(at), skipActor, statuses[1]); err != nil {
			return nil, err
		}
	}
	return cands, nil
}

// lookupPrefixes returns the literal prefixes to look patterns up by,
// sorted, each once, and without those below another of them: the lookup
// of a prefix reads its ancestors and everything below it, so it covers
// every prefix below it. all reports that a pattern has no literal prefix:
// then only the lookup of every pattern serves.
func lookupPrefixes(patterns []string) (prefixes []string, all bool) {
	set := make(map[string]bool, len(patterns))
	for _, p := range patterns {
		lp := glob.LiteralPrefix(p)
		if lp == "" {
			return nil, true
		}
		set[lp] = true
	}
	for lp := range set {
		anc := ancestors(lp)
		if !slices.ContainsFunc(anc[1:len(anc)-1], func(a string) bool { return set[a] }) {
			prefixes = append(prefixes, lp)
		}
	}
	sort.Strings(prefixes)
	return prefixes, false
}

// ancestors are the segment-wise ancestors of a literal prefix, "" and
// itself included.
func ancestors(lp string) []string {
	anc := []string{""}
	for i := 0; i < len(lp); i++ {
		if lp[i] == '/' {
			anc = append(anc, lp[:i])
		}
	}
	return append(anc, lp)
}

func prefixes(patterns []string) []string {
	out := make([]string, len(patterns))
	for i, p := range patterns {
		out[i] = glob.LiteralPrefix(p)
	}
	return out
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("encode %T: %v", v, err))
	}
	return b
}
