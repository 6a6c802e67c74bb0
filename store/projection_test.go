package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/crosscode/crosscode-mcp/internal/glob"
	"github.com/crosscode/crosscode-mcp/internal/testing/fixture"
	"github.com/crosscode/crosscode-mcp/protocol"
)

// Tests of the projections: claim arbitration (spec section 3), the
// prefix index behind ConflictingClaims, and that the projections are a
// pure function of the log in server order however it reached the store.
//
// Fixture claims expire 30 minutes after fixture.Epoch while ingestedAt
// is the real clock, so these tests build their claims with expiresAt
// relative to time.Now().

const pjWS = "mygame"

// pjOpen opens a fresh store (with projections unless noProj) in a
// temporary directory and creates the workspace.
func pjOpen(t testing.TB, noProj bool) *Store {
	t.Helper()
	return pjOpenAt(t, filepath.Join(t.TempDir(), "ws.db"), noProj)
}

func pjOpenAt(t testing.TB, path string, noProj bool) *Store {
	t.Helper()
	s, err := Open(context.Background(), path, &Options{Projections: !noProj})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := s.EnsureWorkspace(context.Background(), pjWS, ""); err != nil {
		t.Fatal(err)
	}
	return s
}

// pjIngest ingests envs into s in one batch and fails on any refusal.
func pjIngest(t testing.TB, s *Store, envs ...*protocol.Envelope) []Result {
	t.Helper()
	items := make([]Item, len(envs))
	for i, e := range envs {
		items[i] = Item{Workspace: e.WorkspaceID, Envelope: e}
	}
	res, err := s.IngestBatch(context.Background(), items)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if r.Err != nil || r.Logged == nil {
			t.Fatalf("ingest %s %s: %+v", envs[i].Type, envs[i].ID, r)
		}
	}
	return res
}

// pjWorld builds envelopes for several actors (one replica each) and
// remembers the claims and handoffs it built.
type pjWorld struct {
	t        testing.TB
	s        *Store
	reps     map[string]*fixture.Replica
	claims   map[string]*protocol.Claim
	handoffs map[string]*protocol.Handoff
}

func newPJWorld(t testing.TB, s *Store) *pjWorld {
	return &pjWorld{t: t, s: s, reps: map[string]*fixture.Replica{}, claims: map[string]*protocol.Claim{}, handoffs: map[string]*protocol.Handoff{}}
}

func (w *pjWorld) rep(actor string) *fixture.Replica {
	r, ok := w.reps[actor]
	if !ok {
		r = fixture.NewReplica(pjWS, "rep_"+actor, actor)
		w.reps[actor] = r
	}
	return r
}

func pjNow() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }

// claimTTL builds a claim.created envelope expiring ttl from now.
func (w *pjWorld) claimTTL(actor, id string, exclusive bool, ttl time.Duration, patterns ...string) *protocol.Envelope {
	now := pjNow()
	c := &protocol.Claim{
		ID: id, WorkspaceID: pjWS, ActorID: actor, ReplicaID: w.rep(actor).ID,
		Patterns: append([]string{}, patterns...), Exclusive: exclusive, Reason: "editing " + id,
		CreatedAt: now, ExpiresAt: now.Add(ttl),
	}
	w.claims[id] = c
	return w.rep(actor).Envelope(protocol.EventClaimCreated, c)
}

// claim builds a claim.created envelope expiring in an hour.
func (w *pjWorld) claim(actor, id string, exclusive bool, patterns ...string) *protocol.Envelope {
	return w.claimTTL(actor, id, exclusive, time.Hour, patterns...)
}

// release builds the claim.released envelope of claim id, sent by actor.
func (w *pjWorld) release(actor, id string) *protocol.Envelope {
	c := *w.claims[id]
	c.Patterns = append([]string{}, c.Patterns...)
	at := pjNow()
	c.ActorID, c.ReleasedAt, c.ReleaseReason = actor, &at, "done"
	return w.rep(actor).Envelope(protocol.EventClaimReleased, &c)
}

// handoff builds a handoff.requested envelope.
func (w *pjWorld) handoff(from, id, to string, claimIDs ...string) *protocol.Envelope {
	h := &protocol.Handoff{
		ID: id, WorkspaceID: pjWS, FromActorID: from, FromReplicaID: w.rep(from).ID, ToActorID: to,
		ClaimIDs: append([]string{}, claimIDs...), Summary: "over to you", Status: protocol.HandoffRequested, CreatedAt: pjNow(),
	}
	w.handoffs[id] = h
	return w.rep(from).Envelope(protocol.EventHandoffRequested, h)
}

// respond builds the handoff.responded envelope of responder.
func (w *pjWorld) respond(responder, id string, status protocol.HandoffStatus) *protocol.Envelope {
	h := *w.handoffs[id]
	h.ClaimIDs = append([]string{}, h.ClaimIDs...)
	at := pjNow()
	h.Status, h.RespondedAt, h.ResponderActorID, h.ResponseNote = status, &at, responder, "ok"
	return w.rep(responder).Envelope(protocol.EventHandoffResponded, &h)
}

func (w *pjWorld) ingest(envs ...*protocol.Envelope) []Result {
	w.t.Helper()
	return pjIngest(w.t, w.s, envs...)
}

func (w *pjWorld) entity(kind protocol.Kind, id string) *Entity {
	w.t.Helper()
	e, err := w.s.Entity(context.Background(), pjWS, kind, id)
	if err != nil {
		w.t.Fatalf("entity %s %s: %v", kind, id, err)
	}
	return e
}

func (w *pjWorld) wantGranted(ids ...string) {
	w.t.Helper()
	for _, id := range ids {
		e := w.entity(protocol.KindClaim, id)
		if e.Status != ClaimActive || e.Detail != "" {
			w.t.Errorf("claim %s: status %q detail %s, want granted (active)", id, e.Status, e.Detail)
		}
	}
}

// wantDenied checks that claim id was denied for a conflict with exactly
// the claims by (sorted by id in the Denial), each described as it was
// built, held by holder[by] (default: its creator).
func (w *pjWorld) wantDenied(id string, holder map[string]string, by ...string) {
	w.t.Helper()
	e := w.entity(protocol.KindClaim, id)
	d := e.Denial()
	if e.Status != ClaimDenied || d == nil {
		w.t.Errorf("claim %s: status %q detail %q, want denied", id, e.Status, e.Detail)
		return
	}
	if d.Reason != "conflict" || d.Limit != 0 {
		w.t.Errorf("claim %s: denial %+v, want reason conflict", id, d)
	}
	var got []string
	for _, c := range d.Conflicts {
		got = append(got, c.ClaimID)
	}
	want := slices.Clone(by)
	sort.Strings(want)
	if !slices.Equal(got, want) {
		w.t.Errorf("claim %s denied by %v, want %v", id, got, want)
		return
	}
	for _, c := range d.Conflicts {
		src := w.claims[c.ClaimID]
		actor := src.ActorID
		if h, ok := holder[c.ClaimID]; ok {
			actor = h
		}
		want := Conflict{ClaimID: src.ID, Actor: actor, Patterns: src.Patterns, Exclusive: src.Exclusive, ExpiresAt: src.ExpiresAt}
		c.Seq = 0 // the log's order, checked elsewhere
		if !reflect.DeepEqual(c, want) {
			w.t.Errorf("claim %s: conflict %+v, want %+v", id, c, want)
		}
	}
}

