package wire

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Repo is a git repository as the files git keeps say it is.
type Repo struct {
	Dir       string // the directory asked about (absolute, symlinks resolved)
	Top       string // the worktree's top directory
	GitDir    string // the worktree's git dir (.git, or .git/worktrees/NAME)
	CommonDir string // the clone's git dir, shared by its worktrees
}

var (
	// ErrNotRepo: the directory is in no git work tree.
	ErrNotRepo = errors.New("not in a git work tree")
	// ErrAskGit: the files do not say (a .git file that is no gitdir
	// file): git knows better.
	ErrAskGit = errors.New("ask git")
)

// Discover finds the git repository around dir by reading the files git
// keeps (.git, its gitdir and commondir files), as git rev-parse would
// and without starting git: a hook runs before every edit. It does not
// read git's environment: when GIT_DIR, GIT_COMMON_DIR or GIT_WORK_TREE
// is set, ask git instead. On ErrNotRepo, the Repo holds Dir.
func Discover(dir string) (Repo, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Repo{}, err
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		abs = r
	}
	for d := abs; ; {
		dotgit := filepath.Join(d, ".git")
		fi, err := os.Stat(dotgit)
		if err == nil {
			gitDir := dotgit
			if !fi.IsDir() {
				if gitDir, err = readGitFile(dotgit); err != nil {
					return Repo{Dir: abs}, fmt.Errorf("%w: %v", ErrAskGit, err)
				}
			}
			common := gitDir
			if b, err := os.ReadFile(filepath.Join(gitDir, "commondir")); err == nil {
				c := strings.TrimSpace(string(b))
				if !filepath.IsAbs(c) {
					c = filepath.Join(gitDir, c)
				}
				common = filepath.Clean(c)
			}
			return Repo{Dir: abs, Top: d, GitDir: gitDir, CommonDir: common}, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return Repo{Dir: abs}, ErrNotRepo
		}
		d = parent
	}
}

// readGitFile reads a .git file ("gitdir: PATH", PATH relative to the
// file's directory).
func readGitFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	dir, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir: ")
	if !ok {
		return "", fmt.Errorf("%s: not a gitdir file", path)
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(filepath.Dir(path), dir)
	}
	return filepath.Clean(dir), nil
}
