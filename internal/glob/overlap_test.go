package glob

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/bmatcuk/doublestar/v4"
)

type overlapCase struct {
	a, b string
	want bool
}

var overlapCases = []overlapCase{
	// The examples of the specification.
	{"src/*.go", "src/main.go", true},
	{"src/*.go", "src/*.ts", false},
	{"src/**", "src/a/b/c.txt", true},
	{"**/*.go", "cmd/x/main.go", true},
	{"a/*/c", "a/b/*", true},
	{"a/*/c", "a/b/d", false},
	{"{src,lib}/x", "lib/*", true},
	{"[a-c]x", "[d-f]x", false},
	{"[!a]", "a", false},
	{"**", "anything", true},
	{"a/**/b", "a/b", true},
	{"*.go", "a/b.go", false},

	// Literals.
	{"a", "a", true},
	{"a", "b", false},
	{"a/b", "a", false},
	{"a", "a/b", false},
	{"src/main.go", "src/main.go", true},
	{"src/main.go", "src/main.gox", false},

	// Stars within one segment.
	{"*", "a", true},
	{"*", "a/b", false},
	{"*", "*", true},
	{"*/*", "*", false},
	{"a*", "*b", true},
	{"a*", "b*", false},
	{"*a", "*b", false},
	{"a*b", "ab", true},
	{"a*b*c", "*d*", true}, // "adbc"
	{"a*b*c", "*d", false},
	{"a*b*c", "a*d*c", true},
	{"*ab*", "*ba*", true},
	{"x*.go", "*y.go", true},
	{"*.go", "*.ts", false},
	{"*.go", "main.*", true},
	{"a**b", "axyzb", true}, // mid-segment ** is a single star
	{"a**b", "ax/yb", false},
	{"**b", "x/b", false}, // "**b" is not a whole segment
	{"***", "a/b", false},
	{"a/***/b", "a/x/y/b", false},

	// Question marks.
	{"?", "a", true},
	{"?", "ab", false},
	{"??", "a*", true},
	{"???", "*", true},
	{"a?c", "abc", true},
	{"a?c", "a/c", false},
	{"?/?", "a/b", true},
	{"?*", "*?", true},

	// Classes.
	{"[abc]", "b", true},
	{"[abc]", "d", false},
	{"[a-c]", "[c-e]", true},
	{"[a-c]", "[!a-c]", false},
	{"[!a]", "b", true},
	{"[^a]", "a", false},
	{"[!a]", "[!b]", true},
	{"[!a-z]", "[a-z]", false},
	{"[!a-z]", "?", true},
	{"[a-z][0-9]", "x9", true},
	{"[a-z][0-9]", "x*", true},
	{"[a-z][0-9]", "9*", false},
	{"[ab][ab]", "[bc][cd]", false},
	{"[c-a]", "b", false},   // reversed range: empty, but as in doublestar...
	{"[c-a]", "c", true},    // ...its low end is first read as a member
	{"[!c-a]", "q", true},   //
	{"[!c-a]", "c", false},  //
	{"[\\]]", "]", true},    // escaped ] in a class
	{"[a\\-z]", "-", true},  // escaped - is literal
	{"[a\\-z]", "b", false}, // ... so there is no range
	{"[-a]", "-", true},
	{"[a-]", "-", true},
	{"[é-ü]x", "ñ*", true},
	{"[!/]", "?", true},
	{"a[!x]b", "a/b", true}, // as in doublestar, a negated class matches '/'
	{"a[/]b", "a/*", true},
	{"a[/]b", "a/c", false},
	{"a[!x]b", "a/**", true},

	// Globstars.
	{"**", "**", true},
	{"**", "*", true},
	{"**", "a/b/c", true},
	{"**/a", "a", true},
	{"**/a", "x/y/a", true},
	{"**/a", "x/a/y", false},
	{"a/**", "a", true},
	{"a/**", "ab", false},
	{"a/**", "b/**", false},
	{"a/**", "**/b", true},
	{"a/**", "a/b/**", true},
	{"a/**/b", "a/x/y/b", true},
	{"a/**/b", "a/x/y/c", false},
	{"a/**/b", "a/**/c", false},
	{"a/**/b", "**/b", true},
	{"a/**/b", "b/**", false},
	{"**/*.go", "**/*.ts", false},
	{"**/*.go", "src/**", true},
	{"**/x/**", "a/x", true},
	{"**/x/**", "**/y/**", true},
	{"**/x/**", "*/y/*", true}, // "x/y/z"
	{"**/x/**", "y/z", false},
	{"**/x/*/y/**", "x/q/y/z", true},
	{"**/x/*/y/**", "x/y/x/y", false},
	{"**/a/b", "**/b/a", false},
	{"**/a/*", "**/*/a", true},
	{"a/**/**/b", "a/b", true},
	{"a/**/**", "a", true},
	{"**/**", "x", true},
	{"src/**/test/*.go", "src/pkg/*/*.go", true},
	{"src/**/test/*.go", "src/pkg/*.go", false},
	{"src/**/test/*.go", "src/test/x.go", true},
	{"*/**", "a", true},
	{"*/**/*", "a", false},
	{"*/**/*", "a/b", true},

	// Braces.
	{"{a,b}", "b", true},
	{"{a,b}", "c", false},
	{"{a,b}/x", "{c,b}/*", true},
	{"{a,b}/x", "{c,d}/*", false},
	{"{a/b,c}", "a/*", true},
	{"{a/b,c}", "*/c", false},
	{"a{,b}", "a", true},
	{"a{,b}", "ab", true},
	{"a{,b}", "ac", false},
	{"{x,{y,z}}.go", "z.go", true},
	{"{x,{y,z}}.go", "w.go", false},
	{"{**,a}/b", "x/y/b", true},
	{"src/{**/,}*.go", "src/a/b/c.go", true},
	{"{a,b}{c,d}", "bd", true},
	{"{a,b}{c,d}", "cb", false},
	{"{[ab],c}", "b", true},
	{"{a,}", "a", true},
	{"{}a", "a", true},

	// Escapes.
	{"\\*", "*", true},
	{"\\*", "a", false},
	{"a\\?", "a?", true},
	{"a\\?", "ab", false},
	{"\\[a]", "?a?", true},
	{"\\[a]", "[a]", false}, // the second is a class
	{"\\[a]", "a", false},
	{"\\{a,b\\}", "?a,b?", true},
	{"\\{a,b\\}", "a", false},
	{"\\{a,b}", "**", false},  // invalid: unmatched }
	{"a\\/b", "a/b", true},    // an escaped separator is a separator
	{"a\\/b", "a/*", true},    //
	{"a\\/**", "a", true},     //
	{"\\a\\b", "ab", true},    // escaped ordinary characters
	{"a\\*/**", "a*/b", true}, //

	// Normalisation: empty segments are dropped.
	{"dir/", "dir", true},
	{"dir/", "dir/x", false},
	{"/src", "src", true},
	{"a//b", "a/b", true},
	{"a//b", "a/*/b", false},
	{"src/", "src/**", true},
	{"a/**/", "a", true},

	// Degenerate and invalid patterns match nothing.
	{"", "", false},
	{"", "**", false},
	{"/", "**", false},
	{"[", "[", false},
	{"{a", "{a", false},
	{"a}", "a}", false},
	{"a\\", "**", false},
	{"[]]", "**", false},
	{"[!]", "**", false},
}

