package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crosscode/crosscode-mcp/internal/testing/fixture"
	"github.com/crosscode/crosscode-mcp/protocol"
)

// TestWriterRunsOnlyPreparedStatements: every statement the writer's
// transactions run is prepared at Open, and asking for one that is not is
// an error, not a statement compiled on the spot.
func TestWriterRunsOnlyPreparedStatements(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	for _, q := range writerStatements() {
		if s.stmts[q] == nil {
			t.Errorf("not prepared at Open: %s", q)
		}
	}
	for tb := range insertTables {
		for k, n := range insertChunks {
			if s.inserts[tb][k] == nil {
				t.Errorf("insert of %d rows into %s not prepared at Open", n, insertTables[tb].table)
			}
		}
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	const q = "UPDATE cursors SET seq = seq"
	if _, err := s.txExec(ctx, tx, q); err == nil || !strings.Contains(err.Error(), "not prepared") {
		t.Errorf("txExec of an unprepared statement: %v, want a not-prepared error", err)
	}
	if rows, err := s.txQuery(ctx, tx, "SELECT 1"); err == nil || !strings.Contains(err.Error(), "not prepared") {
		if rows != nil {
			rows.Close()
		}
		t.Errorf("txQuery of an unprepared statement: %v, want a not-prepared error", err)
	}
	var n int
	if err := s.txQueryRow(ctx, tx, "SELECT 1").Scan(&n); err == nil || !strings.Contains(err.Error(), "not prepared") {
		t.Errorf("txQueryRow of an unprepared statement: %v, want a not-prepared error", err)
	}
	// The prepared ones work in the transaction.
	var through int64
	if err := s.txQueryRow(ctx, tx, selThrough, 1).Scan(&through); err != sql.ErrNoRows {
		t.Errorf("prepared selThrough: %v, want no rows", err)
	}
	if err := s.insertRows(ctx, tx, insEntities, []any{1, "x"}); err == nil {
		t.Error("insertRows accepted a partial row")
	}
}

// TestBatchUsesEveryInsertSize: a batch whose row counts need every
// prepared insert size (binary decomposition) logs every envelope.
func TestBatchUsesEveryInsertSize(t *testing.T) {
	s := openTemp(t)
	r := fixture.NewReplica("mygame", "rep_a", "ada")
	const n = 255 + 128 // 128 twice, then 64, 32, ..., 1
	items := make([]Item, n)
	for i := range items {
		items[i] = Item{Workspace: "mygame", Envelope: r.Any("e", i)}
	}
	res, err := s.IngestBatch(context.Background(), items)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if r.Err != nil || r.Receipt.ServerSequence != int64(i+1) {
			t.Fatalf("item %d: %+v", i, r)
		}
	}
	assertLog(t, s, "mygame", n)
}

// TestNextSequenceEncodedOnce: an item whose clientSequence the store
// assigns is encoded and hashed once, in the commit, not also before with
// clientSequence 0; other items are encoded once, before.
func TestNextSequenceEncodedOnce(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	var encodes atomic.Int64
	orig := encodeEnvelope
	encodeEnvelope = func(e *protocol.Envelope) ([]byte, error) {
		encodes.Add(1)
		return orig(e)
	}
	t.Cleanup(func() { encodeEnvelope = orig })

	a := fixture.NewReplica("mygame", "rep_a", "ada")
	b := fixture.NewReplica("mygame", "rep_b", "bo")
	next := a.Intent("i1", "src/**")
	next.ClientSequence = 0
	res, err := s.IngestBatch(ctx, []Item{{Workspace: "mygame", Envelope: next, NextSequence: true}, {Workspace: "mygame", Envelope: b.Intent("i2", "docs/**")}})
	if err != nil || res[0].Err != nil || res[1].Err != nil {
		t.Fatalf("ingest: %v %+v", err, res)
	}
	if got := encodes.Load(); got != 2 {
		t.Errorf("IngestBatch encoded %d times for 2 items, want 2", got)
	}
	in := s.NewIngester(nil)
	next2 := a.Intent("i3", "src/**")
	next2.ClientSequence = 0
	r, err := in.IngestItem(ctx, Item{Workspace: "mygame", Envelope: next2, NextSequence: true})
	in.Close()
	if err != nil || r.Err != nil {
		t.Fatalf("ingest: %v %+v", err, r)
	}
	if got := encodes.Load(); got != 3 {
		t.Errorf("IngestItem encoded %d times, want once more (3)", got)
	}
	// The logged bodies carry the assigned clientSequences.
	log := assertLog(t, s, "mygame", 3)
	for i, want := range []struct {
		id  string
		seq int64
	}{{"i1", 1}, {"i2", 1}, {"i3", 2}} {
		if log[i].ID != want.id || log[i].ClientSequence != want.seq {
			t.Errorf("op %d: %s clientSequence %d, want %s %d", i+1, log[i].ID, log[i].ClientSequence, want.id, want.seq)
		}
	}
}

