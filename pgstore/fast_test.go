package pgstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/crosscode/crosscode-mcp/internal/fixture"
	"github.com/crosscode/crosscode-mcp/internal/pgtest"
	"github.com/crosscode/crosscode-mcp/pgstore"
	"github.com/crosscode/crosscode-mcp/protocol"
	"github.com/crosscode/crosscode-mcp/store"
)

// One-round-trip ingest decides over what the instance remembers; when
// another instance moved the workspace, or a remembered or assumed value
// is wrong, its check fails, nothing is written, and the batch is decided
// again the locked way: the answers are those of one store, every time.
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

	ingest("a's first batch", a, ra.Claim("clm_1", true, "src/**"), want{}, locked)
	ingest("a again: remembered", a, ra.Claim("clm_2", true, "docs/**"), want{}, fast)
	ingest("a changes its own claim", a, ra.Release("clm_1", "src/**"), want{}, fast)
	ingest("b's first batch", b, rb.Intent("int_b", "lib/**"), want{}, locked)
	// b moved the head: a's check fails, and the locked way numbers it.
	ingest("a after b wrote", a, ra.Intent("int_a", "src/**"), want{}, fallback)
	backoff()
	ingest("a once more", a, ra.Intent("int_a3", "src/**"), want{}, fast)

	// A changed id a does not remember is assumed to exist; it does not.
	ingest("release of a claim never made", a, ra.Release("clm_none", "x/**"), want{code: protocol.CodeUnknownEntity}, fallback)
	backoff()
	ingest("the same, now remembered absent", a, ra.Release("clm_none", "x/**"), want{code: protocol.CodeUnknownEntity}, fast)

	// An id b opened, unknown to a (whose head is current), is assumed
	// new; it is not.
	ingest("b opens clm_b", b, rb.Claim("clm_b", false, "lib/**"), want{}, fallback)
	ingest("a learns the head", a, ra.Intent("int_a4", "src/**"), want{}, fallback)
	backoff()
	ingest("a opens the same id", a, ra.Claim("clm_b", false, "x/**"), want{code: protocol.CodeIDConflict}, fallback)
	backoff()
	ingest("a releases it, remembered now", a, ra.Release("clm_b", "lib/**"), want{}, fast)
	// A claim b made, unknown to a, changed through a: assumed to exist
	// as a claim, and it does.
	backoff()
	ingest("b opens clm_b2", b, rb.Claim("clm_b2", false, "lib/**"), want{}, fallback)
	ingest("a learns the head again", a, ra.Intent("int_a5", "src/**"), want{}, fallback)
	backoff()
	ingest("a releases clm_b2", a, ra.Release("clm_b2", "lib/**"), want{}, fast)

	// A replica a has not seen is assumed to have no receipts.
	rc := fixture.NewReplica("mygame", "rep_c", "cy@example.com")
	first := rc.Intent("int_c1", "c/**")
	backoff()
	got := ingest("rep_c through b", b, first, want{}, fallback)
	backoff()
	ingest("rep_c 2 through b", b, rc.Intent("int_c2", "c/**"), want{}, fast)
	ingest("a learns the head once more", a, ra.Intent("int_a6", "src/**"), want{}, fallback)
	backoff()
	if dup := ingest("rep_c's retry through a", a, first, want{dup: true}, fallback); dup.ID != got.ID || dup.ServerSequence != got.ServerSequence || !dup.IngestedAt.Equal(got.IngestedAt) {
		t.Fatalf("the retry's receipt %+v, want the original %+v", dup, got)
	}
	backoff()
	rc.Next = 2 // a clientSequence rep_c used for something else: a receipt to read, the locked way
	ingest("rep_c reuses 2 through a", a, rc.Intent("int_c9", "c/**"), want{code: protocol.CodeClientSequenceRegression}, locked)
	rc.Next = 3
	backoff()
	ingest("rep_c 3 through a", a, rc.Intent("int_c3", "c/**"), want{}, fast)

	// A replica that sent clientSequence 5 through b; a gets 3, never
	// sent: a regression, not a new envelope.
	rd := fixture.NewReplica("mygame", "rep_d", "di@example.com")
	rd.Next = 5
	ingest("rep_d 5 through b", b, rd.Intent("int_d5", "d/**"), want{}, fallback)
	ingest("a learns the head, last time", a, ra.Intent("int_a7", "src/**"), want{}, fallback)
	backoff()
	rd.Next = 3
	ingest("rep_d 3 through a", a, rd.Intent("int_d3", "d/**"), want{code: protocol.CodeClientSequenceRegression}, fallback)

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