func TestOverlap(t *testing.T) {
	for _, c := range overlapCases {
		if got := Overlap(c.a, c.b); got != c.want {
			t.Errorf("Overlap(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
		if got := Overlap(c.b, c.a); got != c.want {
			t.Errorf("Overlap(%q, %q) = %v, want %v (swapped)", c.b, c.a, got, c.want)
		}
	}
}

// TestOverlapSymmetricReflexive checks symmetry over all pairs of the
// patterns of the table, and that every pattern overlapping anything
// overlaps itself.
func TestOverlapSymmetricReflexive(t *testing.T) {
	var pats []string
	seen := map[string]bool{}
	for _, c := range overlapCases {
		for _, p := range []string{c.a, c.b} {
			if !seen[p] {
				seen[p] = true
				pats = append(pats, p)
			}
		}
	}
	for _, a := range pats {
		any := false
		for _, b := range pats {
			ab, ba := Overlap(a, b), Overlap(b, a)
			if ab != ba {
				t.Errorf("Overlap(%q, %q) = %v but Overlap(%q, %q) = %v", a, b, ab, b, a, ba)
			}
			any = any || ab
		}
		if any && !Overlap(a, a) {
			t.Errorf("Overlap(%q, %q) = false, but %q overlaps other patterns", a, a, a)
		}
	}
}

func TestOverlapAny(t *testing.T) {
	cases := []struct {
		as, bs []string
		want   bool
	}{
		{nil, nil, false},
		{[]string{"a"}, nil, false},
		{nil, []string{"**"}, false},
		{[]string{"a", "b"}, []string{"c", "d"}, false},
		{[]string{"a", "b"}, []string{"c", "b"}, true},
		{[]string{"src/*.go"}, []string{"docs/**", "src/x.go"}, true},
		{[]string{"src/*.go"}, []string{"docs/**", "src/x/y.go"}, false},
		{[]string{"[", "src/**"}, []string{"src/a"}, true},
	}
	for _, c := range cases {
		if got := OverlapAny(c.as, c.bs); got != c.want {
			t.Errorf("OverlapAny(%q, %q) = %v, want %v", c.as, c.bs, got, c.want)
		}
		if got := OverlapAny(c.bs, c.as); got != c.want {
			t.Errorf("OverlapAny(%q, %q) = %v, want %v (swapped)", c.bs, c.as, got, c.want)
		}
	}
}

func TestLiteralPrefix(t *testing.T) {
	cases := []struct{ p, want string }{
		{"src/game/*.gd", "src/game"},
		{"assets/boss/**", "assets/boss"},
		{"**/*.go", ""},
		{"src/main.go", "src/main.go"},
		{"src", "src"},
		{"", ""},
		{"*", ""},
		{"a/b?/c", "a"},
		{"a/[bc]/d", "a"},
		{"a/{b,c}/d", "a"},
		{"{a,b}/c", ""},
		{"a/x{b}/d", "a"},
		{"a/b/c*", "a/b"},
		{"dir/", "dir"},
		{"/src//game/", "src/game"},
		{"a\\*b/c*", "a*b"},
		{"a\\{b\\}/c", "a{b}/c"},
		{"a\\{b}/c", ""}, // invalid: unmatched }
		{"a\\/b/*", "a/b"},
		{"a/**/b", "a"},
		{"é/ü/*", "é/ü"},
		{"a,b/c", "a,b/c"},
		{"[", ""},   // invalid
		{"a/{", ""}, // invalid
		{"a\\", ""}, // invalid
	}
	for _, c := range cases {
		if got := LiteralPrefix(c.p); got != c.want {
			t.Errorf("LiteralPrefix(%q) = %q, want %q", c.p, got, c.want)
		}
	}
}

// TestBraceCap checks the conservative fallback for patterns with more than
// MaxAlternatives brace alternatives.
func TestBraceCap(t *testing.T) {
	// 2^9 = 512 alternatives: over the cap.
	big := "src/x" + strings.Repeat("{a,b}", 9) + ".go"
	if n := len(compile(big).alts); n != 1 {
		t.Fatalf("over-cap pattern compiled to %d alternatives, want 1 (the fallback)", n)
	}
	if got := compile(big).alts[0].norm; got != "src/**" {
		t.Errorf("fallback = %q, want src/**", got)
	}
	// 2^8 = 256 alternatives: exactly at the cap, still exact.
	exact := "src/x" + strings.Repeat("{a,b}", 8) + ".go"
	if n := len(compile(exact).alts); n != 256 {
		t.Errorf("at-cap pattern compiled to %d alternatives, want 256", n)
	}
	cases := []overlapCase{
		{big, "src/xaaaaaaaaa.go", true},
		{big, "src/xbbbbbbbbb.go", true},
		{big, "src/other.go", true}, // conservative
		{big, "src", true},          // conservative
		{big, "lib/xaaaaaaaaa.go", false},
		{exact, "src/xaaaaaaaa.go", true},
		{exact, "src/xabababab.go", true},
		{exact, "src/xaaaaaaaac.go", false},
		{exact, "src/other.go", false},
		{"{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}", "lib", true}, // empty prefix: like **
	}
	for _, c := range cases {
		if got := Overlap(c.a, c.b); got != c.want {
			t.Errorf("Overlap(%.30q..., %q) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
	// Deeply nested and long brace patterns finish quickly.
	nested := strings.Repeat("{a,", 200) + "b" + strings.Repeat("}", 200)
	if !Overlap(nested, "a") || !Overlap(nested, "b") || Overlap(nested, "c") {
		t.Errorf("nested braces: wrong result")
	}
	blowup := strings.Repeat("{a,b,c,d}", 1000)
	if !Overlap(blowup, "**") || !Overlap(blowup, "x/y") {
		t.Errorf("brace blow-up: want the ** fallback (overlapping everything)")
	}
}

// TestNormalizedText pins the normalisation of alternatives.
func TestNormalizedText(t *testing.T) {
	cases := []struct {
		p    string
		want []string
	}{
		{"dir/", []string{"dir"}},
		{"/a//b/", []string{"a/b"}},
		{"a/**/**/b", []string{"a/**/b"}},
		{"**/**", []string{"**"}},
		{"a\\/b", []string{"a/b"}},
		{"{a,b}/c", []string{"a/c", "b/c"}},
		{"{a,a}", []string{"a"}},
		{"{a/,a}", []string{"a"}},
		{"x{,/}", []string{"x"}},
	}
	for _, c := range cases {
		var got []string
		for _, a := range compile(c.p).alts {
			got = append(got, a.norm)
		}
		if strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Errorf("alternatives of %q = %q, want %q", c.p, got, c.want)
		}
	}
}

// TestHugePatterns checks that very long patterns are decided exactly up to
// the product bound and conservatively beyond it, in reasonable time.
func TestHugePatterns(t *testing.T) {
	// The trailing ? hides the different last letters from the cheap
	// suffix test, so the product search has to decide.
	a, b := strings.Repeat("*a", 400)+"?", strings.Repeat("*b", 400)+"?"
	if Overlap(a, b) {
		t.Errorf("400 × *a vs 400 × *b: want no overlap (different second-to-last characters)")
	}
	if !Overlap(a, strings.Repeat("*a", 300)+"?") {
		t.Errorf("400 × *a vs 300 × *a: want an overlap")
	}
	a, b = strings.Repeat("*a", 1100)+"?", strings.Repeat("*b", 1100)+"?"
	if !Overlap(a, b) {
		t.Errorf("1100 × *a vs 1100 × *b: beyond the product bound, want the conservative true")
	}
	long := strings.Repeat("x/", 2000) + "y"
	if !Overlap(long, strings.Repeat("*/", 2000)+"*") || Overlap(long, strings.Repeat("*/", 1999)+"*") {
		t.Errorf("long literal path: wrong result")
	}
}

// TestCompiledSetAgreesWithOverlapAny: a Set compiled once gives the
// answers OverlapAny and pairwise Overlap give, for random lists of
// patterns (invalid ones and braces included), and can be reused.
func TestCompiledSetAgreesWithOverlapAny(t *testing.T) {
	tokens := []string{"a", "b", "/", "*", "?", "**", "[ab]", "{a,b/}", "[", "\\*"}
	r := rand.New(rand.NewPCG(7, 11))
	list := func() []string {
		out := make([]string, r.IntN(4)) // empty lists too
		for i := range out {
			out[i] = randomPattern(r, tokens, 1+r.IntN(4))
		}
		return out
	}
	n := 2000
	if testing.Short() {
		n = 300
	}
	for range n / 10 {
		as := list()
		set := Compile(as...)
		for range 10 { // the same Set against several lists
			bs := list()
			want := false
			for _, a := range as {
				for _, b := range bs {
					want = want || Overlap(a, b)
				}
			}
			if got := OverlapAny(as, bs); got != want {
				t.Fatalf("OverlapAny(%q, %q) = %v, pairwise Overlap says %v", as, bs, got, want)
			}
			if got := set.OverlapsAny(bs); got != want {
				t.Fatalf("Compile(%q).OverlapsAny(%q) = %v, want %v", as, bs, got, want)
			}
			if got := set.Overlaps(Compile(bs...)); got != want {
				t.Fatalf("Compile(%q).Overlaps(Compile(%q)) = %v, want %v", as, bs, got, want)
			}
			if got := Compile(bs...).OverlapsAny(as); got != want {
				t.Fatalf("Compile(%q).OverlapsAny(%q) = %v, want %v (swapped)", bs, as, got, want)
			}
		}
	}
	for _, c := range overlapCases {
		if got := Compile(c.a).OverlapsAny([]string{c.b}); got != c.want {
			t.Errorf("Compile(%q).OverlapsAny(%q) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

// TestEscape: an escaped path is a valid pattern that matches exactly
// that path, whatever characters it holds.
func TestEscape(t *testing.T) {
	cases := []struct{ path, want string }{
		{"src/main.go", "src/main.go"},
		{"src/[id].tsx", `src/\[id\].tsx`},
		{"src/[draft.txt", `src/\[draft.txt`},
		{"a*b?c", `a\*b\?c`},
		{"{x,y}", `\{x\,y\}`},
		{`back\slash`, `back\\slash`},
		{"ünï/cödé]", `ünï/cödé\]`},
	}
	for _, c := range cases {
		got := Escape(c.path)
		if got != c.want {
			t.Errorf("Escape(%q) = %q, want %q", c.path, got, c.want)
		}
		if !doublestar.ValidatePattern(got) {
			t.Errorf("Escape(%q) = %q is not a valid pattern", c.path, got)
		}
		if ok, _ := doublestar.Match(got, c.path); !ok {
			t.Errorf("doublestar.Match(%q, %q) = false", got, c.path)
		}
		if lp := LiteralPrefix(got); lp != c.path {
			t.Errorf("LiteralPrefix(%q) = %q, want the path %q", got, lp, c.path)
		}
		if !Overlap(got, got) {
			t.Errorf("Overlap(%q, itself) = false", got)
		}
	}
	// Taken literally, not as a class: "src/[id].tsx" is not "src/i.tsx".
	for _, c := range []overlapCase{
		{`src/\[id\].tsx`, "src/i.tsx", false},
		{`src/\[id\].tsx`, "src/[id].tsx", false}, // the class matches "src/i.tsx", "src/d.tsx"
		{`src/\[id\].tsx`, "src/*", true},
		{`src/\[draft.txt`, "src/**", true},
		{`src/\[draft.txt`, "lib/**", false},
	} {
		if got := Overlap(c.a, c.b); got != c.want {
			t.Errorf("Overlap(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}
