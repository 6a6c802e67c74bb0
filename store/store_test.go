package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crosscode/crosscode-mcp/internal/testing/fixture"
	"github.com/crosscode/crosscode-mcp/protocol"
)

func openTemp(t testing.TB) *Store {
	t.Helper()
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "ws.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := s.EnsureWorkspace(context.Background(), "mygame", ""); err != nil {
		t.Fatal(err)
	}
	return s
}

func ingestOne(t testing.TB, s *Store, e *protocol.Envelope) Result {
	t.Helper()
	res, err := s.IngestBatch(context.Background(), []Item{{Workspace: e.WorkspaceID, Envelope: e}})
	if err != nil {
		t.Fatal(err)
	}
	return res[0]
}

func wantCode(t *testing.T, r Result, code protocol.ErrorCode) {
	t.Helper()
	var re *RuleError
	if !errors.As(r.Err, &re) || re.Code != code {
		t.Fatalf("want %s, got %+v", code, r)
	}
	if r.Logged != nil {
		t.Fatalf("refused envelope was logged: %+v", r.Logged)
	}
}

func TestIngestRules(t *testing.T) {
	s := openTemp(t)
	a := fixture.NewReplica("mygame", "rep_a", "ada@example.com")
	b := fixture.NewReplica("mygame", "rep_b", "bo@example.com")

	claim := a.Claim("clm_1", true, "src/**")
	r1 := ingestOne(t, s, claim)
	if r1.Err != nil || r1.Receipt.ServerSequence != 1 || r1.Receipt.Duplicate || r1.Logged == nil || r1.Logged.ServerSequence != 1 {
		t.Fatalf("first ingest: %+v", r1)
	}
	task := b.Task("tsk_1", protocol.TaskOpen, false)
	if r := ingestOne(t, s, task); r.Err != nil || r.Receipt.ServerSequence != 2 {
		t.Fatalf("second ingest: %+v", r)
	}

	// Rule 1: same (replica, clientSequence) and content: the original receipt.
	dup := ingestOne(t, s, claim)
	if dup.Err != nil || !dup.Receipt.Duplicate || dup.Receipt.ServerSequence != 1 || !dup.Receipt.IngestedAt.Equal(r1.Receipt.IngestedAt) || dup.Logged != nil {
		t.Fatalf("duplicate: %+v", dup)
	}
	// Same (replica, clientSequence) and id, other content: ID_CONFLICT.
	changed := *claim
	c2 := *claim.Claim()
	c2.Reason = "something else"
	changed.Payload = &c2
	wantCode(t, ingestOne(t, s, &changed), protocol.CodeIDConflict)
	// Same (replica, clientSequence), another id: CLIENT_SEQUENCE_REGRESSION.
	other := a.Intent("int_9", "docs/**")
	other.ClientSequence = claim.ClientSequence
	wantCode(t, ingestOne(t, s, other), protocol.CodeClientSequenceRegression)
	// Rule 2: not above the replica's highest.
	a.Next = 10
	if r := ingestOne(t, s, a.Intent("int_10", "a")); r.Err != nil {
		t.Fatal(r.Err)
	}
	a.Next = 5
	wantCode(t, ingestOne(t, s, a.Intent("int_5", "a")), protocol.CodeClientSequenceRegression)
	// Rule 3: an opening event with an existing id (of any kind).
	a.Next = 20
	wantCode(t, ingestOne(t, s, a.Claim("clm_1", false, "x")), protocol.CodeIDConflict)
	wantCode(t, ingestOne(t, s, a.Task("clm_1", protocol.TaskOpen, false)), protocol.CodeIDConflict)
	// A changing event for an unknown id, or an id of another kind.
	wantCode(t, ingestOne(t, s, a.Task("tsk_nope", protocol.TaskDone, true)), protocol.CodeUnknownEntity)
	wantCode(t, ingestOne(t, s, a.Release("tsk_1", "src/**")), protocol.CodeUnknownEntity)
	// Changing events on known entities are logged under the same id.
	if r := ingestOne(t, s, a.Release("clm_1", "src/**")); r.Err != nil || r.Receipt.ServerSequence != 4 {
		t.Fatalf("release: %+v", r)
	}
	if r := ingestOne(t, s, b.Task("tsk_1", protocol.TaskDone, true)); r.Err != nil || r.Receipt.ServerSequence != 5 {
		t.Fatalf("task update: %+v", r)
	}
	// A workspace that does not exist.
	x := fixture.NewReplica("nowhere", "rep_x", "x")
	if r := ingestOne(t, s, x.Intent("int_x", "a")); !errors.Is(r.Err, ErrNoWorkspace) {
		t.Fatalf("unknown workspace: %+v", r)
	}
	// Refusals used no sequence numbers: the log is gap-free.
	assertLog(t, s, "mygame", 5)
}

