package protocol

import (
	"slices"
	"strings"
)

// NearNames returns up to n of names that look like name (case aside: a
// few letters changed, added or dropped, or one holding the other), the
// nearest first, for an error that says "did you mean ...".
func NearNames(name string, names []string, n int) []string {
	type near struct {
		name string
		d    int
	}
	q := strings.ToLower(name)
	limit := max(2, len(q)/3)
	var found []near
	for _, c := range names {
		lc := strings.ToLower(c)
		d := editDistance(q, lc)
		if d > limit && len(q) >= 3 && (strings.Contains(lc, q) || strings.Contains(q, lc)) {
			d = limit // one holds the other: "Left" and "ArrowLeft", "Spacebar" and "Space"
		}
		if d <= limit && c != name {
			found = append(found, near{c, d})
		}
	}
	slices.SortStableFunc(found, func(a, b near) int { return a.d - b.d })
	out := make([]string, 0, min(n, len(found)))
	for _, f := range found[:min(n, len(found))] {
		out = append(out, f.name)
	}
	return out
}

// editDistance is the Levenshtein distance of a and b, by bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
