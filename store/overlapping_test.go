package store

import (
	"context"
	"database/sql"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crosscode/crosscode-mcp/protocol"
)

func TestLookupPrefixes(t *testing.T) {
	cases := []struct {
		patterns []string
		want     []string
		all      bool
	}{
		{nil, nil, false},
		{[]string{"src/a/*.go"}, []string{"src/a"}, false},
		// The same prefix once.
		{[]string{"src/a/*.go", "src/a/*.md", "src/a/{x,y}.go"}, []string{"src/a"}, false},
		// A prefix below another is covered by the other's lookup; "a-b"
		// sorts between "a" and "a/b" but is no descendant of "a".
		{[]string{"a/b/*", "a-b/x", "a/*", "a", "a/b/c/d"}, []string{"a", "a-b/x"}, false},
		{[]string{"src/ui/*.gd", "src/game/**", "docs/x.md"}, []string{"docs/x.md", "src/game", "src/ui"}, false},
		// No literal prefix: only the lookup of every pattern.
		{[]string{"src/a/*.go", "**/*.md", "docs"}, nil, true},
		{[]string{"*.go"}, nil, true},
	}
	for _, c := range cases {
		got, all := lookupPrefixes(c.patterns)
		if all != c.all || !slices.Equal(got, c.want) {
			t.Errorf("lookupPrefixes(%q) = %q, %v; want %q, %v", c.patterns, got, all, c.want, c.all)
		}
	}
}

// countingQuery wraps q, recording the statements it runs.
func countingQuery(q queryFunc, ran *[]string) queryFunc {
	return func(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
		*ran = append(*ran, query)
		return q(ctx, query, args...)
	}
}

// lookupNames names the overlap lookups in qs, for messages.
func lookupNames(qs []string) []string {
	out := make([]string, len(qs))
	for i, q := range qs {
		switch q {
		case selOverlap:
			out[i] = "prefix"
		case selOverlapAll:
			out[i] = "all"
		default:
			out[i] = q
		}
	}
	return out
}

