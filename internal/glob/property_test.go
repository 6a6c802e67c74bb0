package glob

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	"github.com/bmatcuk/doublestar/v4"
)

// cleanPaths returns every clean path over the alphabet {a, b} with '/'
// separators of at most maxLen characters, shortest first.
func cleanPaths(maxLen int) []string {
	var out []string
	level := []string{""}
	for n := 1; n <= maxLen; n++ {
		var next []string
		for _, s := range level {
			for _, c := range []string{"a", "b", "/"} {
				if c == "/" && (s == "" || strings.HasSuffix(s, "/")) {
					continue
				}
				next = append(next, s+c)
			}
		}
		for _, s := range next {
			if !strings.HasSuffix(s, "/") {
				out = append(out, s)
			}
		}
		level = next
	}
	return out
}

// randomPattern joins n random tokens.
func randomPattern(r *rand.Rand, tokens []string, n int) string {
	var b strings.Builder
	for range n {
		b.WriteString(tokens[r.IntN(len(tokens))])
	}
	return b.String()
}

// matchSet is a bitmap over a path list.
type matchSet []uint64

func newMatchSet(paths []string, match func(string) bool) matchSet {
	m := make(matchSet, (len(paths)+63)/64)
	for i, p := range paths {
		if match(p) {
			m[i>>6] |= 1 << (i & 63)
		}
	}
	return m
}

// firstCommon returns the index of the first path in both sets, or -1.
func firstCommon(x, y matchSet) int {
	for i := range x {
		if w := x[i] & y[i]; w != 0 {
			for b := 0; b < 64; b++ {
				if w&(1<<b) != 0 {
					return i*64 + b
				}
			}
		}
	}
	return -1
}

// matchesNormalized reports whether doublestar matches path against some
// normalised alternative of p.
func matchesNormalized(p, path string) bool {
	for _, a := range compile(p).alts {
		if ok, _ := doublestar.Match(a.norm, path); ok {
			return true
		}
	}
	return false
}

// TestOverlapBruteForce compares Overlap with doublestar.Match on every
// clean path over {a, b} of at most 8 characters, for random patterns of at
// most 4 tokens over {a, b, /, *, ?, **, [ab]}.
//
//   - If a path matches both patterns (raw, or normalised), Overlap must be
//     true.
//   - If Overlap is true and neither pattern has "**", some path of at most
//     tokens(a)+tokens(b) characters matches both normalised patterns. The
//     bound is sound: in a shortest common match every character is read by
//     a non-star token of a or of b, except at most one character in a
//     segment where both patterns only have stars, and such a segment holds
//     a star of each. So the length is at most fixed(a)+fixed(b)+stars(a),
//     which is at most tokens(a)+tokens(b). Characters other than a and b
//     are never needed because no token excludes both.
func TestOverlapBruteForce(t *testing.T) {
	const maxTokens = 4
	paths := cleanPaths(2 * maxTokens)
	lenIdx := make([]int, 2*maxTokens+1) // lenIdx[n]: first path longer than n
	for i, p := range paths {
		lenIdx[len(p)] = i + 1
	}
	for n := 1; n < len(lenIdx); n++ {
		lenIdx[n] = max(lenIdx[n], lenIdx[n-1])
	}

	tokens := []string{"a", "b", "/", "*", "?", "**", "[ab]"}
	r := rand.New(rand.NewPCG(1, 2))
	n := 300
	if testing.Short() {
		n = 100
	}
	type pat struct {
		p         string
		ntok      int
		raw, norm matchSet
	}
	var pats []pat
	seen := map[string]bool{}
	for len(pats) < n {
		k := 1 + r.IntN(maxTokens)
		p := randomPattern(r, tokens, k)
		if seen[p] || !doublestar.ValidatePattern(p) {
			continue
		}
		seen[p] = true
		pats = append(pats, pat{
			p:    p,
			ntok: k,
			raw:  newMatchSet(paths, func(s string) bool { ok, _ := doublestar.Match(p, s); return ok }),
			norm: newMatchSet(paths, func(s string) bool { return matchesNormalized(p, s) }),
		})
	}
	var overlaps, witnessed int
	for i := range pats {
		for j := i; j < len(pats); j++ {
			a, b := pats[i], pats[j]
			got := Overlap(a.p, b.p)
			if got {
				overlaps++
			}
			if w := firstCommon(a.raw, b.raw); w >= 0 && !got {
				t.Errorf("Overlap(%q, %q) = false, but doublestar matches both to %q", a.p, b.p, paths[w])
			}
			w := firstCommon(a.norm, b.norm)
			if w >= 0 && !got {
				t.Errorf("Overlap(%q, %q) = false, but %q matches both (normalised)", a.p, b.p, paths[w])
			}
			if !got || strings.Contains(a.p, "**") || strings.Contains(b.p, "**") {
				continue
			}
			witnessed++
			bound := a.ntok + b.ntok
			if w < 0 || w >= lenIdx[bound] {
				t.Errorf("Overlap(%q, %q) = true, but no path of at most %d characters matches both", a.p, b.p, bound)
			}
		}
	}
	t.Logf("%d patterns, %d overlapping pairs, %d checked for a witness", len(pats), overlaps, witnessed)
}

