package store

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crosscode/crosscode-mcp/internal/testing/fixture"
	"github.com/crosscode/crosscode-mcp/protocol"
)

// queryPlan returns SQLite's plan for q, one line per step.
func queryPlan(t *testing.T, s *Store, q string, args ...any) string {
	t.Helper()
	rows, err := s.r.QueryContext(context.Background(), "EXPLAIN QUERY PLAN "+q, args...)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	var steps []string
	for rows.Next() {
		var id, parent, notUsed int
		var detail string
		if err := rows.Scan(&id, &parent, &notUsed, &detail); err != nil {
			t.Fatal(err)
		}
		steps = append(steps, detail)
	}
	return strings.Join(steps, " | ")
}

// Every way entities are listed or counted, and the projection steps that
// read proj, go through an index that starts with their most selective
// filter: never through the (ws, kind) range of the primary key, which
// holds the kind's whole history.
func TestEntityQueriesUseTheirIndex(t *testing.T) {
	s := openTemp(t)
	now := time.Now()
	cases := []struct {
		q     EntityQuery
		index string
	}{
		{EntityQuery{Kind: protocol.KindClaim, Actor: "ada", Status: []string{ClaimActive}, LiveAt: now}, "proj_by_actor"},
		{EntityQuery{Kind: protocol.KindClaim, Actor: "ada", Status: []string{ClaimActive}, Limit: 1000}, "proj_by_actor"},
		{EntityQuery{Kind: protocol.KindClaim, NotActor: "ada", Status: []string{ClaimActive}, LiveAt: now}, "proj_by_status"},
		{EntityQuery{Kind: protocol.KindTask, Status: []string{"open", "in_progress", "blocked"}}, "proj_by_status"},
		{EntityQuery{Kind: protocol.KindHandoff, Status: []string{"requested"}, NotActor: "ada"}, "proj_by_status"},
		{EntityQuery{Kind: protocol.KindTask, Status: []string{"open"}, Target: "bob", Before: 10}, "proj_by_target"},
		{EntityQuery{Kind: protocol.KindTask, Before: 10}, "proj_by_created"},
		{EntityQuery{Kind: protocol.KindIntent}, "proj_by_created"},
	}
	for _, c := range cases {
		for _, count := range []bool{false, true} {
			q, args := entitiesSQL(1, c.q, count)
			plan := queryPlan(t, s, q, args...)
			if !strings.Contains(plan, "INDEX "+c.index+" (ws=? AND kind=?") || strings.Contains(plan, "PRIMARY KEY (ws=? AND kind=?)") {
				t.Errorf("%+v (count %v): plan %q, want a search of %s", c.q, count, plan, c.index)
			}
		}
	}
	for _, q := range []string{selActiveIntents, countHeld} {
		args := make([]any, strings.Count(q, "?"))
		if plan := queryPlan(t, s, q, args...); !strings.Contains(plan, "INDEX proj_by_actor (ws=? AND kind=? AND actor=? AND status=?)") {
			t.Errorf("%s: plan %q, want proj_by_actor with all four columns", q, plan)
		}
	}
}

// BenchmarkIntentAfterHistory measures a durable intent (which retires the
// actor's previous one on the same replica) after a history of earlier,
// superseded intents: the cost must not grow with the history.
func BenchmarkIntentAfterHistory(b *testing.B) {
	for _, history := range []int{0, 10_000} {
		b.Run(fmt.Sprintf("history=%d", history), func(b *testing.B) {
			ctx := context.Background()
			s := pjOpen(b, false)
			r := fixture.NewReplica(pjWS, "rep_a", "ada@example.com")
			var items []Item
			for i := range history {
				items = append(items, Item{Workspace: pjWS, Envelope: r.Intent(fmt.Sprintf("int_h%05d", i), "src/game/boss.gd")})
			}
			for i := 0; i < len(items); i += 500 {
				if _, err := s.IngestBatch(ctx, items[i:min(i+500, len(items))]); err != nil {
					b.Fatal(err)
				}
			}
			i := 0
			for b.Loop() {
				i++
				res, err := s.IngestBatch(ctx, []Item{{Workspace: pjWS, Envelope: r.Intent(fmt.Sprintf("int_b%07d", i), "src/game/boss.gd")}})
				if err != nil || res[0].Err != nil {
					b.Fatal(err, res[0].Err)
				}
			}
			n, err := s.CountEntities(ctx, EntityQuery{Workspace: pjWS, Kind: protocol.KindIntent, Actor: r.Actor, Status: []string{"active"}})
			if err != nil || n != 1 {
				b.Fatalf("%d active intents (%v), want 1", n, err)
			}
		})
	}
}

