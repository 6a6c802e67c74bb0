package gitx

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/crosscode/crosscode-mcp/internal/testing/sysdeps"
	"github.com/crosscode/crosscode-mcp/protocol"
)

func TestMain(m *testing.M) {
	// Neither the machine's git configuration nor a calling git hook's
	// environment may leak into the test repositories.
	for _, k := range []string{
		"GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR",
		"GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES",
		"GIT_NAMESPACE", "GIT_PREFIX", "GIT_CONFIG", "GIT_CONFIG_PARAMETERS",
		"GIT_CONFIG_COUNT", "GIT_EXTERNAL_DIFF", "GIT_DIFF_OPTS",
	} {
		os.Unsetenv(k)
	}
	os.Setenv("GIT_CONFIG_GLOBAL", os.DevNull)
	os.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	// t.TempDir lives below os.TempDir(); never discover a repository
	// above it.
	os.Setenv("GIT_CEILING_DIRECTORIES", os.TempDir())
	os.Exit(m.Run())
}

// requireGit fails t when git is not installed (skips it under Wine,
// where git cannot run).
func requireGit(t *testing.T) {
	t.Helper()
	sysdeps.Need(t, "git")
}

// testRepo is a scratch repository in a temporary directory.
type testRepo struct {
	t   *testing.T
	dir string // absolute, symlinks resolved
}

// newRepo runs git init (branch main) with a user name and email set.
func newRepo(t *testing.T, initArgs ...string) *testRepo {
	t.Helper()
	requireGit(t)
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	dir = filepath.Join(dir, "repo")
	tr := &testRepo{t: t, dir: dir}
	args := append([]string{"-c", "init.defaultBranch=main", "init", "-q"}, initArgs...)
	tr.gitIn(filepath.Dir(dir), append(args, dir)...)
	tr.git("config", "user.name", "Test User")
	tr.git("config", "user.email", "test@example.com")
	tr.git("config", "commit.gpgsign", "false")
	return tr
}

func (tr *testRepo) git(args ...string) string {
	tr.t.Helper()
	return tr.gitIn(tr.dir, args...)
}

func (tr *testRepo) gitIn(dir string, args ...string) string {
	tr.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		tr.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

func (tr *testRepo) write(path, content string) {
	tr.t.Helper()
	p := filepath.Join(tr.dir, filepath.FromSlash(path))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		tr.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		tr.t.Fatal(err)
	}
}

func (tr *testRepo) remove(path string) {
	tr.t.Helper()
	if err := os.Remove(filepath.Join(tr.dir, filepath.FromSlash(path))); err != nil {
		tr.t.Fatal(err)
	}
}

func (tr *testRepo) commitAll(msg string) string {
	tr.t.Helper()
	tr.git("add", "-A")
	tr.git("commit", "-q", "-m", msg)
	return tr.git("rev-parse", "HEAD")
}

func (tr *testRepo) open() *Repo {
	tr.t.Helper()
	r, err := Open(context.Background(), tr.dir)
	if err != nil {
		tr.t.Fatalf("Open(%s): %v", tr.dir, err)
	}
	return r
}

func (tr *testRepo) changes(maxPatch int) *Changes {
	tr.t.Helper()
	c, err := tr.open().Changes(context.Background(), maxPatch)
	if err != nil {
		tr.t.Fatalf("Changes: %v", err)
	}
	return c
}

// byPath indexes files by path, failing on duplicates.
func byPath(t *testing.T, files []FileChange) map[string]FileChange {
	t.Helper()
	m := map[string]FileChange{}
	for _, f := range files {
		if _, dup := m[f.Path]; dup {
			t.Errorf("path %q listed twice", f.Path)
		}
		m[f.Path] = f
	}
	return m
}

func checkFiles(t *testing.T, got []FileChange, want []FileChange) {
	t.Helper()
	g := byPath(t, got)
	w := byPath(t, want)
	if !reflect.DeepEqual(g, w) {
		t.Errorf("files:\n got  %+v\n want %+v", got, want)
	}
}

func lines(n int, prefix string) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "%s line %d\n", prefix, i)
	}
	return b.String()
}