// witness returns a clean path matched by both alternatives, found by a
// breadth-first search of the same product automaton that product
// searches, or false if there is none. It is independent of product's
// code, so it checks it.
func witness(x, y *alt) (string, bool) {
	type st struct{ i, j, u int }
	type from struct {
		prev st
		c    rune // -1 for an epsilon move
	}
	parent := map[st]from{}
	start := st{0, 0, uStart}
	parent[start] = from{prev: st{-1, -1, -1}}
	queue := []st{start}
	visit := func(s, prev st, c rune) {
		if _, ok := parent[s]; !ok {
			parent[s] = from{prev, c}
			queue = append(queue, s)
		}
	}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		if s.i == len(x.states) && s.j == len(y.states) && s.u == uSegment {
			var rs []rune
			for cur := s; cur != start; cur = parent[cur].prev {
				if c := parent[cur].c; c >= 0 {
					rs = append(rs, c)
				}
			}
			var b strings.Builder
			for k := len(rs) - 1; k >= 0; k-- {
				b.WriteRune(rs[k])
			}
			return strings.TrimPrefix(b.String(), "/"), true
		}
		type edge struct {
			set *charset
			to  int
		}
		edges := func(a *alt, i int) []edge {
			if i >= len(a.states) {
				return nil
			}
			var es []edge
			if a.states[i].step.kind != csNone {
				es = append(es, edge{&a.states[i].step, i + 1})
			}
			if a.states[i].loop.kind != csNone {
				es = append(es, edge{&a.states[i].loop, i})
			}
			return es
		}
		if s.i < len(x.states) && x.states[s.i].eps >= 0 {
			visit(st{x.states[s.i].eps, s.j, s.u}, s, -1)
		}
		if s.j < len(y.states) && y.states[s.j].eps >= 0 {
			visit(st{s.i, y.states[s.j].eps, s.u}, s, -1)
		}
		for _, ex := range edges(x, s.i) {
			for _, ey := range edges(y, s.j) {
				if s.u != uSep && ex.set.contains('/') && ey.set.contains('/') {
					visit(st{ex.to, ey.to, uSep}, s, '/')
				}
				if s.u != uStart {
					if c, ok := commonNonSlash(ex.set, ey.set); ok {
						visit(st{ex.to, ey.to, uSegment}, s, c)
					}
				}
			}
		}
	}
	return "", false
}

// commonNonSlash returns a character other than '/' in both sets.
func commonNonSlash(x, y *charset) (rune, bool) {
	cands := []rune{'a', 'b', 'x', 0}
	for _, s := range []*charset{x, y} {
		if s.kind == csSingle {
			cands = append(cands, s.r)
		}
		for _, r := range s.ranges() {
			cands = append(cands, r.lo, r.lo+1, r.hi)
		}
	}
	for _, c := range cands {
		if c != '/' && x.contains(c) && y.contains(c) {
			return c, true
		}
	}
	return 0, false
}

// witnessPatterns returns a clean path matched by both patterns, or false.
func witnessPatterns(a, b string) (string, bool) {
	for _, x := range compile(a).alts {
		for _, y := range compile(b).alts {
			if w, ok := witness(x, y); ok {
				return w, true
			}
		}
	}
	return "", false
}

// refRegexp translates a normalised alternative into a regular expression
// over "/" + path, as an independent reference for the documented
// semantics: a "**" segment is (/.*)?, every other segment is "/" followed
// by its tokens.
func refRegexp(norm string) *regexp.Regexp {
	segs, ok := parseSegments(norm)
	if !ok {
		panic("bad normalised pattern " + norm)
	}
	var b strings.Builder
	b.WriteString("^(?s)")
	for _, s := range segs {
		if s.globstar {
			b.WriteString("(?:/.*)?")
			continue
		}
		b.WriteString("/")
		for _, t := range s.toks {
			if t.kind == tokStar {
				b.WriteString("[^/]*")
				continue
			}
			switch t.set.kind {
			case csSingle:
				b.WriteString(regexp.QuoteMeta(string(t.set.r)))
			case csNonSlash:
				b.WriteString("[^/]")
			case csAll:
				b.WriteString(".")
			default:
				if len(t.set.ranges()) == 0 {
					b.WriteString(`[^\x00-\x{10FFFF}]`)
					continue
				}
				b.WriteString("[")
				for _, r := range t.set.ranges() {
					fmt.Fprintf(&b, `\x{%x}-\x{%x}`, r.lo, r.hi)
				}
				b.WriteString("]")
			}
		}
	}
	b.WriteString("$")
	return regexp.MustCompile(b.String())
}

