package coord_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crosscode/crosscode-mcp/bridge/coord"
	"github.com/crosscode/crosscode-mcp/protocol"
)

// scan scans once and returns the wakes' kinds with the id each is about.
func scan(t *testing.T, w *coord.Waker) []string {
	t.Helper()
	ws, err := w.Scan(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, wk := range ws {
		out = append(out, wk.Key())
		if wk.Meta["kind"] != wk.Kind || strings.ContainsAny(wk.Text, "\x1b\u202e") || len(wk.Text) > 600 {
			t.Errorf("wake %+v: meta kind, or text not sanitized and capped", wk)
		}
	}
	return out
}

func wantScan(t *testing.T, w *coord.Waker, what string, want ...string) {
	t.Helper()
	if got := scan(t, w); !slices.Equal(got, want) {
		t.Errorf("%s: wakes %v, want %v", what, got, want)
	}
}

// TestWakerFindsWhatNeedsTheAgent: what wakes an idle agent (spec section
// 21), each once: the grant (or end) of a claim it waits for, a handoff to
// it and the answer to its own, a task assigned to it, a validation
// failed at a commit of its, another agent waiting for its claim; not its
// own doing, nor a handoff to anyone, nor what concerns others.
func TestWakerFindsWhatNeedsTheAgent(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t)
	ada := w.coord(t, "ada", "rep_a", "ses_a")
	bo := w.coord(t, "bo", "rep_b", "ses_b")
	authored := "c0ffee1234567890c0ffee1234567890c0ffee12"
	wk := ada.NewWaker(coord.WakeOptions{Authored: func(_ context.Context, commit string) bool { return commit == authored }})
	wantScan(t, wk, "nothing yet")

	// A claim it waits for is granted when bo releases.
	held := mustClaim(t, bo, []string{"src/boss.go"}, true, 0, "")
	res, err := ada.Request(ctx, coord.ClaimRequest{Patterns: []string{"src/boss.go"}, Exclusive: true, Reason: "tune", Wait: 10 * time.Minute})
	if err != nil || res.Status != "queued" {
		t.Fatalf("ada's claim: %+v %v", res, err)
	}
	wantScan(t, wk, "its own claim, queued")
	if _, err := bo.Release(ctx, []string{held.Claim.ID}, false, ""); err != nil {
		t.Fatal(err)
	}
	w.clk.Advance(time.Second) // past the release's (real) ingest time
	granted, err := wk.Scan(ctx)
	if err != nil || len(granted) != 1 || granted[0].Key() != "claim_granted:"+res.Claim.ID ||
		!strings.Contains(granted[0].Text, "src/boss.go") || !strings.Contains(granted[0].Text, "bo released what held it") {
		t.Fatalf("the grant: %+v %v", granted, err)
	}
	wantScan(t, wk, "the grant, once")

	// Handoffs: to it, yes; to anyone or to another, no; the answer to
	// its own, yes.
	if _, _, err := bo.RequestHandoff(ctx, "", "anyone", "", "", []string{}, "", ""); err != nil {
		t.Fatal(err)
	}
	if _, _, err := bo.RequestHandoff(ctx, "cy", "to cy", "", "", []string{}, "", ""); err != nil {
		t.Fatal(err)
	}
	_, h, err := bo.RequestHandoff(ctx, "ada", "to ada", "", "", []string{}, "", "")
	if err != nil {
		t.Fatal(err)
	}
	wantScan(t, wk, "handoffs", "handoff_requested:"+h.ID)
	_, mine, err := ada.RequestHandoff(ctx, "bo", "ada's", "", "", []string{}, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := bo.RespondHandoff(ctx, mine.ID, protocol.HandoffDeclined, "busy"); err != nil {
		t.Fatal(err)
	}
	wantScan(t, wk, "the answer to its handoff", "handoff_answered:"+mine.ID)

	// Tasks assigned to it by another, not its own nor others'. A title
	// that tries to pass for something else is sanitized.
	_, tk, err := bo.CreateTask(ctx, "balance wave\u202e 1", "", nil, "ada", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []struct {
		c  *coord.Coordinator
		to string
	}{{bo, "bo"}, {ada, "ada"}, {ada, "bo"}} {
		if _, _, err := a.c.CreateTask(ctx, "other", "", nil, a.to, ""); err != nil {
			t.Fatal(err)
		}
	}
	wantScan(t, wk, "tasks", "task_assigned:"+tk.ID)

	// Validations: failed at its commit (authored, or named by it in the
	// log, abbreviated or not), yes; passed, or at another commit, no.
	named := "abcdef0123456789abcdef0123456789abcdef01"
	if _, _, err := ada.RecordValidation(ctx, protocol.Validation{Kind: protocol.ValidationTest, Name: "go test", Status: protocol.ValidationPassed, Commit: named}); err != nil {
		t.Fatal(err)
	}
	var failed []string
	for _, v := range []struct {
		commit string
		status protocol.ValidationStatus
		wakes  bool
	}{
		{authored, protocol.ValidationFailed, true},
		{named[:9], protocol.ValidationErrored, true},
		{authored, protocol.ValidationPassed, false},
		{"1111111111111111111111111111111111111111", protocol.ValidationFailed, false},
		{"--output=/tmp/x", protocol.ValidationFailed, false},
	} {
		_, val, err := bo.RecordValidation(ctx, protocol.Validation{Kind: protocol.ValidationBuild, Name: "build", Status: v.status, Commit: v.commit})
		if err != nil {
			t.Fatal(err)
		}
		if v.wakes {
			failed = append(failed, "validation_failed:"+val.ID)
		}
	}
	wantScan(t, wk, "validations", failed...)

	// Another agent waits for its claim.
	if _, err := ada.Request(ctx, coord.ClaimRequest{Patterns: []string{"docs/**"}, Exclusive: true, Reason: "docs"}); err != nil {
		t.Fatal(err)
	}
	waiter, err := bo.Request(ctx, coord.ClaimRequest{Patterns: []string{"docs/intro.md"}, Exclusive: true, Reason: "intro", Wait: 10 * time.Minute})
	if err != nil || waiter.Status != "queued" {
		t.Fatalf("bo's claim: %+v %v", waiter, err)
	}
	wantScan(t, wk, "a waiter", "claim_waiting:"+waiter.Claim.ID)

	// One that waits in a line where its own claim waits too, ahead, waits
	// for nothing it holds: no wake.
	cy, dee := w.coord(t, "cy", "rep_c", "ses_c"), w.coord(t, "dee", "rep_d", "ses_d")
	mustClaim(t, dee, []string{"lib/x.go"}, true, 0, "")
	for _, c := range []*coord.Coordinator{ada, cy} {
		if r, err := c.Request(ctx, coord.ClaimRequest{Patterns: []string{"lib/x.go"}, Exclusive: true, Reason: "x", Wait: 10 * time.Minute}); err != nil || r.Status != "queued" {
			t.Fatalf("claim of lib/x.go: %+v %v", r, err)
		}
	}
	wantScan(t, wk, "a waiter behind its own queued claim")
}

// TestWakerNeverConsumesNews: what a scan found stays, once, in the next
// tool result's news; once told there, it is no longer to be sent
// (Untold), and a new Waker does not find it again.
func TestWakerNeverConsumesNews(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t)
	ada := w.coord(t, "ada", "rep_a", "ses_a")
	bo := w.coord(t, "bo", "rep_b", "ses_b")
	wk := ada.NewWaker(coord.WakeOptions{})
	_, h, err := bo.RequestHandoff(ctx, "ada", "take over", "", "", []string{}, "", "")
	if err != nil {
		t.Fatal(err)
	}
	found, err := wk.Scan(ctx)
	if err != nil || len(found) != 1 {
		t.Fatalf("scan: %v %v", found, err)
	}
	if left := wk.Untold(ctx, found); len(left) != 1 {
		t.Fatalf("untold before any tool result: %v", left)
	}
	n, err := ada.News(ctx)
	if err != nil {
		t.Fatal(err)
	}
	count := 0
	for _, it := range n.Items {
		if it.ID == h.ID {
			count++
		}
	}
	if count != 1 {
		t.Fatalf("the news after a scan has the handoff %d times, want once: %+v", count, n.Items)
	}
	if left := wk.Untold(ctx, found); len(left) != 0 {
		t.Errorf("untold after the tool result told it: %v", left)
	}
	if again := scan(t, ada.NewWaker(coord.WakeOptions{})); len(again) != 0 {
		t.Errorf("a new waker finds what the session was told: %v", again)
	}
}

// TestWakerWaitEnded: a claim whose wait ended with no grant (time alone
// decides it: no log event) wakes its agent once.
func TestWakerWaitEnded(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t)
	ada := w.coord(t, "ada", "rep_a", "ses_a")
	bo := w.coord(t, "bo", "rep_b", "ses_b")
	mustClaim(t, bo, []string{"src/**"}, true, 0, "")
	wk := ada.NewWaker(coord.WakeOptions{})
	res, err := ada.Request(ctx, coord.ClaimRequest{Patterns: []string{"src/a.go"}, Exclusive: true, Reason: "a", Wait: time.Minute})
	if err != nil || res.Status != "queued" {
		t.Fatalf("claim: %+v %v", res, err)
	}
	wantScan(t, wk, "queued")
	w.clk.Advance(2 * time.Minute)
	wantScan(t, wk, "the wait ended", "claim_wait_expired:"+res.Claim.ID)
	wantScan(t, wk, "once")
}