func TestOpenNotRepo(t *testing.T) {
	requireGit(t)
	ctx := context.Background()

	_, err := Open(ctx, t.TempDir())
	if !errors.Is(err, ErrNotRepo) {
		t.Errorf("empty dir: err = %v, want ErrNotRepo", err)
	}

	tr := newRepo(t)
	_, err = Open(ctx, filepath.Join(tr.dir, ".git"))
	if !errors.Is(err, ErrNotRepo) {
		t.Errorf("inside .git: err = %v, want ErrNotRepo", err)
	}

	bare := filepath.Join(t.TempDir(), "bare.git")
	tr.gitIn(filepath.Dir(bare), "init", "-q", "--bare", bare)
	_, err = Open(ctx, bare)
	if !errors.Is(err, ErrNotRepo) {
		t.Errorf("bare repo: err = %v, want ErrNotRepo", err)
	}

	_, err = Open(ctx, filepath.Join(t.TempDir(), "missing"))
	if err == nil || errors.Is(err, ErrNotRepo) {
		t.Errorf("missing dir: err = %v, want another error", err)
	}
}

func TestOpenPlain(t *testing.T) {
	tr := newRepo(t)
	tr.write("sub/dir/f.txt", "x\n")
	r := tr.open()
	want := &Repo{
		Dir: tr.dir, Top: tr.dir,
		GitDir: filepath.Join(tr.dir, ".git"), CommonDir: filepath.Join(tr.dir, ".git"),
		index: filepath.Join(tr.dir, ".git", "index"),
	}
	if !reflect.DeepEqual(r, want) {
		t.Errorf("Open = %+v, want %+v", r, want)
	}

	sub := filepath.Join(tr.dir, "sub", "dir")
	r, err := Open(context.Background(), sub)
	if err != nil {
		t.Fatal(err)
	}
	if r.Dir != sub || r.Top != tr.dir || r.GitDir != want.GitDir || r.IsWorktree {
		t.Errorf("Open(subdir) = %+v", r)
	}
}

func TestOpenWorktree(t *testing.T) {
	tr := newRepo(t)
	tr.write("a.txt", "a\n")
	tr.commitAll("init")
	wt := filepath.Join(filepath.Dir(tr.dir), "wt")
	tr.git("worktree", "add", "-q", "-b", "feature", wt)

	main, r := tr.open(), (&testRepo{t: t, dir: wt}).open()
	if r.Top != wt {
		t.Errorf("Top = %q, want %q", r.Top, wt)
	}
	if r.GitDir != filepath.Join(tr.dir, ".git", "worktrees", "wt") {
		t.Errorf("GitDir = %q", r.GitDir)
	}
	if r.GitDir == main.GitDir {
		t.Errorf("worktree GitDir equals main's: %q", r.GitDir)
	}
	if r.CommonDir != main.CommonDir || r.CommonDir != filepath.Join(tr.dir, ".git") {
		t.Errorf("CommonDir = %q, main's %q", r.CommonDir, main.CommonDir)
	}
	if !r.IsWorktree || main.IsWorktree {
		t.Errorf("IsWorktree: worktree %v, main %v", r.IsWorktree, main.IsWorktree)
	}

	ctx := context.Background()
	_, branch, err := r.Head(ctx)
	if err != nil || branch != "feature" {
		t.Errorf("Head branch = %q, %v; want feature", branch, err)
	}
	h1, err1 := r.HooksDir(ctx)
	h2, err2 := main.HooksDir(ctx)
	if err1 != nil || err2 != nil || h1 != h2 || h1 != filepath.Join(tr.dir, ".git", "hooks") {
		t.Errorf("HooksDir: worktree %q %v, main %q %v", h1, err1, h2, err2)
	}

	// The worktree has its own index and changes.
	wtr := &testRepo{t: t, dir: wt}
	wtr.write("a.txt", "a\nb\n")
	wtr.write("new.txt", "n\n")
	wtr.git("add", "new.txt")
	c := wtr.changes(1 << 20)
	checkFiles(t, c.Files, []FileChange{
		{Path: "a.txt", Status: protocol.FileModified, Additions: 1},
		{Path: "new.txt", Status: protocol.FileAdded, Additions: 1},
	})
	if c.Branch != "feature" {
		t.Errorf("Branch = %q", c.Branch)
	}
	if got := tr.changes(1 << 20); len(got.Files) != 0 {
		t.Errorf("main worktree sees changes: %+v", got.Files)
	}
}

