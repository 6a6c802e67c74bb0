package coord_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/crosscode/crosscode-mcp/bridge/coord"
	"github.com/crosscode/crosscode-mcp/internal/testing/fixture"
	"github.com/crosscode/crosscode-mcp/protocol"
	"github.com/crosscode/crosscode-mcp/store"
)

// Local-mode tests: every Coordinator opens its own *store.Store on one
// shared database file, as separate MCP server processes of one
// repository do.

const ws = "mygame"

// clock is a fake clock shared by the coordinators of a test. It starts
// at the real time: arbitration uses the real ingest time, so claims must
// expire relative to it.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

type world struct {
	path string
	clk  *clock
}

func newWorld(t *testing.T) *world {
	return &world{path: filepath.Join(t.TempDir(), "ws.db"), clk: &clock{t: time.Now().UTC()}}
}

// open opens another handle on the shared file.
func (w *world) open(t *testing.T) *store.Store {
	t.Helper()
	s, err := store.Open(context.Background(), w.path, &store.Options{Projections: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// coord starts a coordinator for actor on its own store handle.
func (w *world) coord(t *testing.T, actor, replica, session string) *coord.Coordinator {
	t.Helper()
	return w.coordOn(t, w.open(t), actor, replica, session, w.clk.Now)
}

func (w *world) coordOn(t *testing.T, s *store.Store, actor, replica, session string, now func() time.Time) *coord.Coordinator {
	t.Helper()
	c, err := coord.New(coord.Config{Workspace: ws, Store: s, Actor: actor, Replica: replica, Session: session, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(context.Background()); err != nil {
			t.Errorf("close %s: %v", actor, err)
		}
	})
	if c.Mode() != "local" {
		t.Fatalf("mode %q", c.Mode())
	}
	return c
}

func wantInputError(t *testing.T, err error, what string) {
	t.Helper()
	var ie *coord.InputError
	if !errors.As(err, &ie) {
		t.Fatalf("%s: got %v (%T), want an InputError", what, err, err)
	}
}

func mustClaim(t *testing.T, c *coord.Coordinator, pats []string, excl bool, ttl time.Duration, renew string) *coord.ClaimResult {
	t.Helper()
	res, err := c.Claim(context.Background(), pats, excl, "editing", ttl, renew)
	if err != nil {
		t.Fatalf("%s claims %v: %v", c.Actor(), pats, err)
	}
	if !res.Acknowledged || res.ServerSequence == 0 {
		t.Fatalf("local claim not acknowledged: %+v", res.Published)
	}
	return res
}

func entity(t *testing.T, c *coord.Coordinator, kind protocol.Kind, id string) *store.Entity {
	t.Helper()
	list, err := c.Entities(context.Background(), store.EntityQuery{Kind: kind, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range list {
		if e.ID == id {
			return e
		}
	}
	t.Fatalf("no %s %s", kind, id)
	return nil
}

func TestClaimGrantedAndDenied(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t)
	ada := w.coord(t, "ada", "rep_a", "ses_a")
	bo := w.coord(t, "bo", "rep_b", "ses_b")

	a1 := mustClaim(t, ada, []string{"src/game/**"}, true, 0, "")
	if a1.Status != "granted" || a1.Likely != "" || len(a1.Conflicts) != 0 {
		t.Fatalf("first claim: %+v", a1)
	}
	if want := w.clk.Now().Truncate(time.Millisecond).Add(coord.DefaultClaimTTL); !a1.Claim.ExpiresAt.Equal(want) {
		t.Fatalf("expires at %v, want %v (default TTL on the fake clock)", a1.Claim.ExpiresAt, want)
	}

	b1 := mustClaim(t, bo, []string{"./src/game/boss.gd"}, false, 0, "")
	if b1.Status != "denied" || len(b1.Conflicts) != 1 {
		t.Fatalf("overlapping claim of another actor: %+v", b1)
	}
	if !slices.Equal(b1.Claim.Patterns, []string{"src/game/boss.gd"}) {
		t.Fatalf("patterns not normalized: %v", b1.Claim.Patterns)
	}
	got := b1.Conflicts[0]
	if got.ClaimID != a1.Claim.ID || got.Actor != "ada" || !got.Exclusive || !slices.Equal(got.Patterns, []string{"src/game/**"}) || !got.ExpiresAt.Equal(a1.Claim.ExpiresAt) {
		t.Fatalf("conflict %+v does not describe %+v", got, a1.Claim)
	}

	b2 := mustClaim(t, bo, []string{"assets/"}, false, 100*time.Hour, "")
	if b2.Status != "granted" || !slices.Equal(b2.Claim.Patterns, []string{"assets/**"}) {
		t.Fatalf("disjoint claim: %+v", b2)
	}
	if d := b2.Claim.ExpiresAt.Sub(b2.Claim.CreatedAt); d != coord.MaxClaimTTL {
		t.Fatalf("ttl %v, want capped at %v", d, coord.MaxClaimTTL)
	}
	// The same actor may overlap itself.
	a2 := mustClaim(t, ada, []string{"src/game/boss.gd"}, true, 0, "")
	if a2.Status != "granted" {
		t.Fatalf("own overlap: %+v", a2)
	}
	if _, err := ada.Claim(ctx, []string{"a//b"}, false, "", 0, ""); err == nil {
		t.Fatal("an unclean pattern was accepted")
	} else {
		wantInputError(t, err, "unclean pattern")
	}
	if _, err := ada.Claim(ctx, nil, false, "", 0, ""); err == nil {
		t.Fatal("a claim without patterns was accepted")
	} else {
		wantInputError(t, err, "no patterns")
	}

	// Conflict checks see the other actor's active claims and intents only.
	cf, err := bo.CheckConflicts(ctx, []string{"src/game/boss.gd"})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range cf.Claims {
		ids = append(ids, c.ClaimID)
	}
	sort.Strings(ids)
	wantIDs := []string{a1.Claim.ID, a2.Claim.ID}
	sort.Strings(wantIDs)
	if !slices.Equal(ids, wantIDs) || len(cf.Intents) != 0 {
		t.Fatalf("bo's conflicts: claims %v intents %d, want %v", ids, len(cf.Intents), wantIDs)
	}
	if _, err := ada.PublishIntent(ctx, "tune the boss", []string{"src/game/boss.gd"}, "", 0); err != nil {
		t.Fatal(err)
	}
	if cf, err = bo.CheckConflicts(ctx, []string{"src/game/*.gd"}); err != nil || len(cf.Intents) != 1 || cf.Intents[0].Actor != "ada" {
		t.Fatalf("bo's conflicts after ada's intent: %+v %v", cf, err)
	}
	if cf, err = ada.CheckConflicts(ctx, []string{"src/**"}); err != nil || len(cf.Claims) != 0 || len(cf.Intents) != 0 {
		t.Fatalf("ada sees her own claims and intents or bo's denied one: %+v %v", cf, err)
	}
	if cf, err = ada.CheckConflicts(ctx, []string{"assets/x.png"}); err != nil || len(cf.Claims) != 1 || cf.Claims[0].ClaimID != b2.Claim.ID {
		t.Fatalf("ada's conflicts on assets: %+v %v", cf, err)
	}

	st, err := bo.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if bo.Mode() != "local" || len(st.MyClaims) != 1 || st.MyClaims[0].ID != b2.Claim.ID || st.OthersClaims != 2 || st.Head != st.Projected || st.Head == 0 {
		t.Fatalf("bo's status: %+v", st)
	}
	if len(st.Presence) != 2 {
		t.Fatalf("presence: %d sessions, want 2", len(st.Presence))
	}

	// Released: bo may claim it now.
	if done, err := ada.Release(ctx, nil, true, "done"); err != nil || len(done.Released) != 2 {
		t.Fatalf("release all: %v %v", done, err)
	}
	if b3 := mustClaim(t, bo, []string{"src/game/boss.gd"}, true, 0, ""); b3.Status != "granted" {
		t.Fatalf("after the release: %+v", b3)
	}

	// Expiry on the fake clock: 31 minutes on, ada no longer sees bo's
	// default-TTL claim as a conflict.
	w.clk.Advance(coord.DefaultClaimTTL + time.Minute)
	if cf, err = ada.CheckConflicts(ctx, []string{"src/game/boss.gd"}); err != nil || len(cf.Claims) != 0 {
		t.Fatalf("expired claim still reported: %+v %v", cf, err)
	}
	if st, err = bo.Status(ctx); err != nil || len(st.MyClaims) != 1 || st.MyClaims[0].ID != b2.Claim.ID {
		t.Fatalf("bo's live claims after 31 minutes: %+v %v", st, err)
	}
}

func entitiesOf(t *testing.T, c *coord.Coordinator, actor string) []*store.Entity {
	t.Helper()
	list, err := c.Entities(context.Background(), store.EntityQuery{Kind: protocol.KindClaim, Actor: actor, Status: []string{store.ClaimActive}})
	if err != nil {
		t.Fatal(err)
	}
	return list
}

// TestConcurrentClaims: two processes racing for the same exclusive path
// agree on one winner, the actor whose claim the log ordered first.
func TestConcurrentClaims(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t)
	ada := w.coord(t, "ada", "rep_a", "ses_a")
	bo := w.coord(t, "bo", "rep_b", "ses_b")
	const each = 10
	var mu sync.Mutex
	var results []*coord.ClaimResult
	var wg sync.WaitGroup
	for _, c := range []*coord.Coordinator{ada, bo} {
		for range each {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := c.Claim(ctx, []string{"src/game/boss.gd"}, true, "race", 0, "")
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				results = append(results, res)
				mu.Unlock()
			}()
		}
	}
	wg.Wait()
	if len(results) != 2*each {
		t.Fatalf("%d results", len(results))
	}
	sort.Slice(results, func(i, j int) bool { return results[i].ServerSequence < results[j].ServerSequence })
	winner := results[0].Claim.ActorID
	for _, r := range results {
		want := "denied"
		if r.Claim.ActorID == winner {
			want = "granted"
		}
		if r.Status != want {
			t.Errorf("seq %d of %s: %s, want %s (first in the log: %s)", r.ServerSequence, r.Claim.ActorID, r.Status, want, winner)
		}
	}
	for i, r := range results {
		if r.ServerSequence != results[0].ServerSequence+int64(i) {
			t.Fatalf("server sequences not contiguous: %d at %d", r.ServerSequence, i)
		}
	}
}

func TestRenew(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t)
	ada := w.coord(t, "ada", "rep_a", "ses_a")
	bo := w.coord(t, "bo", "rep_b", "ses_b")

	old := mustClaim(t, ada, []string{"src/**"}, true, 10*time.Minute, "")
	w.clk.Advance(5 * time.Minute)
	res, err := ada.Claim(ctx, nil, true, "", 30*time.Minute, old.Claim.ID)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != "granted" || res.Renewed != old.Claim.ID || !slices.Equal(res.Claim.Patterns, []string{"src/**"}) || res.Claim.Reason != "editing" {
		t.Fatalf("renewal: %+v %+v", res, res.Claim)
	}
	if want := w.clk.Now().Truncate(time.Millisecond).Add(30 * time.Minute); !res.Claim.ExpiresAt.Equal(want) {
		t.Fatalf("renewed claim expires at %v, want %v", res.Claim.ExpiresAt, want)
	}
	if e := entity(t, ada, protocol.KindClaim, old.Claim.ID); e.Status != store.ClaimReleased {
		t.Fatalf("renewed claim is %s, want released", e.Status)
	}
	// Coverage is kept: bo is denied by the new claim.
	b := mustClaim(t, bo, []string{"src/x.go"}, false, 0, "")
	if b.Status != "denied" || len(b.Conflicts) != 1 || b.Conflicts[0].ClaimID != res.Claim.ID {
		t.Fatalf("bo after the renewal: %+v", b)
	}
	if mine := entitiesOf(t, ada, "ada"); len(mine) != 1 || mine[0].ID != res.Claim.ID {
		t.Fatalf("ada holds %d active claims, want only the renewed one", len(mine))
	}

	// What cannot be renewed.
	_, err = bo.Claim(ctx, nil, true, "", 0, res.Claim.ID)
	wantInputError(t, err, "renewing another actor's claim")
	_, err = ada.Claim(ctx, nil, true, "", 0, old.Claim.ID)
	wantInputError(t, err, "renewing a released claim")
	_, err = ada.Claim(ctx, nil, true, "", 0, "clm_nosuchclaim")
	wantInputError(t, err, "renewing an unknown claim")
	w.clk.Advance(31 * time.Minute)
	_, err = ada.Claim(ctx, nil, true, "", 0, res.Claim.ID)
	wantInputError(t, err, "renewing an expired claim")

	// A renewal that is denied keeps the old claim.
	sh := mustClaim(t, ada, []string{"docs/**"}, false, 0, "")
	mustClaim(t, bo, []string{"docs/a.md"}, false, 0, "")
	r2, err := ada.Claim(ctx, nil, true, "", 0, sh.Claim.ID)
	if err != nil || r2.Status != "denied" {
		t.Fatalf("exclusive renewal over bo's shared claim: %+v %v", r2, err)
	}
	if e := entity(t, ada, protocol.KindClaim, sh.Claim.ID); e.Status != store.ClaimActive {
		t.Fatalf("a denied renewal released the old claim: %s", e.Status)
	}
}

func TestReleaseAll(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t)
	ada := w.coord(t, "ada", "rep_a", "ses_a")
	bo := w.coord(t, "bo", "rep_b", "ses_b")

	var mine []string
	for _, p := range []string{"a/**", "b/**", "c/x.go"} {
		mine = append(mine, mustClaim(t, ada, []string{p}, true, 0, "").Claim.ID)
	}
	bc := mustClaim(t, bo, []string{"d/**"}, true, 0, "")
	denied := mustClaim(t, bo, []string{"a/x"}, true, 0, "")
	if denied.Status != "denied" {
		t.Fatalf("%+v", denied)
	}

	_, err := ada.Release(ctx, []string{bc.Claim.ID}, false, "")
	wantInputError(t, err, "releasing another actor's claim")
	// A denied claim holds nothing: releasing it answers so, and writes nothing.
	head, _ := bo.Head(ctx)
	res, err := bo.Release(ctx, []string{denied.Claim.ID}, false, "")
	if err != nil || len(res.Released) != 0 || len(res.Unchanged) != 1 || res.Unchanged[0].Status != store.ClaimDenied ||
		len(res.Unchanged[0].Conflicts) != 1 || res.Unchanged[0].Conflicts[0].Actor != "ada" {
		t.Fatalf("releasing a denied claim: %+v %v", res, err)
	}
	if after, _ := bo.Head(ctx); after != head {
		t.Fatal("releasing a denied claim wrote to the log")
	}
	_, err = ada.Release(ctx, []string{"clm_nosuchclaim"}, false, "")
	wantInputError(t, err, "releasing an unknown claim")
	_, err = ada.Release(ctx, nil, false, "")
	wantInputError(t, err, "releasing nothing")

	all, err := ada.Release(ctx, nil, true, "")
	if err != nil {
		t.Fatal(err)
	}
	done, pubs := all.Released, all.Writes
	sort.Strings(done)
	sort.Strings(mine)
	if !slices.Equal(done, mine) || len(pubs) != 3 {
		t.Fatalf("released %v, want %v", done, mine)
	}
	for _, id := range mine {
		e := entity(t, ada, protocol.KindClaim, id)
		if e.Status != store.ClaimReleased {
			t.Fatalf("%s is %s", id, e.Status)
		}
	}
	if p := pubs[0].Envelope.Claim(); p == nil || p.ReleasedAt == nil || p.ReleaseReason != "released" || pubs[0].Envelope.Type != protocol.EventClaimReleased {
		t.Fatalf("release envelope: %+v", pubs[0].Envelope)
	}
	if e := entity(t, bo, protocol.KindClaim, bc.Claim.ID); e.Status != store.ClaimActive {
		t.Fatalf("bo's claim is %s after ada released all of hers", e.Status)
	}
	// Asked again, release answers what already is, and writes nothing.
	head, _ = ada.Head(ctx)
	if res, err := ada.Release(ctx, nil, true, ""); err != nil || len(res.Released)+len(res.Unchanged) != 0 {
		t.Fatalf("releasing all when none is held: %+v %v", res, err)
	}
	if res, err := ada.Release(ctx, []string{mine[0]}, false, ""); err != nil || len(res.Released) != 0 || len(res.Unchanged) != 1 || res.Unchanged[0].Status != store.ClaimReleased || res.Unchanged[0].At.IsZero() {
		t.Fatalf("releasing twice: %+v %v", res, err)
	}
	if after, _ := ada.Head(ctx); after != head {
		t.Fatal("releasing again wrote to the log")
	}
	// bo can now take what ada held.
	if r := mustClaim(t, bo, []string{"a/x"}, true, 0, ""); r.Status != "granted" {
		t.Fatalf("%+v", r)
	}
}

