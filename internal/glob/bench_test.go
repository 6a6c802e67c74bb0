package glob

import (
	"fmt"
	"testing"
)

// BenchmarkOverlap compiles and intersects one pair of patterns.
func BenchmarkOverlap(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if !Overlap("src/**/test/*.go", "src/pkg/*/*_test.go") {
			b.Fatal("want overlap")
		}
	}
}

// BenchmarkOverlapCompiled intersects one pair of compiled patterns.
func BenchmarkOverlapCompiled(b *testing.B) {
	x, y := compile("src/**/test/*.go"), compile("src/pkg/*/*_test.go")
	b.ReportAllocs()
	for b.Loop() {
		if !x.overlaps(y) {
			b.Fatal("want overlap")
		}
	}
}

// benchCandidates are claim pattern lists a query is tested against, as
// a conflict check does with the candidates its prefix lookup returned.
func benchCandidates(n int) [][]string {
	out := make([][]string, n)
	for i := range out {
		out[i] = []string{fmt.Sprintf("src/mod%d/**", i), fmt.Sprintf("assets/lvl%d/*.png", i)}
	}
	return out
}

var benchQuery = []string{"src/mod7/game/*.gd", "assets/**/boss.png", "docs/{a,b,c}/*.md"}

// BenchmarkOverlapAnyCandidates tests a query against 100 candidates with
// OverlapAny, compiling the query for each.
func BenchmarkOverlapAnyCandidates(b *testing.B) {
	cands := benchCandidates(100)
	b.ReportAllocs()
	for b.Loop() {
		for _, c := range cands {
			OverlapAny(benchQuery, c)
		}
	}
}

// BenchmarkSetOverlapsAnyCandidates does the same with the query compiled
// once.
func BenchmarkSetOverlapsAnyCandidates(b *testing.B) {
	cands := benchCandidates(100)
	b.ReportAllocs()
	for b.Loop() {
		q := Compile(benchQuery...)
		for _, c := range cands {
			q.OverlapsAny(c)
		}
	}
}
