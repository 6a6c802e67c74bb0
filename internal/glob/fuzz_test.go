package glob

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/bmatcuk/doublestar/v4"
)

// isCleanPath reports whether s is a clean relative path.
func isCleanPath(s string) bool {
	return s != "" && !strings.HasPrefix(s, "/") && !strings.HasSuffix(s, "/") && !strings.Contains(s, "//")
}

// FuzzOverlap checks, for arbitrary patterns a and b and a path:
//   - no panic, and invalid patterns overlap nothing;
//   - symmetry: Overlap(a, b) == Overlap(b, a);
//   - reflexivity: a pattern matching some path overlaps itself, and
//     patterns overlapping anything overlap themselves;
//   - soundness against doublestar: if doublestar matches the clean path
//     against both patterns, they overlap;
//   - exactness on concrete paths: Overlap(a, escaped path) agrees with the
//     regular-expression reference, and a reported overlap has a witness
//     (checked the same way) when the patterns are small enough to search.
func FuzzOverlap(f *testing.F) {
	for _, c := range overlapCases {
		f.Add(c.a, c.b, "a/b")
	}
	f.Add("src/**/*.go", "**/x/*", "src/x/y.go")
	f.Add("{a,b}/[!x]*", "?/c", "a/c")
	f.Add("a*/**", "a", "a")
	f.Fuzz(func(t *testing.T, a, b, path string) {
		if len(a) > 64 || len(b) > 64 || len(path) > 64 {
			return
		}
		ab := Overlap(a, b)
		if ba := Overlap(b, a); ab != ba {
			t.Fatalf("Overlap(%q, %q) = %v, Overlap(%q, %q) = %v", a, b, ab, b, a, ba)
		}
		va, vb := doublestar.ValidatePattern(a), doublestar.ValidatePattern(b)
		if (!va || !vb) && ab {
			t.Fatalf("Overlap(%q, %q) = true with an invalid pattern", a, b)
		}
		if ab && (!Overlap(a, a) || !Overlap(b, b)) {
			t.Fatalf("Overlap(%q, %q) = true, but Overlap(a, a) = %v, Overlap(b, b) = %v", a, b, Overlap(a, a), Overlap(b, b))
		}
		_ = LiteralPrefix(a)
		// Paths and patterns are UTF-8 text (the protocol rejects anything
		// else); doublestar reads a broken byte as U+FFFD, which only makes
		// byte-level comparisons below meaningless.
		if !va || !isCleanPath(path) || !utf8.ValidString(a) || !utf8.ValidString(b) || !utf8.ValidString(path) {
			return
		}
		ma, _ := doublestar.Match(a, path)
		mb := false
		if vb {
			mb, _ = doublestar.Match(b, path)
		}
		if ma && !Overlap(a, a) {
			t.Fatalf("doublestar matches %q to %q, but Overlap(a, a) = false", a, path)
		}
		if ma && mb && !ab {
			t.Fatalf("doublestar matches %q to %q and %q, but Overlap = false", path, a, b)
		}
		lit := Escape(path)
		if got, want := Overlap(a, lit), refMatch(a, path); got != want {
			t.Fatalf("Overlap(%q, %q) = %v, reference match = %v", a, lit, got, want)
		}
		if ma && !Overlap(a, lit) {
			t.Fatalf("doublestar matches %q to %q, but Overlap(a, %q) = false", a, path, lit)
		}
		if ma {
			// Every match starts with the literal prefix.
			lp := LiteralPrefix(a)
			if lp != "" && path != lp && !strings.HasPrefix(path, lp+"/") {
				t.Fatalf("doublestar matches %q to %q, outside its literal prefix %q", a, path, lp)
			}
		}
		if ab && vb && len(compile(a).alts)*len(compile(b).alts) <= 16 {
			w, ok := witnessPatterns(a, b)
			if !ok {
				t.Fatalf("Overlap(%q, %q) = true, but the witness search finds none", a, b)
			}
			if !refMatch(a, w) || !refMatch(b, w) {
				t.Fatalf("witness %q for (%q, %q) not matched by the reference", w, a, b)
			}
		}
	})
}