func TestHandoffAccept(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t)
	ada := w.coord(t, "ada", "rep_a", "ses_a")
	bo := w.coord(t, "bo", "rep_b", "ses_b")

	x := mustClaim(t, ada, []string{"src/**"}, true, 0, "")
	y := mustClaim(t, ada, []string{"docs/**"}, false, 0, "")
	z := mustClaim(t, ada, []string{"tmp/**"}, false, 0, "")
	if _, err := ada.Release(ctx, []string{z.Claim.ID}, false, ""); err != nil {
		t.Fatal(err)
	}
	bc := mustClaim(t, bo, []string{"lib/**"}, false, 0, "")

	_, _, err := ada.RequestHandoff(ctx, "ada", "x", "", "", nil, "", "")
	wantInputError(t, err, "handoff to oneself")
	_, _, err = ada.RequestHandoff(ctx, "bo", " ", "", "", nil, "", "")
	wantInputError(t, err, "handoff without summary")
	_, _, err = ada.RequestHandoff(ctx, "bo", "x", "", "", []string{bc.Claim.ID}, "", "")
	wantInputError(t, err, "handing off another actor's claim")
	_, _, err = ada.RequestHandoff(ctx, "bo", "x", "", "", []string{z.Claim.ID}, "", "")
	wantInputError(t, err, "handing off a released claim")

	pub, h, err := ada.RequestHandoff(ctx, "bo", "boss fight half done", "see notes", "", nil, "feature/boss", "")
	if err != nil {
		t.Fatal(err)
	}
	got := slices.Clone(h.ClaimIDs)
	sort.Strings(got)
	want := []string{x.Claim.ID, y.Claim.ID}
	sort.Strings(want)
	if !slices.Equal(got, want) || h.Status != protocol.HandoffRequested || !pub.Acknowledged {
		t.Fatalf("handoff claims %v, want every active claim of ada's %v", got, want)
	}
	st, err := bo.Status(ctx)
	if err != nil || len(st.HandoffsToMe) != 1 || st.HandoffsToMe[0].ID != h.ID {
		t.Fatalf("bo's handoffs: %+v %v", st, err)
	}
	if st, err = ada.Status(ctx); err != nil || len(st.HandoffsToMe) != 0 {
		t.Fatalf("ada's handoffs to her: %+v %v", st, err)
	}

	_, _, err = ada.RespondHandoff(ctx, h.ID, protocol.HandoffAccepted, "")
	wantInputError(t, err, "accepting one's own handoff")
	_, _, err = bo.RespondHandoff(ctx, h.ID, protocol.HandoffRequested, "")
	wantInputError(t, err, "responding requested")
	_, _, err = bo.RespondHandoff(ctx, "hnd_nosuchhandoff", protocol.HandoffAccepted, "")
	wantInputError(t, err, "responding to an unknown handoff")

	_, resp, err := bo.RespondHandoff(ctx, h.ID, protocol.HandoffAccepted, "on it")
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status != protocol.HandoffAccepted || resp.ResponderActorID != "bo" || resp.RespondedAt == nil {
		t.Fatalf("response: %+v", resp)
	}
	if e := entity(t, bo, protocol.KindHandoff, h.ID); e.Status != "accepted" {
		t.Fatalf("handoff is %s", e.Status)
	}
	for _, id := range want {
		if e := entity(t, bo, protocol.KindClaim, id); e.Actor != "bo" || e.Status != store.ClaimActive {
			t.Fatalf("claim %s: held by %s, %s; want bo's and active", id, e.Actor, e.Status)
		}
	}
	_, _, err = bo.RespondHandoff(ctx, h.ID, protocol.HandoffDeclined, "")
	wantInputError(t, err, "responding twice")

	// The moved claims block ada now, and not bo.
	if r := mustClaim(t, ada, []string{"src/a.go"}, false, 0, ""); r.Status != "denied" || r.Conflicts[0].ClaimID != x.Claim.ID || r.Conflicts[0].Actor != "bo" {
		t.Fatalf("ada after handing off: %+v", r)
	}
	if r := mustClaim(t, bo, []string{"src/a.go"}, true, 0, ""); r.Status != "granted" {
		t.Fatalf("bo after accepting: %+v", r)
	}
	if st, err = bo.Status(ctx); err != nil || len(st.MyClaims) != 4 || len(st.HandoffsToMe) != 0 {
		t.Fatalf("bo's status: %d claims, %d handoffs, %v", len(st.MyClaims), len(st.HandoffsToMe), err)
	}
	_, err = ada.Release(ctx, []string{x.Claim.ID}, false, "")
	wantInputError(t, err, "ada releasing a claim she handed off")
	if _, err := bo.Release(ctx, []string{x.Claim.ID}, false, ""); err != nil {
		t.Fatalf("bo releasing a claim he accepted: %v", err)
	}
}

