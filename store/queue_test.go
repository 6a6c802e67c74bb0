package store

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/crosscode/crosscode-mcp/internal/testing/queuemodel"
	"github.com/crosscode/crosscode-mcp/protocol"
)

// TestQueueModel holds the projections of waiting claims against an
// independent model (internal/testing/queuemodel) on random logs: after
// each random slice of the log reaches the store (through Mirror, as a
// remote replica's does), every claim's state at random moments from
// then on (grants at lease ends, waits running out, leases from the
// grant), queued claims' places in line, the queues of claims and the
// denials (conflict, limit, deadlock) must be the model's.
func TestQueueModel(t *testing.T) {
	seeds := 12
	if testing.Short() {
		seeds = 3
	}
	totals := map[string]int{}
	for seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			start := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
			g := queuemodel.NewGen(uint64(seed), pjWS, 3+seed%3, start)
			log := g.Log(260)
			s := pjOpen(t, false)
			ctx := context.Background()
			m := queuemodel.New()
			for lo := 0; lo < len(log); {
				hi := min(len(log), lo+1+g.Rng.IntN(12))
				if err := s.Mirror(ctx, pjWS, log[lo:hi], "q", int64(hi)); err != nil {
					t.Fatal(err)
				}
				for _, e := range log[lo:hi] {
					m.Apply(e)
				}
				last := *log[hi-1].IngestedAt
				for range 3 {
					at := last.Add([]time.Duration{0, time.Millisecond, time.Second, time.Minute, 10 * time.Minute, time.Hour, 3 * time.Hour}[g.Rng.IntN(7)])
					compareQueues(t, s, m.Clone(), hi, at, totals)
				}
				lo = hi
			}
		})
	}
	t.Logf("states compared: %v", totals)
	if !testing.Short() && (totals["queued"] < 50 || totals["late grant"] < 50 || totals["wait_expired"] < 50 || totals["deadlock"] < 5 || totals["queue"] < 20) {
		t.Errorf("the logs were too tame to show much: %v", totals)
	}
}

// compareQueues compares the store's claims at `at` with the model's
// (a replay of the log through serverSequence through), advanced to `at`.
func compareQueues(t *testing.T, s *Store, m *queuemodel.Model, through int, at time.Time, totals map[string]int) {
	t.Helper()
	ctx := context.Background()
	m.Advance(at)
	got, err := s.Entities(ctx, EntityQuery{Workspace: pjWS, Kind: protocol.KindClaim, Limit: 100000})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(m.Claims()) {
		t.Fatalf("store has %d claims, model %d", len(got), len(m.Claims()))
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
		case queuemodel.Active, queuemodel.Expired:
			if !e.ExpiresAt.Equal(c.LeaseEnd) {
				t.Fatalf("claim %s: lease ends %s, model %s", e.ID, e.ExpiresAt, c.LeaseEnd)
			}
			if c.Late != !e.GrantAt.IsZero() || (c.Late && !e.GrantAt.Equal(c.GrantAt)) {
				t.Fatalf("claim %s: granted at %s, model %s (late %v)", e.ID, e.GrantAt, c.GrantAt, c.Late)
			}
			if c.Late {
				totals["late grant"]++
			}
			if st == queuemodel.Active {
				q, err := s.Queue(ctx, pjWS, e.ID, at)
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
		case queuemodel.Queued:
			if !e.WaitUntil.Equal(c.WaitEnd) {
				t.Fatalf("claim %s: waits until %s, model %s", e.ID, e.WaitUntil, c.WaitEnd)
			}
			w, err := s.ClaimWait(ctx, pjWS, e, at)
			if err != nil || w == nil {
				t.Fatalf("ClaimWait(%s): %v, %v", e.ID, w, err)
			}
			if w.Position != m.Position(c) {
				t.Fatalf("claim %s: position %d, model %d", e.ID, w.Position, m.Position(c))
			}
		case queuemodel.Denied:
			d := e.Denial()
			if d == nil || d.Reason != c.Reason {
				t.Fatalf("claim %s: denied %+v, model %s", e.ID, d, c.Reason)
			}
			if d.Reason == DenialDeadlock {
				totals["deadlock"]++
				checkCycle(t, e, d.Cycle)
			}
		}
	}
}

// checkCycle checks that a deadlock's cycle starts at the denied claim,
// chains actor to actor, and comes back to its actor.
func checkCycle(t *testing.T, e *Entity, cycle []WaitEdge) {
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

func waiterIDs(ws []Waiter) []string {
	var out []string
	for _, w := range ws {
		out = append(out, w.ClaimID)
	}
	return out
}
