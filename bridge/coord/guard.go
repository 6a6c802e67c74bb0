package coord

import (
	"context"
	"time"

	"github.com/crosscode/crosscode-mcp/internal/glob"
	"github.com/crosscode/crosscode-mcp/store"
)

// Held is a path another actor holds exclusively.
type Held struct {
	Path  string
	Claim store.Conflict
}

// HeldPaths returns, of paths, those inside an exclusive claim of an
// actor other than actor that is active at now: what the pre-commit guard
// refuses. st must be the workspace's local database.
//
// paths are file paths as git reports them (repository-relative, clean),
// not globs: each is checked as the pattern that matches exactly itself,
// so "src/[id].tsx" is that file and not a character class, and a name
// that would be an invalid glob ("src/[draft.txt") is checked all the same.
func HeldPaths(ctx context.Context, st *store.Store, workspace, actor string, paths []string, now time.Time) ([]Held, error) {
	if err := st.Project(ctx, workspace); err != nil {
		return nil, err
	}
	var out []Held
	for _, p := range paths {
		if p == "" {
			continue
		}
		cs, err := st.ConflictingClaims(ctx, workspace, []string{glob.Escape(p)}, actor, now)
		if err != nil {
			return nil, err
		}
		for _, c := range cs {
			if c.Exclusive && !c.Queued() { // a claim waiting its turn holds nothing yet
				out = append(out, Held{Path: p, Claim: c})
				break
			}
		}
	}
	return out, nil
}
