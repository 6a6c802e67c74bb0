package glob

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func ids(es []Entry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.ID
	}
	return out
}

func TestIndexBasics(t *testing.T) {
	ix := NewIndex()
	if ix.Len() != 0 {
		t.Fatalf("Len of empty index = %d", ix.Len())
	}
	if got := ix.Overlapping([]string{"**"}, ""); got != nil {
		t.Fatalf("Overlapping on empty index = %v", got)
	}
	ix.Add(Entry{ID: "r1", Actor: "alice", Patterns: []string{"src/game/*.gd"}, Exclusive: true})
	ix.Add(Entry{ID: "r2", Actor: "bob", Patterns: []string{"assets/boss/**", "docs/boss.md"}})
	ix.Add(Entry{ID: "r3", Actor: "carol", Patterns: []string{"**/*.md"}})
	ix.Add(Entry{ID: "r0", Actor: "bob", Patterns: []string{"src/**"}})
	if ix.Len() != 4 {
		t.Fatalf("Len = %d, want 4", ix.Len())
	}
	e, ok := ix.Get("r1")
	if !ok || e.Actor != "alice" || !e.Exclusive || !slices.Equal(e.Patterns, []string{"src/game/*.gd"}) {
		t.Fatalf("Get(r1) = %+v, %v", e, ok)
	}
	if _, ok := ix.Get("nope"); ok {
		t.Fatalf("Get(nope) found something")
	}

	cases := []struct {
		q    []string
		skip string
		want []string
	}{
		{[]string{"src/game/boss.gd"}, "", []string{"r0", "r1"}},
		{[]string{"src/game/boss.gd"}, "bob", []string{"r1"}},
		{[]string{"src/game/boss.gd"}, "alice", []string{"r0"}},
		{[]string{"src/game/sub/boss.gd"}, "", []string{"r0"}},
		{[]string{"src/game/boss.go"}, "bob", nil},
		{[]string{"docs/boss.md"}, "", []string{"r2", "r3"}},
		{[]string{"docs/other.md"}, "", []string{"r3"}},
		{[]string{"README.md"}, "", []string{"r3"}},
		{[]string{"assets/boss"}, "", []string{"r2"}},
		{[]string{"assets/boss/a/b.png"}, "", []string{"r2"}},
		{[]string{"assets/*/x.png"}, "", []string{"r2"}},
		{[]string{"assets/boss/x.md"}, "", []string{"r2", "r3"}},
		{[]string{"assets"}, "", nil},
		{[]string{"**"}, "", []string{"r0", "r1", "r2", "r3"}},
		{[]string{"**"}, "carol", []string{"r0", "r1", "r2"}},
		{[]string{"src"}, "", []string{"r0"}},
		{[]string{"src/*"}, "", []string{"r0", "r3"}},
		{[]string{"src/*.gd"}, "", []string{"r0"}},
		{[]string{"src/*/*.gd"}, "", []string{"r0", "r1"}},
		{[]string{"*/game/*"}, "", []string{"r0", "r1", "r3"}},
		{[]string{"*/game/*.gd"}, "", []string{"r0", "r1"}},
		{[]string{"{src,docs}/**/*.gd"}, "", []string{"r0", "r1"}},
		{[]string{"x", "docs/boss.md", "src/a"}, "", []string{"r0", "r2", "r3"}},
		{[]string{"["}, "", nil},
		{nil, "", nil},
	}
	for _, c := range cases {
		got := ids(ix.Overlapping(c.q, c.skip))
		if !slices.Equal(got, c.want) && !(len(got) == 0 && len(c.want) == 0) {
			t.Errorf("Overlapping(%q, %q) = %q, want %q", c.q, c.skip, got, c.want)
		}
	}

	// Replace: same ID, new patterns and actor.
	ix.Add(Entry{ID: "r1", Actor: "dave", Patterns: []string{"lib/**"}})
	if ix.Len() != 4 {
		t.Fatalf("Len after replace = %d, want 4", ix.Len())
	}
	if got := ids(ix.Overlapping([]string{"src/game/boss.gd"}, "")); !slices.Equal(got, []string{"r0"}) {
		t.Errorf("after replace, src/game/boss.gd overlaps %q, want [r0]", got)
	}
	if got := ids(ix.Overlapping([]string{"lib/x"}, "")); !slices.Equal(got, []string{"r1"}) {
		t.Errorf("after replace, lib/x overlaps %q, want [r1]", got)
	}
	if e, _ := ix.Get("r1"); e.Actor != "dave" {
		t.Errorf("after replace, Get(r1).Actor = %q", e.Actor)
	}

	// Remove.
	ix.Remove("r0")
	ix.Remove("r0")
	ix.Remove("never")
	if ix.Len() != 3 {
		t.Fatalf("Len after remove = %d, want 3", ix.Len())
	}
	if got := ix.Overlapping([]string{"src/game/boss.gd"}, ""); len(got) != 0 {
		t.Errorf("after remove, src/game/boss.gd overlaps %q", ids(got))
	}
	if _, ok := ix.Get("r0"); ok {
		t.Errorf("Get(r0) after remove found it")
	}
	for _, id := range []string{"r1", "r2", "r3"} {
		ix.Remove(id)
	}
	if ix.Len() != 0 || len(ix.root.children) != 0 || len(ix.root.items) != 0 {
		t.Errorf("emptied index keeps %d entries, %d root children, %d root items",
			ix.Len(), len(ix.root.children), len(ix.root.items))
	}
}

