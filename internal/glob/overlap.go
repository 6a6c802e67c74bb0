package glob

import (
	"math/bits"
	"strings"
	"unicode/utf8"

	"github.com/bmatcuk/doublestar/v4"
)

// Overlap reports whether some clean path is matched by both patterns a
// and b (see the package documentation for the exact semantics). It is
// symmetric, and Overlap(p, p) is true exactly when p matches some path.
// Invalid patterns match nothing, so they overlap nothing. The answer is
// exact except for the documented conservative approximations (more than
// MaxAlternatives brace alternatives, patterns thousands of characters
// long), which can only turn a false into a true.
//
// Overlap compiles both patterns on every call; to test one list of
// patterns against many, [Compile] it once.
func Overlap(a, b string) bool {
	return compile(a).overlaps(compile(b))
}

// OverlapAny reports whether some pattern of as overlaps some pattern of bs.
// It compiles both lists on every call: it is Compile(as...).OverlapsAny(bs).
func OverlapAny(as, bs []string) bool {
	if len(as) == 0 || len(bs) == 0 {
		return false
	}
	return Compile(as...).OverlapsAny(bs)
}

// Set is a compiled list of patterns: it matches every path one of them
// matches. Compiling a list once and testing it against many others with
// [Set.OverlapsAny] or [Set.Overlaps] gives the same answers as
// [OverlapAny] without compiling the list again for each. A Set is never
// modified once compiled, so it is safe for concurrent use.
type Set struct {
	alts []*alt
}

// Compile compiles patterns into a Set. As everywhere in this package, an
// invalid pattern matches nothing: it adds nothing to the set.
func Compile(patterns ...string) *Set {
	s := &Set{}
	var seen map[string]bool
	for _, p := range patterns {
		for _, a := range compile(p).alts {
			if len(patterns) > 1 {
				// Drop alternatives another pattern already has.
				if seen == nil {
					seen = make(map[string]bool)
				}
				if seen[a.norm] {
					continue
				}
				seen[a.norm] = true
			}
			s.alts = append(s.alts, a)
		}
	}
	return s
}

// Overlaps reports whether some clean path is matched by both s and t.
func (s *Set) Overlaps(t *Set) bool {
	return altsOverlap(s.alts, t.alts)
}

// OverlapsAny reports whether some pattern of patterns overlaps some
// pattern of s: OverlapAny(ps, patterns) for the patterns ps s was compiled
// from. It compiles each of patterns once, and stops at the first overlap.
func (s *Set) OverlapsAny(patterns []string) bool {
	if len(s.alts) == 0 {
		return false
	}
	for _, p := range patterns {
		if altsOverlap(s.alts, compile(p).alts) {
			return true
		}
	}
	return false
}

// nstate is one state of a pattern automaton. State i has an edge labelled
// step to state i+1 (if step.kind != csNone), a self-loop labelled loop
// (if loop.kind != csNone), and an epsilon edge to eps (if eps >= 0, always
// a later state). The last state, len(states), accepts and has no edges.
type nstate struct {
	step, loop charset
	eps        int
}

// alt is one compiled brace alternative. It matches "/" + path for the
// clean paths it matches: every segment is preceded by its separator, and
// a "**" segment is the optional group ("/" any*), which makes "a/**" match
// "a" and "**/b" match "b" without special cases.
type alt struct {
	states []nstate
	lit    []string // leading literal segments, unescaped
	// literal is set when every segment is literal; path is then "/" + the
	// path it matches.
	literal bool
	path    string
	// fixed is the number of leading states that each read one fixed
	// character and have no other edge: every match starts with their
	// characters.
	fixed int
	// suffix is the text every match ends with: the characters of the
	// trailing fixed states.
	suffix string
	norm   string // the normalised pattern text of this alternative
}

// compiled is a pattern: the union of its alternatives. No alternatives
// means it matches nothing.
type compiled struct {
	alts []*alt
}

