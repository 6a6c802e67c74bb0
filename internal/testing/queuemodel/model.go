// Package queuemodel is an independent, deliberately simple model of claim
// arbitration with waiting (spec sections 3 and 14), for tests to hold the
// stores' projections against: it replays a log in server order and steps
// through time instant by instant, applying the rules as the spec words
// them (a queued claim is granted at the first moment when no conflicting
// claim is active and no conflicting claim ahead of it in the log is
// queued), with none of the projections' shortcuts (no schedules, no
// index). It is quadratic and meant for logs of a few hundred events.
package queuemodel

import (
	"slices"
	"time"

	"github.com/crosscode/crosscode-mcp/internal/glob"
	"github.com/crosscode/crosscode-mcp/protocol"
)

// MaxActive is the per-actor limit of claims held or waited for.
const MaxActive = 32

// States a claim is reported in.
const (
	Active      = "active"
	Queued      = "queued"
	Denied      = "denied"
	Released    = "released"
	Expired     = "expired"
	WaitExpired = "wait_expired"
)

// Claim is one claim as the model knows it.
type Claim struct {
	ID, Actor string
	Patterns  []string
	Exclusive bool
	Seq       int64
	Ingested  time.Time
	Lease     time.Duration // expiresAt - createdAt
	ExpiresAt time.Time     // the payload's
	Wait      time.Duration // waitUntil - createdAt; 0: does not wait

	status string // active (granted), queued, denied, released, wait_expired
	// Reason is a denied claim's: conflict, limit or deadlock.
	Reason   string
	GrantAt  time.Time // when granted
	Late     bool      // granted after its ingest
	LeaseEnd time.Time // once granted
	WaitEnd  time.Time // a claim that asked to wait
}

// State is the claim's state at the model's current time.
func (c *Claim) State(now time.Time) string {
	if c.status == Active && !c.LeaseEnd.After(now) {
		return Expired
	}
	return c.status
}

// Model replays a log.
type Model struct {
	claims   map[string]*Claim
	order    []*Claim // by seq
	handoffs map[string]bool
	now      time.Time
	overlap  map[[2]string]bool // pattern overlap of two claims, by id; shared by clones
}

// New returns an empty model.
func New() *Model {
	return &Model{claims: map[string]*Claim{}, handoffs: map[string]bool{}, overlap: map[[2]string]bool{}}
}

// Clone returns a copy that moves on independently.
func (m *Model) Clone() *Model {
	n := &Model{claims: map[string]*Claim{}, handoffs: map[string]bool{}, now: m.now, overlap: m.overlap}
	for _, c := range m.order {
		cc := *c
		n.claims[c.ID] = &cc
		n.order = append(n.order, &cc)
	}
	for h := range m.handoffs {
		n.handoffs[h] = true
	}
	return n
}

// Claims returns the claims in log order.
func (m *Model) Claims() []*Claim { return m.order }

// Claim returns one claim, or nil.
func (m *Model) Claim(id string) *Claim { return m.claims[id] }

func (m *Model) conflict(a, b *Claim) bool {
	if a == b || a.Actor == b.Actor || !(a.Exclusive || b.Exclusive) {
		return false
	}
	key := [2]string{a.ID, b.ID}
	if a.ID > b.ID {
		key = [2]string{b.ID, a.ID}
	}
	o, ok := m.overlap[key]
	if !ok {
		o = glob.OverlapAny(a.Patterns, b.Patterns)
		m.overlap[key] = o
	}
	return o
}

// activeAt: granted, not released, lease not over (grants are never in
// the future of the model's time).
func (m *Model) activeAt(c *Claim, t time.Time) bool {
	return c.status == Active && c.LeaseEnd.After(t)
}

// Apply replays one logged envelope (in server order, with its
// serverSequence and ingestedAt).
func (m *Model) Apply(e *protocol.Envelope) {
	at := *e.IngestedAt
	m.Advance(at)
	switch p := e.Payload.(type) {
	case *protocol.Claim:
		if e.Type == protocol.EventClaimReleased {
			if c := m.claims[e.ID]; c != nil {
				c.status = Released
			}
			break
		}
		m.create(e, p, at)
	case *protocol.Handoff:
		if e.Type == protocol.EventHandoffRequested {
			m.handoffs[e.ID] = true
			break
		}
		if !m.handoffs[e.ID] {
			break // answered already: the first answer decides
		}
		delete(m.handoffs, e.ID)
		if p.Status != protocol.HandoffAccepted {
			break
		}
		for _, id := range p.ClaimIDs {
			if c := m.claims[id]; c != nil && c.status == Active {
				c.Actor = p.ResponderActorID
			}
		}
	}
	m.grants(at)
}