// TestIndexCopies checks that the index owns its entries' pattern slices.
func TestIndexCopies(t *testing.T) {
	ix := NewIndex()
	pats := []string{"src/**"}
	ix.Add(Entry{ID: "a", Patterns: pats})
	pats[0] = "lib/**"
	got := ix.Overlapping([]string{"src/x"}, "")
	if len(got) != 1 || got[0].Patterns[0] != "src/**" {
		t.Fatalf("index changed when the caller modified its slice: %+v", got)
	}
	got[0].Patterns[0] = "zzz"
	if e, _ := ix.Get("a"); e.Patterns[0] != "src/**" {
		t.Fatalf("index changed when the caller modified a result: %+v", e)
	}
}

// TestIndexVisitsFewNodes checks that a concrete-path query tests only the
// claims on its ancestor chain (and the root's), not all of them.
func TestIndexVisitsFewNodes(t *testing.T) {
	ix := NewIndex()
	for i := range 2000 {
		ix.Add(Entry{ID: fmt.Sprintf("e%d", i), Patterns: []string{fmt.Sprintf("src/mod%d/**", i)}})
	}
	ix.Add(Entry{ID: "md", Patterns: []string{"**/*.md"}})
	res, tested := ix.overlapping([]string{"src/mod42/a/b.go"}, "")
	got := ids(res)
	if !slices.Equal(got, []string{"e42"}) {
		t.Fatalf("got %q", got)
	}
	if tested != 2 {
		t.Errorf("a concrete-path query tested %d claims, want 2", tested)
	}
	res, tested = ix.overlapping([]string{"src/mod7/**"}, "")
	got = ids(res)
	if !slices.Equal(got, []string{"e7", "md"}) {
		t.Fatalf("got %q", got)
	}
	if tested != 2 {
		t.Errorf("a glob query below one module tested %d claims, want 2", tested)
	}
}

// randomClaimPattern draws patterns over a small directory vocabulary so
// that overlaps are frequent.
func randomClaimPattern(r *rand.Rand) string {
	segs := []string{"src", "lib", "a", "b", "x.go", "y.md", "*", "**", "*.go", "{a,b}", "[ab]*", "?", "s*", "{src,lib/a}", "a[!b]"}
	n := 1 + r.IntN(4)
	parts := make([]string, n)
	for i := range parts {
		parts[i] = segs[r.IntN(len(segs))]
	}
	p := strings.Join(parts, "/")
	if r.IntN(20) == 0 {
		p += "/"
	}
	return p
}

