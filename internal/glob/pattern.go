package glob

import (
	"strings"
	"unicode/utf8"

	"github.com/bmatcuk/doublestar/v4"
)

// MaxAlternatives caps brace expansion: a pattern whose braces expand to
// more alternatives than this is approximated by its literal prefix
// followed by "/**" (see the package documentation).
const MaxAlternatives = 256

// LiteralPrefix returns the longest leading run of whole literal segments
// of pattern, joined by '/': "src/game/*.gd" gives "src/game",
// "assets/boss/**" gives "assets/boss", "**/*.go" gives "" and the fully
// literal "src/main.go" gives itself.
//
// A segment is literal when it holds none of the metacharacters * ? [ {
// (escaped ones do not count). The result is a path, not a pattern: escapes
// are removed (`a\*b/c*` gives "a*b"), and empty segments are skipped
// ("/src//game/" gives "src/game"). An invalid pattern gives "".
//
// Every path the pattern matches starts with the segments of its literal
// prefix, so two patterns can only overlap if the literal prefix of one is
// a segment-wise prefix of the other's.
func LiteralPrefix(pattern string) string {
	if !doublestar.ValidatePattern(pattern) {
		return ""
	}
	return strings.Join(literalSegments(pattern), "/")
}

// literalSegments returns the unescaped leading literal segments of a
// valid pattern, skipping empty segments.
func literalSegments(p string) []string {
	var segs []string
	var cur strings.Builder
	for i := 0; i < len(p); {
		c := p[i]
		switch c {
		case '*', '?', '[', '{':
			return segs
		case '/':
			if cur.Len() > 0 {
				segs = append(segs, cur.String())
				cur.Reset()
			}
			i++
			continue
		case '\\':
			if i+1 >= len(p) {
				return segs
			}
			r, n := utf8.DecodeRuneInString(p[i+1:])
			i += 1 + n
			if r == '/' {
				if cur.Len() > 0 {
					segs = append(segs, cur.String())
					cur.Reset()
				}
				continue
			}
			cur.WriteRune(r)
			continue
		}
		r, n := utf8.DecodeRuneInString(p[i:])
		cur.WriteRune(r)
		i += n
	}
	if cur.Len() > 0 {
		segs = append(segs, cur.String())
	}
	return segs
}

// expandBraces appends to out the brace-free alternatives of p, scanning
// for braces from byte offset from (p has none before it). It stops early
// once out holds more than limit alternatives and then reports over. ok is
// false if p is malformed.
func expandBraces(p string, from int, out *[]string, limit int) (over, ok bool) {
	open := -1
	for i := from; i < len(p) && open < 0; i++ {
		switch p[i] {
		case '\\':
			i++
		case '[':
			end := skipClass(p, i)
			if end < 0 {
				return false, false
			}
			i = end - 1
		case '{':
			open = i
		}
	}
	if open < 0 {
		*out = append(*out, p)
		return len(*out) > limit, true
	}
	closing := -1
	depth := 0
	var commas []int
	for i := open + 1; i < len(p) && closing < 0; i++ {
		switch p[i] {
		case '\\':
			i++
		case '[':
			end := skipClass(p, i)
			if end < 0 {
				return false, false
			}
			i = end - 1
		case '{':
			depth++
		case '}':
			if depth == 0 {
				closing = i
			}
			depth--
		case ',':
			if depth == 0 {
				commas = append(commas, i)
			}
		}
	}
	if closing < 0 {
		return false, false
	}
	head, tail := p[:open], p[closing+1:]
	start := open + 1
	for k := 0; k <= len(commas); k++ {
		end := closing
		if k < len(commas) {
			end = commas[k]
		}
		over, ok = expandBraces(head+p[start:end]+tail, open, out, limit)
		if over || !ok {
			return over, ok
		}
		start = end + 1
	}
	return false, true
}

// skipClass returns the offset just past the character class starting at
// p[i] == '[', or -1 if it is not closed. Like doublestar, the class ends
// at the first unescaped ']' after its first member.
func skipClass(p string, i int) int {
	i++
	if i < len(p) && (p[i] == '!' || p[i] == '^') {
		i++
	}
	if i >= len(p) || p[i] == ']' {
		return -1
	}
	for ; i < len(p); i++ {
		switch p[i] {
		case '\\':
			i++
		case ']':
			return i + 1
		}
	}
	return -1
}