// TestAppendEventsUpdatesCountersOnce: AppendEvents writes every event
// with the prepared inserts and moves the capture's counters with one
// UPDATE per call, not one per chunk of events.
func TestAppendEventsUpdatesCountersOnce(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	if err := s.CreateCapture(ctx, &Capture{Op: "op1", Kind: "scenario", Status: "running", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	// Count the UPDATEs of captures: the writer has one connection, which
	// holds the temporary trigger.
	for _, q := range []string{
		"CREATE TEMP TABLE capture_updates (op TEXT)",
		"CREATE TEMP TRIGGER count_capture_updates AFTER UPDATE ON main.captures BEGIN INSERT INTO capture_updates VALUES (new.op); END",
	} {
		if _, err := s.w.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	updates := func() int {
		var n int
		if err := s.w.QueryRowContext(ctx, "SELECT count(*) FROM capture_updates").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	var all []CaptureEvent
	at := time.Now().UTC().Truncate(time.Microsecond)
	batch := func(n int) []CaptureEvent {
		out := make([]CaptureEvent, n)
		for i := range out {
			seq := int64(len(all) + 1)
			e := CaptureEvent{Seq: seq, T: float64(seq) / 2, Event: fmt.Sprintf("ev%d", seq%3), ReceivedAt: at}
			if seq%2 == 0 {
				d := float64(seq)
				e.DurationMs = &d
				e.Payload = json.RawMessage(fmt.Sprintf(`{"n":%d}`, seq))
			}
			out[i] = e
			all = append(all, e)
		}
		return out
	}
	calls := 0
	for _, n := range []int{300, 1, 128, 0, 77} {
		if err := s.AppendEvents(ctx, "op1", batch(n)); err != nil {
			t.Fatal(err)
		}
		if n > 0 { // an empty batch changes nothing
			calls++
		}
		if got := updates(); got != calls {
			t.Fatalf("after appending %d events: %d UPDATEs of captures in all, want %d (one per call)", n, got, calls)
		}
	}
	c, err := s.Capture(ctx, "op1")
	if err != nil {
		t.Fatal(err)
	}
	last := all[len(all)-1]
	if c.Events != last.Seq || c.LastT != last.T {
		t.Errorf("counters: events %d last_t %v, want %d %v", c.Events, c.LastT, last.Seq, last.T)
	}
	got, err := s.Events(ctx, EventQuery{Op: "op1", Limit: 10_000})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, all) {
		t.Errorf("stored %d events, want %d as appended", len(got), len(all))
	}
}

// TestMirrorResolvesItsWorkspace: Mirror and Resync create a workspace
// they do not know yet, and later pages land in the same one.
func TestMirrorResolvesItsWorkspace(t *testing.T) {
	ctx := context.Background()
	src := pjOpen(t, false)
	w := newPJWorld(t, src)
	w.ingest(w.claim("ada", "c1", false, "core/**"), w.claim("bo", "c2", false, "ui/**"), w.rep("cy").Intent("i1", "docs/**"))
	logged := pjLogged(t, src)

	m, err := Open(ctx, filepath.Join(t.TempDir(), "m.db"), &Options{Projections: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	if _, err := m.Workspace(ctx, pjWS); err == nil {
		t.Fatal("the mirror starts without the workspace")
	}
	for i := range logged {
		if err := m.Mirror(ctx, pjWS, logged[i:i+1], "svc", logged[i].ServerSequence); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Mirror(ctx, pjWS, logged, "svc", 1); err != nil { // read again: changes nothing
		t.Fatal(err)
	}
	pjCompare(t, "mirror page by page", src, m, true)
	ws, err := m.Workspace(ctx, pjWS)
	if err != nil || ws.Head != int64(len(logged)) {
		t.Fatalf("mirrored workspace: %+v, %v", ws, err)
	}
	if c, _ := m.Cursor(ctx, "svc"); c != int64(len(logged)) {
		t.Errorf("cursor %d, want %d (it never moves back)", c, len(logged))
	}
	if p, _ := m.ProjectedThrough(ctx, pjWS); p != int64(len(logged)) {
		t.Errorf("projected through %d, want %d", p, len(logged))
	}
	if err := m.Resync(ctx, "third", "svc3", 7); err != nil {
		t.Fatal(err)
	}
	if ws3, err := m.Workspace(ctx, "third"); err != nil || ws3.Head != 7 || ws3.RetainedThrough != 7 || ws3.ID == ws.ID {
		t.Errorf("resynced new workspace: %+v, %v", ws3, err)
	}
}

// TestWorkspaceHeads: a workspace's head, computed in SQL from seqBits,
// is its own newest serverSequence whatever the other workspaces hold,
// and Project catches up to it.
func TestWorkspaceHeads(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ws.db")
	s := pjOpenAt(t, path, true) // logs without projecting
	want := map[string]int64{"w1": 0, "w2": 5, "w3": 2}
	for _, name := range []string{"w1", "w2", "w3"} {
		if _, err := s.EnsureWorkspace(ctx, name, ""); err != nil {
			t.Fatal(err)
		}
		r := fixture.NewReplica(name, "rep_"+name, "ada")
		for i := range want[name] {
			if res := ingestOne(t, s, r.Any("e", int(i))); res.Err != nil {
				t.Fatal(res.Err)
			}
		}
	}
	list, err := s.Workspaces(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, ws := range list {
		if w, ok := want[ws.Name]; ok && ws.Head != w {
			t.Errorf("Workspaces: %s head %d, want %d", ws.Name, ws.Head, w)
		}
	}
	p := pjOpenAt(t, path, false)
	for name, w := range want {
		if ws, err := p.Workspace(ctx, name); err != nil || ws.Head != w {
			t.Errorf("Workspace(%s): %+v, %v; want head %d", name, ws, err, w)
		}
		if err := p.Project(ctx, name); err != nil {
			t.Fatal(err)
		}
		if got, _ := p.ProjectedThrough(ctx, name); got != w {
			t.Errorf("%s projected through %d after Project, want %d", name, got, w)
		}
	}
}

// TestMarkOfflineIsOneWrite: MarkOffline returns the row its update wrote,
// in the same statement: it needs no read connection, even when every one
// is taken.
func TestMarkOfflineIsOneWrite(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "ws.db"), &Options{Readers: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := s.EnsureWorkspace(ctx, "mygame", ""); err != nil {
		t.Fatal(err)
	}
	agent := &protocol.Agent{Provider: protocol.ProviderCursor, AdapterID: "x"}
	if _, err := s.SetPresence(ctx, "mygame", &protocol.PresenceUpdate{ReplicaID: "r1", ActorID: "ada", SessionID: "s1", Agent: agent, Status: protocol.PresenceOnline}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetPresence(ctx, "mygame", &protocol.PresenceUpdate{ReplicaID: "r2", ActorID: "bo", SessionID: "s2", Status: protocol.PresenceOnline}); err != nil {
		t.Fatal(err)
	}
	hold, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true}) // the only read connection
	if err != nil {
		t.Fatal(err)
	}
	// The deadline only turns a wait for the held reader into a failure.
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	off, err := s.MarkOffline(dctx, "mygame", "r1")
	cancel()
	hold.Rollback()
	if err != nil || off == nil {
		t.Fatalf("MarkOffline: %+v, %v", off, err)
	}
	if off.SenderReplicaID != "r1" || off.ActorID != "ada" || off.SessionID != "s1" || off.Status != protocol.PresenceOffline ||
		!reflect.DeepEqual(off.Agent, agent) || off.WorkspaceID != "mygame" {
		t.Errorf("MarkOffline returned %+v", off)
	}
	list, err := s.Presence(ctx, "mygame")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range list {
		if p.SenderReplicaID == "r1" && !reflect.DeepEqual(p, off) {
			t.Errorf("stored %+v, MarkOffline returned %+v", p, off)
		}
		if p.SenderReplicaID == "r2" && p.Status != protocol.PresenceOnline {
			t.Errorf("r2 changed: %+v", p)
		}
	}
	if again, err := s.MarkOffline(ctx, "mygame", "r1"); again != nil || err != nil {
		t.Errorf("second MarkOffline: %+v, %v", again, err)
	}
	if none, err := s.MarkOffline(ctx, "mygame", "nobody"); none != nil || err != nil {
		t.Errorf("MarkOffline of an unknown replica: %+v, %v", none, err)
	}
}
