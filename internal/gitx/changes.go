package gitx

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/crosscode/crosscode-mcp/protocol"
)

// FileChange is one changed path of [Changes].
type FileChange struct {
	Path   string              // repository-relative with '/'; for a rename, the new path
	Status protocol.FileStatus // modified also for type changes (file <-> symlink) and unmerged paths
	// Additions and Deletions count lines; both are 0 for binary files.
	Additions, Deletions int64
	OldPath              string // the path in HEAD, for renames only
}

// Changes is the working tree's difference from HEAD.
type Changes struct {
	Files     []FileChange // in git's order (sorted by path); empty, not nil, when clean
	Patch     string       // unified diff (a/ b/ prefixes), at most maxPatch bytes
	Truncated bool         // Patch is shorter than the full diff
	// BaseCommit is the commit compared against ("" when the repository has
	// no commits and everything is added); Branch is the current branch
	// ("" when HEAD is detached).
	BaseCommit, Branch string
}

// emptyBlob is the empty blob's object id, by hash length (SHA-1, SHA-256).
var emptyBlob = map[int]string{
	40: "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391",
	64: "473a0f4c3be8a93681a267e3b1e9a7dcda1185436fe141f7749120a303721813",
}

// diffConfig and diffOpts make git diff's output independent of user
// configuration that would change its format. (diff.relative is switched off
// with -c rather than --no-relative, which git before 2.28 does not know.)
var (
	diffConfig = []string{"-c", "diff.relative=false"}
	diffOpts   = []string{"--no-ext-diff", "--no-color", "--find-renames"}
)

// Changes reports the working tree's changes against HEAD: staged and
// unstaged changes together, plus untracked files as added unless they are
// ignored (.gitignore, .git/info/exclude, core.excludesFile). Renames are
// detected, including a file moved with plain mv (status renamed, Path the
// new path, OldPath the old one). Binary files count 0 additions and 0
// deletions. In a repository with no commits everything is added and
// BaseCommit is "". Untracked nested repositories are not reported.
//
// Patch is the unified diff of the same changes, cut to at most maxPatch
// bytes: at the start of the last file or hunk that fits when that keeps at
// least half of maxPatch, otherwise after the last complete line; Truncated
// is set when anything was cut. Patch is file content as git prints it:
// it may be invalid UTF-8 and must be sanitised before display. maxPatch
// <= 0 produces no patch (Truncated is then set if there are changes).
//
// Untracked files are taken into the diff through a temporary copy of the
// index, outside the repository; the repository's own index and object
// store are not touched. Files and Patch come from two git runs, so a file
// edited in between may differ between them.
func (r *Repo) Changes(ctx context.Context, maxPatch int) (*Changes, error) {
	commit, branch, err := r.Head(ctx)
	if err != nil {
		return nil, err
	}
	base := commit
	if base == "" {
		out, _, err := r.git(ctx, cmdOpts{stdin: strings.NewReader("")}, "hash-object", "-t", "tree", "--stdin")
		if err != nil {
			return nil, err
		}
		base = strings.TrimSpace(string(out))
	}
	blob, ok := emptyBlob[len(base)]
	if !ok {
		return nil, fmt.Errorf("gitx: unknown object id format %q", base)
	}

	o := cmdOpts{global: diffConfig}
	untracked, err := r.untracked(ctx)
	if err != nil {
		return nil, err
	}
	if len(untracked) > 0 {
		index, cleanup, err := r.tempIndex(ctx, untracked, blob)
		if err != nil {
			return nil, err
		}
		defer cleanup()
		o.env = []string{"GIT_INDEX_FILE=" + index}
	}

	args := append(append([]string{}, diffOpts...), "--raw", "--numstat", "-z", base, "--")
	out, _, err := r.git(ctx, o, "diff", args...)
	if err != nil {
		return nil, err
	}
	files, err := parseRawNumstat(out)
	if err != nil {
		return nil, err
	}
	c := &Changes{Files: files, BaseCommit: commit, Branch: branch}
	if len(files) == 0 {
		return c, nil
	}
	if maxPatch <= 0 {
		c.Truncated = true
		return c, nil
	}

	o.limit, o.truncate = maxPatch, true
	args = append(append([]string{}, diffOpts...), "--patch", "--src-prefix=a/", "--dst-prefix=b/", base, "--")
	out, truncated, err := r.git(ctx, o, "diff", args...)
	if err != nil {
		return nil, err
	}
	if truncated {
		c.Patch, c.Truncated = cutPatch(out), true
	} else {
		c.Patch = string(out)
	}
	return c, nil
}

// untracked lists untracked, not ignored files. Untracked nested
// repositories ("dir/") are left out: git cannot diff them as files.
func (r *Repo) untracked(ctx context.Context) ([]string, error) {
	out, _, err := r.git(ctx, cmdOpts{}, "ls-files", "--others", "--exclude-standard", "-z")
	if err != nil {
		return nil, err
	}
	var paths []string
	for p := range bytes.SplitSeq(out, []byte{0}) {
		if len(p) == 0 || p[len(p)-1] == '/' {
			continue
		}
		paths = append(paths, string(p))
	}
	return paths, nil
}

