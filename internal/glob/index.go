package glob

import (
	"slices"
	"strings"
)

// Entry is one claim: an actor's patterns under an ID.
type Entry struct {
	ID, Actor string
	Patterns  []string
	Exclusive bool
}

// Index holds claims and finds those overlapping a set of patterns without
// testing every claim (see the package documentation).
//
// An Index is not safe for concurrent use; callers lock. Overlapping, Get
// and Len only read it, so they may share a read lock (sync.RWMutex);
// Add and Remove need exclusive access.
type Index struct {
	root    *node
	entries map[string]*record
}

// record is a stored entry and where its pattern alternatives sit.
type record struct {
	e      Entry
	places []*placement
}

// placement is one pattern alternative of a record, stored at the trie node
// of its literal prefix.
type placement struct {
	rec  *record
	alt  *alt
	node *node
	idx  int // position in node.items
}

// node is a trie node: one literal path segment.
type node struct {
	parent   *node
	name     string
	children map[string]*node
	items    []*placement
}

// NewIndex returns an empty index.
func NewIndex() *Index {
	return &Index{root: &node{}, entries: make(map[string]*record)}
}

// Len returns the number of entries.
func (ix *Index) Len() int { return len(ix.entries) }

// Get returns (a copy of) the entry with the given ID.
func (ix *Index) Get(id string) (Entry, bool) {
	r, ok := ix.entries[id]
	if !ok {
		return Entry{}, false
	}
	return r.entry(), true
}

// entry returns a copy of the stored entry that the caller may modify.
func (r *record) entry() Entry {
	e := r.e
	e.Patterns = slices.Clone(e.Patterns)
	return e
}

// Add stores e, replacing any entry with the same ID. The index keeps its
// own copy of e.Patterns. Invalid patterns are kept in the entry but never
// overlap anything.
func (ix *Index) Add(e Entry) {
	ix.Remove(e.ID)
	e.Patterns = slices.Clone(e.Patterns)
	r := &record{e: e}
	for _, p := range e.Patterns {
		for _, a := range compile(p).alts {
			n := ix.root
			for _, s := range a.lit {
				c := n.children[s]
				if c == nil {
					if n.children == nil {
						n.children = make(map[string]*node)
					}
					c = &node{parent: n, name: s}
					n.children[s] = c
				}
				n = c
			}
			pl := &placement{rec: r, alt: a, node: n, idx: len(n.items)}
			n.items = append(n.items, pl)
			r.places = append(r.places, pl)
		}
	}
	ix.entries[e.ID] = r
}

// Remove deletes the entry with the given ID, if any.
func (ix *Index) Remove(id string) {
	r, ok := ix.entries[id]
	if !ok {
		return
	}
	delete(ix.entries, id)
	for _, pl := range r.places {
		n := pl.node
		last := len(n.items) - 1
		moved := n.items[last]
		n.items[pl.idx] = moved
		moved.idx = pl.idx
		n.items[last] = nil
		n.items = n.items[:last]
		// Drop nodes that no longer hold anything.
		for n != ix.root && len(n.items) == 0 && len(n.children) == 0 {
			delete(n.parent.children, n.name)
			n = n.parent
		}
	}
	r.places = nil
}

// Overlapping returns the entries with at least one pattern overlapping at
// least one of patterns, skipping entries whose Actor is skipActor (when
// non-empty), in a deterministic order (by ID). The returned entries are
// copies.
//
// For every alternative of every query pattern, Overlapping tests the
// entries stored on the trie path to the query's literal prefix and, below
// it, only the subtrees whose path the query can still match.
func (ix *Index) Overlapping(patterns []string, skipActor string) []Entry {
	out, _ := ix.overlapping(patterns, skipActor)
	return out
}