func TestNoCommits(t *testing.T) {
	tr := newRepo(t)
	tr.write("staged.txt", "s1\ns2\n")
	tr.write("untracked.txt", "u\n")
	tr.write("bin.dat", "\x00\x01\x02")
	tr.write(".gitignore", "*.log\n")
	tr.write("ignored.log", "no\n")
	tr.git("add", "staged.txt")
	r := tr.open()
	ctx := context.Background()

	commit, branch, err := r.Head(ctx)
	if err != nil || commit != "" || branch != "main" {
		t.Errorf("Head = %q, %q, %v; want \"\", main", commit, branch, err)
	}
	c, err := r.Changes(ctx, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	checkFiles(t, c.Files, []FileChange{
		{Path: ".gitignore", Status: protocol.FileAdded, Additions: 1},
		{Path: "bin.dat", Status: protocol.FileAdded},
		{Path: "staged.txt", Status: protocol.FileAdded, Additions: 2},
		{Path: "untracked.txt", Status: protocol.FileAdded, Additions: 1},
	})
	if c.BaseCommit != "" || c.Branch != "main" || c.Truncated {
		t.Errorf("BaseCommit %q Branch %q Truncated %v", c.BaseCommit, c.Branch, c.Truncated)
	}
	for _, s := range []string{"+++ b/staged.txt\n", "+s2\n", "+++ b/untracked.txt\n", "Binary files /dev/null and b/bin.dat differ"} {
		if !strings.Contains(c.Patch, s) {
			t.Errorf("patch lacks %q:\n%s", s, c.Patch)
		}
	}
	staged, err := r.StagedPaths(ctx)
	if err != nil || !reflect.DeepEqual(staged, []string{"staged.txt"}) {
		t.Errorf("StagedPaths = %q, %v", staged, err)
	}
}

// A fresh repository with only untracked files has no index file at all.
func TestNoCommitsNoIndex(t *testing.T) {
	tr := newRepo(t)
	tr.write("a.txt", "a\n")
	if _, err := os.Stat(filepath.Join(tr.dir, ".git", "index")); err == nil {
		t.Fatal("index exists")
	}
	c := tr.changes(1000)
	checkFiles(t, c.Files, []FileChange{{Path: "a.txt", Status: protocol.FileAdded, Additions: 1}})
	if !strings.Contains(c.Patch, "+++ b/a.txt\n@@ -0,0 +1 @@\n+a\n") {
		t.Errorf("patch:\n%s", c.Patch)
	}
	staged, err := tr.open().StagedPaths(context.Background())
	if err != nil || len(staged) != 0 {
		t.Errorf("StagedPaths = %q, %v", staged, err)
	}
}

func TestChanges(t *testing.T) {
	tr := newRepo(t)
	tr.write("modified.txt", lines(5, "m"))
	tr.write("deleted.txt", lines(3, "d"))
	tr.write("gitmv-old.txt", lines(20, "g"))
	tr.write("plainmv-old.txt", lines(20, "p"))
	tr.write("bin.dat", "\x00\x01\x02\x03")
	tr.write("staged-then-edited.txt", "1\n")
	tr.write(".gitignore", "*.log\nbuild/\n")
	base := tr.commitAll("init")

	tr.write("modified.txt", strings.Replace(lines(5, "m"), "m line 2\n", "changed\n", 1)+"extra\n")
	tr.remove("deleted.txt")
	tr.git("mv", "gitmv-old.txt", "gitmv-new.txt")
	if err := os.Rename(filepath.Join(tr.dir, "plainmv-old.txt"), filepath.Join(tr.dir, "plainmv-new.txt")); err != nil {
		t.Fatal(err)
	}
	tr.write("bin.dat", "\x00\x09\x08")
	tr.write("staged-new.txt", "a\nb\n")
	tr.git("add", "staged-new.txt")
	tr.write("staged-then-edited.txt", "1\n2\n")
	tr.git("add", "staged-then-edited.txt")
	tr.write("staged-then-edited.txt", "1\n2\n3\n")
	tr.write("untracked/deep/u.txt", "u1\nu2\nu3\n")
	tr.write("empty.txt", "")
	tr.write("debug.log", "ignored\n")
	tr.write("build/out.txt", "ignored\n")

	c := tr.changes(1 << 20)
	checkFiles(t, c.Files, []FileChange{
		{Path: "modified.txt", Status: protocol.FileModified, Additions: 2, Deletions: 1},
		{Path: "deleted.txt", Status: protocol.FileDeleted, Deletions: 3},
		{Path: "gitmv-new.txt", Status: protocol.FileRenamed, OldPath: "gitmv-old.txt"},
		{Path: "plainmv-new.txt", Status: protocol.FileRenamed, OldPath: "plainmv-old.txt"},
		{Path: "bin.dat", Status: protocol.FileModified},
		{Path: "staged-new.txt", Status: protocol.FileAdded, Additions: 2},
		{Path: "staged-then-edited.txt", Status: protocol.FileModified, Additions: 2},
		{Path: "untracked/deep/u.txt", Status: protocol.FileAdded, Additions: 3},
		{Path: "empty.txt", Status: protocol.FileAdded},
	})
	if c.BaseCommit != base || c.Branch != "main" || c.Truncated {
		t.Errorf("BaseCommit %q (want %q) Branch %q Truncated %v", c.BaseCommit, base, c.Branch, c.Truncated)
	}
	for _, s := range []string{
		"diff --git a/modified.txt b/modified.txt\n",
		"-m line 2\n+changed\n",
		"rename from plainmv-old.txt\nrename to plainmv-new.txt\n",
		"Binary files a/bin.dat and b/bin.dat differ\n",
		"+++ b/untracked/deep/u.txt\n@@ -0,0 +1,3 @@\n+u1\n",
		"+3\n",
	} {
		if !strings.Contains(c.Patch, s) {
			t.Errorf("patch lacks %q", s)
		}
	}
	if strings.Contains(c.Patch, "debug.log") || strings.Contains(c.Patch, "build/") {
		t.Errorf("patch shows ignored files:\n%s", c.Patch)
	}

	// maxPatch <= 0: no patch, but the files.
	c0 := tr.changes(0)
	if c0.Patch != "" || !c0.Truncated || len(c0.Files) != len(c.Files) {
		t.Errorf("maxPatch 0: Patch %q Truncated %v files %d", c0.Patch, c0.Truncated, len(c0.Files))
	}
}

func TestChangesClean(t *testing.T) {
	tr := newRepo(t)
	tr.write("a.txt", "a\n")
	tr.commitAll("init")
	c := tr.changes(1000)
	if c.Files == nil || len(c.Files) != 0 || c.Patch != "" || c.Truncated {
		t.Errorf("clean repo: %+v", c)
	}
}

// Changes must leave the repository alone: same index bytes, no objects
// written, same git status.
func TestChangesReadOnly(t *testing.T) {
	tr := newRepo(t)
	tr.write("a.txt", "a\n")
	tr.commitAll("init")
	tr.write("a.txt", "a\nb\n")
	tr.write("new-big.txt", lines(1000, "new"))
	tr.write("new.bin", "\x00binary")

	index := filepath.Join(tr.dir, ".git", "index")
	before, err := os.ReadFile(index)
	if err != nil {
		t.Fatal(err)
	}
	objects := tr.git("count-objects", "-v")
	status := tr.git("status", "--porcelain=v1", "-uall")
	tmp := t.TempDir() // where the temporary index goes
	t.Setenv("TMPDIR", tmp)

	c := tr.changes(1 << 20)
	if len(c.Files) != 3 {
		t.Errorf("files = %+v", c.Files)
	}
	after, err := os.ReadFile(index)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Error("the index changed")
	}
	if got := tr.git("count-objects", "-v"); got != objects {
		t.Errorf("objects changed:\n%s\nwas\n%s", got, objects)
	}
	if got := tr.git("status", "--porcelain=v1", "-uall"); got != status {
		t.Errorf("status changed:\n%s\nwas\n%s", got, status)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("temporary files left behind: %v", left)
	}
}