// TestIndexMatchesBruteForce runs random workloads of adds, replacements
// and removals, and compares every query with a scan of all entries.
func TestIndexMatchesBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	actors := []string{"alice", "bob", "carol", "dave"}
	rounds := 3000
	if testing.Short() {
		rounds = 800
	}
	for w := range 4 {
		ix := NewIndex()
		ref := map[string]Entry{}
		for range rounds {
			switch op := r.IntN(10); {
			case op < 5:
				e := Entry{ID: fmt.Sprintf("c%d", r.IntN(150)), Actor: actors[r.IntN(len(actors))], Exclusive: r.IntN(2) == 0}
				for range 1 + r.IntN(3) {
					e.Patterns = append(e.Patterns, randomClaimPattern(r))
				}
				ix.Add(e)
				ref[e.ID] = e
			case op < 7:
				id := fmt.Sprintf("c%d", r.IntN(150))
				ix.Remove(id)
				delete(ref, id)
			default:
				var q []string
				for range 1 + r.IntN(2) {
					q = append(q, randomClaimPattern(r))
				}
				skip := ""
				if r.IntN(2) == 0 {
					skip = actors[r.IntN(len(actors))]
				}
				var want []string
				for id, e := range ref {
					if (skip == "" || e.Actor != skip) && OverlapAny(e.Patterns, q) {
						want = append(want, id)
					}
				}
				slices.Sort(want)
				got := ix.Overlapping(q, skip)
				if g := ids(got); !slices.Equal(g, want) && !(len(g) == 0 && len(want) == 0) {
					t.Fatalf("workload %d: Overlapping(%q, %q) = %q, want %q", w, q, skip, g, want)
				}
				for _, e := range got {
					if want := ref[e.ID]; e.Actor != want.Actor || e.Exclusive != want.Exclusive || !slices.Equal(e.Patterns, want.Patterns) {
						t.Fatalf("workload %d: returned %+v, stored %+v", w, e, want)
					}
				}
			}
			if ix.Len() != len(ref) {
				t.Fatalf("workload %d: Len = %d, want %d", w, ix.Len(), len(ref))
			}
		}
		for id := range ref {
			ix.Remove(id)
		}
		if len(ix.root.children) != 0 || len(ix.root.items) != 0 {
			t.Fatalf("workload %d: emptied index keeps %d root children, %d root items", w, len(ix.root.children), len(ix.root.items))
		}
	}
}

// TestIndexBracesAndInvalid covers entries whose patterns expand to several
// trie nodes, exceed the brace cap, or are invalid.
func TestIndexBracesAndInvalid(t *testing.T) {
	ix := NewIndex()
	big := "gen/x" + strings.Repeat("{a,b}", 9) // over MaxAlternatives
	ix.Add(Entry{ID: "braces", Patterns: []string{"{src,lib/a}/**"}})
	ix.Add(Entry{ID: "big", Patterns: []string{big}})
	ix.Add(Entry{ID: "bad", Patterns: []string{"[", "docs/{"}})
	ix.Add(Entry{ID: "mixed", Patterns: []string{"[", "docs/*.md"}})
	cases := []struct {
		q    string
		want []string
	}{
		{"src/x", []string{"braces"}},
		{"lib/a/y", []string{"braces"}},
		{"lib/b/y", nil},
		{"gen/xabababababa", []string{"big"}},
		{"gen/other", []string{"big"}}, // conservative fallback gen/**
		{"docs/a.md", []string{"mixed"}},
		{"[", nil},
		{"**", []string{"big", "braces", "mixed"}},
	}
	for _, c := range cases {
		if got := ids(ix.Overlapping([]string{c.q}, "")); !slices.Equal(got, c.want) && !(len(got) == 0 && len(c.want) == 0) {
			t.Errorf("Overlapping(%q) = %q, want %q", c.q, got, c.want)
		}
	}
	if e, ok := ix.Get("bad"); !ok || !slices.Equal(e.Patterns, []string{"[", "docs/{"}) {
		t.Errorf("Get(bad) = %+v, %v: invalid patterns must be kept", e, ok)
	}
	for _, id := range []string{"braces", "big", "bad", "mixed"} {
		ix.Remove(id)
	}
	if len(ix.root.children) != 0 || len(ix.root.items) != 0 {
		t.Errorf("emptied index keeps %d root children, %d root items", len(ix.root.children), len(ix.root.items))
	}
}

// TestIndexConcurrentReads runs queries in parallel; with -race it checks
// that Overlapping, Get and Len only read the index.
func TestIndexConcurrentReads(t *testing.T) {
	ix := benchIndex(2000)
	done := make(chan bool)
	for g := range 4 {
		go func() {
			defer func() { done <- true }()
			for i := range 200 {
				q := fmt.Sprintf("src/mod%d/x.go", (g*200+i)*3)
				if got := ix.Overlapping([]string{q, "**/*.md"}, ""); len(got) == 0 {
					t.Errorf("Overlapping(%q) found nothing", q)
					return
				}
				ix.Get("r00003")
				ix.Len()
			}
		}()
	}
	for range 4 {
		<-done
	}
}
