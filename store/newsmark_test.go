package store

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/crosscode/crosscode-mcp/internal/testing/fixture"
)

// TestNewsMark: a mark is absent until set, only moves forward, is per
// workspace and key, and is seen by another handle on the file (another
// process of the machine).
func TestNewsMark(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ws.db")
	a, err := Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Open(ctx, path, &Options{Lazy: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if seq, ok, err := a.NewsMark(ctx, "mygame", "ref:s1"); err != nil || ok || seq != 0 {
		t.Fatalf("unset: %d %v %v", seq, ok, err)
	}
	for _, set := range []int64{0, 7, 3} {
		if err := b.SetNewsMark(ctx, "mygame", "ref:s1", set); err != nil {
			t.Fatal(err)
		}
	}
	if seq, ok, err := a.NewsMark(ctx, "mygame", "ref:s1"); err != nil || !ok || seq != 7 {
		t.Fatalf("after 0, 7, 3: %d %v %v, want 7", seq, ok, err)
	}
	for _, other := range [][2]string{{"mygame", "ref:s2"}, {"other", "ref:s1"}} {
		if _, ok, _ := a.NewsMark(ctx, other[0], other[1]); ok {
			t.Fatalf("%v has a mark", other)
		}
	}
}

// TestLazyStoreWrites: a store opened Lazy prepares its statements as they
// are first run: it ingests (multi-row inserts of every size included),
// projects and pages as an eager one does.
func TestLazyStoreWrites(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "ws.db"), &Options{Projections: true, Lazy: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.EnsureWorkspace(ctx, "mygame", ""); err != nil {
		t.Fatal(err)
	}
	r := fixture.NewReplica("mygame", "rep_a", "ada")
	var items []Item
	for i := range 203 { // 128 + 64 + 8 + 2 + 1 rows
		e := r.Claim(fmt.Sprintf("clm_lazy%03d", i), false, fmt.Sprintf("src/%d/**", i))
		items = append(items, Item{Workspace: "mygame", Envelope: e})
	}
	res, err := s.IngestBatch(ctx, items)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range res {
		if x.Err != nil {
			t.Fatal(x.Err)
		}
	}
	if head, err := s.Head(ctx, "mygame"); err != nil || head != 203 {
		t.Fatalf("head %d %v", head, err)
	}
	cs, err := s.ConflictingClaims(ctx, "mygame", []string{"src/7/x.go"}, "bo", fixture.Epoch.Add(time.Minute))
	if err != nil || len(cs) != 1 {
		t.Fatalf("conflicts %v %v", cs, err)
	}
}

// TestLazyStoreConnectsWriterOnWrite: a store opened Lazy on a database
// that is set up already reads through its reader alone (a hook that only
// checks claims never connects the writer), and connects the writer at its
// first write, which lands; on a new file it sets the database up at Open.
func TestLazyStoreConnectsWriterOnWrite(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ws.db")
	fresh, err := Open(ctx, path, &Options{Projections: true, Lazy: true})
	if err != nil {
		t.Fatal(err)
	}
	if n := fresh.w.Stats().OpenConnections; n != 1 {
		t.Errorf("a Lazy store on a new file: %d writer connections, want the one that set it up", n)
	}
	if _, err := fresh.EnsureWorkspace(ctx, "mygame", ""); err != nil {
		t.Fatal(err)
	}
	fresh.Close()

	s, err := Open(ctx, path, &Options{Projections: true, Lazy: true, Readers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Workspace(ctx, "mygame"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ConflictingClaims(ctx, "mygame", []string{"src/x.go"}, "bo", fixture.Epoch); err != nil {
		t.Fatal(err)
	}
	if n := s.w.Stats().OpenConnections; n != 0 {
		t.Fatalf("reads connected the writer (%d connections)", n)
	}
	r := fixture.NewReplica("mygame", "rep_a", "ada")
	if _, err := s.IngestBatch(ctx, []Item{{Workspace: "mygame", Envelope: r.Claim("clm_lazyw", true, "src/**")}}); err != nil {
		t.Fatal(err)
	}
	if n := s.w.Stats().OpenConnections; n != 1 {
		t.Fatalf("a write: %d writer connections, want 1", n)
	}
	if cs, err := s.ConflictingClaims(ctx, "mygame", []string{"src/x.go"}, "bo", fixture.Epoch.Add(time.Minute)); err != nil || len(cs) != 1 {
		t.Fatalf("the write did not land: %v %v", cs, err)
	}
}