// overlapping is Overlapping, also returning how many claim alternatives
// it tested (for tests).
func (ix *Index) overlapping(patterns []string, skipActor string) ([]Entry, int) {
	q := query{ix: ix, skip: skipActor}
	for _, p := range patterns {
		for _, a := range compile(p).alts {
			q.run(a)
		}
	}
	if len(q.found) == 0 {
		return nil, q.tested
	}
	slices.SortFunc(q.found, func(x, y *record) int { return strings.Compare(x.e.ID, y.e.ID) })
	out := make([]Entry, len(q.found))
	for i, r := range q.found {
		out[i] = r.entry()
	}
	return out, q.tested
}

// query is the state of one Overlapping call.
type query struct {
	ix     *Index
	skip   string
	found  []*record
	seen   map[*record]bool // found, once it is too long to scan
	tested int
	a      *alt
	sets   []stateSet // scratch state sets, two per trie depth below the prefix
}

// run collects the entries overlapping the alternative a.
func (q *query) run(a *alt) {
	q.a = a
	n := q.ix.root
	q.test(n)
	for _, s := range a.lit {
		if n = n.children[s]; n == nil {
			return
		}
		q.test(n)
	}
	if len(n.children) == 0 {
		return
	}
	if a.literal {
		// A concrete path matches nothing strictly below itself.
		return
	}
	// Descend below the literal prefix, pruning subtrees whose path the
	// query cannot match a prefix of.
	cur := q.set(0)
	a.start(cur)
	tmp := q.set(1)
	for _, s := range a.lit {
		if !q.advance(cur, tmp, s) {
			return
		}
	}
	q.descend(n, cur, 1)
}

// set returns the scratch state set for depth d, sized for q.a and
// cleared. The sets are reused across alternatives and queries' depths.
func (q *query) set(d int) stateSet {
	n := (len(q.a.states) + 1 + 63) / 64
	for len(q.sets) <= d {
		q.sets = append(q.sets, nil)
	}
	if cap(q.sets[d]) < n {
		q.sets[d] = make(stateSet, n)
	}
	s := q.sets[d][:n]
	clear(s)
	return s
}

// advance reads "/" + seg from the states in cur, leaving the result in cur
// (tmp is scratch), and reports whether any state remains.
func (q *query) advance(cur, tmp stateSet, seg string) bool {
	if !q.a.step(tmp, cur, '/') {
		return false
	}
	copy(cur, tmp)
	for _, c := range seg {
		if !q.a.step(tmp, cur, c) {
			return false
		}
		copy(cur, tmp)
	}
	return true
}

// descend tests the subtrees of n that the query, in states cur after
// reading n's path, can still reach; d is the scratch depth.
func (q *query) descend(n *node, cur stateSet, d int) {
	if q.a.inGlobstar(cur) {
		// A "**" can read any path, so nothing below can be pruned.
		q.testBelow(n)
		return
	}
	next := q.set(d)
	tmp := q.set(d + 1)
	for name, c := range n.children {
		copy(next, cur)
		if !q.advance(next, tmp, name) {
			continue
		}
		q.test(c)
		if len(c.children) > 0 {
			q.descend(c, next, d+2)
		}
	}
}

// testBelow tests every item strictly below n.
func (q *query) testBelow(n *node) {
	for _, c := range n.children {
		q.test(c)
		q.testBelow(c)
	}
}

// test tests the items stored at n against the query alternative.
func (q *query) test(n *node) {
	for _, pl := range n.items {
		r := pl.rec
		if (q.skip != "" && r.e.Actor == q.skip) || q.isFound(r) {
			continue
		}
		q.tested++
		if altOverlap(q.a, pl.alt) {
			q.found = append(q.found, r)
			if q.seen == nil && len(q.found) > 16 {
				q.seen = make(map[*record]bool, 2*len(q.found))
				for _, f := range q.found {
					q.seen[f] = true
				}
			}
			if q.seen != nil {
				q.seen[r] = true
			}
		}
	}
}

// isFound reports whether r is already a result.
func (q *query) isFound(r *record) bool {
	if q.seen != nil {
		return q.seen[r]
	}
	for _, f := range q.found {
		if f == r {
			return true
		}
	}
	return false
}