// assertLog checks the workspace log holds exactly 1..n, every envelope
// decodes, and each (replica, clientSequence) appears once.
func assertLog(t *testing.T, s *Store, ws string, n int64) []*protocol.Envelope {
	t.Helper()
	var out []*protocol.Envelope
	after := int64(0)
	seen := map[string]bool{}
	for {
		p, err := s.Page(context.Background(), PageQuery{Workspace: ws, After: after, Limit: MaxPageLimit})
		if err != nil {
			t.Fatal(err)
		}
		for _, op := range p.Ops {
			e, err := op.Envelope()
			if err != nil {
				t.Fatal(err)
			}
			if e.ServerSequence != int64(len(out))+1 {
				t.Fatalf("gap or reorder: op %d at position %d", e.ServerSequence, len(out)+1)
			}
			key := fmt.Sprintf("%s/%d", e.ReplicaID, e.ClientSequence)
			if seen[key] {
				t.Fatalf("envelope %s logged twice", key)
			}
			seen[key] = true
			out = append(out, e)
		}
		if !p.HasMore {
			break
		}
		after = p.NextCursor
	}
	if int64(len(out)) != n {
		t.Fatalf("log holds %d operations, want %d", len(out), n)
	}
	if h, _ := s.Head(context.Background(), ws); h != n {
		t.Fatalf("head %d, want %d", h, n)
	}
	return out
}

func TestBatchSeesItsOwnWrites(t *testing.T) {
	s := openTemp(t)
	a := fixture.NewReplica("mygame", "rep_a", "ada")
	c := a.Claim("clm_1", true, "a/**")
	rel := a.Release("clm_1", "a/**")
	items := []Item{{Workspace: "mygame", Envelope: c}, {Workspace: "mygame", Envelope: c}, {Workspace: "mygame", Envelope: rel}, {Workspace: "mygame", Envelope: a.Claim("clm_1", true, "b")}}
	res, err := s.IngestBatch(context.Background(), items)
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Err != nil || res[0].Receipt.ServerSequence != 1 {
		t.Fatalf("create: %+v", res[0])
	}
	if !res[1].Receipt.Duplicate || res[1].Receipt.ServerSequence != 1 {
		t.Fatalf("in-batch duplicate: %+v", res[1])
	}
	if res[2].Err != nil || res[2].Receipt.ServerSequence != 2 {
		t.Fatalf("release in same batch: %+v", res[2])
	}
	wantCode(t, res[3], protocol.CodeIDConflict)
	assertLog(t, s, "mygame", 2)
}

