package pgstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/crosscode/crosscode-mcp/internal/testing/fixture"
	"github.com/crosscode/crosscode-mcp/internal/testing/pgtest"
	"github.com/crosscode/crosscode-mcp/pgstore"
	"github.com/crosscode/crosscode-mcp/protocol"
	"github.com/crosscode/crosscode-mcp/store"
)

// One-round-trip ingest decides over what the instance remembers and
// assumes, and the database numbers it; when a remembered or assumed value
// is wrong (another instance logged for the replica, opened the id), its
// check fails, nothing is written, and the batch is decided again the
// locked way: the answers are those of one store, every time.
func TestFastIngestChecksWhatItAssumed(t *testing.T) {
	ctx := context.Background()
	db := pgtest.NewDB(t)
	a, b := openAt(t, db, nil), openAt(t, db, nil)
	if _, err := a.CreateToken(ctx, "mygame", ""); err != nil {
		t.Fatal(err)
	}
	seq := int64(0) // the log's head, as the test keeps it
	type want struct {
		code protocol.ErrorCode // "" for logged
		dup  bool
	}
	paths := func(s *pgstore.Store) [3]int64 {
		f, l, fb := s.IngestPaths()
		return [3]int64{f, l, fb}
	}
	// ingest sends one envelope through s and checks its answer and the
	// path it took (fast, locked, fallback: the counts it adds).
	ingest := func(name string, s *pgstore.Store, e *protocol.Envelope, w want, path [3]int64) protocol.IngestReceipt {
		t.Helper()
		before := paths(s)
		res, err := s.IngestBatch(ctx, []store.Item{{Workspace: "mygame", Envelope: e}})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		r := res[0]
		var re *store.RuleError
		switch {
		case w.code != "":
			if !errors.As(r.Err, &re) || re.Code != w.code {
				t.Fatalf("%s: %+v %v, want %s", name, r.Receipt, r.Err, w.code)
			}
		case r.Err != nil:
			t.Fatalf("%s: %v", name, r.Err)
		case w.dup != r.Receipt.Duplicate:
			t.Fatalf("%s: duplicate %v, want %v", name, r.Receipt.Duplicate, w.dup)
		case !w.dup:
			seq++
			if r.Receipt.ServerSequence != seq {
				t.Fatalf("%s: serverSequence %d, want %d (gapless)", name, r.Receipt.ServerSequence, seq)
			}
		}
		after := paths(s)
		for i := range after {
			if after[i]-before[i] != path[i] {
				t.Fatalf("%s: paths (fast, locked, fallback) went %v -> %v, want +%v", name, before, after, path)
			}
		}
		return r.Receipt
	}
	var (
		fast     = [3]int64{1, 0, 0}
		locked   = [3]int64{0, 1, 0}
		fallback = [3]int64{0, 0, 1}
		backoff  = func() { time.Sleep(210 * time.Millisecond) } // past the locked path's 50-200ms after up to three failed checks in a row
	)
	ra, rb := fixture.NewReplica("mygame", "rep_a", "ada@example.com"), fixture.NewReplica("mygame", "rep_b", "bob@example.com")

	// Two instances feeding one workspace both commit in one round trip:
	// the database numbers each batch from the head it finds.
	ingest("a's first batch", a, ra.Claim("clm_1", true, "src/**"), want{}, fast)
	ingest("a again", a, ra.Claim("clm_2", true, "docs/**"), want{}, fast)
	ingest("a changes its own claim", a, ra.Release("clm_1", "src/**"), want{}, fast)
	ingest("b's first batch", b, rb.Intent("int_b", "lib/**"), want{}, fast)
	ingest("a after b wrote", a, ra.Intent("int_a", "src/**"), want{}, fast)
	ingest("b after a wrote", b, rb.Intent("int_b2", "lib/**"), want{}, fast)

	// A changed id a does not remember is assumed to exist; it does not.
	ingest("release of a claim never made", a, ra.Release("clm_none", "x/**"), want{code: protocol.CodeUnknownEntity}, fallback)
	backoff()
	ingest("the same, now remembered absent", a, ra.Release("clm_none", "x/**"), want{code: protocol.CodeUnknownEntity}, fast)

	// An id b opened, unknown to a, is assumed new; it is not.
	ingest("b opens clm_b", b, rb.Claim("clm_b", false, "lib/**"), want{}, fast)
	ingest("a opens the same id", a, ra.Claim("clm_b", false, "x/**"), want{code: protocol.CodeIDConflict}, fallback)
	backoff()
	ingest("a releases it, remembered now", a, ra.Release("clm_b", "lib/**"), want{}, fast)
	// A claim b made, unknown to a, changed through a: assumed to exist
	// as a claim, and it does.
	ingest("b opens clm_b2", b, rb.Claim("clm_b2", false, "lib/**"), want{}, fast)
	ingest("a releases clm_b2", a, ra.Release("clm_b2", "lib/**"), want{}, fast)

	// A replica a has not seen is assumed to have no receipts.
	rc := fixture.NewReplica("mygame", "rep_c", "cy@example.com")
	first := rc.Intent("int_c1", "c/**")
	got := ingest("rep_c through b", b, first, want{}, fast)
	ingest("rep_c 2 through b", b, rc.Intent("int_c2", "c/**"), want{}, fast)
	if dup := ingest("rep_c's retry through a", a, first, want{dup: true}, fallback); dup.ID != got.ID || dup.ServerSequence != got.ServerSequence || !dup.IngestedAt.Equal(got.IngestedAt) {
		t.Fatalf("the retry's receipt %+v, want the original %+v", dup, got)
	}
	backoff()
	rc.Next = 2 // a clientSequence rep_c used for something else: a receipt to read, the locked way
	ingest("rep_c reuses 2 through a", a, rc.Intent("int_c9", "c/**"), want{code: protocol.CodeClientSequenceRegression}, locked)
	rc.Next = 3
	ingest("rep_c 3 through a", a, rc.Intent("int_c3", "c/**"), want{}, fast)
	// a's memory of rep_c is now behind: rep_c logs through b.
	ingest("rep_c 4 through b", b, rc.Intent("int_c4", "c/**"), want{}, fallback)
	backoff()
	ingest("rep_c 5 through a", a, rc.Intent("int_c5", "c/**"), want{}, fallback)

	// A replica that sent clientSequence 5 through b; a gets 3, never
	// sent: a regression, not a new envelope.
	rd := fixture.NewReplica("mygame", "rep_d", "di@example.com")
	rd.Next = 5
	backoff()
	ingest("rep_d 5 through b", b, rd.Intent("int_d5", "d/**"), want{}, fast)
	rd.Next = 3
	backoff()
	ingest("rep_d 3 through a", a, rd.Intent("int_d3", "d/**"), want{code: protocol.CodeClientSequenceRegression}, fallback)

	// Within one batch: an envelope and its retry (a duplicate of what the
	// batch itself logs), numbered as the database numbered the batch.
	re := fixture.NewReplica("mygame", "rep_e", "ed@example.com")
	e1, e2 := re.Intent("int_e1", "e/**"), re.Intent("int_e2", "e/**")
	backoff()
	before := paths(a)
	res, err := a.IngestBatch(ctx, []store.Item{{Workspace: "mygame", Envelope: e1}, {Workspace: "mygame", Envelope: e2}, {Workspace: "mygame", Envelope: e1}})
	if err != nil {
		t.Fatal(err)
	}
	if after := paths(a); after[0]-before[0] != 1 {
		t.Fatalf("a batch with its own duplicate: paths %v -> %v, want one fast commit", before, after)
	}
	if res[0].Err != nil || res[1].Err != nil || res[2].Err != nil || res[0].Receipt.ServerSequence != seq+1 || res[1].Receipt.ServerSequence != seq+2 ||
		!res[2].Receipt.Duplicate || res[2].Receipt.ServerSequence != seq+1 || !res[2].Receipt.IngestedAt.Equal(res[0].Receipt.IngestedAt) ||
		res[0].Logged == nil || res[0].Logged.ServerSequence != seq+1 || res[0].Logged.IngestedAt == nil || !res[0].Logged.IngestedAt.Equal(res[0].Receipt.IngestedAt) {
		t.Fatalf("a batch with its own duplicate after %d: %+v %+v %+v (%v %v %v)", seq, res[0].Receipt, res[1].Receipt, res[2].Receipt, res[0].Err, res[1].Err, res[2].Err)
	}
	seq += 2

	// Both agree on the log: gapless, each envelope once.
	heads, err := b.Heads(ctx, []string{"mygame"})
	if err != nil || heads["mygame"] != seq {
		t.Fatalf("head %v %v, want %d", heads, err, seq)
	}
	page, err := b.Page(ctx, store.PageQuery{Workspace: "mygame", Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for i, op := range page.Ops {
		if op.Seq != int64(i+1) {
			t.Fatalf("op %d has serverSequence %d", i, op.Seq)
		}
	}
	if int64(len(page.Ops)) != seq {
		t.Fatalf("%d ops, want %d", len(page.Ops), seq)
	}
}