func (w *pjWorld) wantLimit(id string) {
	w.t.Helper()
	e := w.entity(protocol.KindClaim, id)
	d := e.Denial()
	if e.Status != ClaimDenied || d == nil || d.Reason != "limit" || d.Limit != MaxActiveClaims || len(d.Conflicts) != 0 {
		w.t.Errorf("claim %s: status %q detail %s, want denied for the limit of %d", id, e.Status, e.Detail, MaxActiveClaims)
	}
}

// pjIndexIDs lists the claim ids the prefix index holds rows for.
func pjIndexIDs(t testing.TB, s *Store) []string {
	t.Helper()
	rows, err := s.r.Query("SELECT DISTINCT id FROM proj_claim_patterns ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		out = append(out, id)
	}
	return out
}

type pjStep struct {
	actor, id string
	excl      bool
	pats      []string
}

func TestArbitrationTable(t *testing.T) {
	type denial struct {
		id string
		by []string
	}
	cases := []struct {
		name    string
		steps   []pjStep
		granted []string
		denied  []denial
	}{
		{"exclusive vs exclusive overlapping", []pjStep{
			{"ada", "c1", true, []string{"src/**"}},
			{"bo", "c2", true, []string{"src/main.go"}},
		}, []string{"c1"}, []denial{{"c2", []string{"c1"}}}},
		{"shared vs shared overlapping", []pjStep{
			{"ada", "c1", false, []string{"src/**"}},
			{"bo", "c2", false, []string{"src/main.go"}},
		}, []string{"c1", "c2"}, nil},
		{"shared then exclusive", []pjStep{
			{"ada", "c1", false, []string{"src/game/*.gd"}},
			{"bo", "c2", true, []string{"src/**/boss.gd"}},
		}, []string{"c1"}, []denial{{"c2", []string{"c1"}}}},
		{"exclusive then shared", []pjStep{
			{"ada", "c1", true, []string{"src/**/boss.gd"}},
			{"bo", "c2", false, []string{"src/game/*.gd"}},
		}, []string{"c1"}, []denial{{"c2", []string{"c1"}}}},
		{"same actor overlapping", []pjStep{
			{"ada", "c1", true, []string{"src/**"}},
			{"ada", "c2", true, []string{"src/main.go"}},
			{"ada", "c3", false, []string{"**"}},
		}, []string{"c1", "c2", "c3"}, nil},
		{"disjoint extensions", []pjStep{
			{"ada", "c1", true, []string{"src/*.go"}},
			{"bo", "c2", true, []string{"src/*.ts"}},
		}, []string{"c1", "c2"}, nil},
		{"disjoint directories", []pjStep{
			{"ada", "c1", true, []string{"a/**"}},
			{"bo", "c2", true, []string{"b/**"}},
		}, []string{"c1", "c2"}, nil},
		{"sibling prefix is not a descendant", []pjStep{
			{"ada", "c1", true, []string{"assets/**"}},
			{"bo", "c2", true, []string{"assets-old/x.png", "assets0/y.png", "asset/z.png"}},
		}, []string{"c1", "c2"}, nil},
		{"double star then descendant", []pjStep{
			{"ada", "c1", true, []string{"assets/**"}},
			{"bo", "c2", true, []string{"assets/boss/x.png"}},
		}, []string{"c1"}, []denial{{"c2", []string{"c1"}}}},
		{"descendant then double star", []pjStep{
			{"ada", "c1", true, []string{"assets/boss/x.png"}},
			{"bo", "c2", true, []string{"assets/**"}},
		}, []string{"c1"}, []denial{{"c2", []string{"c1"}}}},
		{"double star matches its own directory", []pjStep{
			{"ada", "c1", true, []string{"assets"}},
			{"bo", "c2", true, []string{"assets/**"}},
		}, []string{"c1"}, []denial{{"c2", []string{"c1"}}}},
		{"wildcard directory then deep path", []pjStep{
			{"ada", "c1", false, []string{"assets/*/x.png"}},
			{"bo", "c2", true, []string{"assets/boss/x.png"}},
			{"cy", "c3", true, []string{"assets/boss/deep/x.png"}},
		}, []string{"c1", "c3"}, []denial{{"c2", []string{"c1"}}}},
		{"root-level pattern then path", []pjStep{
			{"ada", "c1", true, []string{"**/*.md"}},
			{"bo", "c2", true, []string{"docs/a.md"}},
			{"bo", "c3", true, []string{"docs/a.go"}},
		}, []string{"c1", "c3"}, []denial{{"c2", []string{"c1"}}}},
		{"path then root-level pattern", []pjStep{
			{"ada", "c1", true, []string{"docs/a.md"}},
			{"bo", "c2", true, []string{"**/*.md"}},
			{"bo", "c3", true, []string{"**/*.go"}},
		}, []string{"c1", "c3"}, []denial{{"c2", []string{"c1"}}}},
		{"braces and classes", []pjStep{
			{"ada", "c1", true, []string{"src/{game,ui}/*.gd"}},
			{"bo", "c2", true, []string{"src/[u]i/menu.gd"}},
			{"cy", "c3", true, []string{"src/net/*.gd"}},
		}, []string{"c1", "c3"}, []denial{{"c2", []string{"c1"}}}},
		{"one of several patterns overlaps", []pjStep{
			{"ada", "c1", true, []string{"a/**", "b/x"}},
			{"bo", "c2", true, []string{"c/**", "b/*"}},
		}, []string{"c1"}, []denial{{"c2", []string{"c1"}}}},
		{"denied by every overlapping claim", []pjStep{
			{"ada", "c1", false, []string{"src/**"}},
			{"bo", "c2", false, []string{"src/game/**"}},
			{"cy", "c3", false, []string{"lib/**"}},
			{"dee", "c4", true, []string{"src/game/boss.gd", "lib/x"}},
		}, []string{"c1", "c2", "c3"}, []denial{{"c4", []string{"c1", "c2", "c3"}}}},
		{"shared claim next to a shared one and a denied exclusive one", []pjStep{
			{"ada", "c1", false, []string{"src/**"}},
			{"bo", "c2", true, []string{"src/game/**"}},
			{"cy", "c3", false, []string{"src/game/boss.gd"}},
		}, []string{"c1", "c3"}, []denial{{"c2", []string{"c1"}}}},
		{"a denied claim never blocks", []pjStep{
			{"ada", "c1", true, []string{"src/a/**"}},
			{"bo", "c2", true, []string{"src/**"}},
			{"cy", "c3", true, []string{"src/b/x.go"}},
		}, []string{"c1", "c3"}, []denial{{"c2", []string{"c1"}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newPJWorld(t, pjOpen(t, false))
			for _, st := range tc.steps {
				w.ingest(w.claim(st.actor, st.id, st.excl, st.pats...))
			}
			w.wantGranted(tc.granted...)
			for _, d := range tc.denied {
				w.wantDenied(d.id, nil, d.by...)
			}
			// The same claims in one batch give the same answers.
			w1 := newPJWorld(t, pjOpen(t, false))
			var envs []*protocol.Envelope
			for _, st := range tc.steps {
				envs = append(envs, w1.claim(st.actor, st.id, st.excl, st.pats...))
			}
			w1.ingest(envs...)
			w1.wantGranted(tc.granted...)
			for _, d := range tc.denied {
				w1.wantDenied(d.id, nil, d.by...)
			}
		})
	}
}

// TestArbitrationInOneBatch runs a table case through a single batch: the
// projection of a batch sees the claims the same batch granted.
func TestArbitrationInOneBatch(t *testing.T) {
	w := newPJWorld(t, pjOpen(t, false))
	w.ingest(
		w.claim("ada", "c1", true, "src/**"),
		w.claim("bo", "c2", true, "src/main.go"),
		w.claim("bo", "c3", false, "docs/**"),
		w.claim("cy", "c4", false, "docs/a.md"),
		w.claim("cy", "c5", true, "src/x/**"),
	)
	w.wantGranted("c1", "c3", "c4")
	w.wantDenied("c2", nil, "c1")
	w.wantDenied("c5", nil, "c1")
}

func TestReleasedClaimNoLongerBlocks(t *testing.T) {
	w := newPJWorld(t, pjOpen(t, false))
	w.ingest(w.claim("ada", "c1", true, "src/**", "assets/boss/**"))
	w.ingest(w.claim("bo", "c2", true, "src/main.go"))
	w.wantDenied("c2", nil, "c1")
	if got := pjIndexIDs(t, w.s); !slices.Equal(got, []string{"c1"}) {
		t.Fatalf("index holds %v, want [c1] (denied claims are not indexed)", got)
	}
	w.ingest(w.release("ada", "c1"))
	if e := w.entity(protocol.KindClaim, "c1"); e.Status != ClaimReleased {
		t.Fatalf("c1 after release: %q", e.Status)
	}
	if got := pjIndexIDs(t, w.s); len(got) != 0 {
		t.Fatalf("index still holds %v after the release", got)
	}
	w.ingest(w.claim("bo", "c3", true, "src/main.go", "assets/boss/x.png"))
	w.wantGranted("c3")
	// The denied c2 stays denied: arbitration is decided once, in order.
	w.wantDenied("c2", nil, "c1")

	// Claim, release and re-claim inside one batch.
	w.ingest(w.claim("ada", "c4", true, "lib/**"), w.release("ada", "c4"), w.claim("bo", "c5", true, "lib/x"))
	w.wantGranted("c5")
}

func TestExpiredClaimNoLongerBlocks(t *testing.T) {
	w := newPJWorld(t, pjOpen(t, false))
	const ttl = 2 * time.Second
	short := []*protocol.Envelope{w.claimTTL("ada", "c1", true, ttl, "src/**")}
	for i := range MaxActiveClaims - 1 {
		short = append(short, w.claimTTL("ada", fmt.Sprintf("s%02d", i), false, ttl, fmt.Sprintf("short/%d/**", i)))
	}
	w.ingest(short...)
	res := w.ingest(w.claim("bo", "c2", true, "src/main.go"), w.claim("ada", "c3", false, "other/**"))
	if !res[1].Receipt.IngestedAt.Before(w.claims["c1"].ExpiresAt) {
		t.Fatalf("the machine is too slow for this test: ingested at %v, c1 expires at %v", res[1].Receipt.IngestedAt, w.claims["c1"].ExpiresAt)
	}
	w.wantDenied("c2", nil, "c1")
	w.wantLimit("c3")

	time.Sleep(time.Until(w.claims["c1"].ExpiresAt) + 50*time.Millisecond)
	res = w.ingest(w.claim("bo", "c4", true, "src/main.go"), w.claim("ada", "c5", false, "other/**"))
	if !res[0].Receipt.IngestedAt.After(w.claims["c1"].ExpiresAt) {
		t.Fatalf("ingested at %v, not after c1's expiry %v", res[0].Receipt.IngestedAt, w.claims["c1"].ExpiresAt)
	}
	w.wantGranted("c4", "c5")
	e := w.entity(protocol.KindClaim, "c1")
	if e.Status != ClaimActive || e.Current(time.Now()) != ClaimExpired {
		t.Fatalf("c1: stored %q, current %q; want stored active, current expired", e.Status, e.Current(time.Now()))
	}

	// A claim that had expired before it was ingested never blocks.
	now := pjNow()
	old := &protocol.Claim{ID: "c6", WorkspaceID: pjWS, ActorID: "cy", ReplicaID: w.rep("cy").ID, Patterns: []string{"late/**"},
		Exclusive: true, Reason: "late", CreatedAt: now.Add(-2 * time.Hour), ExpiresAt: now.Add(-time.Hour)}
	w.claims["c6"] = old
	w.ingest(w.rep("cy").Envelope(protocol.EventClaimCreated, old))
	w.ingest(w.claim("dee", "c7", true, "late/x"))
	w.wantGranted("c7")
}

func TestHandoffMovesClaims(t *testing.T) {
	w := newPJWorld(t, pjOpen(t, false))
	w.ingest(w.claim("ada", "c1", true, "src/**"), w.claim("ada", "c1b", false, "docs/**"))
	w.ingest(w.claim("bo", "c2", true, "src/a.go"))
	w.wantDenied("c2", nil, "c1")

	// Requested but not accepted: nothing moves.
	w.ingest(w.handoff("ada", "h1", "bo", "c1"))
	w.ingest(w.claim("bo", "c3", true, "src/b.go"))
	w.wantDenied("c3", nil, "c1")
	if e := w.entity(protocol.KindHandoff, "h1"); e.Status != "requested" || e.Actor != "ada" || e.Target != "bo" {
		t.Fatalf("h1: %+v", e)
	}

	w.ingest(w.respond("bo", "h1", protocol.HandoffAccepted))
	if e := w.entity(protocol.KindHandoff, "h1"); e.Status != "accepted" {
		t.Fatalf("h1 after accept: %q", e.Status)
	}
	if e := w.entity(protocol.KindClaim, "c1"); e.Actor != "bo" || e.Status != ClaimActive {
		t.Fatalf("c1 after accept: actor %q status %q, want bo active", e.Actor, e.Status)
	}
	if e := w.entity(protocol.KindClaim, "c1b"); e.Actor != "ada" {
		t.Fatalf("c1b (not in the handoff) moved to %q", e.Actor)
	}
	// The new holder is not blocked by it; the original actor is.
	w.ingest(w.claim("bo", "c4", true, "src/c.go"))
	w.wantGranted("c4")
	w.ingest(w.claim("ada", "c5", true, "src/d.go"))
	w.wantDenied("c5", map[string]string{"c1": "bo"}, "c1")
	// ConflictingClaims reports the new holder too.
	got, err := w.s.ConflictingClaims(context.Background(), pjWS, []string{"src/c.go"}, "ada", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].ClaimID != "c1" || got[0].Actor != "bo" || got[1].ClaimID != "c4" {
		t.Fatalf("conflicts for ada: %+v", got)
	}
	// The moved claim counts toward its new holder's limit.
	n, err := w.s.CountEntities(context.Background(), EntityQuery{Workspace: pjWS, Kind: protocol.KindClaim, Actor: "bo", Status: []string{ClaimActive}})
	if err != nil || n != 2 {
		t.Fatalf("bo holds %d active claims (%v), want 2", n, err)
	}

	// Declined and withdrawn handoffs move nothing.
	w.ingest(w.claim("ada", "c6", true, "lib/**"))
	w.ingest(w.handoff("ada", "h2", "bo", "c6"), w.handoff("ada", "h3", "", "c6"))
	w.ingest(w.respond("bo", "h2", protocol.HandoffDeclined), w.respond("ada", "h3", protocol.HandoffWithdrawn))
	for id, want := range map[string]string{"h2": "declined", "h3": "withdrawn"} {
		if e := w.entity(protocol.KindHandoff, id); e.Status != want {
			t.Fatalf("%s: %q, want %q", id, e.Status, want)
		}
	}
	if e := w.entity(protocol.KindClaim, "c6"); e.Actor != "ada" {
		t.Fatalf("c6 moved to %q by a declined or withdrawn handoff", e.Actor)
	}
	w.ingest(w.claim("bo", "c7", true, "lib/x"))
	w.wantDenied("c7", nil, "c6")

	// A released claim is not resurrected by accepting a handoff naming it.
	w.ingest(w.claim("ada", "c8", true, "tools/**"))
	w.ingest(w.handoff("ada", "h4", "", "c8"), w.release("ada", "c8"), w.respond("cy", "h4", protocol.HandoffAccepted))
	if e := w.entity(protocol.KindClaim, "c8"); e.Status != ClaimReleased || e.Actor != "ada" {
		t.Fatalf("c8: actor %q status %q, want released and still ada's", e.Actor, e.Status)
	}
}

func TestActiveClaimLimit(t *testing.T) {
	w := newPJWorld(t, pjOpen(t, false))
	var envs []*protocol.Envelope
	for i := range MaxActiveClaims {
		envs = append(envs, w.claim("ada", fmt.Sprintf("c%02d", i), i%2 == 0, fmt.Sprintf("mod%d/**", i)))
	}
	w.ingest(envs[:10]...)
	w.ingest(envs[10:]...)
	for i := range MaxActiveClaims {
		w.wantGranted(fmt.Sprintf("c%02d", i))
	}
	w.ingest(w.claim("ada", "x33", false, "other/**"))
	w.wantLimit("x33")
	// A denied claim does not count: the next one is denied for the limit too,
	// and the limit is per actor.
	w.ingest(w.claim("ada", "x34", false, "other2/**"), w.claim("bo", "b1", false, "other/**"))
	w.wantLimit("x34")
	w.wantGranted("b1")
	// The limit is checked before conflicts.
	w.ingest(w.claim("ada", "x35", true, "other/**"))
	w.wantLimit("x35")

	w.ingest(w.release("ada", "c05"))
	w.ingest(w.claim("ada", "x36", false, "other3/**"))
	w.wantGranted("x36")
	w.ingest(w.claim("ada", "x37", false, "other4/**"))
	w.wantLimit("x37")

	// Releasing and claiming in one batch.
	w.ingest(w.release("ada", "c06"), w.claim("ada", "x38", false, "other5/**"), w.claim("ada", "x39", false, "other6/**"))
	w.wantGranted("x38")
	w.wantLimit("x39")
}

// TestWorkspacesAreIndependent: claims of one workspace never block or
// show up in another, also when one batch carries both.
func TestWorkspacesAreIndependent(t *testing.T) {
	ctx := context.Background()
	s := pjOpen(t, false)
	if _, err := s.EnsureWorkspace(ctx, "other", ""); err != nil {
		t.Fatal(err)
	}
	w := newPJWorld(t, s)
	a := w.claim("ada", "c1", true, "src/**")
	ob := fixture.NewReplica("other", "rep_ob", "bo")
	now := pjNow()
	b := ob.Envelope(protocol.EventClaimCreated, &protocol.Claim{ID: "c2", WorkspaceID: "other", ActorID: "bo", ReplicaID: "rep_ob",
		Patterns: []string{"src/x.go"}, Exclusive: true, Reason: "x", CreatedAt: now, ExpiresAt: now.Add(time.Hour)})
	pjIngest(t, s, a, b)
	w.wantGranted("c1")
	e, err := s.Entity(ctx, "other", protocol.KindClaim, "c2")
	if err != nil || e.Status != ClaimActive {
		t.Fatalf("c2 in the other workspace: %+v %v", e, err)
	}
	if got, err := s.ConflictingClaims(ctx, "other", []string{"src/**"}, "", time.Now()); err != nil || len(got) != 1 || got[0].ClaimID != "c2" {
		t.Fatalf("conflicts in the other workspace: %+v %v", got, err)
	}
	if _, err := s.Entity(ctx, pjWS, protocol.KindClaim, "c2"); err == nil {
		t.Fatal("c2 is visible in the wrong workspace")
	}
	for _, name := range []string{pjWS, "other"} {
		if p, _ := s.ProjectedThrough(ctx, name); p != 1 {
			t.Errorf("%s projected through %d, want 1", name, p)
		}
	}
}

func TestIntentExpiry(t *testing.T) {
	s := pjOpen(t, false)
	a := fixture.NewReplica(pjWS, "rep_a", "ada")
	res := pjIngest(t, s, a.Intent("i1", "src/**"))
	e, err := s.Entity(context.Background(), pjWS, protocol.KindIntent, "i1")
	if err != nil {
		t.Fatal(err)
	}
	if want := res[0].Receipt.IngestedAt.Add(IntentTTL); !e.ExpiresAt.Equal(want) {
		t.Fatalf("intent without expiresAt expires at %v, want ingestedAt + %v = %v", e.ExpiresAt, IntentTTL, want)
	}
}

// --- ConflictingClaims and OverlappingIntents ---

func TestConflictingClaimsAndIntents(t *testing.T) {
	ctx := context.Background()
	w := newPJWorld(t, pjOpen(t, false))
	w.ingest(
		w.claim("ada", "a1", false, "src/game/**"),
		w.claimTTL("ada", "a2", false, 3*time.Hour, "docs/a.md"),
		w.claim("bo", "b1", false, "src/game/boss.gd"),
		w.claim("bo", "b2", false, "**/*.png"),
		w.claim("cy", "y1", true, "src/game/boss.gd"), // denied
		w.claim("cy", "y2", false, "src/ui/**"),
		w.claim("cy", "y3", false, "src/game/enemy.gd"),
	)
	w.ingest(w.release("cy", "y3"))
	w.wantDenied("y1", nil, "a1", "b1")

	ids := func(cs []Conflict) []string {
		var out []string
		for _, c := range cs {
			out = append(out, c.ClaimID)
		}
		return out
	}
	check := func(pats []string, skip string, at time.Time, want ...string) {
		t.Helper()
		got, err := w.s.ConflictingClaims(ctx, pjWS, pats, skip, at)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(ids(got), want) {
			t.Errorf("ConflictingClaims(%v, skip %q): %v, want %v", pats, skip, ids(got), want)
		}
		for _, c := range got {
			src := w.claims[c.ClaimID]
			if c.Actor != src.ActorID || !slices.Equal(c.Patterns, src.Patterns) || c.Exclusive != src.Exclusive || !c.ExpiresAt.Equal(src.ExpiresAt) {
				t.Errorf("conflict %+v does not describe %+v", c, src)
			}
		}
	}
	now := time.Now()
	check([]string{"src/game/boss.gd"}, "", now, "a1", "b1")
	check([]string{"src/game/boss.gd"}, "ada", now, "b1")
	check([]string{"src/game/enemy.gd"}, "", now, "a1")        // y3 released
	check([]string{"src/**"}, "", now, "a1", "b1", "b2", "y2") // b2: src/x.png
	check([]string{"src/**"}, "cy", now, "a1", "b1", "b2")
	check([]string{"**"}, "zed", now, "a1", "a2", "b1", "b2", "y2")
	check([]string{"assets/boss/x.png"}, "", now, "b2")
	check([]string{"assets/boss/x.jpg"}, "", now)
	check([]string{"docs/*.md", "src/ui/menu.gd"}, "", now, "a2", "y2")
	check([]string{"src"}, "", now) // "src" itself is matched by none of them
	check([]string{"src/game"}, "", now, "a1")
	// Later than the one-hour claims' expiry: only a2 (three hours) is left.
	check([]string{"**"}, "", now.Add(2*time.Hour), "a2")
	check([]string{"**"}, "", now.Add(4*time.Hour))

	// Intents.
	exp := func(d time.Duration) *time.Time { v := pjNow().Add(d); return &v }
	intent := func(actor, id string, ttl time.Duration, paths ...string) *protocol.Envelope {
		return w.rep(actor).Envelope(protocol.EventIntentPublished, &protocol.Intent{
			ID: id, WorkspaceID: pjWS, ActorID: actor, ReplicaID: w.rep(actor).ID, Summary: "work on " + id,
			Paths: paths, CreatedAt: pjNow(), ExpiresAt: exp(ttl),
		})
	}
	w.ingest(
		intent("ada", "i1", time.Hour, "src/game/boss.gd", "assets/boss/**"),
		intent("bo", "i2", 3*time.Hour, "src/**"),
		intent("cy", "i3", time.Hour, "docs/*.md"),
	)
	checkIntents := func(pats []string, skip string, at time.Time, want ...string) {
		t.Helper()
		got, err := w.s.OverlappingIntents(ctx, pjWS, pats, skip, at)
		if err != nil {
			t.Fatal(err)
		}
		var gotIDs []string
		for _, e := range got {
			gotIDs = append(gotIDs, e.ID)
		}
		sort.Strings(gotIDs)
		if !slices.Equal(gotIDs, want) {
			t.Errorf("OverlappingIntents(%v, skip %q): %v, want %v", pats, skip, gotIDs, want)
		}
	}
	checkIntents([]string{"src/game/boss.gd"}, "", now, "i1", "i2")
	checkIntents([]string{"src/game/boss.gd"}, "bo", now, "i1")
	checkIntents([]string{"src/game/boss.gd"}, "ada", now, "i2")
	checkIntents([]string{"assets/boss/a.png"}, "bo", now, "i1")
	checkIntents([]string{"docs/readme.md"}, "", now, "i3")
	checkIntents([]string{"lib/**"}, "", now)
	checkIntents([]string{"**"}, "", now.Add(2*time.Hour), "i2")
}

// pjGen generates a random but valid workload in server order, keeping
// a model of the arbitration rule so that it releases and hands off only
// active claims, and so that tests can compare the projections to the
// model.
type pjGen struct {
	rng    *rand.Rand
	w      *pjWorld
	actors []string
	n      int
	model  map[string]*pjModelClaim
	order  []string // claim ids in server order
	tasks  []string
	hands  []string // requested handoffs
}

type pjModelClaim struct {
	id, actor string
	pats      []string
	excl      bool
	expires   time.Time
	status    string
	deniedBy  []string
	limit     bool
}

func newPJGen(seed uint64, w *pjWorld, actors int) *pjGen {
	g := &pjGen{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), w: w, model: map[string]*pjModelClaim{}}
	for i := range actors {
		g.actors = append(g.actors, fmt.Sprintf("actor%02d", i))
	}
	return g
}