func TestHandoffWithdrawAndDecline(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t)
	ada := w.coord(t, "ada", "rep_a", "ses_a")
	bo := w.coord(t, "bo", "rep_b", "ses_b")
	cy := w.coord(t, "cy", "rep_c", "ses_c")

	d := mustClaim(t, ada, []string{"net/**"}, true, 0, "")
	_, h, err := ada.RequestHandoff(ctx, "bo", "take the netcode", "", "", []string{d.Claim.ID}, "", "")
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = cy.RespondHandoff(ctx, h.ID, protocol.HandoffDeclined, "")
	wantInputError(t, err, "declining a handoff addressed to someone else")
	_, _, err = cy.RespondHandoff(ctx, h.ID, protocol.HandoffAccepted, "")
	wantInputError(t, err, "accepting a handoff addressed to someone else")
	_, _, err = cy.RespondHandoff(ctx, h.ID, protocol.HandoffWithdrawn, "")
	wantInputError(t, err, "withdrawing someone else's handoff")
	_, _, err = bo.RespondHandoff(ctx, h.ID, protocol.HandoffWithdrawn, "")
	wantInputError(t, err, "the addressee withdrawing")

	if _, r, err := ada.RespondHandoff(ctx, h.ID, protocol.HandoffWithdrawn, "changed my mind"); err != nil || r.Status != protocol.HandoffWithdrawn {
		t.Fatalf("withdraw: %+v %v", r, err)
	}
	if e := entity(t, ada, protocol.KindHandoff, h.ID); e.Status != "withdrawn" {
		t.Fatalf("handoff is %s", e.Status)
	}
	if e := entity(t, ada, protocol.KindClaim, d.Claim.ID); e.Actor != "ada" {
		t.Fatalf("withdrawn handoff moved the claim to %s", e.Actor)
	}
	_, _, err = bo.RespondHandoff(ctx, h.ID, protocol.HandoffAccepted, "")
	wantInputError(t, err, "accepting a withdrawn handoff")

	// Declined by the addressee: nothing moves.
	_, h2, err := ada.RequestHandoff(ctx, "bo", "again", "", "", []string{d.Claim.ID}, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := bo.RespondHandoff(ctx, h2.ID, protocol.HandoffDeclined, "busy"); err != nil {
		t.Fatal(err)
	}
	if e := entity(t, ada, protocol.KindHandoff, h2.ID); e.Status != "declined" {
		t.Fatalf("handoff is %s", e.Status)
	}
	if e := entity(t, ada, protocol.KindClaim, d.Claim.ID); e.Actor != "ada" {
		t.Fatalf("declined handoff moved the claim to %s", e.Actor)
	}

	// Addressed to anyone: the first to accept gets the claims.
	_, h3, err := ada.RequestHandoff(ctx, "", "anyone?", "", "", nil, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if st, err := cy.Status(ctx); err != nil || len(st.HandoffsToMe) != 1 {
		t.Fatalf("cy's handoffs: %+v %v", st, err)
	}
	if _, _, err := cy.RespondHandoff(ctx, h3.ID, protocol.HandoffAccepted, ""); err != nil {
		t.Fatal(err)
	}
	if e := entity(t, ada, protocol.KindClaim, d.Claim.ID); e.Actor != "cy" {
		t.Fatalf("claim held by %s after cy accepted", e.Actor)
	}
	_, _, err = bo.RespondHandoff(ctx, h3.ID, protocol.HandoffAccepted, "")
	wantInputError(t, err, "accepting an accepted handoff")
}

func TestUpdateTaskMerges(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t)
	ada := w.coord(t, "ada", "rep_a", "ses_a")
	bo := w.coord(t, "bo", "rep_b", "ses_b")

	_, _, err := ada.CreateTask(ctx, "  ", "", nil, "", "")
	wantInputError(t, err, "task without title")
	_, task, err := ada.CreateTask(ctx, "Boss fight", "phase 2", []string{"gameplay"}, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if task.Status != protocol.TaskOpen || task.CreatedByActor != "ada" {
		t.Fatalf("created: %+v", task)
	}
	w.clk.Advance(time.Minute)
	inProgress, assignee := protocol.TaskInProgress, "bo"
	_, upd, err := bo.UpdateTask(ctx, task.ID, coord.TaskChange{Status: &inProgress, Assignee: &assignee})
	if err != nil {
		t.Fatal(err)
	}
	if upd.Title != "Boss fight" || upd.Description != "phase 2" || !slices.Equal(upd.Labels, []string{"gameplay"}) ||
		upd.Status != inProgress || upd.AssigneeActorID != "bo" || upd.CreatedByActor != "ada" || !upd.CreatedAt.Equal(task.CreatedAt) ||
		!upd.UpdatedAt.Equal(w.clk.Now().Truncate(time.Millisecond)) {
		t.Fatalf("update merged wrongly: %+v", upd)
	}
	e := entity(t, ada, protocol.KindTask, task.ID)
	if e.Status != "in_progress" || e.Target != "bo" || e.Actor != "ada" {
		t.Fatalf("projected task: %+v", e)
	}

	w.clk.Advance(time.Minute)
	title := "Boss fight v2"
	_, upd2, err := ada.UpdateTask(ctx, task.ID, coord.TaskChange{Title: &title, Labels: []string{"gameplay", "boss"}})
	if err != nil {
		t.Fatal(err)
	}
	if upd2.Title != title || upd2.Description != "phase 2" || upd2.Status != inProgress || upd2.AssigneeActorID != "bo" || !slices.Equal(upd2.Labels, []string{"gameplay", "boss"}) {
		t.Fatalf("second update: %+v", upd2)
	}
	if e := entity(t, bo, protocol.KindTask, task.ID); e.Status != "in_progress" || e.Target != "bo" {
		t.Fatalf("projected after second update: %+v", e)
	}

	_, _, err = ada.UpdateTask(ctx, task.ID, coord.TaskChange{Title: &title, Status: &inProgress})
	wantInputError(t, err, "an update that changes nothing")
	_, _, err = ada.UpdateTask(ctx, "tsk_nosuchtask", coord.TaskChange{Title: &title})
	wantInputError(t, err, "updating an unknown task")

	// A clock behind the task's createdAt never makes updatedAt precede it.
	late := w.coordOn(t, w.open(t), "cy", "rep_c", "ses_c", func() time.Time { return w.clk.Now().Add(-time.Hour) })
	done := protocol.TaskDone
	_, upd3, err := late.UpdateTask(ctx, task.ID, coord.TaskChange{Status: &done})
	if err != nil {
		t.Fatal(err)
	}
	if !upd3.UpdatedAt.Equal(upd3.CreatedAt) {
		t.Fatalf("updatedAt %v, createdAt %v", upd3.UpdatedAt, upd3.CreatedAt)
	}
	if st, err := ada.Status(ctx); err != nil || st.OpenTasks != 0 {
		t.Fatalf("open tasks after done: %+v %v", st, err)
	}
}

func TestNews(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t)
	sa := w.open(t)
	ada := w.coordOn(t, sa, "ada", "rep_a", "ses_a", w.clk.Now)
	ada2 := w.coordOn(t, sa, "ada", "rep_a", "ses_a2", w.clk.Now) // another session of the same replica
	bo := w.coord(t, "bo", "rep_b", "ses_b")

	for _, c := range []*coord.Coordinator{ada, ada2, bo} {
		n, err := c.News(ctx)
		if err != nil || len(n.Items) != 0 || n.More != 0 {
			t.Fatalf("news before anything happened: %+v %v", n, err)
		}
	}

	// ada does 12 things, two of them addressed to bo.
	if _, _, err := ada.CreateTask(ctx, "Boss fight", "", nil, "bo", ""); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		mustClaim(t, ada, []string{fmt.Sprintf("n/%d/**", i)}, false, 0, "")
	}
	if _, err := ada.PublishIntent(ctx, "tune the boss", []string{"src/boss.gd"}, "", 0); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ada.RecordValidation(ctx, protocol.Validation{Kind: protocol.ValidationTest, Name: "go test", Status: protocol.ValidationPassed}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ada.ShareChanges(ctx, protocol.ChangeTransaction{Summary: "boss", BaseCommit: "abc123",
		Files: []protocol.FileChange{{Path: "src/boss.gd", Status: protocol.FileModified, Additions: 1}}}); err != nil {
		t.Fatal(err)
	}
	_, h, err := ada.RequestHandoff(ctx, "bo", "take the boss", "", "", nil, "", "")
	if err != nil {
		t.Fatal(err)
	}
	_, t2, err := ada.CreateTask(ctx, "Menus", "", nil, "", "")
	if err != nil {
		t.Fatal(err)
	}
	blocked := protocol.TaskBlocked
	if _, _, err := ada.UpdateTask(ctx, t2.ID, coord.TaskChange{Status: &blocked}); err != nil {
		t.Fatal(err)
	}
	// bo's own doing is not news to bo.
	bc := mustClaim(t, bo, []string{"lib/**"}, false, 0, "")

	n, err := bo.News(ctx)
	if err != nil {
		t.Fatal(err)
	}
	head, _ := bo.Head(ctx)
	if len(n.Items) != 8 || n.More != 4 || n.Through != head {
		t.Fatalf("bo's news: %d items, more %d, through %d (head %d)", len(n.Items), n.More, n.Through, head)
	}
	var forYou []string
	for i, it := range n.Items {
		if it.Actor != "ada" {
			t.Errorf("news item of %s: %+v", it.Actor, it)
		}
		if i > 0 && it.Seq <= n.Items[i-1].Seq {
			t.Errorf("news not in log order: %d after %d", it.Seq, n.Items[i-1].Seq)
		}
		if it.ForYou {
			forYou = append(forYou, it.Event)
		}
		if it.ID == h.ID && (!it.ForYou || it.Event != string(protocol.EventHandoffRequested)) {
			t.Errorf("handoff to bo: %+v", it)
		}
	}
	if !slices.Equal(forYou, []string{string(protocol.EventTaskCreated), string(protocol.EventHandoffRequested)}) {
		t.Errorf("items for bo: %v, want the task assigned to him and the handoff", forYou)
	}
	// The rest of the items are the newest.
	if last := n.Items[len(n.Items)-1]; last.Event != string(protocol.EventTaskUpdated) {
		t.Errorf("newest item: %+v", last)
	}
	if n, err = bo.News(ctx); err != nil || len(n.Items) != 0 || n.More != 0 || n.Through != head {
		t.Fatalf("bo's news did not advance: %+v %v", n, err)
	}

	// ada's other session sees what her first session did; her first does not.
	if n, err = ada2.News(ctx); err != nil || len(n.Items) != 8 || n.More != 5 {
		t.Fatalf("ada2's news: %+v %v", n, err)
	}
	for _, it := range n.Items {
		if it.ForYou {
			t.Errorf("ada2 is told %+v is for her", it)
		}
	}
	if n, err = ada.News(ctx); err != nil || len(n.Items) != 1 || n.Items[0].ID != bc.Claim.ID || n.Items[0].Actor != "bo" {
		t.Fatalf("ada's news: %+v %v", n, err)
	}

	// bo accepts: the answer is news for ada.
	if _, _, err := bo.RespondHandoff(ctx, h.ID, protocol.HandoffAccepted, "ok"); err != nil {
		t.Fatal(err)
	}
	if n, err = ada.News(ctx); err != nil || len(n.Items) != 1 || !n.Items[0].ForYou || n.Items[0].Event != string(protocol.EventHandoffResponded) {
		t.Fatalf("ada's news after the accept: %+v %v", n, err)
	}

	// Another process floods the log: the digest stays capped.
	other := w.open(t)
	r := fixture.NewReplica(ws, "rep_z", "zed")
	var items []store.Item
	for i := range 600 {
		items = append(items, store.Item{Workspace: ws, Envelope: r.Any("z", i)})
	}
	if _, err := other.IngestBatch(ctx, items); err != nil {
		t.Fatal(err)
	}
	head, _ = bo.Head(ctx)
	if n, err = bo.News(ctx); err != nil || len(n.Items) != 8 || n.More != 600-8 || n.Through != head {
		// bo's own accept, first in the scan, is neither shown nor counted.
		t.Fatalf("bo's news after a flood: %d items, more %d, through %d (head %d), %v", len(n.Items), n.More, n.Through, head, err)
	}
	if n, err = bo.News(ctx); err != nil || len(n.Items) != 0 || n.More != 0 {
		t.Fatalf("bo's news after the flood did not advance: %+v %v", n, err)
	}
}

