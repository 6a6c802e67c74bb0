package queuemodel

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/crosscode/crosscode-mcp/protocol"
	"github.com/crosscode/crosscode-mcp/store"
)

// Compare compares the claims of a store with projections at `at` with
// the model's (a replay of the log through serverSequence through),
// advanced to `at`: every claim's state, grant, lease and wait, queued
// claims' places in line, active claims' queues and denials' reasons (a
// deadlock's cycle must chain back to the denied claim's actor). totals
// counts what was compared.
func Compare(t testing.TB, s *store.Store, workspace string, m *Model, through int, at time.Time, totals map[string]int) {
	t.Helper()
	ctx := context.Background()
	m.Advance(at)
	got, err := s.Entities(ctx, store.EntityQuery{Workspace: workspace, Kind: protocol.KindClaim, Limit: 100000})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(m.Claims()) {
		t.Fatalf("store has %d claims, model %d", len(got), len(m.Claims()))
	}
	// The lines as a whole (what the dashboard shows).
	waits, err := s.Waits(ctx, workspace, at)
	if err != nil {
		t.Fatal(err)
	}
	var waiting, wantWaiting, granted, wantGranted []string
	for _, w := range waits.Waiting {
		waiting = append(waiting, w.ID)
		if c := m.Claim(w.ID); c == nil || w.Position != m.Position(c) {
			t.Fatalf("Waits: %s at position %d, model %v", w.ID, w.Position, c)
		}
	}
	for _, e := range waits.Granted {
		granted = append(granted, e.ID)
	}
	for _, c := range m.Claims() {
		switch {
		case c.State(at) == Queued:
			wantWaiting = append(wantWaiting, c.ID)
		case c.State(at) == Active && c.Wait > 0:
			wantGranted = append(wantGranted, c.ID)
		}
	}
	if !slices.Equal(waiting, wantWaiting) || !slices.Equal(granted, wantGranted) {
		t.Fatalf("Waits at %s: waiting %v granted %v; model %v and %v", at, waiting, granted, wantWaiting, wantGranted)
	}
	for _, e := range got {
		c := m.Claim(e.ID)
		want, st := c.State(at), e.Current(at)
		if st != want {
			t.Fatalf("at %s (log through %d): claim %s (%s %v excl=%v seq %d) is %s, model says %s (granted %s, lease to %s, wait to %s)",
				at.Format(time.StampMilli), through, e.ID, c.Actor, c.Patterns, c.Exclusive, c.Seq, st, want, c.GrantAt.Format(time.StampMilli), c.LeaseEnd.Format(time.StampMilli), c.WaitEnd.Format(time.StampMilli))
		}
		totals[st]++
		switch st {
		case Active, Expired:
			if !e.ExpiresAt.Equal(c.LeaseEnd) {
				t.Fatalf("claim %s: lease ends %s, model %s", e.ID, e.ExpiresAt, c.LeaseEnd)
			}
			if c.Late != !e.GrantAt.IsZero() || (c.Late && !e.GrantAt.Equal(c.GrantAt)) {
				t.Fatalf("claim %s: granted at %s, model %s (late %v)", e.ID, e.GrantAt, c.GrantAt, c.Late)
			}
			if c.Late {
				totals["late grant"]++
			}
			if st == Active {
				q, err := s.Queue(ctx, workspace, e.ID, at)
				if err != nil {
					t.Fatal(err)
				}
				if ids := waiterIDs(q); !slices.Equal(ids, m.Queue(c)) {
					t.Fatalf("queue of %s: %v, model %v", e.ID, ids, m.Queue(c))
				}
				if len(q) > 0 {
					totals["queue"]++
				}
			}
		case Queued:
			if !e.WaitUntil.Equal(c.WaitEnd) {
				t.Fatalf("claim %s: waits until %s, model %s", e.ID, e.WaitUntil, c.WaitEnd)
			}
			w, err := s.ClaimWait(ctx, workspace, e, at)
			if err != nil || w == nil {
				t.Fatalf("ClaimWait(%s): %v, %v", e.ID, w, err)
			}
			if w.Position != m.Position(c) {
				t.Fatalf("claim %s: position %d, model %d", e.ID, w.Position, m.Position(c))
			}
		case Denied:
			d := e.Denial()
			if d == nil || d.Reason != c.Reason {
				t.Fatalf("claim %s: denied %+v, model %s", e.ID, d, c.Reason)
			}
			if d.Reason == store.DenialDeadlock {
				totals["deadlock"]++
				checkCycle(t, e, d.Cycle)
			}
		}
	}
}

// checkCycle checks that a deadlock's cycle starts at the denied claim,
// chains actor to actor, and comes back to its actor.
func checkCycle(t testing.TB, e *store.Entity, cycle []store.WaitEdge) {
	t.Helper()
	if len(cycle) < 2 || cycle[0].ClaimID != e.ID || cycle[0].Actor != e.Actor || cycle[len(cycle)-1].Holder != e.Actor {
		t.Fatalf("claim %s: cycle %+v does not close at its actor %s", e.ID, cycle, e.Actor)
	}
	for i := 1; i < len(cycle); i++ {
		if cycle[i].Actor != cycle[i-1].Holder {
			t.Fatalf("claim %s: cycle %+v breaks at step %d", e.ID, cycle, i)
		}
	}
}

func waiterIDs(ws []store.Waiter) []string {
	var out []string
	for _, w := range ws {
		out = append(out, w.ClaimID)
	}
	return out
}