var pjSegs = []string{"a", "b", "c", "*", "**", "?", "[ab]", "{b,c}", "a*", "x.go", "y.md", "*.go", "*.md", "{a/b,c}", "b[!x]c", "**/a"}

// pattern is a random pattern from a small alphabet, so that overlaps
// (and non-overlaps with a shared literal prefix) are frequent.
func (g *pjGen) pattern() string {
	n := 1 + g.rng.IntN(3)
	segs := make([]string, n)
	for i := range segs {
		if i < n-1 && g.rng.IntN(3) > 0 {
			segs[i] = pjSegs[g.rng.IntN(3)] // literal directories are common
		} else {
			segs[i] = pjSegs[g.rng.IntN(len(pjSegs))]
		}
	}
	return strings.Join(segs, "/")
}

func (g *pjGen) patterns() []string {
	n := 1 + g.rng.IntN(2)
	out := make([]string, 0, n)
	for range n {
		out = append(out, g.pattern())
	}
	return out
}

func (g *pjGen) id(prefix string) string {
	g.n++
	return fmt.Sprintf("%s%04d", prefix, g.n)
}

func (g *pjGen) activeOf(actor string) []*pjModelClaim {
	var out []*pjModelClaim
	for _, id := range g.order {
		if c := g.model[id]; c.status == ClaimActive && c.actor == actor {
			out = append(out, c)
		}
	}
	return out
}