func TestChangesPatchTruncation(t *testing.T) {
	tr := newRepo(t)
	for i := range 5 {
		tr.write(fmt.Sprintf("f%d.txt", i), lines(40, fmt.Sprintf("old%d", i)))
	}
	tr.commitAll("init")
	for i := range 5 {
		tr.write(fmt.Sprintf("f%d.txt", i), lines(40, fmt.Sprintf("new%d", i)))
	}
	full := tr.changes(1 << 20)
	if full.Truncated || len(full.Patch) < 5000 {
		t.Fatalf("full patch: %d bytes, truncated %v", len(full.Patch), full.Truncated)
	}
	if c := tr.changes(len(full.Patch)); c.Truncated || c.Patch != full.Patch {
		t.Errorf("maxPatch == len(patch): truncated %v, %d bytes", c.Truncated, len(c.Patch))
	}
	for _, max := range []int{1, 10, 100, 999, 1000, 2500, len(full.Patch) / 2, len(full.Patch) - 1} {
		c := tr.changes(max)
		if !c.Truncated {
			t.Errorf("max %d: not truncated", max)
		}
		if len(c.Patch) > max {
			t.Errorf("max %d: patch is %d bytes", max, len(c.Patch))
		}
		if !strings.HasPrefix(full.Patch, c.Patch) {
			t.Errorf("max %d: patch is not a prefix of the full patch", max)
		}
		if c.Patch != "" && !strings.HasSuffix(c.Patch, "\n") {
			t.Errorf("max %d: patch does not end at a line boundary", max)
		}
		if max >= 1000 && len(c.Patch) < max/2 {
			t.Errorf("max %d: patch only %d bytes", max, len(c.Patch))
		}
		// The rest starts with a header when a header boundary was used.
		rest := full.Patch[len(c.Patch):]
		if max >= 2500 && !strings.HasPrefix(rest, "diff --git ") && !strings.HasPrefix(rest, "@@ ") {
			t.Errorf("max %d: cut is not at a file or hunk boundary: %.40q", max, rest)
		}
		if len(c.Files) != 5 {
			t.Errorf("max %d: %d files", max, len(c.Files))
		}
	}
}