// refMatch reports whether the reference semantics match path against p.
func refMatch(p, path string) bool {
	for _, a := range compile(p).alts {
		if refRegexp(a.norm).MatchString("/" + path) {
			return true
		}
	}
	return false
}

// TestOverlapWitness checks, for random patterns over a richer syntax
// (globstars, negated classes, braces, escapes, empty segments), that
// Overlap agrees with an independent breadth-first witness search, that
// every witness is a clean path matched by both patterns under a regular
// expression translation of the semantics, and that when there is no
// witness neither that reference nor doublestar matches both patterns to
// any short path.
//
// Doublestar itself is not required to accept the witnesses: at the end of
// a name it only lets a few fixed pattern tails match the empty string, so
// for example doublestar.Match("a*/**", "a") and doublestar.Match("a***",
// "a") are false although "a*/**" matches "ab" and "a*" matches "a".
// Overlap follows the regular semantics there, which can only make it
// report more overlaps, never fewer.
func TestOverlapWitness(t *testing.T) {
	tokens := []string{
		"a", "b", "c", "/", "/", "*", "?", "**", "/**/", "[ab]", "[!a]", "[a-c]",
		"[!/]", "{a,b/}", "{,a}", "\\*", "//", "x",
	}
	paths := cleanPaths(6)
	r := rand.New(rand.NewPCG(3, 4))
	n := 250
	if testing.Short() {
		n = 80
	}
	var pats []string
	seen := map[string]bool{}
	for len(pats) < n {
		p := randomPattern(r, tokens, 1+r.IntN(5))
		if !seen[p] && doublestar.ValidatePattern(p) {
			seen[p] = true
			pats = append(pats, p)
		}
	}
	matchRef := make([]matchSet, len(pats))
	matchDS := make([]matchSet, len(pats))
	for i, p := range pats {
		matchRef[i] = newMatchSet(paths, func(s string) bool { return refMatch(p, s) })
		matchDS[i] = newMatchSet(paths, func(s string) bool { ok, _ := doublestar.Match(p, s); return ok })
	}
	var overlaps int
	for i, a := range pats {
		for j := i; j < len(pats); j++ {
			b := pats[j]
			got := Overlap(a, b)
			w, ok := witnessPatterns(a, b)
			if got != ok {
				t.Errorf("Overlap(%q, %q) = %v, witness search found %v (%q)", a, b, got, ok, w)
				continue
			}
			if !ok {
				if k := firstCommon(matchRef[i], matchRef[j]); k >= 0 {
					t.Errorf("Overlap(%q, %q) = false, but %q matches both (reference)", a, b, paths[k])
				}
				if k := firstCommon(matchDS[i], matchDS[j]); k >= 0 {
					t.Errorf("Overlap(%q, %q) = false, but %q matches both (doublestar)", a, b, paths[k])
				}
				continue
			}
			overlaps++
			if w == "" || strings.HasPrefix(w, "/") || strings.HasSuffix(w, "/") || strings.Contains(w, "//") {
				t.Errorf("witness %q for (%q, %q) is not a clean path", w, a, b)
			}
			if !refMatch(a, w) || !refMatch(b, w) {
				t.Errorf("witness %q for (%q, %q): reference matches a: %v, b: %v", w, a, b, refMatch(a, w), refMatch(b, w))
			}
			if lit := Escape(w); !Overlap(a, lit) || !Overlap(lit, b) {
				t.Errorf("witness %q for (%q, %q) does not overlap both as a literal", w, a, b)
			}
		}
	}
	t.Logf("%d patterns, %d overlapping pairs", len(pats), overlaps)
}

// TestDoublestarQuirks pins the cases where doublestar.Match rejects a path
// the regular semantics accept, and Overlap follows the regular semantics.
func TestDoublestarQuirks(t *testing.T) {
	cases := []struct{ p, path string }{
		{"a*/**", "a"},
		{"a***", "a"},
		{"a/**/**", "a"},
	}
	for _, c := range cases {
		if ok, _ := doublestar.Match(c.p, c.path); ok {
			t.Errorf("doublestar.Match(%q, %q) is now true; update the documentation", c.p, c.path)
		}
		if !Overlap(c.p, c.path) {
			t.Errorf("Overlap(%q, %q) = false, want true", c.p, c.path)
		}
	}
}
