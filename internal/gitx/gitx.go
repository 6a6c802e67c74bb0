// Package gitx answers questions about the git repository around a
// directory: where it is, who the user is, what HEAD is, what changed in the
// working tree, what is staged and where hooks live.
//
// It shells out to the git binary found on PATH (no git library), always
// with core.quotepath=off, GIT_OPTIONAL_LOCKS=0 and LC_ALL=C, and reads at
// most [MaxOutput] bytes of any command's output. Nothing here writes to the
// repository: no index refresh, no objects, no refs (filters the user has
// configured, such as git-lfs's, still run when git diff reads files). The
// environment is otherwise inherited, so GIT_INDEX_FILE and GIT_DIR set by a
// calling git hook are honoured.
//
// Every error names the git command that failed and carries git's own
// message, e.g. "git diff: exit status 128: fatal: bad revision 'x'".
// Paths returned are repository-relative with '/' separators, except the
// absolute directories of [Repo].
package gitx

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

// ErrNotRepo is returned (wrapped) by [Open] when the directory is not inside
// a git work tree: outside any repository, inside a .git directory, or in a
// bare repository.
var ErrNotRepo = errors.New("not inside a git work tree")

// ErrNoGit is returned (wrapped) when the git program is not on PATH (a
// Windows machine without Git for Windows, say).
var ErrNoGit = errors.New("git is not installed (not on PATH)")

// Repo describes the git repository around a directory. The fields are
// filled by [Open]; a Repo is safe for concurrent use.
type Repo struct {
	Dir        string // the directory asked about (absolute)
	Top        string // git rev-parse --show-toplevel (absolute; the worktree's root)
	GitDir     string // git rev-parse --git-dir, absolute (per worktree: .git, or .git/worktrees/<name>)
	CommonDir  string // git rev-parse --git-common-dir, absolute (shared by all worktrees of a clone)
	IsWorktree bool   // a linked worktree (GitDir != CommonDir)

	index string // git rev-parse --git-path index (honours GIT_INDEX_FILE), absolute
}

// Open finds the git work tree containing dir (relative dirs are taken from
// the current directory) with a single git rev-parse. It returns an error
// wrapping [ErrNotRepo] when dir is not inside a work tree; other failures
// (dir missing, "dubious ownership") are returned as they are, but for a
// missing git program: [ErrNoGit].
//
// The directories are absolute with symlinks resolved, as git reports them
// (git 2.31 or newer; older git is supported with paths made absolute
// against Dir instead).
func Open(ctx context.Context, dir string) (*Repo, error) {
	if dir == "" {
		dir = "."
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("gitx: %w", err)
	}
	out, _, err := run(ctx, abs, cmdOpts{}, "rev-parse",
		"--path-format=absolute",
		"--is-inside-work-tree", // "false" inside .git or a bare repo, then --show-toplevel dies
		"--show-toplevel",
		"--git-dir",
		"--git-common-dir",
		"--git-path", "index")
	lines, oldGit := revParseLines(out)
	if len(lines) > 0 && lines[0] != "true" {
		return nil, fmt.Errorf("%w: %s", ErrNotRepo, abs)
	}
	if err != nil {
		if strings.Contains(err.Error(), "not a git repository") {
			return nil, fmt.Errorf("%w: %s", ErrNotRepo, abs)
		}
		if errors.Is(err, exec.ErrNotFound) {
			return nil, fmt.Errorf("%w: %w", ErrNoGit, err)
		}
		return nil, err
	}
	if len(lines) != 5 {
		return nil, fmt.Errorf("git rev-parse: unexpected output %q", out)
	}
	abspath := func(p string) string {
		if oldGit && !filepath.IsAbs(p) {
			p = filepath.Join(abs, p)
		}
		return filepath.Clean(p)
	}
	r := &Repo{
		Dir:       abs,
		Top:       abspath(lines[1]),
		GitDir:    abspath(lines[2]),
		CommonDir: abspath(lines[3]),
		index:     abspath(lines[4]),
	}
	r.IsWorktree = r.GitDir != r.CommonDir
	return r, nil
}

// revParseLines splits git rev-parse output into lines. Git older than 2.31
// does not know --path-format and echoes it back as the first line; that line
// is dropped and oldGit reported, meaning paths may be relative to the
// directory git ran in.
func revParseLines(out []byte) (lines []string, oldGit bool) {
	s := strings.TrimSuffix(string(out), "\n")
	if s == "" {
		return nil, false
	}
	lines = strings.Split(s, "\n")
	if lines[0] == "--path-format=absolute" {
		return lines[1:], true
	}
	return lines, false
}

