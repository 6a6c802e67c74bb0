package store_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/crosscode/crosscode-mcp/internal/testing/queuemodel"
	"github.com/crosscode/crosscode-mcp/protocol"
	"github.com/crosscode/crosscode-mcp/store"
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
			g := queuemodel.NewGen(uint64(seed), "mygame", 3+seed%3, start)
			log := g.Log(260)
			ctx := context.Background()
			s, err := store.Open(ctx, filepath.Join(t.TempDir(), "ws.db"), &store.Options{Projections: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			m := queuemodel.New()
			for lo := 0; lo < len(log); {
				hi := min(len(log), lo+1+g.Rng.IntN(12))
				if err := s.Mirror(ctx, "mygame", log[lo:hi], "q", int64(hi)); err != nil {
					t.Fatal(err)
				}
				for _, e := range log[lo:hi] {
					m.Apply(e)
				}
				last := *log[hi-1].IngestedAt
				for range 3 {
					at := last.Add([]time.Duration{0, time.Millisecond, time.Second, time.Minute, 10 * time.Minute, time.Hour, 3 * time.Hour}[g.Rng.IntN(7)])
					queuemodel.Compare(t, s, "mygame", m.Clone(), hi, at, totals)
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

// BenchmarkClaimAndReleaseQueued (issue 24): in local mode (projections),
// a claim of a free file and its release, each a durable commit, among
// 10,000 held claims, with none and with 1,000 claims waiting (behind
// other claims), in one run: what deciding grants adds to a replica's
// writes.
func BenchmarkClaimAndReleaseQueued(b *testing.B) {
	for _, queued := range []int{0, 1000} {
		b.Run(fmt.Sprintf("queued=%d", queued), func(b *testing.B) {
			ctx := context.Background()
			s, err := store.Open(ctx, filepath.Join(b.TempDir(), "ws.db"), &store.Options{Projections: true})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			if _, err := s.EnsureWorkspace(ctx, "mygame", ""); err != nil {
				b.Fatal(err)
			}
			now := time.Now().UTC().Truncate(time.Millisecond)
			var items []store.Item
			seq := map[string]int64{}
			env := func(t protocol.EventType, c *protocol.Claim) *protocol.Envelope {
				seq[c.ReplicaID]++
				return &protocol.Envelope{ID: c.ID, SchemaVersion: 1, WorkspaceID: "mygame", ReplicaID: c.ReplicaID, ActorID: c.ActorID, SessionID: "ses",
					Agent: &protocol.Agent{Provider: protocol.ProviderCodex}, Type: t, ClientSequence: seq[c.ReplicaID], CreatedAt: now, Payload: c}
			}
			ingest := func() {
				for i := 0; i < len(items); i += 500 {
					res, err := s.IngestBatch(ctx, items[i:min(i+500, len(items))])
					if err != nil {
						b.Fatal(err)
					}
					for _, r := range res {
						if r.Err != nil {
							b.Fatal(r.Err)
						}
					}
				}
				items = items[:0]
			}
			claim := func(id, actor, pattern string, wait *time.Time) *protocol.Claim {
				return &protocol.Claim{ID: id, WorkspaceID: "mygame", ActorID: actor, ReplicaID: "rep_" + actor, Patterns: []string{pattern},
					Exclusive: true, Reason: "bench", CreatedAt: now, ExpiresAt: now.Add(8 * time.Hour), WaitUntil: wait}
			}
			for i := range 10_000 {
				actor := fmt.Sprintf("actor%d@example.com", i/32)
				items = append(items, store.Item{Workspace: "mygame", Envelope: env(protocol.EventClaimCreated, claim(fmt.Sprintf("clm_%06d", i), actor, fmt.Sprintf("src/mod%d/**", i), nil))})
			}
			wait := now.Add(time.Hour)
			for q := range queued {
				actor := fmt.Sprintf("waiter%d@example.com", q)
				items = append(items, store.Item{Workspace: "mygame", Envelope: env(protocol.EventClaimCreated, claim(fmt.Sprintf("clm_w%05d", q), actor, fmt.Sprintf("src/mod%d/main.go", q), &wait))})
			}
			ingest()
			me := "bench@example.com"
			for i := 0; b.Loop(); i++ {
				c := claim(fmt.Sprintf("clm_b%07d", i), me, fmt.Sprintf("docs/page%d.md", i), nil)
				items = append(items, store.Item{Workspace: "mygame", Envelope: env(protocol.EventClaimCreated, c)})
				ingest()
				r := *c
				at := now
				r.ReleasedAt, r.ReleaseReason = &at, "done"
				items = append(items, store.Item{Workspace: "mygame", Envelope: env(protocol.EventClaimReleased, &r)})
				ingest()
			}
		})
	}
}
