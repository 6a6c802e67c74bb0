package ids

import (
	"sort"
	"strings"
	"testing"
	"time"
)

func TestIDsAreUniqueAndTimeOrdered(t *testing.T) {
	base := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	var list []string
	seen := map[string]bool{}
	for i := range 1000 {
		id := newAt("clm", base.Add(time.Duration(i)*time.Millisecond))
		if !strings.HasPrefix(id, "clm_") || len(id) != 4+26 {
			t.Fatalf("bad id %q", id)
		}
		if seen[id] {
			t.Fatalf("duplicate %q", id)
		}
		seen[id] = true
		list = append(list, id)
	}
	if !sort.StringsAreSorted(list) {
		t.Fatal("ids of increasing times do not sort in order")
	}
	if a, b := New("x"), New("x"); a == b {
		t.Fatal("two ids equal")
	}
}