func (m *Model) create(e *protocol.Envelope, p *protocol.Claim, at time.Time) {
	c := &Claim{ID: e.ID, Actor: p.ActorID, Patterns: p.Patterns, Exclusive: p.Exclusive, Seq: e.ServerSequence, Ingested: at,
		Lease: p.ExpiresAt.Sub(p.CreatedAt), ExpiresAt: p.ExpiresAt}
	if p.WaitUntil != nil {
		c.Wait = p.WaitUntil.Sub(p.CreatedAt)
		c.WaitEnd = at.Add(c.Wait)
	}
	m.claims[c.ID] = c
	m.order = append(m.order, c)
	live := func(k *Claim) bool { return m.activeAt(k, at) || k.status == Queued }
	held := 0
	var conflicts []*Claim
	for _, k := range m.order[:len(m.order)-1] {
		if k.Actor == c.Actor && live(k) {
			held++
		}
		if live(k) && m.conflict(c, k) {
			conflicts = append(conflicts, k)
		}
	}
	switch {
	case held >= MaxActive:
		c.status, c.Reason = Denied, "limit"
	case len(conflicts) == 0:
		c.status, c.GrantAt, c.LeaseEnd = Active, at, p.ExpiresAt
	case c.Wait == 0:
		c.status, c.Reason = Denied, "conflict"
	case m.closesCycle(c, conflicts, at):
		c.status, c.Reason = Denied, "deadlock"
	default:
		c.status = Queued
	}
}

// WaitsFor returns what holds up claim c (queued) at t: conflicting
// claims that are active, or queued ahead of it.
func (m *Model) WaitsFor(c *Claim, t time.Time) []*Claim {
	var out []*Claim
	for _, k := range m.order {
		if m.conflict(c, k) && (m.activeAt(k, t) || (k.status == Queued && k.Seq < c.Seq)) {
			out = append(out, k)
		}
	}
	return out
}

// Edges is the wait-for graph at t: actor -> the actors it waits for.
func (m *Model) Edges(t time.Time) map[string][]string {
	edges := map[string][]string{}
	for _, q := range m.order {
		if q.status != Queued {
			continue
		}
		for _, k := range m.WaitsFor(q, t) {
			if !slices.Contains(edges[q.Actor], k.Actor) {
				edges[q.Actor] = append(edges[q.Actor], k.Actor)
			}
		}
	}
	return edges
}

// closesCycle reports whether c, waiting for conflicts, would close a
// cycle: its actor is reachable from theirs.
func (m *Model) closesCycle(c *Claim, conflicts []*Claim, t time.Time) bool {
	edges := m.Edges(t)
	seen := map[string]bool{}
	var stack []string
	for _, k := range conflicts {
		stack = append(stack, k.Actor)
	}
	for len(stack) > 0 {
		a := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if a == c.Actor {
			return true
		}
		if seen[a] {
			continue
		}
		seen[a] = true
		stack = append(stack, edges[a]...)
	}
	return false
}

// Advance moves the model's time to t, stepping through every moment in
// between at which a lease or a wait ends, and granting at each.
func (m *Model) Advance(t time.Time) {
	for {
		var next time.Time
		for _, c := range m.order {
			var end time.Time
			switch c.status {
			case Active:
				end = c.LeaseEnd
			case Queued:
				end = c.WaitEnd
			default:
				continue
			}
			if end.After(m.now) && !end.After(t) && (next.IsZero() || end.Before(next)) {
				next = end
			}
		}
		if next.IsZero() {
			break
		}
		m.now = next
		m.grants(next)
	}
	if t.After(m.now) {
		m.now = t
	}
	m.grants(t)
}

// grants applies, at moment t, the waits that end and the grants due, in
// log order.
func (m *Model) grants(t time.Time) {
	for _, c := range m.order {
		if c.status != Queued {
			continue
		}
		if !c.WaitEnd.After(t) {
			c.status = WaitExpired
			continue
		}
		if len(m.WaitsFor(c, t)) == 0 {
			c.status, c.GrantAt, c.Late, c.LeaseEnd = Active, t, true, t.Add(c.Lease)
		}
	}
}

// Position is a queued claim's place in line at the model's time: 1 +
// the conflicting claims queued ahead of it.
func (m *Model) Position(c *Claim) int {
	n := 1
	for _, k := range m.WaitsFor(c, m.now) {
		if k.status == Queued {
			n++
		}
	}
	return n
}

// Queue lists, at the model's time, the claims waiting for k (active or
// queued), in log order.
func (m *Model) Queue(k *Claim) []string {
	var out []string
	for _, q := range m.order {
		if q.status == Queued && m.conflict(q, k) && (m.activeAt(k, m.now) || (k.status == Queued && k.Seq < q.Seq)) {
			out = append(out, q.ID)
		}
	}
	return out
}
