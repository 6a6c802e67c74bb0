package glob

import (
	"slices"
	"unicode/utf8"
)

// rng is an inclusive interval of runes.
type rng struct{ lo, hi rune }

// Surrogate halves cannot occur in a decoded string, so no set contains them.
const (
	surrLo = 0xD800
	surrHi = 0xDFFF
)

// csKind says how a charset is represented; the special kinds make the
// common intersections cheap.
type csKind uint8

const (
	csNone     csKind = iota // no character: the edge does not exist
	csSingle                 // exactly the rune r
	csNonSlash               // every character except '/'
	csAll                    // every character
	csSet                    // the sorted, disjoint, non-adjacent intervals in set
)

// charset is a set of runes labelling one automaton edge.
type charset struct {
	kind        csKind
	hasSlash    bool   // contains '/'
	hasNonSlash bool   // contains some character other than '/'
	r           rune   // csSingle
	set         *[]rng // csSet (a pointer keeps automaton states small)
}

// ranges returns the intervals of a csSet charset.
func (s *charset) ranges() []rng {
	if s.set == nil {
		return nil
	}
	return *s.set
}

var (
	validRunes = []rng{{0, surrLo - 1}, {surrHi + 1, utf8.MaxRune}}

	csetSlash    = charset{kind: csSingle, r: '/', hasSlash: true}
	csetNonSlash = charset{kind: csNonSlash, hasNonSlash: true}
	csetAll      = charset{kind: csAll, hasSlash: true, hasNonSlash: true}
)

// single returns the charset holding only r.
func single(r rune) charset {
	return charset{kind: csSingle, r: r, hasSlash: r == '/', hasNonSlash: r != '/'}
}

// contains reports whether c is in the set.
func (s *charset) contains(c rune) bool {
	switch s.kind {
	case csSingle:
		return s.r == c
	case csNonSlash:
		return c != '/'
	case csAll:
		return true
	case csSet:
		// Binary search for the last interval with lo <= c.
		set := s.ranges()
		i, j := 0, len(set)
		for i < j {
			h := int(uint(i+j) >> 1)
			if set[h].lo <= c {
				i = h + 1
			} else {
				j = h
			}
		}
		return i > 0 && c <= set[i-1].hi
	}
	return false
}

// makeClass builds the charset of a character class from its ranges
// (possibly reversed, overlapping or unsorted), negated if neg.
func makeClass(rs []rng, neg bool) charset {
	var norm []rng
	for _, r := range rs {
		if r.lo <= r.hi {
			norm = append(norm, r)
		}
	}
	slices.SortFunc(norm, func(a, b rng) int { return int(a.lo) - int(b.lo) })
	var merged []rng
	for _, r := range norm {
		if n := len(merged); n > 0 && r.lo <= merged[n-1].hi+1 {
			merged[n-1].hi = max(merged[n-1].hi, r.hi)
			continue
		}
		merged = append(merged, r)
	}
	if neg {
		merged = subtract(validRunes, merged)
	} else {
		merged = intersect(validRunes, merged)
	}
	return fromIntervals(merged)
}

// fromIntervals wraps normalised intervals, picking the cheapest kind.
func fromIntervals(set []rng) charset {
	switch {
	case len(set) == 0:
		return charset{kind: csSet}
	case len(set) == 1 && set[0].lo == set[0].hi:
		return single(set[0].lo)
	case slices.Equal(set, validRunes):
		return csetAll
	}
	s := charset{kind: csSet, set: &set}
	for _, r := range set {
		if r.lo <= '/' && '/' <= r.hi {
			s.hasSlash = true
		}
		if r.lo != r.hi || r.lo != '/' {
			s.hasNonSlash = true
		}
	}
	return s
}

// intersect returns the intersection of two normalised interval lists.
func intersect(a, b []rng) []rng {
	var out []rng
	for i, j := 0, 0; i < len(a) && j < len(b); {
		lo, hi := max(a[i].lo, b[j].lo), min(a[i].hi, b[j].hi)
		if lo <= hi {
			out = append(out, rng{lo, hi})
		}
		if a[i].hi < b[j].hi {
			i++
		} else {
			j++
		}
	}
	return out
}

// subtract returns a minus b for normalised interval lists.
func subtract(a, b []rng) []rng {
	var out []rng
	for _, r := range a {
		lo := r.lo
		for _, x := range b {
			if x.hi < lo || x.lo > r.hi {
				continue
			}
			if x.lo > lo {
				out = append(out, rng{lo, x.lo - 1})
			}
			lo = x.hi + 1
			if lo > r.hi {
				break
			}
		}
		if lo <= r.hi {
			out = append(out, rng{lo, r.hi})
		}
	}
	return out
}

// meet reports whether the sets a and b share '/' and whether they share
// some character other than '/'.
func meet(a, b *charset) (slash, nonSlash bool) {
	switch {
	case a.kind == csNone || b.kind == csNone:
		return false, false
	case a.kind == csSingle:
		if b.contains(a.r) {
			return a.r == '/', a.r != '/'
		}
		return false, false
	case b.kind == csSingle:
		if a.contains(b.r) {
			return b.r == '/', b.r != '/'
		}
		return false, false
	case a.kind == csAll:
		return b.hasSlash, b.hasNonSlash
	case b.kind == csAll:
		return a.hasSlash, a.hasNonSlash
	case a.kind == csNonSlash:
		return false, b.hasNonSlash
	case b.kind == csNonSlash:
		return false, a.hasNonSlash
	}
	slash = a.hasSlash && b.hasSlash
	x, y := a.ranges(), b.ranges()
	for i, j := 0, 0; i < len(x) && j < len(y); {
		lo, hi := max(x[i].lo, y[j].lo), min(x[i].hi, y[j].hi)
		if lo < hi || (lo == hi && lo != '/') {
			return slash, true
		}
		if x[i].hi < y[j].hi {
			i++
		} else {
			j++
		}
	}
	return slash, false
}
