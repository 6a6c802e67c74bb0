// Package glob decides whether file claims written as glob patterns can
// collide. Finding the claims worth testing is the caller's job (the store
// looks them up by [LiteralPrefix]); this package decides, exactly, whether
// two patterns or two lists of patterns share a path.
//
// # Patterns
//
// Patterns are repository-relative, use '/' as the separator and follow the
// syntax of github.com/bmatcuk/doublestar/v4:
//
//	pattern  matches
//	*        any run of characters other than '/', within one segment
//	?        one character other than '/'
//	[abc]    one character of the class; ranges [a-z]; [!x] and [^x] negate
//	{a,b}    either alternative (they may nest and contain '/')
//	**       as a whole segment: zero or more segments; elsewhere like *
//	\c       the character c itself
//	c        any other character: itself
//
// A pattern that doublestar.ValidatePattern rejects matches nothing here:
// it overlaps no pattern. [Escape] turns a path into the pattern that
// matches exactly that path, so a file named "src/[id].tsx" can be checked
// as itself rather than as a character class.
//
// # Paths
//
// The paths a pattern is matched against are clean relative paths: one or
// more non-empty segments joined by single '/' characters, with no leading
// or trailing '/'. On such paths a pattern matches exactly what
// doublestar.Match says it matches, after this normalisation of the pattern
// (applied to every brace alternative):
//
//   - empty segments are dropped, so "dir/" means "dir", "/src" means "src"
//     and "a//b" means "a/b" (doublestar itself would match those only
//     against unclean paths, i.e. never);
//   - an escaped separator `\/` is a separator;
//   - consecutive "**" segments collapse into one ("a/**/**" means "a/**").
//
// In particular "a/**" matches "a" itself, "a/**/b" matches "a/b",
// "**/x" matches "x", and a negated class such as [!x] also matches '/'
// (as it does in doublestar), so "a[!x]b" matches "a/b". Classes are read
// exactly as doublestar reads them, quirks included: in "[c-a]" the 'c' is
// first a member on its own, so the class matches "c" only.
//
// One deliberate difference: when doublestar reaches the end of a path it
// lets only a few fixed pattern tails match the empty string, so
// doublestar.Match("a*/**", "a") and doublestar.Match("a***", "a") are
// false although "a*" matches "a" and "a/**" matches "a". This package uses
// the regular semantics there (both match "a"). It only ever adds matches,
// so Overlap never misses a conflict doublestar would see.
//
// # Overlap
//
// [Overlap] reports whether some path is matched by both patterns. It is an
// exact decision, not a heuristic: every pattern is compiled to a small
// character-level automaton (one per brace alternative) and the product of
// the two automata with an automaton for clean paths is searched for an
// accepting state. Character classes are handled as sets of rune intervals,
// so classes intersect exactly.
//
// Brace expansion is capped at [MaxAlternatives] alternatives per pattern.
// A pattern with more alternatives is approximated, conservatively, by its
// [LiteralPrefix] followed by "/**" (or by "**" when the prefix is empty):
// every path it matches is matched by the approximation, so Overlap may
// report a conflict that does not exist but never misses one. Likewise, two
// alternatives whose product automaton would exceed about four million
// state pairs (two non-literal patterns of some two thousand characters
// each) are reported as overlapping without a search.
//
// [Compile] compiles a list of patterns once into a [Set], for testing it
// against many other lists ([Set.OverlapsAny]) without compiling it again
// for each; [OverlapAny] compiles both lists on every call.
package glob