// tempIndex copies the index to a temporary directory and adds the
// untracked paths to the copy as entries with no valid stat data, so git
// diff against a tree reads them from the working tree as added files. The
// entries name the empty blob, which is never read (nor written): the stat
// data never matches. A path deleted since it was listed is simply skipped
// by git diff. cleanup removes the directory.
func (r *Repo) tempIndex(ctx context.Context, paths []string, blob string) (index string, cleanup func(), err error) {
	dir, err := os.MkdirTemp("", "gitx-index-")
	if err != nil {
		return "", nil, fmt.Errorf("gitx: temporary index: %w", err)
	}
	cleanup = func() { os.RemoveAll(dir) }
	index = filepath.Join(dir, "index")
	if err := copyFile(r.index, index); err != nil && !errors.Is(err, fs.ErrNotExist) {
		cleanup()
		return "", nil, fmt.Errorf("gitx: temporary index: %w", err)
	}
	var in bytes.Buffer
	for _, p := range paths {
		in.WriteString("100644 ")
		in.WriteString(blob)
		in.WriteByte('\t')
		in.WriteString(p)
		in.WriteByte(0)
	}
	o := cmdOpts{
		// A split index would put its shared part in the repository.
		global: []string{"-c", "core.splitIndex=false"},
		env:    []string{"GIT_INDEX_FILE=" + index},
		stdin:  &in,
	}
	if _, _, err := r.git(ctx, o, "update-index", "-z", "--index-info"); err != nil {
		cleanup()
		return "", nil, err
	}
	return index, cleanup, nil
}

// copyFile copies src to dst (a new file). The index is replaced atomically
// by git, so an open file is a consistent snapshot.
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// parseRawNumstat parses git diff --raw --numstat -z: first the raw records
// (":srcmode dstmode srcsha dstsha status\0path\0", with a second path for
// renames and copies), then the numstat records ("add\tdel\tpath\0", or
// "add\tdel\t\0old\0new\0" for renames; "-" counts for binary files).
func parseRawNumstat(out []byte) ([]FileChange, error) {
	toks := strings.Split(string(out), "\x00")
	files := []FileChange{}
	at := map[string]int{} // path -> index in files
	bad := func(what string) error {
		return fmt.Errorf("git diff: cannot parse %s in --raw --numstat output", what)
	}
	for i := 0; i < len(toks); {
		t := toks[i]
		if t == "" { // the terminator after the last record
			i++
			continue
		}
		if t[0] == ':' {
			f := strings.Fields(t[1:])
			if len(f) != 5 || f[4] == "" {
				return nil, bad(fmt.Sprintf("raw record %q", t))
			}
			n := 1
			if f[4][0] == 'R' || f[4][0] == 'C' {
				n = 2
			}
			if i+n >= len(toks) {
				return nil, bad("truncated raw record")
			}
			fc := FileChange{Path: toks[i+n], Status: statusName(f[4][0])}
			if f[4][0] == 'R' {
				fc.OldPath = toks[i+1]
			}
			i += 1 + n
			if j, ok := at[fc.Path]; ok {
				// An unmerged path can be listed twice; keep the more
				// telling status.
				if files[j].Status == protocol.FileModified {
					files[j].Status, files[j].OldPath = fc.Status, fc.OldPath
				}
				continue
			}
			at[fc.Path] = len(files)
			files = append(files, fc)
			continue
		}
		f := strings.SplitN(t, "\t", 3)
		if len(f) != 3 {
			return nil, bad(fmt.Sprintf("numstat record %q", t))
		}
		path := f[2]
		i++
		if path == "" { // rename: old and new paths follow
			if i+1 >= len(toks) {
				return nil, bad("truncated numstat record")
			}
			path = toks[i+1]
			i += 2
		}
		add, err1 := parseCount(f[0])
		del, err2 := parseCount(f[1])
		if err1 != nil || err2 != nil {
			return nil, bad(fmt.Sprintf("numstat record %q", t))
		}
		if j, ok := at[path]; ok {
			files[j].Additions, files[j].Deletions = add, del
		}
	}
	return files, nil
}

// parseCount parses a numstat count; "-" (a binary file) is 0.
func parseCount(s string) (int64, error) {
	if s == "-" {
		return 0, nil
	}
	return strconv.ParseInt(s, 10, 64)
}

// statusName maps a git diff status letter to a FileChange status.
func statusName(c byte) protocol.FileStatus {
	switch c {
	case 'A', 'C':
		return protocol.FileAdded
	case 'D':
		return protocol.FileDeleted
	case 'R':
		return protocol.FileRenamed
	default: // M, T (type change), U (unmerged), X
		return protocol.FileModified
	}
}

// cutPatch cuts p, the first maxPatch bytes of a longer patch, at a
// boundary: the start of the last "diff --git" or "@@" header line, if that
// keeps at least half of p, else the end of the last complete line. Those
// headers cannot occur inside content lines, which start with ' ', '+', '-'
// or '\'.
func cutPatch(p []byte) string {
	nl := bytes.LastIndexByte(p, '\n')
	if nl < 0 {
		return ""
	}
	lines := p[:nl+1]
	hdr := max(bytes.LastIndex(lines, []byte("\ndiff --git ")), bytes.LastIndex(lines, []byte("\n@@ ")))
	if hdr >= 0 && hdr+1 >= len(p)/2 {
		return string(p[:hdr+1])
	}
	return string(lines)
}