func TestPageByCursorAndKind(t *testing.T) {
	s := openTemp(t)
	a := fixture.NewReplica("mygame", "rep_a", "ada")
	var items []Item
	for i := range 250 {
		items = append(items, Item{Workspace: "mygame", Envelope: a.Any("e", i)})
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
	all := assertLog(t, s, "mygame", 250)
	for i, e := range all {
		want := *items[i].Envelope
		want.ServerSequence, want.IngestedAt = e.ServerSequence, e.IngestedAt
		if !reflect.DeepEqual(e, &want) {
			t.Fatalf("op %d differs:\n%+v\n%+v", i+1, e, &want)
		}
	}

	p, err := s.Page(context.Background(), PageQuery{Workspace: "mygame", After: 10, Limit: 7})
	if err != nil || len(p.Ops) != 7 || p.Ops[0].Seq != 11 || p.NextCursor != 17 || !p.HasMore {
		t.Fatalf("cursor page: %v %+v", err, p)
	}
	p, _ = s.Page(context.Background(), PageQuery{Workspace: "mygame", After: 245, Limit: 5})
	if len(p.Ops) != 5 || p.HasMore || p.NextCursor != 250 {
		t.Fatalf("last page: %+v", p)
	}
	p, _ = s.Page(context.Background(), PageQuery{Workspace: "mygame", After: 250})
	if len(p.Ops) != 0 || p.HasMore || p.NextCursor != 250 {
		t.Fatalf("caught-up page: %+v", p)
	}
	// By kind: claims are every 5th starting at index 1.
	p, _ = s.Page(context.Background(), PageQuery{Workspace: "mygame", Kind: protocol.KindClaim, Limit: 1000})
	if len(p.Ops) != 50 {
		t.Fatalf("claims: %d", len(p.Ops))
	}
	for _, op := range p.Ops {
		e, _ := op.Envelope()
		if e.Type.Kind() != protocol.KindClaim {
			t.Fatalf("kind page holds %s", e.Type)
		}
	}
	// AppendJSON renders exactly what Envelope decodes.
	var fromJSON protocol.Envelope
	if err := json.Unmarshal(p.Ops[3].AppendJSON(nil), &fromJSON); err != nil {
		t.Fatal(err)
	}
	e, _ := p.Ops[3].Envelope()
	if !reflect.DeepEqual(&fromJSON, e) {
		t.Fatalf("AppendJSON:\n%+v\n%+v", &fromJSON, e)
	}
	if _, err := s.Page(context.Background(), PageQuery{Workspace: "nope"}); !errors.Is(err, ErrNoWorkspace) {
		t.Fatalf("unknown workspace: %v", err)
	}
}

func TestRetentionWatermarkAndForeverDedupe(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	a := fixture.NewReplica("mygame", "rep_a", "ada")
	var old []*protocol.Envelope
	for i := range 25 {
		e := a.Any("old", i)
		old = append(old, e)
		ingestOne(t, s, e)
	}
	time.Sleep(5 * time.Millisecond)
	cut := time.Now()
	time.Sleep(5 * time.Millisecond)
	for i := range 5 {
		ingestOne(t, s, a.Any("new", i))
	}
	now := time.Now()
	keep := func(string) time.Duration { return now.Sub(cut) } // the cut-off is exactly cut
	res, err := s.Sweep(ctx, now, keep, &SweepOptions{BatchSize: 7})
	if err != nil || res.Deleted != 25 || res.Watermarks["mygame"] != 25 {
		t.Fatalf("sweep: %v %+v", err, res)
	}
	// Sweeping again deletes nothing more.
	if res, _ := s.Sweep(ctx, now, keep, nil); res.Deleted != 0 {
		t.Fatalf("second sweep deleted %d", res.Deleted)
	}
	for _, after := range []int64{0, 3, 24} {
		p, err := s.Page(ctx, PageQuery{Workspace: "mygame", After: after})
		if err != nil || !p.TooOld || p.ResyncFrom != 25 {
			t.Fatalf("after %d: %v %+v", after, err, p)
		}
	}
	p, err := s.Page(ctx, PageQuery{Workspace: "mygame", After: 25})
	if err != nil || p.TooOld || len(p.Ops) != 5 || p.Ops[0].Seq != 26 {
		t.Fatalf("resync page: %v %+v", err, p)
	}
	// Dedupe is for ever: a retried old envelope gets its original receipt,
	// and its id stays taken.
	r := ingestOne(t, s, old[3])
	if !r.Receipt.Duplicate || r.Receipt.ServerSequence != 4 {
		t.Fatalf("retry after retention: %+v", r)
	}
	b := fixture.NewReplica("mygame", "rep_b", "bo")
	wantCode(t, ingestOne(t, s, b.Intent(old[0].ID, "x")), protocol.CodeIDConflict)
	if h, _ := s.Head(ctx, "mygame"); h != 30 {
		t.Fatalf("head %d", h)
	}
	// Zero retention keeps everything.
	if res, _ := s.Sweep(ctx, time.Now().Add(time.Hour), func(string) time.Duration { return 0 }, nil); res.Deleted != 0 {
		t.Fatal("zero retention deleted")
	}
}

func TestMigrationsAndVersion(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ws.db")
	s, err := Open(context.Background(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := s.Version(context.Background()); v != SchemaVersion {
		t.Fatalf("version %d", v)
	}
	if ok, err := s.IntegrityCheck(context.Background()); err != nil || ok != "ok" {
		t.Fatalf("integrity: %v %q", err, ok)
	}
	s.Close()
	// Reopening is a no-op; a newer schema is refused with a clear error.
	s, err = Open(context.Background(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	db, _ := sql.Open("sqlite", path)
	if _, err := db.Exec(fmt.Sprintf("PRAGMA user_version = %d", SchemaVersion+1)); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if _, err := Open(context.Background(), path, nil); err == nil || !strings.Contains(err.Error(), "newer than this binary") {
		t.Fatalf("newer schema: %v", err)
	}
}

func TestTokens(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	tok, err := s.CreateToken(ctx, "newgame", "free")
	if err != nil {
		t.Fatal(err)
	}
	if ws, err := s.Authenticate(ctx, tok); err != nil || ws != "newgame" {
		t.Fatalf("authenticate: %v %q", err, ws)
	}
	if _, err := s.Authenticate(ctx, tok+"x"); !errors.Is(err, ErrBadToken) {
		t.Fatalf("bad token: %v", err)
	}
	w, _ := s.Workspace(ctx, "newgame")
	if w.Plan != "free" {
		t.Fatalf("plan %q", w.Plan)
	}
	if _, err := s.CreateToken(ctx, "newgame", "platinum"); err == nil {
		t.Fatal("unknown plan accepted")
	}
	var n int
	s.r.QueryRow("SELECT count(*) FROM tokens WHERE hash = ?", tok).Scan(&n)
	if n != 0 {
		t.Fatal("token stored in clear")
	}
}

func TestPresence(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	p, err := s.SetPresence(ctx, "mygame", &protocol.PresenceUpdate{ReplicaID: "r1", ActorID: "ada", SessionID: "s1", Agent: &protocol.Agent{Provider: protocol.ProviderCursor}, Status: protocol.PresenceOnline})
	if err != nil || p.Status != protocol.PresenceOnline {
		t.Fatal(err)
	}
	off, err := s.MarkOffline(ctx, "mygame", "r1")
	if err != nil || off == nil || off.Status != protocol.PresenceOffline || off.Agent.Provider != protocol.ProviderCursor {
		t.Fatalf("offline: %v %+v", err, off)
	}
	if again, _ := s.MarkOffline(ctx, "mygame", "r1"); again != nil {
		t.Fatal("marked offline twice")
	}
	list, _ := s.Presence(ctx, "mygame")
	if len(list) != 1 || list[0].Status != protocol.PresenceOffline {
		t.Fatalf("list: %+v", list)
	}
}

func TestIngesterGroupCommit(t *testing.T) {
	s := openTemp(t)
	var mu sync.Mutex
	var committed []int64
	in := s.NewIngester(&IngesterOptions{OnCommit: func(l []*protocol.Envelope) {
		mu.Lock()
		for _, e := range l {
			committed = append(committed, e.ServerSequence)
		}
		mu.Unlock()
	}})
	const clients, each = 16, 50
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := fixture.NewReplica("mygame", fmt.Sprintf("rep_%d", c), "ada")
			for i := range each {
				res, err := in.Ingest(context.Background(), "mygame", r.Any(fmt.Sprintf("c%d", c), i))
				if err != nil || res.Err != nil {
					t.Errorf("ingest: %v %v", err, res.Err)
					return
				}
			}
		}()
	}
	wg.Wait()
	in.Close()
	if _, err := in.Ingest(context.Background(), "mygame", fixture.NewReplica("mygame", "late", "x").Intent("late", "a")); !errors.Is(err, ErrClosed) {
		t.Fatalf("ingest after close: %v", err)
	}
	assertLog(t, s, "mygame", clients*each)
	for i, seq := range committed {
		if seq != int64(i+1) {
			t.Fatalf("OnCommit out of order at %d: %d", i, seq)
		}
	}
	if len(committed) != clients*each {
		t.Fatalf("OnCommit saw %d", len(committed))
	}
}

// TestFileURI: the DSN's URI of every kind of absolute path, Windows' too
// (a drive letter after "file:///", backslashes already turned into "/").
func TestFileURI(t *testing.T) {
	for in, want := range map[string]string{
		"/tmp/a.db":                   "file:///tmp/a.db",
		"C:/Users/me/My Game/.git/x":  "file:///C:/Users/me/My%20Game/.git/x",
		"Z:/tmp/go-build/b001/x.db":   "file:///Z:/tmp/go-build/b001/x.db",
		"//server/share/repo/.git/db": "file:////server/share/repo/.git/db",
		"/tmp/odd?name#with%.db":      "file:///tmp/odd%3Fname%23with%25.db",
	} {
		if got := fileURI(in); got != want {
			t.Errorf("fileURI(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestOpenOddPath: a database in a directory whose name a URI would read
// otherwise (space, "#", "%"; Windows allows no "?") opens where it was asked to.
func TestOpenOddPath(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "my game #1 100%")
	path := filepath.Join(dir, "ws.db")
	s, err := Open(context.Background(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the database is not at %s: %v", path, err)
	}
}

// TestCaptureSeed: a capture's seed is kept as given, across a reopen of
// the file, and a capture without one reads back without one.
func TestCaptureSeed(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "captures.db")
	s, err := Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	seed, zero := int64(9007199254740991), int64(0)
	for _, c := range []*Capture{
		{Op: "op_seeded", Kind: "recording", Status: "running", CreatedAt: time.Now(), Seed: &seed},
		{Op: "op_zero", Kind: "recording", Status: "running", CreatedAt: time.Now(), Seed: &zero},
		{Op: "op_none", Kind: "scenario", Status: "running", CreatedAt: time.Now()},
	} {
		if err := s.CreateCapture(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	s, err = Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for op, want := range map[string]*int64{"op_seeded": &seed, "op_zero": &zero, "op_none": nil} {
		c, err := s.Capture(ctx, op)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case want == nil && c.Seed != nil:
			t.Errorf("%s: seed %d, want none", op, *c.Seed)
		case want != nil && (c.Seed == nil || *c.Seed != *want):
			t.Errorf("%s: seed %v, want %d", op, c.Seed, *want)
		}
	}
}
