package glob

import (
	"fmt"
	"testing"
)

// benchIndex builds an index of n claims with realistic patterns.
func benchIndex(n int) *Index {
	ix := NewIndex()
	for i := range n {
		var p string
		switch {
		case i%1000 == 999:
			p = "**/*.md" // a few repository-wide claims
		case i%3 == 0:
			p = fmt.Sprintf("src/mod%d/**", i)
		case i%3 == 1:
			p = fmt.Sprintf("assets/lvl%d/*.png", i)
		default:
			p = fmt.Sprintf("pkg/%d/file%d.go", i%97, i)
		}
		ix.Add(Entry{ID: fmt.Sprintf("r%05d", i), Actor: fmt.Sprintf("agent%d", i%7), Patterns: []string{p}})
	}
	return ix
}

func benchOverlapping(b *testing.B, query string, want int) {
	ix := benchIndex(10_000)
	q := []string{query}
	if got := len(ix.Overlapping(q, "")); got != want {
		b.Fatalf("Overlapping(%q) found %d, want %d", query, got, want)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		ix.Overlapping(q, "")
	}
}

// BenchmarkOverlappingConcretePath10k queries one concrete file path
// against 10,000 claims.
func BenchmarkOverlappingConcretePath10k(b *testing.B) {
	benchOverlapping(b, "src/mod42/game/boss.gd", 1)
}

// BenchmarkOverlappingGlob10k queries a directory glob.
func BenchmarkOverlappingGlob10k(b *testing.B) {
	benchOverlapping(b, "src/mod42/**", 11) // the module and the ten **/*.md
}

// BenchmarkOverlappingRootGlob10k queries a glob with no literal prefix,
// which must test every claim (the worst case).
func BenchmarkOverlappingRootGlob10k(b *testing.B) {
	benchOverlapping(b, "**/*.png", 6660) // assets/lvlN/*.png and src/modN/**
}

// BenchmarkScanAll10k is the naive alternative: test every claim, with
// patterns already compiled.
func BenchmarkScanAll10k(b *testing.B) {
	ix := benchIndex(10_000)
	var all []*alt
	for _, r := range ix.entries {
		for _, pl := range r.places {
			all = append(all, pl.alt)
		}
	}
	q := compile("src/mod42/game/boss.gd").alts[0]
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		n := 0
		for _, a := range all {
			if altOverlap(q, a) {
				n++
			}
		}
		if n != 1 {
			b.Fatalf("found %d", n)
		}
	}
}

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

// BenchmarkIndexAdd measures adding (and replacing) claims.
func BenchmarkIndexAdd(b *testing.B) {
	ix := benchIndex(10_000)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		ix.Add(Entry{ID: fmt.Sprintf("r%05d", i%10_000), Patterns: []string{fmt.Sprintf("src/mod%d/**", i)}})
		i++
	}
}