// TestOverlappingLooksEachPrefixUpOnce: query patterns that share a
// literal prefix (or lie below another's) cost one lookup, a pattern with
// no literal prefix makes the lookup of every pattern the only one, and a
// candidate's patterns are collected once however many lookups return
// them; the answers stay those of ConflictingClaims.
func TestOverlappingLooksEachPrefixUpOnce(t *testing.T) {
	ctx := context.Background()
	w := newPJWorld(t, pjOpen(t, false))
	w.ingest(
		w.claim("ada", "a1", false, "src/**"),
		w.claim("ada", "a2", false, "src/a/x.go", "docs/*.md"),
		w.claim("ada", "a3", false, "src/b/*.go"),
		w.claim("ada", "a4", false, "**/*.png"),
	)
	ws, err := w.s.workspaceID(ctx, w.s.r, pjWS)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	cases := []struct {
		patterns []string
		lookups  []string
		want     []string
	}{
		{[]string{"src/a/*.go", "src/a/*.md"}, []string{selOverlap}, []string{"a1", "a2"}},
		{[]string{"src/a/*.png", "src/a/*.go"}, []string{selOverlap}, []string{"a1", "a2", "a4"}},
		{[]string{"src/**", "src/a/x.go", "src/b/c.go"}, []string{selOverlap}, []string{"a1", "a2", "a3", "a4"}},
		{[]string{"src/a/x.go", "**/*.md", "src/b"}, []string{selOverlapAll}, []string{"a1", "a2"}},
		{[]string{"src/a/x.go", "src/b/y.go"}, []string{selOverlap, selOverlap}, []string{"a1", "a2", "a3"}},
		{[]string{"lib/x.go"}, []string{selOverlap}, nil},
	}
	for _, c := range cases {
		var ran []string
		q := countingQuery(w.s.readQuery, &ran)
		hits, err := overlapping(ctx, q, ws, protocol.KindClaim, [2]string{ClaimActive, ClaimQueued}, c.patterns, "bo", now)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, h := range hits {
			got = append(got, h.id)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("overlapping(%q) = %v, want %v", c.patterns, got, c.want)
		}
		if !slices.Equal(ran, c.lookups) {
			t.Errorf("overlapping(%q) ran lookups %v, want %v", c.patterns, lookupNames(ran), lookupNames(c.lookups))
		}
		cs, err := w.s.ConflictingClaims(ctx, pjWS, c.patterns, "bo", now)
		if err != nil || !slices.Equal(pjConflictIDs(cs), c.want) {
			t.Errorf("ConflictingClaims(%q) = %v, %v; want %v", c.patterns, pjConflictIDs(cs), err, c.want)
		}
	}

	// Two sibling prefixes both read the patterns under "src" and "":
	// each candidate holds each of its patterns once.
	cands, err := candidates(ctx, w.s.readQuery, ws, protocol.KindClaim, [2]string{ClaimActive, ClaimQueued}, []string{"src/a/x.go", "src/b/q.go"}, "bo", now)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for id, c := range cands {
		got[id] = c.patterns
	}
	want := map[string][]string{"a1": {"src/**"}, "a2": {"src/a/x.go"}, "a3": {"src/b/*.go"}, "a4": {"**/*.png"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("candidates: %v, want %v", got, want)
	}
}

// TestOverlappingIntentsReadsEntitiesAtOnce: OverlappingIntents reads the
// hits' entities with one query after the overlap lookup, however many
// hits there are, and returns them whole, by id.
func TestOverlappingIntentsReadsEntitiesAtOnce(t *testing.T) {
	ctx := context.Background()
	w := newPJWorld(t, pjOpen(t, false))
	w.ingest(
		w.rep("cy").Intent("i3", "src/game/**"),
		w.rep("ada").Intent("i1", "src/**"),
		w.rep("bo").Intent("i2", "src/game/boss.gd", "docs/**"),
		w.rep("dee").Intent("i4", "lib/**"),
	)
	ws, err := w.s.workspaceID(ctx, w.s.r, pjWS)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for _, c := range []struct {
		patterns []string
		want     []string
	}{
		{[]string{"src/game/boss.gd"}, []string{"i1", "i2", "i3"}},
		{[]string{"docs/a.md", "lib/x"}, []string{"i2", "i4"}},
		{[]string{"tools/x"}, nil},
	} {
		var ran []string
		got, err := overlappingIntents(ctx, countingQuery(w.s.readQuery, &ran), ws, c.patterns, "zed", now)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, e := range got {
			ids = append(ids, e.ID)
			if want := w.entity(protocol.KindIntent, e.ID); !reflect.DeepEqual(e, want) {
				t.Errorf("intent %s: %+v, want %+v", e.ID, e, want)
			}
		}
		if !slices.Equal(ids, c.want) {
			t.Errorf("overlappingIntents(%q) = %v, want %v", c.patterns, ids, c.want)
		}
		entityReads := 0
		for _, q := range ran {
			if q == selEntitiesByID {
				entityReads++
			}
		}
		if wantReads := min(len(c.want), 1); entityReads != wantReads {
			t.Errorf("overlappingIntents(%q) read entities %d times, want %d", c.patterns, entityReads, wantReads)
		}
		// The exported call, in its read transaction, agrees.
		list, err := w.s.OverlappingIntents(ctx, pjWS, c.patterns, "zed", now)
		if err != nil || !reflect.DeepEqual(list, got) {
			t.Errorf("OverlappingIntents(%q) = %+v, %v; want %+v", c.patterns, list, err, got)
		}
	}
}

// TestEntitiesByIDUsesThePrimaryKey: the hits' entities are read by
// (ws, kind, id), not by scanning the kind's whole history.
func TestEntitiesByIDUsesThePrimaryKey(t *testing.T) {
	s := openTemp(t)
	plan := queryPlan(t, s, selEntitiesByID, 1, kindCode(protocol.KindIntent), `["a","b"]`)
	if !strings.Contains(plan, "PRIMARY KEY (ws=? AND kind=? AND id=?)") {
		t.Errorf("plan %q, want a primary key lookup per id", plan)
	}
}