func TestNormalizePatterns(t *testing.T) {
	cases := []struct {
		in   []string
		want []string
	}{
		{[]string{"./src/"}, []string{"src/**"}},
		{[]string{`src\a`}, []string{"src/a"}},
		{[]string{`src\game\boss.gd`}, []string{"src/game/boss.gd"}},
		{[]string{"/abs"}, []string{"abs"}},
		{[]string{"//abs/x"}, []string{"abs/x"}},
		{[]string{"dir/"}, []string{"dir/**"}},
		{[]string{"././src/*.go"}, []string{"src/*.go"}},
		{[]string{"  src/x.go  "}, []string{"src/x.go"}},
		{[]string{"."}, []string{"**"}},
		{[]string{"./"}, []string{"**"}},
		{[]string{"assets/**", "./assets/**", "src"}, []string{"assets/**", "src"}},
		{[]string{"src/{a,b}/*.go"}, []string{"src/{a,b}/*.go"}},
	}
	for _, tc := range cases {
		got, err := coord.NormalizePatterns(tc.in)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("NormalizePatterns(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range [][]string{{"../x"}, {"src/../x"}, {`..\x`}, {"a/.."}, {"src/[x"}, {"ok", "../x"}, nil, {}} {
		got, err := coord.NormalizePatterns(bad)
		var ie *coord.InputError
		if !errors.As(err, &ie) {
			t.Errorf("NormalizePatterns(%q) = %q, %v; want an InputError", bad, got, err)
		}
	}
}

// TestHandoffsToMeNotCrowdedOut: handoffs addressed to others, however
// many and however new, hide neither those addressed to this actor nor
// those addressed to anyone.
func TestHandoffsToMeNotCrowdedOut(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t)
	ada := w.coord(t, "ada", "rep_a", "ses_a")
	bo := w.coord(t, "bo", "rep_b", "ses_b")
	_, toBo, err := ada.RequestHandoff(ctx, "bo", "for bo", "", "", []string{}, "", "")
	if err != nil {
		t.Fatal(err)
	}
	_, toAnyone, err := ada.RequestHandoff(ctx, "", "for anyone", "", "", []string{}, "", "")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 60 {
		if _, _, err := ada.RequestHandoff(ctx, "cy", fmt.Sprintf("for cy %d", i), "", "", []string{}, "", ""); err != nil {
			t.Fatal(err)
		}
	}
	st, err := bo.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, h := range st.HandoffsToMe {
		got = append(got, h.ID)
	}
	if want := []string{toAnyone.ID, toBo.ID}; !slices.Equal(got, want) {
		t.Fatalf("bo's handoffs %v, want %v (newest first)", got, want)
	}
}

// TestReleaseAllSkipsExpired: an expired claim is not released again (no
// log write, no news); naming one answers that it expired, not an error.
func TestReleaseAllSkipsExpired(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t)
	ada := w.coord(t, "ada", "rep_a", "ses_a")
	short := mustClaim(t, ada, []string{"a/**"}, true, time.Minute, "")
	long := mustClaim(t, ada, []string{"b/**"}, true, time.Hour, "")
	w.clk.Advance(2 * time.Minute)
	head, _ := ada.Head(ctx)
	res, err := ada.Release(ctx, []string{short.Claim.ID}, false, "")
	if err != nil || len(res.Released) != 0 || len(res.Unchanged) != 1 || res.Unchanged[0].Status != store.ClaimExpired || !res.Unchanged[0].At.Equal(short.Claim.ExpiresAt) {
		t.Fatalf("releasing an expired claim: %+v %v", res, err)
	}
	if after, _ := ada.Head(ctx); after != head {
		t.Fatal("releasing an expired claim wrote to the log")
	}
	done, err := ada.Release(ctx, nil, true, "")
	if err != nil || !slices.Equal(done.Released, []string{long.Claim.ID}) || len(done.Writes) != 1 || len(done.Unchanged) != 0 {
		t.Fatalf("release all: %+v %v, want only %s", done, err, long.Claim.ID)
	}
	if after, _ := ada.Head(ctx); after != head+1 {
		t.Fatalf("release all logged %d envelopes, want 1", after-head)
	}
	// An id named twice is released once.
	again := mustClaim(t, ada, []string{"c/**"}, true, time.Hour, "")
	if done, err := ada.Release(ctx, []string{again.Claim.ID, again.Claim.ID}, false, ""); err != nil || len(done.Released) != 1 {
		t.Fatalf("releasing an id named twice: %v %v", done, err)
	}
}