// claim generates a claim and decides it in the model (every claim is
// active for at least an hour, so expiry plays no part during a test).
func (g *pjGen) claim() *protocol.Envelope {
	actor := g.actors[g.rng.IntN(len(g.actors))]
	id := g.id("clm")
	excl := g.rng.IntN(5) == 0
	ttl := time.Hour + time.Duration(g.rng.IntN(120))*time.Minute
	env := g.w.claimTTL(actor, id, excl, ttl, g.patterns()...)
	pl := env.Claim()
	m := &pjModelClaim{id: id, actor: actor, pats: pl.Patterns, excl: excl, expires: pl.ExpiresAt, status: ClaimActive}
	if len(g.activeOf(actor)) >= MaxActiveClaims {
		m.status, m.limit = ClaimDenied, true
	} else {
		for _, oid := range g.order {
			o := g.model[oid]
			if o.status == ClaimActive && o.actor != actor && (excl || o.excl) && glob.OverlapAny(m.pats, o.pats) {
				m.deniedBy = append(m.deniedBy, oid)
			}
		}
		if len(m.deniedBy) > 0 {
			m.status = ClaimDenied
			sort.Strings(m.deniedBy)
		}
	}
	g.model[id] = m
	g.order = append(g.order, id)
	return env
}

// next generates one event of any kind (claims: kinds only when claims).
func (g *pjGen) next(claimsOnly bool) *protocol.Envelope {
	k := g.rng.IntN(20)
	if claimsOnly {
		k = g.rng.IntN(10)
	}
	actor := g.actors[g.rng.IntN(len(g.actors))]
	switch {
	case k < 7:
		return g.claim()
	case k < 9: // release one of the actor's active claims
		if mine := g.activeOf(actor); len(mine) > 0 {
			c := mine[g.rng.IntN(len(mine))]
			c.status = ClaimReleased
			return g.w.release(actor, c.id)
		}
		return g.claim()
	case k < 10: // hand off, or respond to a pending handoff
		if len(g.hands) > 0 && g.rng.IntN(2) == 0 {
			i := g.rng.IntN(len(g.hands))
			hid := g.hands[i]
			g.hands = slices.Delete(g.hands, i, i+1)
			h := g.w.handoffs[hid]
			switch g.rng.IntN(3) {
			case 0:
				return g.w.respond(h.FromActorID, hid, protocol.HandoffWithdrawn)
			case 1:
				to := h.ToActorID
				if to == "" {
					to = g.actors[g.rng.IntN(len(g.actors))]
				}
				return g.w.respond(to, hid, protocol.HandoffDeclined)
			default:
				to := h.ToActorID
				for to == "" || to == h.FromActorID {
					to = g.actors[g.rng.IntN(len(g.actors))]
				}
				for _, cid := range h.ClaimIDs {
					if c := g.model[cid]; c.status == ClaimActive {
						c.actor = to
					}
				}
				return g.w.respond(to, hid, protocol.HandoffAccepted)
			}
		}
		var ids []string
		for _, c := range g.activeOf(actor) {
			if g.rng.IntN(2) == 0 {
				ids = append(ids, c.id)
			}
		}
		to := ""
		if g.rng.IntN(3) > 0 {
			to = g.actors[g.rng.IntN(len(g.actors))]
			if to == actor {
				to = ""
			}
		}
		hid := g.id("hnd")
		g.hands = append(g.hands, hid)
		return g.w.handoff(actor, hid, to, ids...)
	case k < 12:
		exp := pjNow().Add(time.Hour + time.Duration(g.rng.IntN(60))*time.Minute)
		id := g.id("int")
		return g.w.rep(actor).Envelope(protocol.EventIntentPublished, &protocol.Intent{
			ID: id, WorkspaceID: pjWS, ActorID: actor, ReplicaID: g.w.rep(actor).ID, Summary: "work on " + id,
			Paths: g.patterns(), CreatedAt: pjNow(), ExpiresAt: &exp,
		})
	case k < 15:
		if len(g.tasks) > 0 && g.rng.IntN(2) == 0 {
			id := g.tasks[g.rng.IntN(len(g.tasks))]
			st := protocol.TaskStatuses[g.rng.IntN(len(protocol.TaskStatuses))]
			now := pjNow()
			return g.w.rep(actor).Envelope(protocol.EventTaskUpdated, &protocol.Task{
				ID: id, WorkspaceID: pjWS, Title: "task " + id, Status: st, AssigneeActorID: actor,
				CreatedByActor: actor, Labels: []string{"x"}, CreatedAt: now, UpdatedAt: now,
			})
		}
		id := g.id("tsk")
		g.tasks = append(g.tasks, id)
		return g.w.rep(actor).Task(id, protocol.TaskOpen, false)
	case k < 17:
		return g.w.rep(actor).Validation(g.id("val"), protocol.ValidationFailed)
	default:
		return g.w.rep(actor).Transaction(g.id("txn"), "src/a.go", "docs/b.md")
	}
}

