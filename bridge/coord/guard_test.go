package coord_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/crosscode/crosscode-mcp/bridge/coord"
	"github.com/crosscode/crosscode-mcp/store"
)

// TestGuardHeldPathsTakesPathsLiterally: the pre-commit guard checks
// staged file paths as the files they name, not as globs. A file whose
// name would be an invalid glob ("src/[draft.txt") is still inside
// another actor's exclusive claim on "src/**", and "lib/[id].tsx" is that
// file, not the class [id] that would collide with a claim on "lib/i.tsx".
func TestGuardHeldPathsTakesPathsLiterally(t *testing.T) {
	ctx := context.Background()
	const workspace = "mygame"
	path := filepath.Join(t.TempDir(), "ws.db")
	open := func() *store.Store {
		t.Helper()
		s, err := store.Open(ctx, path, &store.Options{Projections: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	c, err := coord.New(coord.Config{Workspace: workspace, Store: open(), Actor: "ada", Replica: "rep_a", Session: "ses_a"})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	claims := map[string]string{} // pattern -> claim id
	for _, cl := range []struct {
		pattern   string
		exclusive bool
	}{{"src/**", true}, {"lib/i.tsx", true}, {"docs/**", false}} {
		res, err := c.Claim(ctx, []string{cl.pattern}, cl.exclusive, "editing", time.Hour, "")
		if err != nil || res.Status != "granted" {
			t.Fatalf("claim %s: %v %+v", cl.pattern, err, res)
		}
		claims[cl.pattern] = res.Claim.ID
	}

	staged := []string{"README.md", "docs/a.md", "lib/[id].tsx", "lib/i.tsx", "src/[draft.txt", "src/[id].tsx", "src/{a,b}.go"}
	st := open() // the guard opens the database on its own
	held, err := coord.HeldPaths(ctx, st, workspace, "bo", staged, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, h := range held {
		got = append(got, h.Path)
		want := claims["src/**"]
		if h.Path == "lib/i.tsx" {
			want = claims["lib/i.tsx"]
		}
		if h.Claim.ClaimID != want || h.Claim.Actor != "ada" || !h.Claim.Exclusive {
			t.Errorf("%s held by %+v, want ada's exclusive claim %s", h.Path, h.Claim, want)
		}
	}
	if want := []string{"lib/i.tsx", "src/[draft.txt", "src/[id].tsx", "src/{a,b}.go"}; !slices.Equal(got, want) {
		t.Errorf("HeldPaths(%q) held %q, want %q", staged, got, want)
	}
	// Ada's own claims never hold her back.
	if held, err := coord.HeldPaths(ctx, st, workspace, "ada", staged, time.Now()); err != nil || len(held) != 0 {
		t.Errorf("HeldPaths for the holder: %+v, %v", held, err)
	}
}