// compile compiles a pattern. Invalid patterns compile to the empty union.
func compile(p string) *compiled {
	if !doublestar.ValidatePattern(p) {
		return &compiled{}
	}
	if !strings.Contains(p, "{") {
		segs, ok := parseSegments(p)
		if !ok {
			return &compiled{}
		}
		return &compiled{alts: []*alt{buildAlt(p, segs)}}
	}
	var strs []string
	over, ok := expandBraces(p, 0, &strs, MaxAlternatives)
	if !ok {
		return &compiled{}
	}
	if over {
		// Conservative approximation: literal prefix + "/**".
		var segs []segment
		for _, s := range literalSegments(p) {
			toks := make([]token, 0, len(s))
			for _, r := range s {
				toks = append(toks, token{kind: tokChar, set: single(r)})
			}
			segs = append(segs, segment{literal: true, text: s, toks: toks, raw: Escape(s)})
		}
		segs = append(segs, segment{globstar: true, raw: "**"})
		return &compiled{alts: []*alt{buildAlt("", segs)}}
	}
	c := &compiled{alts: make([]*alt, 0, len(strs))}
	var seen map[string]bool
	if len(strs) > 1 {
		seen = make(map[string]bool, len(strs))
	}
	for _, s := range strs {
		segs, ok := parseSegments(s)
		if !ok {
			return &compiled{}
		}
		a := buildAlt(s, segs)
		if seen != nil {
			if seen[a.norm] {
				continue
			}
			seen[a.norm] = true
		}
		c.alts = append(c.alts, a)
	}
	return c
}