// pjSnapshot is every projected entity of the workspace, by kind.
func pjSnapshot(t testing.TB, s *Store) map[protocol.Kind][]*Entity {
	t.Helper()
	out := map[protocol.Kind][]*Entity{}
	for _, k := range protocol.Kinds {
		list, err := s.Entities(context.Background(), EntityQuery{Workspace: pjWS, Kind: k, Limit: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		out[k] = list
	}
	return out
}

// pjIndexRows lists the prefix index's rows.
func pjIndexRows(t testing.TB, s *Store) []string {
	t.Helper()
	rows, err := s.r.Query("SELECT prefix, id, pattern FROM proj_claim_patterns ORDER BY prefix, id, pattern")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var p, id, pat string
		if err := rows.Scan(&p, &id, &pat); err != nil {
			t.Fatal(err)
		}
		out = append(out, p+"|"+id+"|"+pat)
	}
	return out
}

// pjCompare fails unless a and b hold the same projections. With
// sameLog unset the two logs were ingested separately, so the ingest
// times (and what derives from them) may differ.
func pjCompare(t testing.TB, name string, a, b *Store, sameLog bool) {
	t.Helper()
	sa, sb := pjSnapshot(t, a), pjSnapshot(t, b)
	total := 0
	for _, k := range protocol.Kinds {
		la, lb := sa[k], sb[k]
		if len(la) != len(lb) {
			t.Errorf("%s: %d %s entities vs %d", name, len(la), k, len(lb))
			continue
		}
		total += len(la)
		for i := range la {
			x, y := *la[i], *lb[i]
			if !sameLog {
				x.IngestedAt, x.UpdatedAt, y.IngestedAt, y.UpdatedAt = time.Time{}, time.Time{}, time.Time{}, time.Time{}
			}
			if !reflect.DeepEqual(x, y) {
				t.Errorf("%s: %s %s differs:\n  %+v\n  %+v\n  body %s\n  body %s", name, k, x.ID, x, y, x.Body, y.Body)
			}
		}
	}
	if total == 0 {
		t.Errorf("%s: no entities at all", name)
	}
	if ia, ib := pjIndexRows(t, a), pjIndexRows(t, b); !slices.Equal(ia, ib) {
		t.Errorf("%s: prefix index differs: %d rows vs %d", name, len(ia), len(ib))
	}
	pa, _ := a.ProjectedThrough(context.Background(), pjWS)
	pb, _ := b.ProjectedThrough(context.Background(), pjWS)
	ha, _ := a.Head(context.Background(), pjWS)
	if pa != pb || pa != ha {
		t.Errorf("%s: projected through %d and %d, head %d", name, pa, pb, ha)
	}
}

// pjLogged reads the whole log of s as envelopes with their serverSequence and ingestedAt.
func pjLogged(t testing.TB, s *Store) []*protocol.Envelope {
	t.Helper()
	var out []*protocol.Envelope
	after := int64(0)
	for {
		p, err := s.Page(context.Background(), PageQuery{Workspace: pjWS, After: after, Limit: MaxPageLimit})
		if err != nil {
			t.Fatal(err)
		}
		for _, op := range p.Ops {
			e, err := op.Envelope()
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, e)
		}
		if !p.HasMore {
			return out
		}
		after = p.NextCursor
	}
}

