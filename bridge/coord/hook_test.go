package coord_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/crosscode/crosscode-mcp/bridge/coord"
	"github.com/crosscode/crosscode-mcp/protocol"
)

// TestHolders: the claims of others that cover a file, as check_conflicts
// finds them: exclusive and shared, globs and the file itself, never the
// actor's own, not once released or expired; a file whose name has glob
// characters is itself.
func TestHolders(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t)
	st := w.open(t)
	ada := w.coord(t, "ada", "rep_a", "ses_a")
	bo := w.coord(t, "bo", "rep_b", "ses_b")
	ex := mustClaim(t, ada, []string{"src/game/**"}, true, time.Hour, "")
	sh := mustClaim(t, bo, []string{"src/ui/*.gd"}, false, time.Minute, "")
	mustClaim(t, bo, []string{"docs/[id].md"}, true, time.Hour, "") // a class: docs/i.md, docs/d.md

	holders := func(actor, path string) []string {
		t.Helper()
		hs, err := coord.Holders(ctx, st, ws, actor, path, w.clk.Now())
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, h := range hs {
			out = append(out, h.ClaimID)
		}
		return out
	}
	for _, tc := range []struct {
		actor, path string
		want        []string
	}{
		{"bo", "src/game/boss.gd", []string{ex.Claim.ID}},
		{"bo", "src/game/levels/1.tscn", []string{ex.Claim.ID}},
		{"ada", "src/game/boss.gd", nil}, // her own
		{"ada", "src/ui/menu.gd", []string{sh.Claim.ID}},
		{"ada", "src/ui/deep/menu.gd", nil},
		{"ada", "docs/i.md", nil},    // held by the class, but...
		{"ada", "docs/[id].md", nil}, // ...a file named like the pattern is not in it
		{"carol", "src/game", []string{ex.Claim.ID}},
	} {
		got := holders(tc.actor, tc.path)
		if tc.path == "docs/i.md" {
			if len(got) != 1 {
				t.Errorf("%s on %s: %v, want bo's claim", tc.actor, tc.path, got)
			}
			continue
		}
		if strings.Join(got, ",") != strings.Join(tc.want, ",") {
			t.Errorf("%s on %s: %v, want %v", tc.actor, tc.path, got, tc.want)
		}
	}
	w.clk.Advance(2 * time.Minute) // bo's shared claim expires
	if got := holders("ada", "src/ui/menu.gd"); len(got) != 0 {
		t.Errorf("an expired claim still holds: %v", got)
	}
	if _, err := ada.Release(ctx, []string{ex.Claim.ID}, false, "done"); err != nil {
		t.Fatal(err)
	}
	if got := holders("bo", "src/game/boss.gd"); len(got) != 0 {
		t.Errorf("a released claim still holds: %v", got)
	}
}

// TestClaimForEdit: a free file is claimed exclusively with the hook's
// reason; an edit within the first half of the claim's time takes no new
// claim, a later one renews it; a claim of the actor's own that covers the
// file serves as it is; a file another holds is denied, naming the claim.
func TestClaimForEdit(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t)
	ada := w.coord(t, "ada", "rep_a", "ses_a")
	bo := w.coord(t, "bo", "rep_b", "ses_b")
	ttl := 10 * time.Minute

	first, err := ada.ClaimForEdit(ctx, "src/menu.gd", ttl)
	if err != nil || first.Result == nil || first.Result.Status != "granted" || first.Held == nil || !first.Held.Exclusive {
		t.Fatalf("first edit: %+v %v", first, err)
	}
	if cl := first.Result.Claim; cl.Reason != coord.HookClaimReason || strings.Join(cl.Patterns, ",") != "src/menu.gd" {
		t.Fatalf("the claim: %+v", cl)
	}
	w.clk.Advance(3 * time.Minute)
	again, err := ada.ClaimForEdit(ctx, "src/menu.gd", ttl)
	if err != nil || again.Result != nil || again.Held.ID != first.Held.ID {
		t.Fatalf("an edit 3 minutes on: want the same claim, no write: %+v %v", again, err)
	}
	w.clk.Advance(3 * time.Minute) // 4 of 10 minutes left
	renewed, err := ada.ClaimForEdit(ctx, "src/menu.gd", ttl)
	if err != nil || renewed.Result == nil || renewed.Result.Renewed != first.Held.ID || renewed.Held.ID == first.Held.ID {
		t.Fatalf("an edit 6 minutes on: want a renewal: %+v %v", renewed, err)
	}
	if e := entity(t, ada, protocol.KindClaim, first.Held.ID); e.Status != "released" {
		t.Fatalf("the renewed claim is %s, want released", e.Status)
	}
	mustClaim(t, ada, []string{"assets/**"}, false, time.Hour, "")
	if own, err := ada.ClaimForEdit(ctx, "assets/boss.png", ttl); err != nil || own.Result != nil || own.Held == nil {
		t.Fatalf("a file in her own (shared) claim: %+v %v", own, err)
	}
	denied, err := bo.ClaimForEdit(ctx, "src/menu.gd", ttl)
	if err != nil || denied.Held != nil || denied.Result.Status != "denied" || len(denied.Result.Conflicts) != 1 || denied.Result.Conflicts[0].ClaimID != renewed.Held.ID {
		t.Fatalf("bo on ada's file: %+v %v", denied, err)
	}
}

