package queuemodel

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/crosscode/crosscode-mcp/internal/testing/fixture"
	"github.com/crosscode/crosscode-mcp/protocol"
)

// Gen builds random, valid logs of claims (half of them willing to wait),
// releases and withdrawals, and handoffs, among a few actors on a few
// overlapping paths and globs: enough contention for queues, grants at
// lease ends, waits running out and deadlocks.
type Gen struct {
	Rng       *rand.Rand
	Workspace string
	// Clock is the createdAt of the next envelope; Step moves it on.
	Clock time.Time

	actors   []string
	reps     map[string]*fixture.Replica
	claims   []*protocol.Claim
	holder   map[string]string // claim id -> the actor that may release it
	requests []*protocol.Handoff
	n        int
}

// NewGen returns a generator over `actors` actors.
func NewGen(seed uint64, workspace string, actors int, start time.Time) *Gen {
	g := &Gen{Rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), Workspace: workspace, Clock: start,
		reps: map[string]*fixture.Replica{}, holder: map[string]string{}}
	for i := range actors {
		a := fmt.Sprintf("actor%d@example.com", i)
		g.actors = append(g.actors, a)
		g.reps[a] = fixture.NewReplica(workspace, fmt.Sprintf("rep_%d_%d", seed, i), a)
	}
	return g
}

var (
	paths = []string{"src/boss.gd", "src/level.gd", "src/hud.gd", "assets/boss.png", "docs/notes.md"}
	globs = []string{"src/**", "src/*.gd", "assets/**", "**/*.md"}
	// Leases and waits from a second to an hour, so that some end between
	// two events and some run past the end of the log.
	leases = []time.Duration{time.Second, 30 * time.Second, 2 * time.Minute, 10 * time.Minute, 30 * time.Minute}
	waits  = []time.Duration{time.Second, 20 * time.Second, 3 * time.Minute, 20 * time.Minute, time.Hour}
	gaps   = []time.Duration{0, 0, time.Millisecond, 500 * time.Millisecond, 5 * time.Second, 40 * time.Second, 3 * time.Minute}
)

// Gap returns a random time to the next event.
func (g *Gen) Gap() time.Duration { return gaps[g.Rng.IntN(len(gaps))] }

func (g *Gen) pick(xs []string) string { return xs[g.Rng.IntN(len(xs))] }

// Next returns the next envelope of the log, created at Clock.
func (g *Gen) Next() *protocol.Envelope {
	g.n++
	for {
		switch r := g.Rng.IntN(100); {
		case r < 58:
			return g.claim()
		case r < 82 && len(g.claims) > 0:
			return g.release()
		case r < 90 && len(g.claims) > 0:
			return g.request()
		case r < 100 && len(g.requests) > 0:
			return g.respond()
		}
	}
}

func (g *Gen) claim() *protocol.Envelope {
	actor := g.pick(g.actors)
	pats := []string{g.pick(paths)}
	switch g.Rng.IntN(6) {
	case 0:
		pats = []string{g.pick(globs)}
	case 1:
		if p := g.pick(paths); p != pats[0] {
			pats = append(pats, p)
		}
	}
	now := g.Clock.UTC().Truncate(time.Millisecond)
	c := &protocol.Claim{ID: fmt.Sprintf("clm_%04d", g.n), WorkspaceID: g.Workspace, ActorID: actor, ReplicaID: g.reps[actor].ID,
		Patterns: pats, Exclusive: g.Rng.IntN(5) > 0, Reason: fmt.Sprintf("work %d", g.n), CreatedAt: now,
		ExpiresAt: now.Add(leases[g.Rng.IntN(len(leases))])}
	if g.Rng.IntN(10) < 6 {
		w := now.Add(waits[g.Rng.IntN(len(waits))])
		c.WaitUntil = &w
	}
	g.claims = append(g.claims, c)
	g.holder[c.ID] = actor
	return g.reps[actor].Envelope(protocol.EventClaimCreated, c)
}

func (g *Gen) release() *protocol.Envelope {
	c := *g.claims[g.Rng.IntN(len(g.claims))]
	actor := g.holder[c.ID]
	if g.Rng.IntN(8) == 0 {
		actor = g.pick(g.actors) // the log takes a release from anyone; its projection, whoever held the claim
	}
	at := g.Clock.UTC().Truncate(time.Millisecond)
	if at.Before(c.CreatedAt) {
		at = c.CreatedAt
	}
	c.ActorID, c.ReleasedAt, c.ReleaseReason = actor, &at, "done"
	return g.reps[actor].Envelope(protocol.EventClaimReleased, &c)
}

func (g *Gen) request() *protocol.Envelope {
	c := g.claims[g.Rng.IntN(len(g.claims))]
	from := g.holder[c.ID]
	h := &protocol.Handoff{ID: fmt.Sprintf("hnd_%04d", g.n), WorkspaceID: g.Workspace, FromActorID: from, FromReplicaID: g.reps[from].ID,
		ClaimIDs: []string{c.ID}, Summary: "over to you", Status: protocol.HandoffRequested, CreatedAt: g.Clock.UTC().Truncate(time.Millisecond)}
	g.requests = append(g.requests, h)
	return g.reps[from].Envelope(protocol.EventHandoffRequested, h)
}

func (g *Gen) respond() *protocol.Envelope {
	i := g.Rng.IntN(len(g.requests))
	h := *g.requests[i]
	g.requests = append(g.requests[:i], g.requests[i+1:]...)
	to := g.pick(g.actors)
	for to == h.FromActorID {
		to = g.pick(g.actors)
	}
	at := g.Clock.UTC().Truncate(time.Millisecond)
	if at.Before(h.CreatedAt) {
		at = h.CreatedAt
	}
	h.Status, h.RespondedAt, h.ResponderActorID = protocol.HandoffAccepted, &at, to
	if g.Rng.IntN(4) == 0 {
		h.Status = protocol.HandoffDeclined
	} else {
		for _, id := range h.ClaimIDs {
			g.holder[id] = to // if it moved; a release by another actor is harmless
		}
	}
	return g.reps[to].Envelope(protocol.EventHandoffResponded, &h)
}

// Log returns n envelopes stamped as a log from start: serverSequence
// from 1 and ingestedAt moving on by random gaps (equal ones included).
func (g *Gen) Log(n int) []*protocol.Envelope {
	out := make([]*protocol.Envelope, 0, n)
	for i := range n {
		g.Clock = g.Clock.Add(g.Gap())
		e := g.Next()
		at := g.Clock.UTC()
		e.ServerSequence, e.IngestedAt = int64(i+1), &at
		out = append(out, e)
	}
	return out
}

// Replay returns a model that replayed log.
func Replay(log []*protocol.Envelope) *Model {
	m := New()
	for _, e := range log {
		m.Apply(e)
	}
	return m
}