// git runs a git command at the worktree root, so paths in its
// output are repository-relative.
func (r *Repo) git(ctx context.Context, o cmdOpts, sub string, args ...string) ([]byte, bool, error) {
	return run(ctx, r.Top, o, sub, args...)
}

// UserEmail returns git config user.email as git resolves it for this
// repository (local, global, system and included files). An unset value is
// "" with a nil error.
func (r *Repo) UserEmail(ctx context.Context) (string, error) {
	out, _, err := r.git(ctx, cmdOpts{}, "config", "--get", "user.email")
	if err != nil {
		if exitCode(err) == 1 { // the key is not set
			return "", nil
		}
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// CommitEmails returns the author's and the committer's email of a
// commit, given as a hex id (whole or abbreviated; anything else is an
// error, never a revision expression or an option). A commit this
// repository does not have is an error.
func (r *Repo) CommitEmails(ctx context.Context, commit string) (author, committer string, err error) {
	if !hexID.MatchString(commit) {
		return "", "", fmt.Errorf("commit %q: not a hex commit id", commit)
	}
	out, _, err := r.git(ctx, cmdOpts{}, "show", "-s", "--format=%ae%n%ce", commit+"^{commit}", "--")
	if err != nil {
		return "", "", err
	}
	author, committer, _ = strings.Cut(strings.TrimSpace(string(out)), "\n")
	return author, committer, nil
}

// hexID is a commit id: hex, abbreviated (7 digits at least) or whole.
var hexID = regexp.MustCompile(`^[0-9a-fA-F]{7,64}$`)

// Head returns the full sha of the commit HEAD points at ("" in a repository
// with no commits yet) and the current branch name without "refs/heads/"
// ("" when HEAD is detached). On an unborn branch, branch is set and commit
// is "".
func (r *Repo) Head(ctx context.Context) (commit, branch string, err error) {
	out, _, err := r.git(ctx, cmdOpts{}, "rev-parse", "-q", "--verify", "HEAD^{commit}")
	switch {
	case err == nil:
		commit = strings.TrimSpace(string(out))
	case exitCode(err) == 1: // no commit yet
	default:
		return "", "", err
	}
	out, _, err = r.git(ctx, cmdOpts{}, "symbolic-ref", "-q", "HEAD")
	switch {
	case err == nil:
		ref := strings.TrimSpace(string(out))
		if b, ok := strings.CutPrefix(ref, "refs/heads/"); ok {
			branch = b
		}
	case exitCode(err) == 1: // detached
	default:
		return "", "", err
	}
	return commit, branch, nil
}

// StagedPaths lists the paths staged for commit, as git diff --cached
// --name-only -z --no-renames reports them: repository-relative, sorted,
// both sides of a rename (the old path as a deletion, the new as an
// addition) and deleted files included. It honours GIT_INDEX_FILE, so it
// sees what a pre-commit hook is about to commit. In a repository with no
// commits every indexed path is staged. The result is empty, not nil, when
// nothing is staged.
func (r *Repo) StagedPaths(ctx context.Context) ([]string, error) {
	out, _, err := r.git(ctx, cmdOpts{global: diffConfig}, "diff", "--cached", "--name-only", "-z",
		"--no-renames", "--no-ext-diff", "--")
	if err != nil {
		return nil, err
	}
	paths := []string{}
	seen := map[string]bool{}
	for p := range bytes.SplitSeq(out, []byte{0}) {
		if len(p) == 0 || seen[string(p)] { // unmerged paths may repeat
			continue
		}
		seen[string(p)] = true
		paths = append(paths, string(p))
	}
	return paths, nil
}

// HooksDir returns the absolute directory git runs hooks from: core.hooksPath
// when set (a relative value is taken from the worktree root, as git does
// when it runs hooks), otherwise the hooks directory of the common git dir,
// shared by all worktrees. The directory may not exist. It reads the
// configuration anew on each call.
func (r *Repo) HooksDir(ctx context.Context) (string, error) {
	out, _, err := r.git(ctx, cmdOpts{}, "rev-parse", "--path-format=absolute", "--git-path", "hooks")
	if err != nil {
		return "", err
	}
	lines, oldGit := revParseLines(out)
	if len(lines) != 1 || lines[0] == "" {
		return "", fmt.Errorf("git rev-parse: unexpected output %q", out)
	}
	p := lines[0]
	if oldGit && !filepath.IsAbs(p) {
		p = filepath.Join(r.Top, p)
	}
	return filepath.Clean(p), nil
}
