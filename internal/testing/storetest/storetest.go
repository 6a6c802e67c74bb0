// Package storetest is the one test suite that every database of the
// coordination service passes: the SQLite store and the PostgreSQL one run
// it against a real database each. It drives a store only through
// hub.Store (and CreateToken), so what it checks is what the service
// relies on: the ingest rules of spec section 4 in their order, gapless
// serverSequences per workspace, dedupe for ever, pages, heads, presence
// and retention with its watermark.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/crosscode/crosscode-mcp/hub"
	"github.com/crosscode/crosscode-mcp/internal/testing/fixture"
	"github.com/crosscode/crosscode-mcp/protocol"
	"github.com/crosscode/crosscode-mcp/store"
)

// Store is a database under test.
type Store interface {
	hub.Store
	// CreateToken creates the workspace if it is new and returns a token.
	CreateToken(ctx context.Context, workspace, plan string) (string, error)
}

// Open returns a fresh, empty store; the suite closes nothing (the opener
// registers its cleanup with t).
type Open func(t *testing.T) Store

// Run runs every test of the suite, each on a fresh store.
func Run(t *testing.T, open Open) {
	for _, tc := range []struct {
		name string
		fn   func(*testing.T, Store)
	}{
		{"Authenticate", testAuthenticate},
		{"RulesInOrder", testRulesInOrder},
		{"RulesWithinOneBatch", testRulesWithinOneBatch},
		{"GaplessPerWorkspace", testGaplessPerWorkspace},
		{"NextSequence", testNextSequence},
		{"IdempotencyKeys", testIdempotencyKeys},
		{"NewsMarks", testNewsMarks},
		{"UnknownWorkspace", testUnknownWorkspace},
		{"Pages", testPages},
		{"Heads", testHeads},
		{"Presence", testPresence},
		{"Retention", testRetention},
		{"ConcurrentGroupCommit", testConcurrentGroupCommit},
		{"ClaimQueues", testClaimQueues},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, open(t)) })
	}
}

const ws = "mygame"