// pjScript generates n events of every kind.
func pjScript(t testing.TB, seed uint64, n int) ([]*protocol.Envelope, *pjGen) {
	g := newPJGen(seed, newPJWorld(t, nil), 4)
	var envs []*protocol.Envelope
	for range n {
		envs = append(envs, g.next(false))
	}
	return envs, g
}

func TestProjectionsDeterministic(t *testing.T) {
	ctx := context.Background()
	envs, _ := pjScript(t, 7, 400)

	one := pjOpen(t, false) // one batch
	pjIngest(t, one, envs...)

	each := pjOpen(t, false) // one envelope per batch
	for _, e := range envs {
		pjIngest(t, each, e)
	}
	pjCompare(t, "one batch vs one per batch", one, each, false)

	// A replica mirroring the log, a page at a time, with pages read twice.
	logged := pjLogged(t, one)
	if len(logged) != len(envs) {
		t.Fatalf("logged %d of %d", len(logged), len(envs))
	}
	mirror := pjOpen(t, false)
	for i := 0; i < len(logged); i += 37 {
		page := logged[i:min(i+37, len(logged))]
		if err := mirror.Mirror(ctx, pjWS, page, "svc", page[len(page)-1].ServerSequence); err != nil {
			t.Fatal(err)
		}
		if err := mirror.Mirror(ctx, pjWS, page, "svc", page[len(page)-1].ServerSequence); err != nil {
			t.Fatal(err)
		}
	}
	pjCompare(t, "ingested vs mirrored", one, mirror, true)

	// Some claims of every outcome, so the comparison means something.
	counts := map[string]int{}
	for _, e := range pjSnapshot(t, one)[protocol.KindClaim] {
		counts[e.Status]++
		if d := e.Denial(); d != nil {
			counts["denied:"+d.Reason]++
		}
	}
	if counts[ClaimActive] == 0 || counts["denied:conflict"] == 0 || counts[ClaimReleased] == 0 {
		t.Fatalf("workload too tame: %v", counts)
	}
	t.Logf("claims: %v", counts)
}