// tokKind is the kind of a token inside one segment.
type tokKind uint8

const (
	tokChar tokKind = iota // one character of set
	tokStar                // any run of non-'/' characters
)

type token struct {
	kind tokKind
	set  charset
}

// segment is one '/'-separated piece of a brace-free pattern.
type segment struct {
	globstar bool    // the segment is exactly "**"
	toks     []token // otherwise: its tokens
	literal  bool    // all tokens are literal characters (no ?, class or *)
	text     string  // if literal: the unescaped text
	raw      string  // the source text of the segment
}

// parseSegments splits a brace-free pattern into normalised segments:
// empty ones dropped, runs of "**" collapsed. ok is false if p is malformed.
func parseSegments(p string) (segs []segment, ok bool) {
	segs = make([]segment, 0, strings.Count(p, "/")+1)
	toks := make([]token, 0, len(p)) // shared by all segments
	start, first := 0, 0             // segment start in p and in toks
	literal, escaped := true, false
	flush := func(end int) {
		raw := p[start:end]
		switch {
		case raw == "":
		case raw == "**":
			if n := len(segs); n == 0 || !segs[n-1].globstar {
				segs = append(segs, segment{globstar: true, raw: raw})
			}
		default:
			s := segment{toks: toks[first:len(toks):len(toks)], literal: literal, raw: raw}
			if literal {
				s.text = raw
				if escaped {
					var b strings.Builder
					for _, t := range s.toks {
						b.WriteRune(t.set.r)
					}
					s.text = b.String()
				}
			}
			segs = append(segs, s)
		}
	}
	next := func(i int) {
		start, first = i, len(toks)
		literal, escaped = true, false
	}
	for i := 0; i < len(p); {
		switch p[i] {
		case '/':
			flush(i)
			i++
			next(i)
		case '\\':
			if i+1 >= len(p) {
				return nil, false
			}
			r, n := utf8.DecodeRuneInString(p[i+1:])
			if r == '/' {
				flush(i)
				i += 1 + n
				next(i)
				continue
			}
			toks = append(toks, token{kind: tokChar, set: single(r)})
			escaped = true
			i += 1 + n
		case '*':
			for i < len(p) && p[i] == '*' {
				i++
			}
			literal = false
			if n := len(toks); n == first || toks[n-1].kind != tokStar {
				toks = append(toks, token{kind: tokStar})
			}
		case '?':
			literal = false
			toks = append(toks, token{kind: tokChar, set: csetNonSlash})
			i++
		case '[':
			set, end, good := parseClass(p, i)
			if !good {
				return nil, false
			}
			literal = false
			toks = append(toks, token{kind: tokChar, set: set})
			i = end
		default:
			r, n := utf8.DecodeRuneInString(p[i:])
			toks = append(toks, token{kind: tokChar, set: single(r)})
			i += n
		}
	}
	flush(len(p))
	return segs, true
}

// parseClass parses the character class starting at p[i] == '[' exactly as
// doublestar.Match reads it and returns its set and the offset past it.
func parseClass(p string, i int) (set charset, end int, ok bool) {
	j := i + 1
	if j >= len(p) {
		return charset{}, 0, false
	}
	neg := p[j] == '!' || p[j] == '^'
	if neg {
		j++
	}
	if j >= len(p) || p[j] == ']' {
		return charset{}, 0, false
	}
	var rs []rng
	var last rune
	haveLast := false
	for j < len(p) && p[j] != ']' {
		r, n := utf8.DecodeRuneInString(p[j:])
		j += n
		if haveLast && r == '-' && j < len(p) && p[j] != ']' {
			if p[j] == '\\' {
				j++
				if j >= len(p) {
					return charset{}, 0, false
				}
			}
			hi, n := utf8.DecodeRuneInString(p[j:])
			j += n
			rs = append(rs, rng{last, hi})
			haveLast = false
			continue
		}
		if r == '\\' {
			if j >= len(p) {
				return charset{}, 0, false
			}
			r, n = utf8.DecodeRuneInString(p[j:])
			j += n
		}
		rs = append(rs, rng{r, r})
		last, haveLast = r, r < utf8.MaxRune
	}
	if j >= len(p) {
		return charset{}, 0, false
	}
	return makeClass(rs, neg), j + 1, true
}
