package hooks

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/crosscode/crosscode-mcp/bridge/hooks/wire"
	"github.com/crosscode/crosscode-mcp/internal/gitx"
)

// errOutside is a path in none of the repository's worktrees.
var errOutside = errors.New("outside the repository")

// findRepo finds the git repository around dir from the files git keeps
// (wire.Discover), without starting git: a hook runs before every edit.
// When git's environment points elsewhere (GIT_DIR, GIT_COMMON_DIR,
// GIT_WORK_TREE), or the files do not say, it asks git.
// gitx.ErrNotRepo when dir is in no work tree.
func findRepo(ctx context.Context, dir string, getenv func(string) string) (*gitx.Repo, error) {
	if gitEnv(getenv) {
		return gitx.Open(ctx, dir)
	}
	r, err := wire.Discover(dir)
	switch {
	case errors.Is(err, wire.ErrAskGit):
		return gitx.Open(ctx, dir)
	case errors.Is(err, wire.ErrNotRepo):
		return nil, fmt.Errorf("%w: %s", gitx.ErrNotRepo, r.Dir)
	case err != nil:
		return nil, err
	}
	return &gitx.Repo{Dir: r.Dir, Top: r.Top, GitDir: r.GitDir, CommonDir: r.CommonDir, IsWorktree: r.GitDir != r.CommonDir}, nil
}

// gitEnv: git's environment points to a repository of its own.
func gitEnv(getenv func(string) string) bool {
	return getenv("GIT_DIR") != "" || getenv("GIT_COMMON_DIR") != "" || getenv("GIT_WORK_TREE") != ""
}

// worktrees lists the top directories of every worktree of repo's clone:
// the main one and the linked ones git records in the common dir. The
// worktree repo is in comes first.
func worktrees(repo *gitx.Repo) []string {
	tops := []string{repo.Top}
	add := func(p string) {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			p = r
		}
		if !slices.Contains(tops, p) {
			tops = append(tops, p)
		}
	}
	if filepath.Base(repo.CommonDir) == ".git" {
		add(filepath.Dir(repo.CommonDir))
	}
	entries, _ := os.ReadDir(filepath.Join(repo.CommonDir, "worktrees"))
	for _, e := range entries {
		f, err := os.Open(filepath.Join(repo.CommonDir, "worktrees", e.Name(), "gitdir"))
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		if sc.Scan() {
			if p := strings.TrimSpace(sc.Text()); p != "" {
				add(filepath.Dir(filepath.Clean(p)))
			}
		}
		f.Close()
	}
	return tops
}

// resolver turns the paths a tool names into repository-relative paths.
type resolver struct {
	cwd    string   // what relative paths are relative to
	tops   []string // the worktrees' top directories
	nocase bool     // the file system ignores case (macOS, Windows by default)
}

func newResolver(repo *gitx.Repo, cwd string) *resolver {
	return &resolver{cwd: cwd, tops: worktrees(repo), nocase: caseInsensitive(repo.GitDir)}
}

// caseInsensitive reports whether the file system holding dir ignores the
// case of names: whether dir, written in other case, is the same file.
func caseInsensitive(dir string) bool {
	base := filepath.Base(dir)
	other := strings.ToUpper(base)
	if other == base {
		other = strings.ToLower(base)
	}
	if other == base {
		return false
	}
	a, err := os.Stat(dir)
	if err != nil {
		return false
	}
	b, err := os.Stat(filepath.Join(filepath.Dir(dir), other))
	return err == nil && os.SameFile(a, b)
}

// rel returns p (absolute, or relative to the session's directory) as a
// path relative to the worktree holding it, with "/": symlinks resolved
// (of the part that exists: a file about to be written may not), and on a
// file system that ignores case, in the case the names have on disk.
func (r *resolver) rel(p string) (string, error) {
	if !filepath.IsAbs(p) {
		p = filepath.Join(r.cwd, p)
	}
	p = resolveExisting(filepath.Clean(p))
	for _, top := range r.tops {
		rest, ok := under(top, p, r.nocase)
		if !ok {
			continue
		}
		if rest == "" {
			return "", fmt.Errorf("%s is the worktree itself, not a file in it", p)
		}
		if r.nocase {
			rest = diskCase(top, rest)
		}
		rel := filepath.ToSlash(rest)
		if rel == ".git" || strings.HasPrefix(rel, ".git/") {
			return "", fmt.Errorf("%s: %w (inside .git)", p, errOutside)
		}
		return rel, nil
	}
	return "", fmt.Errorf("%s: %w", p, errOutside)
}

// under returns p relative to top (in the OS's separators) when p is top
// or inside it.
func under(top, p string, nocase bool) (string, bool) {
	eq := func(a, b string) bool { return a == b }
	if nocase {
		eq = strings.EqualFold
	}
	if eq(p, top) {
		return "", true
	}
	prefix := top
	if !strings.HasSuffix(prefix, string(filepath.Separator)) {
		prefix += string(filepath.Separator)
	}
	if len(p) > len(prefix) && eq(p[:len(prefix)], prefix) {
		return p[len(prefix):], true
	}
	return "", false
}

// resolveExisting resolves the symlinks of the longest part of p that
// exists and keeps the rest as it is.
func resolveExisting(p string) string {
	var rest []string
	for cur := p; ; {
		if r, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(append([]string{r}, rest...)...)
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return p
		}
		rest = append([]string{filepath.Base(cur)}, rest...)
		cur = parent
	}
}

// diskCase rewrites rel (below top) in the case its names have on disk,
// as far as they exist.
func diskCase(top, rel string) string {
	parts := strings.Split(rel, string(filepath.Separator))
	dir := top
	for i, name := range parts {
		entries, err := os.ReadDir(dir)
		if err != nil {
			break
		}
		found := false
		for _, e := range entries {
			if e.Name() == name {
				found = true
				break
			}
		}
		if !found {
			for _, e := range entries {
				if strings.EqualFold(e.Name(), name) {
					parts[i], found = e.Name(), true
					break
				}
			}
		}
		if !found {
			break
		}
		dir = filepath.Join(dir, parts[i])
	}
	return filepath.Join(parts...)
}