func TestProjectionsCatchUp(t *testing.T) {
	ctx := context.Background()
	envs, _ := pjScript(t, 11, 300)
	ref := pjOpen(t, false)
	for i := 0; i < len(envs); i += 25 {
		pjIngest(t, ref, envs[i:min(i+25, len(envs))]...)
	}

	// Written without projections, reopened with them, then Project.
	path := filepath.Join(t.TempDir(), "ws.db")
	plain, err := Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := plain.EnsureWorkspace(ctx, pjWS, ""); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(envs); i += 25 {
		pjIngest(t, plain, envs[i:min(i+25, len(envs))]...)
	}
	if n, _ := plain.ProjectedThrough(ctx, pjWS); n != 0 {
		t.Fatalf("a store without projections projected through %d", n)
	}
	if err := plain.Close(); err != nil {
		t.Fatal(err)
	}
	proj := pjOpenAt(t, path, false)
	if err := proj.Project(ctx, pjWS); err != nil {
		t.Fatal(err)
	}
	pjCompare(t, "caught up vs projected all along", ref, proj, false)
	if err := proj.Project(ctx, pjWS); err != nil { // nothing left to do
		t.Fatal(err)
	}
	pjCompare(t, "projected twice", ref, proj, false)

	// Two processes on one file, one projecting and one not, taking turns:
	// the projecting one catches up on the other's operations at its next
	// ingest, in server order.
	path2 := filepath.Join(t.TempDir(), "ws.db")
	withP, withoutP := pjOpenAt(t, path2, false), pjOpenAt(t, path2, true)
	for i, j := 0, 0; i < len(envs); i, j = i+10, j+1 {
		s := withP
		if j%2 == 1 {
			s = withoutP
		}
		pjIngest(t, s, envs[i:min(i+10, len(envs))]...)
	}
	if err := withP.Project(ctx, pjWS); err != nil {
		t.Fatal(err)
	}
	pjCompare(t, "mixed writers vs projected all along", ref, withP, false)
}

func TestResyncRebuildsFromLaterOps(t *testing.T) {
	ctx := context.Background()
	src := pjOpen(t, false)
	w := newPJWorld(t, src)
	w.ingest(
		w.claim("ada", "c1", true, "core/**"), // 1
		w.rep("ada").Task("t1", protocol.TaskOpen, false),
		w.claim("bo", "c2", false, "ui/**"),
		w.rep("bo").Intent("i1", "ui/**"),
		w.handoff("ada", "h1", "bo", "c1"), // 5
		w.claim("cy", "c3", false, "net/**"),
		w.rep("cy").Validation("v1", protocol.ValidationPassed),
		w.rep("cy").Transaction("x1", "net/a.go"),
		w.claim("dee", "c4", false, "tools/**"),
		w.rep("dee").Task("t2", protocol.TaskOpen, false), // 10
		w.claim("bo", "c5", true, "core/x.go"),            // 11: denied by c1 in the full log
		w.rep("ada").Task("t1", protocol.TaskDone, true),  // updates t1 (before N)
		w.release("cy", "c3"),                             // releases c3 (before N)
		w.respond("bo", "h1", protocol.HandoffAccepted),   // responds to h1 (before N)
		w.claim("ada", "c6", false, "ui/x.go"),            // 15
		w.rep("ada").Task("t3", protocol.TaskBlocked, false),
		w.claim("cy", "c7", true, "net/x.go"), // granted in both: c3 is released
	)
	w.wantDenied("c5", nil, "c1")
	logged := pjLogged(t, src)
	const n = 10

	m := pjOpen(t, false)
	if err := m.Mirror(ctx, pjWS, logged[:n], "svc", n); err != nil {
		t.Fatal(err)
	}
	if got := len(pjSnapshot(t, m)[protocol.KindClaim]); got != 4 {
		t.Fatalf("mirrored %d claims, want 4", got)
	}
	if err := m.Resync(ctx, pjWS, "svc", n); err != nil {
		t.Fatal(err)
	}
	for k, list := range pjSnapshot(t, m) {
		if len(list) != 0 {
			t.Errorf("after Resync %d %s entities are left", len(list), k)
		}
	}
	if rows := pjIndexRows(t, m); len(rows) != 0 {
		t.Errorf("after Resync the prefix index holds %v", rows)
	}
	if p, _ := m.ProjectedThrough(ctx, pjWS); p != n {
		t.Errorf("projected through %d after Resync(%d)", p, n)
	}
	if c, _ := m.Cursor(ctx, "svc"); c != n {
		t.Errorf("cursor %d after Resync(%d)", c, n)
	}
	if err := m.Mirror(ctx, pjWS, logged[n:], "svc", logged[len(logged)-1].ServerSequence); err != nil {
		t.Fatal(err)
	}
	// The same as a store that only ever saw the operations after n.
	fresh := pjOpen(t, false)
	if err := fresh.Mirror(ctx, pjWS, logged[n:], "svc", logged[len(logged)-1].ServerSequence); err != nil {
		t.Fatal(err)
	}
	pjCompare(t, "resynced vs fresh", fresh, m, true)
	snap := pjSnapshot(t, m)
	var claimIDs, taskIDs []string
	for _, e := range snap[protocol.KindClaim] {
		claimIDs = append(claimIDs, e.ID+":"+e.Status)
	}
	for _, e := range snap[protocol.KindTask] {
		taskIDs = append(taskIDs, e.ID)
	}
	sort.Strings(claimIDs)
	if want := []string{"c5:active", "c6:active", "c7:active"}; !slices.Equal(claimIDs, want) {
		t.Errorf("claims after resync: %v, want %v", claimIDs, want)
	}
	if !slices.Equal(taskIDs, []string{"t3"}) {
		t.Errorf("tasks after resync: %v, want [t3]", taskIDs)
	}
	if len(snap[protocol.KindHandoff]) != 0 || len(snap[protocol.KindIntent]) != 0 || len(snap[protocol.KindValidation]) != 0 {
		t.Errorf("entities opened before the resync point survived: %+v", snap)
	}
}