// TestHookNewsSharesTheMark: news a hook told a session (by its session
// reference) is not repeated in that session's next tool result; what the
// tool result told is not told again by the hook; another session has its
// own.
func TestHookNewsSharesTheMark(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t)
	st := w.open(t)
	ada := w.coord(t, "ada", "rep_a", "ses_a")
	ada.SetAgent(protocol.Agent{Provider: protocol.ProviderClaude, SessionReference: "claude-1"})
	bo := w.coord(t, "bo", "rep_b", "ses_b")
	q := coord.HookNewsQuery{Workspace: ws, Actor: "ada", Replica: "rep_a", SessionRef: "claude-1", Shared: true, Now: w.clk.Now()}

	if text, err := coord.HookNews(ctx, st, q); err != nil || text != "" {
		t.Fatalf("first look: %q %v", text, err)
	}
	_, h, err := bo.RequestHandoff(ctx, "ada", "finish the menus", "", "", []string{}, "", "")
	if err != nil {
		t.Fatal(err)
	}
	text, err := coord.HookNews(ctx, st, q)
	if err != nil || !strings.Contains(text, h.ID) || !strings.Contains(text, "finish the menus") || len(text) > coord.HookNewsMax {
		t.Fatalf("after the handoff: %q %v", text, err)
	}
	n, err := ada.News(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range n.Items {
		if it.ID == h.ID {
			t.Fatalf("the tool result repeats what the hook told: %+v", n.Items)
		}
	}
	// A claim on bo's side that does not concern ada, then one on a path
	// she claimed: the tool result tells both, and the hook then nothing.
	mustClaim(t, ada, []string{"src/menu/**"}, false, time.Hour, "")
	mustClaim(t, bo, []string{"lib/**"}, true, time.Hour, "")
	mustClaim(t, bo, []string{"src/menu/title.gd"}, false, time.Hour, "")
	if n, err := ada.News(ctx); err != nil || len(n.Items) != 2 {
		t.Fatalf("tool news: %+v %v", n, err)
	}
	if text, err := coord.HookNews(ctx, st, q); err != nil || text != "" {
		t.Fatalf("the hook repeats what the tool result told: %q %v", text, err)
	}
	// Another session of ada's (another client session) has its own mark:
	// at its start it is told the open handoff.
	q2 := q
	q2.SessionRef, q2.Start = "claude-2", true
	if text, err := coord.HookNews(ctx, st, q2); err != nil || !strings.Contains(text, h.ID) {
		t.Fatalf("another session's start: %q %v", text, err)
	}
	// What concerns ada: a claim on her path, a failed validation; what
	// does not: bo's claim elsewhere.
	mustClaim(t, bo, []string{"src/menu/options.gd"}, false, time.Hour, "")
	mustClaim(t, bo, []string{"tools/**"}, true, time.Hour, "")
	if _, _, err := bo.RecordValidation(ctx, protocol.Validation{Kind: protocol.ValidationTest, Name: "menus", Status: protocol.ValidationFailed, Summary: "title screen crashes"}); err != nil {
		t.Fatal(err)
	}
	text, err = coord.HookNews(ctx, st, q)
	if err != nil || !strings.Contains(text, "src/menu/options.gd") || !strings.Contains(text, "title screen crashes") || strings.Contains(text, "tools/**") || !strings.Contains(text, "1 more events") {
		t.Fatalf("what concerns ada: %q %v", text, err)
	}
}

// TestHookNewsWaitExpiredNamesHolders: when a claim's wait ends after its
// call gave up, the waiter's next prompt is told, with who still holds the
// paths (the claim it waited for, its holder and lease).
func TestHookNewsWaitExpiredNamesHolders(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t)
	st := w.open(t)
	ada := w.coord(t, "ada", "rep_a", "ses_a")
	bo := w.coord(t, "bo", "rep_b", "ses_b")
	bo.SetAgent(protocol.Agent{Provider: protocol.ProviderClaude, SessionReference: "claude-bo"})
	q := coord.HookNewsQuery{Workspace: ws, Actor: "bo", Replica: "rep_b", SessionRef: "claude-bo", Shared: true, Now: w.clk.Now()}
	if text, err := coord.HookNews(ctx, st, q); err != nil || text != "" {
		t.Fatalf("first look: %q %v", text, err)
	}
	held := mustClaim(t, ada, []string{"src/boss.gd"}, true, time.Hour, "")
	res, err := bo.Request(ctx, coord.ClaimRequest{Patterns: []string{"src/boss.gd"}, Exclusive: true, Wait: time.Minute})
	if err != nil || res.Status != "queued" {
		t.Fatalf("bo's claim: %+v %v", res, err)
	}
	w.clk.Advance(2 * time.Minute)
	q.Now = w.clk.Now()
	text, err := coord.HookNews(ctx, st, q)
	if err != nil || !strings.Contains(text, "claim.wait_expired "+res.Claim.ID) || !strings.Contains(text, "ada holds src/boss.gd until") || !strings.Contains(text, held.Claim.ID) {
		t.Fatalf("bo's prompt: %q %v", text, err)
	}
}