func token(t *testing.T, s Store, workspace string) string {
	t.Helper()
	tok, err := s.CreateToken(context.Background(), workspace, "")
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// ingest commits envelopes in one batch and returns their results.
func ingest(t *testing.T, s Store, es ...*protocol.Envelope) []store.Result {
	t.Helper()
	items := make([]store.Item, len(es))
	for i, e := range es {
		items[i] = store.Item{Workspace: e.WorkspaceID, Envelope: e}
	}
	res, err := s.IngestBatch(context.Background(), items)
	if err != nil {
		t.Fatalf("IngestBatch: %v", err)
	}
	if len(res) != len(es) {
		t.Fatalf("IngestBatch returned %d results for %d items", len(res), len(es))
	}
	return res
}

// want checks one result: code "" wants a logged envelope at seq (or a
// duplicate of seq when dup), otherwise a refusal with code.
func want(t *testing.T, what string, r store.Result, code protocol.ErrorCode, seq int64, dup bool) {
	t.Helper()
	if code != "" {
		var rule *store.RuleError
		if !errors.As(r.Err, &rule) || rule.Code != code {
			t.Fatalf("%s: got %+v, want a %s refusal", what, r, code)
		}
		if r.Logged != nil {
			t.Fatalf("%s: refused but logged", what)
		}
		return
	}
	if r.Err != nil {
		t.Fatalf("%s: %v", what, r.Err)
	}
	if r.Receipt.ServerSequence != seq || r.Receipt.Duplicate != dup {
		t.Fatalf("%s: receipt %+v, want serverSequence %d duplicate %v", what, r.Receipt, seq, dup)
	}
	if dup != (r.Logged == nil) {
		t.Fatalf("%s: duplicate %v but Logged %v", what, dup, r.Logged)
	}
}

func testAuthenticate(t *testing.T, s Store) {
	ctx := context.Background()
	a, b := token(t, s, ws), token(t, s, "other")
	for tok, w := range map[string]string{a: ws, b: "other"} {
		if got, err := s.Authenticate(ctx, tok); err != nil || got != w {
			t.Fatalf("Authenticate: %q, %v; want %q", got, err, w)
		}
	}
	if _, err := s.Authenticate(ctx, a+"x"); !errors.Is(err, store.ErrBadToken) {
		t.Fatalf("unknown token: %v, want ErrBadToken", err)
	}
	if _, err := s.CreateToken(ctx, "w2", "gold"); err == nil {
		t.Fatal("CreateToken with an unknown plan succeeded")
	}
}

func testRulesInOrder(t *testing.T, s Store) {
	token(t, s, ws)
	r := fixture.NewReplica(ws, "rep_a", "a@example.com")
	first := r.Intent("int_1", "src/**")
	want(t, "first", ingest(t, s, first)[0], "", 1, false)
	orig := ingest(t, s, first)[0]
	want(t, "identical retry", orig, "", 1, true)

	// Rule 1: the same (replicaId, clientSequence) with other content.
	changed := *first
	changed.Payload = &protocol.Intent{ID: "int_1", WorkspaceID: ws, ActorID: r.Actor, ReplicaID: r.ID, Summary: "other", Paths: []string{"docs/**"}, CreatedAt: fixture.Epoch}
	want(t, "same id, other content", ingest(t, s, &changed)[0], protocol.CodeIDConflict, 0, false)
	other := r.Intent("int_2", "src/**")
	other.ClientSequence = first.ClientSequence
	want(t, "same clientSequence, other id", ingest(t, s, other)[0], protocol.CodeClientSequenceRegression, 0, false)

	// Rule 2: not above the highest.
	r.Next = 10
	want(t, "jump ahead", ingest(t, s, r.Intent("int_3", "a/**"))[0], "", 2, false)
	r.Next = 5
	want(t, "below the highest", ingest(t, s, r.Intent("int_4", "b/**"))[0], protocol.CodeClientSequenceRegression, 0, false)
	r.Next = 11

	// Rule 3: opening an existing id, changing an unknown one or one of another kind.
	want(t, "reopen", ingest(t, s, r.Claim("int_1", true, "src/**"))[0], protocol.CodeIDConflict, 0, false)
	want(t, "change unknown", ingest(t, s, r.Release("clm_none", "src/**"))[0], protocol.CodeUnknownEntity, 0, false)
	want(t, "change other kind", ingest(t, s, r.Task("int_1", protocol.TaskDone, true))[0], protocol.CodeUnknownEntity, 0, false)
	want(t, "claim", ingest(t, s, r.Claim("clm_1", true, "src/**"))[0], "", 3, false)
	want(t, "release", ingest(t, s, r.Release("clm_1", "src/**"))[0], "", 4, false)

	// Rule 1 comes before rule 3: the retried opening event is a duplicate.
	again := ingest(t, s, first)[0]
	want(t, "retry after more", again, "", 1, true)
	if !again.Receipt.IngestedAt.Equal(orig.Receipt.IngestedAt) || again.Receipt.ID != "int_1" {
		t.Fatalf("retry receipt %+v, want the original %+v", again.Receipt, orig.Receipt)
	}
}

func testRulesWithinOneBatch(t *testing.T, s Store) {
	token(t, s, ws)
	r := fixture.NewReplica(ws, "rep_a", "a@example.com")
	c := r.Claim("clm_1", true, "src/**")
	rel := r.Release("clm_1", "src/**")
	dupOpen := r.Claim("clm_1", false, "x/**")
	res := ingest(t, s, c, c, rel, dupOpen, r.Release("clm_2", "y/**"))
	want(t, "claim", res[0], "", 1, false)
	want(t, "claim again in the batch", res[1], "", 1, true)
	want(t, "release in the batch", res[2], "", 2, false)
	want(t, "reopen in the batch", res[3], protocol.CodeIDConflict, 0, false)
	want(t, "release unknown in the batch", res[4], protocol.CodeUnknownEntity, 0, false)
}

func testGaplessPerWorkspace(t *testing.T, s Store) {
	token(t, s, ws)
	token(t, s, "other")
	a := fixture.NewReplica(ws, "rep_a", "a@example.com")
	b := fixture.NewReplica("other", "rep_b", "b@example.com")
	var es []*protocol.Envelope
	for i := range 20 {
		es = append(es, a.Any("a", i), b.Any("b", i))
	}
	res := ingest(t, s, es...)
	for i, r := range res {
		want(t, fmt.Sprint("item ", i), r, "", int64(i/2+1), false)
	}
	heads, err := s.Heads(context.Background(), []string{ws, "other", "nope"})
	if err != nil || heads[ws] != 20 || heads["other"] != 20 || len(heads) != 2 {
		t.Fatalf("Heads: %v, %v; want 20 each and no entry for a missing workspace", heads, err)
	}
	// ingestedAt never goes back within a workspace.
	for i := 2; i < len(res); i += 2 {
		if res[i].Receipt.IngestedAt.Before(res[i-2].Receipt.IngestedAt) {
			t.Fatalf("ingestedAt went back at %d", i)
		}
	}
}

func testNextSequence(t *testing.T, s Store) {
	token(t, s, ws)
	r := fixture.NewReplica(ws, "rep_a", "a@example.com")
	r.Next = 7
	ingest(t, s, r.Intent("int_1", "a/**"))
	e := r.Intent("int_2", "b/**")
	e.ClientSequence = 0
	res, err := s.IngestBatch(context.Background(), []store.Item{{Workspace: ws, Envelope: e, NextSequence: true}})
	if err != nil || res[0].Err != nil {
		t.Fatalf("NextSequence: %v %+v", err, res)
	}
	if e.ClientSequence != 8 || res[0].Logged.ClientSequence != 8 {
		t.Fatalf("NextSequence gave clientSequence %d, want 8", e.ClientSequence)
	}
}

// testIdempotencyKeys: a write under a key logged before (in an earlier
// batch or earlier in the same one) answers with the original receipt and
// logs nothing, whatever its content; one of another kind is refused.
func testIdempotencyKeys(t *testing.T, s Store) {
	ctx := context.Background()
	token(t, s, ws)
	r := fixture.NewReplica(ws, "rep_http", "a@example.com")
	keyed := func(key string, es ...*protocol.Envelope) []store.Result {
		t.Helper()
		items := make([]store.Item, len(es))
		for i, e := range es {
			e.ClientSequence = 0
			items[i] = store.Item{Workspace: ws, Envelope: e, NextSequence: true, Key: key}
		}
		res, err := s.IngestBatch(ctx, items)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	first := keyed("ses1/7#1", r.Claim("clm_1", true, "a/**"))
	want(t, "first write", first[0], "", 1, false)
	// The retry rebuilt its envelope: another id, another time.
	retry := keyed("ses1/7#1", r.Claim("clm_2", true, "a/**"))
	want(t, "retry", retry[0], "", 1, true)
	if retry[0].Receipt.ID != "clm_1" || retry[0].Logged != nil {
		t.Fatalf("retry answered %+v, want clm_1's receipt and nothing logged", retry[0])
	}
	// Within one batch, and beside a write under another key.
	both := keyed("ses1/8#1", r.Intent("int_1", "b/**"), r.Intent("int_2", "b/**"))
	want(t, "new key", both[0], "", 2, false)
	want(t, "same key in the batch", both[1], "", 2, true)
	other := keyed("ses1/7#1", r.Intent("int_3", "c/**"))
	want(t, "another kind under a used key", other[0], protocol.CodeIDConflict, 0, false)
	p, err := s.Page(ctx, store.PageQuery{Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Ops) != 2 {
		t.Fatalf("the log holds %d operations, want 2 (each key's write once)", len(p.Ops))
	}
	// The replica's clientSequences went on from the writes logged.
	res := keyed("ses1/9#1", r.Intent("int_4", "d/**"))
	want(t, "next write", res[0], "", 3, false)
	if res[0].Logged.ClientSequence != 3 {
		t.Fatalf("clientSequence %d, want 3", res[0].Logged.ClientSequence)
	}
}

// testNewsMarks: a session's news position, per workspace, only moves on.
func testNewsMarks(t *testing.T, s Store) {
	ctx := context.Background()
	token(t, s, ws)
	token(t, s, "other")
	if _, ok, err := s.NewsMark(ctx, ws, "mcp:a"); err != nil || ok {
		t.Fatalf("a new mark: ok %v, %v", ok, err)
	}
	for _, seq := range []int64{5, 3} {
		if err := s.SetNewsMark(ctx, ws, "mcp:a", seq); err != nil {
			t.Fatal(err)
		}
	}
	if seq, ok, err := s.NewsMark(ctx, ws, "mcp:a"); err != nil || !ok || seq != 5 {
		t.Fatalf("mark %d %v %v, want 5 (never back)", seq, ok, err)
	}
	if _, ok, _ := s.NewsMark(ctx, "other", "mcp:a"); ok {
		t.Fatal("a mark is per workspace")
	}
}

func testUnknownWorkspace(t *testing.T, s Store) {
	token(t, s, ws)
	r := fixture.NewReplica("nope", "rep_a", "a@example.com")
	ok := fixture.NewReplica(ws, "rep_a", "a@example.com")
	res := ingest(t, s, r.Intent("int_1", "a/**"), ok.Intent("int_1", "a/**"))
	if !errors.Is(res[0].Err, store.ErrNoWorkspace) {
		t.Fatalf("unknown workspace: %+v, want ErrNoWorkspace", res[0])
	}
	want(t, "the other item", res[1], "", 1, false)
	if _, err := s.Page(context.Background(), store.PageQuery{Workspace: "nope"}); !errors.Is(err, store.ErrNoWorkspace) {
		t.Fatalf("page of an unknown workspace: %v", err)
	}
}

func testPages(t *testing.T, s Store) {
	ctx := context.Background()
	token(t, s, ws)
	r := fixture.NewReplica(ws, "rep_a", "a@example.com")
	var es []*protocol.Envelope
	for i := range 25 {
		es = append(es, r.Any("p", i))
	}
	res := ingest(t, s, es...)
	p, err := s.Page(ctx, store.PageQuery{Workspace: ws, After: 3, Limit: 10})
	if err != nil || len(p.Ops) != 10 || !p.HasMore || p.NextCursor != 13 || p.TooOld {
		t.Fatalf("page: %+v, %v", p, err)
	}
	for i, op := range p.Ops {
		e, err := op.Envelope()
		if err != nil {
			t.Fatal(err)
		}
		logged := res[3+i].Logged
		if op.Seq != int64(4+i) || e.ID != logged.ID || !op.IngestedAt.Equal(*logged.IngestedAt) || e.ServerSequence != op.Seq {
			t.Fatalf("op %d: seq %d id %s, want %d %s", i, op.Seq, e.ID, 4+i, logged.ID)
		}
	}
	last, err := s.Page(ctx, store.PageQuery{Workspace: ws, After: 20, Limit: 10})
	if err != nil || len(last.Ops) != 5 || last.HasMore || last.NextCursor != 25 {
		t.Fatalf("last page: %+v, %v", last, err)
	}
	end, err := s.Page(ctx, store.PageQuery{Workspace: ws, After: 25})
	if err != nil || len(end.Ops) != 0 || end.HasMore || end.NextCursor != 25 {
		t.Fatalf("page at the head: %+v, %v", end, err)
	}
	claims, err := s.Page(ctx, store.PageQuery{Workspace: ws, Kind: protocol.KindClaim, Limit: 1000})
	if err != nil || len(claims.Ops) != 5 {
		t.Fatalf("claims page: %d ops, %v; want 5", len(claims.Ops), err)
	}
	for _, op := range claims.Ops {
		if e, _ := op.Envelope(); e.Type != protocol.EventClaimCreated || op.Seq%5 != 2 {
			t.Fatalf("claims page holds %s at %d", e.Type, op.Seq)
		}
	}
	if claims.NextCursor != 22 {
		t.Fatalf("claims page cursor %d, want 22", claims.NextCursor)
	}
}

func testHeads(t *testing.T, s Store) {
	token(t, s, ws)
	heads, err := s.Heads(context.Background(), []string{ws})
	if err != nil || len(heads) != 1 || heads[ws] != 0 {
		t.Fatalf("Heads of a new workspace: %v, %v", heads, err)
	}
	r := fixture.NewReplica(ws, "rep_a", "a@example.com")
	ingest(t, s, r.Any("h", 0), r.Any("h", 1))
	if heads, _ := s.Heads(context.Background(), []string{ws}); heads[ws] != 2 {
		t.Fatalf("Heads after two: %v", heads)
	}
}

func testPresence(t *testing.T, s Store) {
	ctx := context.Background()
	token(t, s, ws)
	set := func(replica string, st protocol.PresenceStatus) *protocol.RemotePresence {
		t.Helper()
		p, err := s.SetPresence(ctx, ws, &protocol.PresenceUpdate{ReplicaID: replica, ActorID: "a@example.com", SessionID: "ses_" + replica,
			Agent: &protocol.Agent{Provider: protocol.ProviderClaude, AdapterID: "crosscode-mcp"}, Status: st})
		if err != nil {
			t.Fatal(err)
		}
		if p.SenderReplicaID != replica || p.Status != st || p.WorkspaceID != ws || p.Agent == nil || p.Agent.Provider != protocol.ProviderClaude {
			t.Fatalf("SetPresence returned %+v", p)
		}
		return p
	}
	set("rep_a", protocol.PresenceOnline)
	time.Sleep(2 * time.Millisecond) // distinct updatedAt, for the order below
	set("rep_b", protocol.PresenceIdle)
	list, err := s.Presence(ctx, ws)
	if err != nil || len(list) != 2 || list[0].SenderReplicaID != "rep_b" || list[1].Status != protocol.PresenceOnline {
		t.Fatalf("Presence: %+v, %v", list, err)
	}
	p, err := s.MarkOffline(ctx, ws, "rep_a")
	if err != nil || p == nil || p.Status != protocol.PresenceOffline || p.SenderReplicaID != "rep_a" || p.SessionID != "ses_rep_a" {
		t.Fatalf("MarkOffline: %+v, %v", p, err)
	}
	if p, err := s.MarkOffline(ctx, ws, "rep_a"); p != nil || err != nil {
		t.Fatalf("MarkOffline of an offline replica: %+v, %v; want nil", p, err)
	}
	if p, err := s.MarkOffline(ctx, ws, "rep_never"); p != nil || err != nil {
		t.Fatalf("MarkOffline of an unknown replica: %+v, %v; want nil", p, err)
	}
	token(t, s, "other")
	if list, err := s.Presence(ctx, "other"); err != nil || len(list) != 0 {
		t.Fatalf("presence of another workspace: %+v, %v", list, err)
	}
}

func testRetention(t *testing.T, s Store) {
	ctx := context.Background()
	token(t, s, ws)
	r := fixture.NewReplica(ws, "rep_a", "a@example.com")
	var es []*protocol.Envelope
	for i := range 30 {
		es = append(es, r.Any("r", i))
	}
	res := ingest(t, s, es...)
	// Everything was ingested in one batch; move the clock so that all of
	// it is older than the retention.
	keep := time.Hour
	now := res[29].Receipt.IngestedAt.Add(keep).Add(time.Second)
	sw, err := s.Sweep(ctx, now, func(plan string) time.Duration { return keep }, &store.SweepOptions{BatchSize: 7})
	if err != nil || sw.Deleted != 30 || sw.Watermarks[ws] != 30 {
		t.Fatalf("Sweep: %+v, %v; want 30 deleted, watermark 30", sw, err)
	}
	if sw, _ := s.Sweep(ctx, now, func(string) time.Duration { return keep }, nil); sw.Deleted != 0 {
		t.Fatalf("second sweep deleted %d", sw.Deleted)
	}
	p, err := s.Page(ctx, store.PageQuery{Workspace: ws, After: 5})
	if err != nil || !p.TooOld || p.ResyncFrom != 30 || p.Plan != store.DefaultPlan {
		t.Fatalf("page below the watermark: %+v, %v", p, err)
	}
	if p, err := s.Page(ctx, store.PageQuery{Workspace: ws, After: 30}); err != nil || p.TooOld || len(p.Ops) != 0 {
		t.Fatalf("page at the watermark: %+v, %v", p, err)
	}
	heads, _ := s.Heads(ctx, []string{ws})
	if heads[ws] != 30 {
		t.Fatalf("head after retention %d, want 30", heads[ws])
	}
	// Dedupe holds for ever: a retry gets its original receipt.
	want(t, "retry after retention", ingest(t, s, es[3])[0], "", 4, true)
	// Numbering and ingestedAt go on from there.
	next := ingest(t, s, r.Any("r", 99))[0]
	want(t, "after retention", next, "", 31, false)
	if next.Receipt.IngestedAt.Before(res[29].Receipt.IngestedAt) {
		t.Fatal("ingestedAt went back after retention deleted everything")
	}
	// Zero retention keeps everything.
	if sw, _ := s.Sweep(ctx, now.Add(1000*time.Hour), func(string) time.Duration { return 0 }, nil); sw.Deleted != 0 {
		t.Fatal("zero retention deleted")
	}
}

// testConcurrentGroupCommit ingests from many goroutines through the group
// commit into two workspaces: every envelope is logged once, and each
// workspace's serverSequences are 1..n without gaps.
func testConcurrentGroupCommit(t *testing.T, s Store) {
	token(t, s, ws)
	token(t, s, "other")
	in := store.NewGroupIngester(s.IngestBatch, nil)
	defer in.Close()
	const writers, each = 8, 40
	var mu sync.Mutex
	seqs := map[string][]int64{}
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			space := []string{ws, "other"}[w%2]
			r := fixture.NewReplica(space, fmt.Sprintf("rep_%d", w), "a@example.com")
			for i := range each {
				e := r.Any(fmt.Sprintf("c%d", w), i)
				res, err := in.Ingest(context.Background(), space, e)
				if err == nil {
					err = res.Err
				}
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				seqs[space] = append(seqs[space], res.Receipt.ServerSequence)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for space, got := range seqs {
		sort.Slice(got, func(i, j int) bool { return got[i] < got[j] })
		for i, v := range got {
			if v != int64(i+1) {
				t.Fatalf("%s: serverSequences %v are not 1..%d", space, got, len(got))
			}
		}
		p, err := s.Page(context.Background(), store.PageQuery{Workspace: space, Limit: 1000})
		if err != nil || len(p.Ops) != writers/2*each {
			t.Fatalf("%s: page of %d ops, %v", space, len(p.Ops), err)
		}
	}
}