func TestCutPatch(t *testing.T) {
	hunk := "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n"
	for _, tc := range []struct{ in, want string }{
		{"no newline at all", ""},
		{"line\npartial", "line\n"},
		{hunk + "diff --git a/y b/y\n--- a", hunk},   // file boundary, keeps > half
		{hunk + "@@ -5 +5 @@\n-c\n+d\n+e\n+f", hunk}, // hunk boundary
		{hunk[:20] + strings.Repeat("+x\n", 20) + "+y", hunk[:20] + strings.Repeat("+x\n", 20)}, // header too early: line boundary
	} {
		if got := cutPatch([]byte(tc.in)); got != tc.want {
			t.Errorf("cutPatch(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestStagedPaths(t *testing.T) {
	tr := newRepo(t)
	tr.write("old name.txt", lines(10, "r"))
	tr.write("gone.txt", "g\n")
	tr.write("edit.txt", "e\n")
	tr.write("unstaged.txt", "u\n")
	tr.commitAll("init")
	tr.git("mv", "old name.txt", "new name.txt")
	tr.git("rm", "-q", "gone.txt")
	tr.write("edit.txt", "e2\n")
	tr.git("add", "edit.txt")
	tr.write("added.txt", "a\n")
	tr.git("add", "added.txt")
	tr.write("unstaged.txt", "u2\n")
	tr.write("untracked.txt", "x\n")

	got, err := tr.open().StagedPaths(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"added.txt", "edit.txt", "gone.txt", "new name.txt", "old name.txt"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("StagedPaths = %q, want %q", got, want)
	}

	tr.git("reset", "-q")
	got, err = tr.open().StagedPaths(context.Background())
	if err != nil || got == nil || len(got) != 0 {
		t.Errorf("nothing staged: %q, %v", got, err)
	}
}

func TestHooksDir(t *testing.T) {
	tr := newRepo(t)
	ctx := context.Background()
	r := tr.open()
	check := func(want string) {
		t.Helper()
		got, err := r.HooksDir(ctx)
		if err != nil || got != want {
			t.Errorf("HooksDir = %q, %v; want %q", got, err, want)
		}
	}
	check(filepath.Join(tr.dir, ".git", "hooks"))

	tr.git("config", "core.hooksPath", ".githooks")
	check(filepath.Join(tr.dir, ".githooks"))

	abs := filepath.Join(t.TempDir(), "shared-hooks")
	tr.git("config", "core.hooksPath", abs)
	check(abs)

	// From a subdirectory the answer is the same.
	tr.write("sub/f", "")
	r, _ = Open(ctx, filepath.Join(tr.dir, "sub"))
	check(abs)
}

func TestUserEmail(t *testing.T) {
	tr := newRepo(t)
	ctx := context.Background()
	email, err := tr.open().UserEmail(ctx)
	if err != nil || email != "test@example.com" {
		t.Errorf("UserEmail = %q, %v", email, err)
	}
	tr.git("config", "--unset", "user.email")
	email, err = tr.open().UserEmail(ctx)
	if err != nil || email != "" {
		t.Errorf("unset UserEmail = %q, %v; want \"\", nil", email, err)
	}
}

func TestHeadDetached(t *testing.T) {
	tr := newRepo(t)
	tr.write("a", "1\n")
	first := tr.commitAll("one")
	tr.write("a", "2\n")
	second := tr.commitAll("two")
	ctx := context.Background()

	commit, branch, err := tr.open().Head(ctx)
	if err != nil || commit != second || branch != "main" {
		t.Errorf("Head = %q %q %v; want %q main", commit, branch, err, second)
	}
	tr.git("checkout", "-q", "--detach", first)
	commit, branch, err = tr.open().Head(ctx)
	if err != nil || commit != first || branch != "" {
		t.Errorf("detached Head = %q %q %v; want %q \"\"", commit, branch, err, first)
	}
	tr.write("a", "3\n")
	c := tr.changes(1000)
	if c.BaseCommit != first || c.Branch != "" || len(c.Files) != 1 {
		t.Errorf("detached Changes = %+v", c)
	}
}

func TestUnicodeAndSpaces(t *testing.T) {
	tr := newRepo(t)
	const (
		mod   = "dir with space/naïve 文件.txt"
		old   = "ünïcödé old.txt"
		moved = "move d/ünïcödé new.txt"
		added = "new \"quoted\" ☃.txt"
		tab   = "tab\there.txt"
	)
	tr.write(mod, "x\n")
	tr.write(old, lines(10, "o"))
	tr.commitAll("init")
	tr.write(mod, "x\ny\n")
	if err := os.Mkdir(filepath.Join(tr.dir, "move d"), 0o755); err != nil {
		t.Fatal(err)
	}
	tr.git("mv", old, moved)
	tr.write(added, "q\n")
	tr.write(tab, "t\n")

	r := tr.open()
	c, err := r.Changes(context.Background(), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	checkFiles(t, c.Files, []FileChange{
		{Path: mod, Status: protocol.FileModified, Additions: 1},
		{Path: moved, Status: protocol.FileRenamed, OldPath: old},
		{Path: added, Status: protocol.FileAdded, Additions: 1},
		{Path: tab, Status: protocol.FileAdded, Additions: 1},
	})
	if !strings.Contains(c.Patch, "diff --git a/"+mod+" b/"+mod+"\n") {
		t.Errorf("patch does not show the unicode path unquoted:\n%s", c.Patch)
	}
	staged, err := r.StagedPaths(context.Background())
	if err != nil || !reflect.DeepEqual(staged, []string{moved, old}) {
		t.Errorf("StagedPaths = %q, %v", staged, err)
	}
}

// Configuration that changes git diff's output format must not change ours.
func TestHostileConfig(t *testing.T) {
	tr := newRepo(t)
	tr.write("sub/a.txt", lines(10, "a"))
	tr.write("b.txt", "b\n")
	tr.commitAll("init")
	for _, kv := range [][2]string{
		{"diff.noprefix", "true"},
		{"diff.mnemonicPrefix", "true"},
		{"color.ui", "always"},
		{"color.diff", "always"},
		{"diff.relative", "true"},
		{"diff.renames", "false"},
		{"diff.external", "false"},
		{"core.quotepath", "true"},
		{"status.showUntrackedFiles", "no"},
		{"core.splitIndex", "true"},
	} {
		tr.git("config", kv[0], kv[1])
	}
	tr.git("mv", "sub/a.txt", "sub/é.txt")
	tr.write("b.txt", "b\nc\n")
	tr.write("sub/untracked.txt", "u\n")

	r, err := Open(context.Background(), filepath.Join(tr.dir, "sub"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := r.Changes(context.Background(), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	checkFiles(t, c.Files, []FileChange{
		{Path: "sub/é.txt", Status: protocol.FileRenamed, OldPath: "sub/a.txt"},
		{Path: "b.txt", Status: protocol.FileModified, Additions: 1},
		{Path: "sub/untracked.txt", Status: protocol.FileAdded, Additions: 1},
	})
	if !strings.Contains(c.Patch, "diff --git a/b.txt b/b.txt\n") || strings.Contains(c.Patch, "\x1b[") {
		t.Errorf("patch format changed by config:\n%s", c.Patch)
	}
	staged, err := r.StagedPaths(context.Background())
	if err != nil || !reflect.DeepEqual(staged, []string{"sub/a.txt", "sub/é.txt"}) {
		t.Errorf("StagedPaths = %q, %v", staged, err)
	}
}

func TestSHA256(t *testing.T) {
	requireGit(t)
	if err := exec.Command("git", "init", "-q", "--object-format=sha256", t.TempDir()).Run(); err != nil {
		t.Skip("git without sha256 support")
	}
	tr := newRepo(t, "--object-format=sha256")
	tr.write("a.txt", "a\n")
	tr.write("u.txt", "u\n")
	tr.git("add", "a.txt")
	c := tr.changes(1000)
	checkFiles(t, c.Files, []FileChange{
		{Path: "a.txt", Status: protocol.FileAdded, Additions: 1},
		{Path: "u.txt", Status: protocol.FileAdded, Additions: 1},
	})
	base := tr.commitAll("init")
	tr.write("v.txt", "v\n")
	c = tr.changes(1000)
	if len(base) != 64 || c.BaseCommit != base {
		t.Errorf("BaseCommit = %q, want %q", c.BaseCommit, base)
	}
	checkFiles(t, c.Files, []FileChange{{Path: "v.txt", Status: protocol.FileAdded, Additions: 1}})
}

func TestChangesConflict(t *testing.T) {
	tr := newRepo(t)
	tr.write("c.txt", "base\n")
	tr.commitAll("base")
	tr.git("checkout", "-q", "-b", "other")
	tr.write("c.txt", "other\n")
	tr.commitAll("other")
	tr.git("checkout", "-q", "main")
	tr.write("c.txt", "main\n")
	tr.commitAll("main")
	cmd := exec.Command("git", "merge", "-q", "other")
	cmd.Dir = tr.dir
	if err := cmd.Run(); err == nil {
		t.Fatal("merge did not conflict")
	}
	c := tr.changes(1 << 20)
	if len(c.Files) != 1 || c.Files[0].Path != "c.txt" || c.Files[0].Status != protocol.FileModified {
		t.Errorf("conflict: %+v", c.Files)
	}
	staged, err := tr.open().StagedPaths(context.Background())
	if err != nil || !reflect.DeepEqual(staged, []string{"c.txt"}) {
		t.Errorf("StagedPaths = %q, %v", staged, err)
	}
}

func TestNestedRepoIgnored(t *testing.T) {
	tr := newRepo(t)
	tr.write("a.txt", "a\n")
	tr.commitAll("init")
	tr.gitIn(tr.dir, "init", "-q", "nested")
	tr.write("nested/n.txt", "n\n")
	tr.write("b.txt", "b\n")
	c := tr.changes(1000)
	checkFiles(t, c.Files, []FileChange{{Path: "b.txt", Status: protocol.FileAdded, Additions: 1}})
}

func TestContextCanceled(t *testing.T) {
	tr := newRepo(t)
	r := tr.open()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := r.Changes(ctx, 100); !errors.Is(err, context.Canceled) {
		t.Errorf("Changes: err = %v, want context.Canceled", err)
	}
	if _, err := Open(ctx, tr.dir); !errors.Is(err, context.Canceled) {
		t.Errorf("Open: err = %v, want context.Canceled", err)
	}
}

func TestRunErrors(t *testing.T) {
	tr := newRepo(t)
	ctx := context.Background()

	_, _, err := run(ctx, tr.dir, cmdOpts{}, "rev-parse", "--verify", "no-such-rev")
	if err == nil || !strings.HasPrefix(err.Error(), "git rev-parse: exit status 128: fatal:") || exitCode(err) != 128 {
		t.Errorf("err = %v (exit %d)", err, exitCode(err))
	}

	// Output over the limit fails clearly (hash-object prints a line per
	// path read from stdin)...
	tr.write("big.txt", strings.Repeat("0123456789\n", 1000))
	out, trunc, err := run(ctx, tr.dir, cmdOpts{limit: 100}, "hash-object", "--stdin-paths")
	if err != nil || trunc || len(out) != 0 {
		t.Errorf("small output: %q %v %v", out, trunc, err)
	}
	_, _, err = run(ctx, tr.dir, cmdOpts{limit: 100, stdin: strings.NewReader(strings.Repeat("big.txt\n", 10))}, "hash-object", "--stdin-paths")
	if err == nil || !strings.Contains(err.Error(), "git hash-object: output exceeds 100 bytes") {
		t.Errorf("over limit: err = %v", err)
	}
	// ...unless truncation was asked for.
	out, trunc, err = run(ctx, tr.dir, cmdOpts{limit: 100, truncate: true, stdin: strings.NewReader(strings.Repeat("big.txt\n", 10))}, "hash-object", "--stdin-paths")
	if err != nil || !trunc || len(out) != 100 {
		t.Errorf("truncate: %d bytes, %v, %v", len(out), trunc, err)
	}
}

func TestParseRawNumstat(t *testing.T) {
	in := ":100644 100644 aaa 000 M\x00m.txt\x00" +
		":100644 100644 bbb bbb R087\x00old\x00new\x00" +
		":000000 100644 000 ccc A\x00bin\x00" +
		":100644 000000 ddd 000 D\x00gone\x00" +
		"3\t1\tm.txt\x00" + "2\t5\t\x00old\x00new\x00" + "-\t-\tbin\x00" + "0\t4\tgone\x00"
	got, err := parseRawNumstat([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []FileChange{
		{Path: "m.txt", Status: protocol.FileModified, Additions: 3, Deletions: 1},
		{Path: "new", Status: protocol.FileRenamed, OldPath: "old", Additions: 2, Deletions: 5},
		{Path: "bin", Status: protocol.FileAdded},
		{Path: "gone", Status: protocol.FileDeleted, Deletions: 4},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
	for _, bad := range []string{":100644 M\x00x\x00", ":1 2 3 4 R100\x00only-one", "x\ty\tz\x00", "1\t2\x00"} {
		if _, err := parseRawNumstat([]byte(bad)); err == nil {
			t.Errorf("parseRawNumstat(%q): no error", bad)
		}
	}
	if got, err := parseRawNumstat(nil); err != nil || got == nil || len(got) != 0 {
		t.Errorf("empty: %v %v", got, err)
	}
}

// TestCommitEmails: a commit's author and committer, by its id, whole or
// abbreviated; anything but a hex id is refused before git runs (it comes
// from other agents), and an unknown commit is an error.
func TestCommitEmails(t *testing.T) {
	tr := newRepo(t)
	tr.write("a.txt", "a\n")
	tr.git("add", "-A")
	tr.git("-c", "user.email=ada@example.com", "commit", "-q", "-m", "a", "--author", "Bo <bo@example.com>")
	head := tr.git("rev-parse", "HEAD")
	r := tr.open()
	ctx := context.Background()
	for _, id := range []string{head, head[:7], strings.ToUpper(head[:12])} {
		author, committer, err := r.CommitEmails(ctx, id)
		if err != nil || author != "bo@example.com" || committer != "ada@example.com" {
			t.Errorf("%s: %q %q %v", id, author, committer, err)
		}
	}
	for _, bad := range []string{"HEAD", "--output=x", head[:6], "main", "1111111111111111111111111111111111111111", ""} {
		if a, c, err := r.CommitEmails(ctx, bad); err == nil {
			t.Errorf("%q: %q %q, want an error", bad, a, c)
		}
	}
}