// TestArbitrationMatchesModel checks the projections against a brute-force
// model of the arbitration rule on a random workload, then checks
// ConflictingClaims against a brute-force scan of the active claims.
func TestArbitrationMatchesModel(t *testing.T) {
	ctx := context.Background()
	seeds := []uint64{1, 2, 3}
	if testing.Short() {
		seeds = seeds[:1]
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			s := pjOpen(t, false)
			g := newPJGen(seed, newPJWorld(t, s), 8)
			var envs []*protocol.Envelope
			for len(g.order) < 300 {
				envs = append(envs, g.next(true))
			}
			for len(envs) > 0 { // random batch sizes
				k := min(1+g.rng.IntN(40), len(envs))
				pjIngest(t, s, envs[:k]...)
				envs = envs[k:]
			}
			counts := map[string]int{}
			for _, id := range g.order {
				m := g.model[id]
				e, err := s.Entity(ctx, pjWS, protocol.KindClaim, id)
				if err != nil {
					t.Fatal(err)
				}
				counts[m.status]++
				if e.Status != m.status || e.Actor != m.actor {
					t.Errorf("claim %s %v (excl %v): projected %s held by %s, model %s held by %s (denied by %v)",
						id, m.pats, m.excl, e.Status, e.Actor, m.status, m.actor, m.deniedBy)
					continue
				}
				if m.status != ClaimDenied {
					continue
				}
				d := e.Denial()
				var got []string
				for _, c := range d.Conflicts {
					got = append(got, c.ClaimID)
				}
				if m.limit {
					counts["limit"]++
					if d.Reason != "limit" {
						t.Errorf("claim %s: %+v, want limit", id, d)
					}
				} else if d.Reason != "conflict" || !slices.Equal(got, m.deniedBy) {
					t.Errorf("claim %s %v: denied by %v (%s), model %v", id, m.pats, got, d.Reason, m.deniedBy)
				}
			}
			t.Logf("claims: %v", counts)
			if counts[ClaimActive] < 50 || counts[ClaimDenied] < 10 || counts[ClaimReleased] < 10 {
				t.Fatalf("workload too tame: %v", counts)
			}
			// The index holds rows of the active claims only.
			var active []string
			for _, id := range g.order {
				if g.model[id].status == ClaimActive {
					active = append(active, id)
				}
			}
			sort.Strings(active)
			if got := pjIndexIDs(t, s); !slices.Equal(got, active) {
				t.Errorf("index holds %d claims, %d are active", len(got), len(active))
			}

			// ConflictingClaims against a brute-force scan.
			now := time.Now()
			for q := range 400 {
				pats := g.patterns()
				if q%5 == 0 { // concrete paths too
					pats = []string{strings.NewReplacer("*", "z", "?", "q", "[ab]", "a", "{b,c}", "c").Replace(pats[0])}
				}
				skip := ""
				if q%3 > 0 {
					skip = g.actors[g.rng.IntN(len(g.actors))]
				}
				at := now
				if q%4 == 0 {
					at = now.Add(time.Duration(60+g.rng.IntN(120)) * time.Minute)
				}
				got, err := s.ConflictingClaims(ctx, pjWS, pats, skip, at)
				if err != nil {
					t.Fatal(err)
				}
				var want []Conflict
				for _, id := range active {
					m := g.model[id]
					if m.actor != skip && m.expires.After(at) && glob.OverlapAny(pats, m.pats) {
						want = append(want, Conflict{ClaimID: id, Actor: m.actor, Patterns: m.pats, Exclusive: m.excl, ExpiresAt: m.expires})
					}
				}
				for i := range got {
					got[i].Seq = 0 // the log's order, checked elsewhere
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("ConflictingClaims(%q, skip %q, at +%v):\n got %v\nwant %v", pats, skip, at.Sub(now).Round(time.Minute), pjConflictIDs(got), pjConflictIDs(want))
				}
			}
		})
	}
}

func pjConflictIDs(cs []Conflict) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.ClaimID)
	}
	return out
}

// BenchmarkConflictingClaims10k measures a conflict check for a concrete
// path against 10,000 active claims.
func BenchmarkConflictingClaims10k(b *testing.B) {
	ctx := context.Background()
	s := pjOpen(b, false)
	const claims, actors = 10_000, 320 // at most 32 active claims per actor
	now := pjNow()
	var items []Item
	reps := make([]*fixture.Replica, actors)
	for i := range reps {
		reps[i] = fixture.NewReplica(pjWS, fmt.Sprintf("rep%03d", i), fmt.Sprintf("actor%03d@example.com", i))
	}
	for i := range claims {
		r := reps[i%actors]
		var pat string
		excl := false
		switch i % 3 {
		case 0:
			pat = fmt.Sprintf("src/mod%d/**", i%211)
		case 1:
			pat = fmt.Sprintf("assets/lvl%d/*.png", i%97)
		default:
			pat, excl = fmt.Sprintf("pkg/%d/file%d.go", i%53, i), true
		}
		e := r.Envelope(protocol.EventClaimCreated, &protocol.Claim{
			ID: fmt.Sprintf("clm_%05d", i), WorkspaceID: pjWS, ActorID: r.Actor, ReplicaID: r.ID,
			Patterns: []string{pat}, Exclusive: excl, Reason: "bench", CreatedAt: now, ExpiresAt: now.Add(4 * time.Hour),
		})
		items = append(items, Item{Workspace: pjWS, Envelope: e})
	}
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
	n, err := s.CountEntities(ctx, EntityQuery{Workspace: pjWS, Kind: protocol.KindClaim, Status: []string{ClaimActive}})
	if err != nil || n != claims {
		b.Fatalf("%d active claims (%v), want %d", n, err, claims)
	}
	path := []string{"src/mod7/game/boss.go"}
	got, err := s.ConflictingClaims(ctx, pjWS, path, "nobody", time.Now())
	if err != nil || len(got) == 0 {
		b.Fatalf("conflicts %d, %v", len(got), err)
	}
	for b.Loop() {
		if _, err := s.ConflictingClaims(ctx, pjWS, path, "nobody", time.Now()); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(got)), "conflicts/op")
}

// A new intent retires the current ones of its actor on its replica, in
// the same commit (status superseded, its patterns unindexed), and no
// other: the actor's intents on another replica, other actors' intents.
func TestIntentSupersedesOnlyItsReplicas(t *testing.T) {
	ctx := context.Background()
	s := pjOpen(t, false)
	a1 := fixture.NewReplica(pjWS, "rep_a1", "ada@example.com")
	a2 := fixture.NewReplica(pjWS, "rep_a2", "ada@example.com")
	b := fixture.NewReplica(pjWS, "rep_b", "bob@example.com")
	ingest := func(items ...Item) {
		t.Helper()
		res, err := s.IngestBatch(ctx, items)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if r.Err != nil {
				t.Fatal(r.Err)
			}
		}
	}
	// Two of one replica in one batch: the second retires the first.
	ingest(Item{Workspace: pjWS, Envelope: a1.Intent("int_a1_1", "src/game/**")}, Item{Workspace: pjWS, Envelope: a1.Intent("int_a1_2", "src/game/boss.gd")},
		Item{Workspace: pjWS, Envelope: a2.Intent("int_a2_1", "src/game/**")}, Item{Workspace: pjWS, Envelope: b.Intent("int_b_1", "src/game/**")})
	ingest(Item{Workspace: pjWS, Envelope: a1.Intent("int_a1_3", "docs/**")})
	want := map[string]string{"int_a1_1": IntentSuperseded, "int_a1_2": IntentSuperseded, "int_a1_3": "active", "int_a2_1": "active", "int_b_1": "active"}
	for id, st := range want {
		e, err := s.Entity(ctx, pjWS, protocol.KindIntent, id)
		if err != nil {
			t.Fatal(err)
		}
		if e.Status != st {
			t.Errorf("%s: status %q, want %q", id, e.Status, st)
		}
	}
	// What bob sees overlapping src/game/boss.gd: ada's intent of rep_a2
	// only (the retired ones are no longer indexed).
	got, err := s.OverlappingIntents(ctx, pjWS, []string{"src/game/boss.gd"}, "bob@example.com", fixture.Epoch)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].ID != "int_a2_1" {
		t.Errorf("overlapping intents %+v, want int_a2_1 alone", got)
	}
	var n int
	if err := s.r.QueryRow("SELECT count(*) FROM proj_claim_patterns WHERE id IN ('int_a1_1', 'int_a1_2')").Scan(&n); err != nil || n != 0 {
		t.Errorf("%d patterns of retired intents left (%v)", n, err)
	}
}