// Escape returns the pattern that matches exactly the path s: it escapes
// the characters that are special in a pattern (* ? [ ] { } , and \).
// A path that happens to contain them, such as "src/[id].tsx", is then
// taken literally rather than as a character class or an invalid pattern.
func Escape(s string) string {
	if !strings.ContainsAny(s, metaChars) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for _, r := range s {
		if strings.ContainsRune(metaChars, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// metaChars are the characters Escape escapes.
const metaChars = `*?[]{}\,`

// buildAlt builds the automaton of one normalised alternative whose
// segments were parsed from src.
func buildAlt(src string, segs []segment) *alt {
	a := &alt{literal: len(segs) > 0}
	n, rawLen := 0, len(segs)-1
	for _, s := range segs {
		if s.globstar {
			n += 2
		} else {
			n += 1 + len(s.toks)
		}
		rawLen += len(s.raw)
	}
	a.states = make([]nstate, 0, n)
	for _, s := range segs {
		if a.literal && s.literal {
			if a.lit == nil {
				a.lit = make([]string, 0, len(segs))
			}
			a.lit = append(a.lit, s.text)
		} else {
			a.literal = false
		}
		k := len(a.states)
		if s.globstar {
			a.states = append(a.states,
				nstate{step: csetSlash, eps: k + 2},
				nstate{loop: csetAll, eps: k + 2})
			continue
		}
		a.states = append(a.states, nstate{step: csetSlash, eps: -1})
		for _, t := range s.toks {
			k := len(a.states)
			if t.kind == tokStar {
				a.states = append(a.states, nstate{loop: csetNonSlash, eps: k + 1})
			} else {
				a.states = append(a.states, nstate{step: t.set, eps: -1})
			}
		}
	}
	if rawLen == len(src) {
		// Nothing was dropped or collapsed: the source is normalised.
		a.norm = src
	} else {
		raws := make([]string, len(segs))
		for i, s := range segs {
			raws[i] = s.raw
		}
		a.norm = strings.Join(raws, "/")
	}
	for a.fixed < len(a.states) && a.states[a.fixed].isFixed() {
		a.fixed++
	}
	if a.literal {
		a.path = "/" + strings.Join(a.lit, "/")
	}
	t := len(a.states)
	for t > 0 && a.states[t-1].isFixed() {
		t--
	}
	if t < len(a.states) {
		b := make([]byte, 0, len(a.states)-t)
		for _, st := range a.states[t:] {
			b = utf8.AppendRune(b, st.step.r)
		}
		a.suffix = string(b)
	}
	return a
}

// isFixed reports whether the state reads exactly one fixed character and
// has no other edge.
func (st *nstate) isFixed() bool {
	return st.eps < 0 && st.loop.kind == csNone && st.step.kind == csSingle
}

// overlaps reports whether some alternative of c overlaps some of d.
func (c *compiled) overlaps(d *compiled) bool {
	return altsOverlap(c.alts, d.alts)
}

// altsOverlap reports whether some alternative of xs overlaps some of ys.
func altsOverlap(xs, ys []*alt) bool {
	for _, x := range xs {
		for _, y := range ys {
			if altOverlap(x, y) {
				return true
			}
		}
	}
	return false
}

// altOverlap decides whether two alternatives share a clean path.
func altOverlap(x, y *alt) bool {
	// Cheap rejections: the literal prefixes must agree segment-wise, and
	// one fixed suffix must end the other.
	for i := 0; i < len(x.lit) && i < len(y.lit); i++ {
		if x.lit[i] != y.lit[i] {
			return false
		}
	}
	if !strings.HasSuffix(x.suffix, y.suffix) && !strings.HasSuffix(y.suffix, x.suffix) {
		return false
	}
	switch {
	case x.literal:
		return y.matches(x.path)
	case y.literal:
		return x.matches(y.path)
	}
	return product(x, y)
}

// Clean-path automaton: the accepted strings are "/" + clean path.
const (
	uStart   = 0 // expects '/'
	uSep     = 1 // just read '/', expects a non-'/' character
	uSegment = 2 // inside a segment; accepting
)

// maxProduct bounds the number of state pairs product searches (it keeps a
// bitmap of three bits per pair). Only two non-literal alternatives of
// about two thousand characters each exceed it; they are reported as
// overlapping.
const maxProduct = 1 << 22

// product searches the product of x, y and the clean-path automaton for an
// accepting state, depth-first with a visited bitmap. The leading fixed
// characters of one side are first read by simulating the other side on
// them, which skips most of the search for patterns with a literal prefix.
func product(x, y *alt) bool {
	if x.fixed < y.fixed {
		x, y = y, x
	}
	nx, ny := len(x.states), len(y.states)
	w := ny + 1
	if (nx+1)*w > maxProduct {
		return true // too big to search: conservatively overlapping
	}

	// Read x's fixed prefix with y (as a state set) and the clean-path
	// automaton.
	var bufA, bufB [2]uint64
	var cur, next stateSet
	if n := (ny + 1 + 63) / 64; n <= len(bufA) {
		cur, next = bufA[:n], bufB[:n]
	} else {
		cur, next = newStateSet(y), newStateSet(y)
	}
	y.start(cur)
	u := uStart
	for i := 0; i < x.fixed; i++ {
		c := x.states[i].step.r
		if c == '/' {
			if u == uSep {
				return false
			}
			u = uSep
		} else {
			if u == uStart {
				return false
			}
			u = uSegment
		}
		if !y.step(next, cur, c) {
			return false
		}
		cur, next = next, cur
	}

	total := (nx + 1) * w * 3
	var visSmall [32]uint64
	var vis []uint64
	if total <= len(visSmall)*64 {
		vis = visSmall[:(total+63)/64]
	} else {
		vis = make([]uint64, (total+63)/64)
	}
	var stackSmall [64]int32
	stack := stackSmall[:0]
	push := func(i, j, u int) {
		k := (i*w+j)*3 + u
		if vis[k>>6]&(1<<(k&63)) != 0 {
			return
		}
		vis[k>>6] |= 1 << (k & 63)
		stack = append(stack, int32(k))
	}
	for wi, bw := range cur {
		for bw != 0 {
			b := bits.TrailingZeros64(bw)
			bw &= bw - 1
			push(x.fixed, wi<<6+b, u)
		}
	}
	for len(stack) > 0 {
		k := int(stack[len(stack)-1])
		stack = stack[:len(stack)-1]
		u := k % 3
		i, j := (k/3)/w, (k/3)%w
		if i == nx && j == ny {
			if u == uSegment {
				return true
			}
			continue
		}
		var sx, sy *nstate
		if i < nx {
			sx = &x.states[i]
			if sx.eps >= 0 {
				push(sx.eps, j, u)
			}
		}
		if j < ny {
			sy = &y.states[j]
			if sy.eps >= 0 {
				push(i, sy.eps, u)
			}
		}
		if sx == nil || sy == nil {
			continue
		}
		for ex := 0; ex < 2; ex++ {
			cx, tx := &sx.step, i+1
			if ex == 1 {
				cx, tx = &sx.loop, i
			}
			if cx.kind == csNone {
				continue
			}
			for ey := 0; ey < 2; ey++ {
				cy, ty := &sy.step, j+1
				if ey == 1 {
					cy, ty = &sy.loop, j
				}
				if cy.kind == csNone {
					continue
				}
				slash, nonSlash := meet(cx, cy)
				if slash && u != uSep {
					push(tx, ty, uSep)
				}
				if nonSlash && u != uStart {
					push(tx, ty, uSegment)
				}
			}
		}
	}
	return false
}

// stateSet is a set of automaton states as a bitmap.
type stateSet []uint64

func newStateSet(a *alt) stateSet {
	return make(stateSet, (len(a.states)+1+63)/64)
}

func (s stateSet) has(i int) bool { return s[i>>6]&(1<<(i&63)) != 0 }
func (s stateSet) add(i int)      { s[i>>6] |= 1 << (i & 63) }

// closeEps adds the epsilon successors to s. Epsilon edges only go forward,
// so visiting the members in ascending order (including those added on the
// way) suffices.
func (a *alt) closeEps(s stateSet) {
	for wi := range s {
		done := uint64(0)
		for {
			rest := s[wi] &^ done
			if rest == 0 {
				break
			}
			b := bits.TrailingZeros64(rest)
			done |= 1 << b
			if i := wi<<6 + b; i < len(a.states) {
				if e := a.states[i].eps; e >= 0 {
					s.add(e)
				}
			}
		}
	}
}

// start sets s to the states reachable before reading anything.
func (a *alt) start(s stateSet) {
	clear(s)
	s.add(0)
	a.closeEps(s)
}

// step sets dst to the states reachable from src by reading c and reports
// whether dst is non-empty. dst and src must not alias.
func (a *alt) step(dst, src stateSet, c rune) bool {
	clear(dst)
	moved := false
	for wi, w := range src {
		for w != 0 {
			b := bits.TrailingZeros64(w)
			w &= w - 1
			i := wi<<6 + b
			if i >= len(a.states) {
				continue
			}
			st := &a.states[i]
			if st.loop.kind != csNone && st.loop.contains(c) {
				dst.add(i)
				moved = true
			}
			if st.step.kind != csNone && st.step.contains(c) {
				dst.add(i + 1)
				moved = true
			}
		}
	}
	if moved {
		a.closeEps(dst)
	}
	return moved
}

// matches reports whether a matches the string path exactly, which must be
// "/" + a clean path.
func (a *alt) matches(path string) bool {
	var bufA, bufB [2]uint64
	var cur, next stateSet
	if n := (len(a.states) + 1 + 63) / 64; n <= len(bufA) {
		cur, next = bufA[:n], bufB[:n]
	} else {
		cur, next = newStateSet(a), newStateSet(a)
	}
	a.start(cur)
	for _, c := range path {
		if !a.step(next, cur, c) {
			return false
		}
		cur, next = next, cur
	}
	return cur.has(len(a.states))
}