// walRestarts reads the WAL header's checkpoint sequence number, which
// SQLite increments each time the WAL starts over.
func walRestarts(t *testing.T, path string) uint32 {
	t.Helper()
	f, err := os.Open(path + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var hdr [16]byte
	if _, err := io.ReadFull(f, hdr[:]); err != nil {
		t.Fatal(err)
	}
	return binary.BigEndian.Uint32(hdr[12:])
}

// Under writes with no pause, the WAL still starts over (the checkpointer's
// second pass): before it, a PASSIVE checkpoint never caught up with the
// writer and the WAL grew without bound (420 MiB in 10 s).
func TestWALStartsOverUnderContinuousWrites(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ws.db")
	s, err := Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.EnsureWorkspace(ctx, "mygame", ""); err != nil {
		t.Fatal(err)
	}
	r := fixture.NewReplica("mygame", "rep_a", "ada@example.com")
	first := walRestarts(t, path)
	deadline := time.Now().Add(60 * time.Second)
	var i, restarts int
	for restarts < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("the WAL started over %d times in 60 s of continuous writes (%d envelopes), want 3", restarts, i)
		}
		items := make([]Item, 16)
		for k := range items {
			i++
			items[k] = Item{Workspace: "mygame", Envelope: r.Any("w", i)}
		}
		if _, err := s.IngestBatch(ctx, items); err != nil {
			t.Fatal(err)
		}
		restarts = int(walRestarts(t, path) - first)
	}
	fi, err := os.Stat(path + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d envelopes, WAL started over %d times, WAL file %d KiB", i, restarts, fi.Size()>>10)
}

// Many concurrent pages on a store just opened: every read connection may
// be inside a page's transaction at once, and none may wait for another
// connection (preparing a statement used to, so they waited for each other
// until their contexts ended).
func TestConcurrentPagesOnAFreshStore(t *testing.T) {
	for trial := range 5 {
		s := openTemp(t)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		var wg sync.WaitGroup
		errs := make(chan error, 32)
		for i := range 32 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				q := PageQuery{Workspace: "mygame"}
				if i%2 == 1 {
					q.Kind = protocol.KindClaim
				}
				if _, err := s.Page(ctx, q); err != nil {
					errs <- err
				}
			}()
		}
		wg.Wait()
		cancel()
		close(errs)
		for err := range errs {
			t.Fatalf("trial %d: %v", trial, err)
		}
	}
}

// Events by name read only the matching events (capture_events_by_name),
// and nearest-frame lookups go by t (capture_frames_by_t).
func TestCaptureQueriesUseTheirIndex(t *testing.T) {
	s := openTemp(t)
	byName, byNameArgs := eventsSQL(EventQuery{Op: "op", Names: []string{"BOSS_PHASE"}, Limit: 9})
	cases := []struct {
		q     string
		args  []any
		index string
	}{
		{byName, byNameArgs, "capture_events_by_name"},
		{selFrameBeforeSQL, []any{"op", 1.0}, "capture_frames_by_t"},
		{selFrameAfterSQL, []any{"op", 1.0}, "capture_frames_by_t"},
	}
	for _, c := range cases {
		if plan := queryPlan(t, s, c.q, c.args...); !strings.Contains(plan, c.index) {
			t.Errorf("%s\nplan: %s\nwant %s", c.q, plan, c.index)
		}
	}
}

// A page of the log reads the operations in order from the ops table's
// key (or ops_by_kind), without sorting them.
func TestPageQueriesUseTheirIndex(t *testing.T) {
	s := pjOpen(t, false)
	for _, c := range []struct {
		q, want string
		args    []any
	}{
		{pageSQL, "USING INTEGER PRIMARY KEY (rowid>? AND rowid<?)", []any{1, 0, 0, 0, 10}},
		{pageKindSQL, "USING INDEX ops_by_kind (kind=? AND id>? AND id<?)", []any{1, 0, 0, 0, 10, 1}},
	} {
		if plan := queryPlan(t, s, c.q, c.args...); !strings.Contains(plan, c.want) || strings.Contains(plan, "TEMP B-TREE") {
			t.Errorf("%s: plan %q, want %s and no sort", c.q, plan, c.want)
		}
	}
}
