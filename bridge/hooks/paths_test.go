package hooks

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/crosscode/crosscode-mcp/internal/gitx"
)

// fakeRepo makes a main worktree and a linked one the way git lays them
// out, without git.
func fakeRepo(t *testing.T) (main, linked string) {
	t.Helper()
	root, _ := filepath.EvalSymlinks(t.TempDir())
	main, linked = filepath.Join(root, "game"), filepath.Join(root, "game-bo")
	gitdir := filepath.Join(main, ".git", "worktrees", "game-bo")
	for _, d := range []string{filepath.Join(main, "Src", "Game"), gitdir, linked} {
		os.MkdirAll(d, 0o755)
	}
	os.WriteFile(filepath.Join(main, "Src", "Game", "Boss.gd"), nil, 0o644)
	os.WriteFile(filepath.Join(linked, ".git"), []byte("gitdir: "+gitdir+"\n"), 0o644)
	os.WriteFile(filepath.Join(gitdir, "commondir"), []byte("../..\n"), 0o644)
	os.WriteFile(filepath.Join(gitdir, "gitdir"), []byte(filepath.Join(linked, ".git")+"\n"), 0o644)
	return main, linked
}

func noenv(string) string { return "" }

// TestFindRepoReadsGitFiles: from a subdirectory of a linked worktree,
// the repository is found as git rev-parse reports it, with both
// worktrees listed.
func TestFindRepoReadsGitFiles(t *testing.T) {
	main, linked := fakeRepo(t)
	os.MkdirAll(filepath.Join(linked, "docs"), 0o755)
	r, err := findRepo(t.Context(), filepath.Join(linked, "docs"), noenv)
	if err != nil {
		t.Fatal(err)
	}
	want := gitx.Repo{Dir: filepath.Join(linked, "docs"), Top: linked, GitDir: filepath.Join(main, ".git", "worktrees", "game-bo"), CommonDir: filepath.Join(main, ".git"), IsWorktree: true}
	if *r != want {
		t.Fatalf("repo %+v, want %+v", *r, want)
	}
	if tops := worktrees(r); !slices.Equal(tops, []string{linked, main}) {
		t.Fatalf("worktrees %v", tops)
	}
	if _, err := findRepo(t.Context(), filepath.Dir(main), noenv); err == nil {
		t.Fatal("no repository above the worktrees: want an error")
	}
}

// TestResolverPaths: paths become repository-relative with "/", from
// either worktree; on a file system that ignores case they take the case
// the names have on disk; outside the worktrees and inside .git they are
// refused.
func TestResolverPaths(t *testing.T) {
	main, linked := fakeRepo(t)
	r, err := findRepo(t.Context(), linked, noenv)
	if err != nil {
		t.Fatal(err)
	}
	res := &resolver{cwd: linked, tops: worktrees(r)}
	nocase := &resolver{cwd: linked, tops: worktrees(r), nocase: true}
	// Where names differ by case only on a file system that keeps case
	// (not Windows, whose paths resolve to the names on disk).
	lower := "src/game/boss.gd"
	if runtime.GOOS == "windows" {
		lower = "Src/Game/Boss.gd"
	}
	for _, tc := range []struct {
		res     *resolver
		in, out string
	}{
		{res, filepath.Join("src", "a.go"), "src/a.go"},
		{res, filepath.Join(linked, "src", "..", "src", "a.go"), "src/a.go"},
		{res, filepath.Join(main, "Src", "Game", "Boss.gd"), "Src/Game/Boss.gd"},
		{res, filepath.Join(main, "src", "game", "boss.gd"), lower}, // case counts here, on Linux
		{nocase, filepath.Join(strings.ToUpper(main[:1])+main[1:], "SRC", "game", "BOSS.gd"), "Src/Game/Boss.gd"},
		{nocase, filepath.Join(main, "src", "game", "new.gd"), "Src/Game/new.gd"}, // a new file keeps its name
	} {
		got, err := tc.res.rel(tc.in)
		if err != nil || got != tc.out {
			t.Errorf("rel(%s) nocase=%v = %q, %v; want %q", tc.in, tc.res.nocase, got, err, tc.out)
		}
	}
	for _, in := range []string{filepath.Join(filepath.Dir(main), "other", "x.go"), filepath.Join(main, ".git", "config"), main} {
		if got, err := res.rel(in); err == nil {
			t.Errorf("rel(%s) = %q, want an error", in, got)
		}
	}
}

// TestEditedPaths: the paths each client's file-editing tools name, and
// none for other tools.
func TestEditedPaths(t *testing.T) {
	for _, tc := range []struct {
		client, tool, input string
		want                []string
	}{
		{"claude-code", "Edit", `{"file_path": "/r/a.go", "old_string": "x"}`, []string{"/r/a.go"}},
		{"claude-code", "NotebookEdit", `{"notebook_path": "n.ipynb"}`, []string{"n.ipynb"}},
		{"claude-code", "Bash", `{"command": "rm -rf /"}`, nil},
		{"claude-code", "Write", `"not an object"`, nil},
		{"gemini", "replace", `{"file_path": "b.go"}`, []string{"b.go"}},
		{"gemini", "Edit", `{"file_path": "b.go"}`, nil},
		{"codex", "apply_patch", `{"command": ["apply_patch", "*** Begin Patch\n*** Add File: x/new.go\n+a\n*** Update File: y.go\n*** Move to: z.go\n*** Delete File: old.go\n*** End Patch"]}`, []string{"x/new.go", "y.go", "z.go", "old.go"}},
		{"codex", "shell", `{"command": ["ls"]}`, nil},
	} {
		got := editedPaths(tc.client, &Input{ToolName: tc.tool, ToolInput: json.RawMessage(tc.input)})
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s %s: %q, want %q", tc.client, tc.tool, got, tc.want)
		}
	}
}

// TestLoadPolicy: the default, the file, an override, and mistakes.
func TestLoadPolicy(t *testing.T) {
	top := t.TempDir()
	if p, err := LoadPolicy(top, ""); err != nil || p.Policy != PolicyDeny || p.ttl != DefaultClaimTTL {
		t.Fatalf("no file: %+v %v", p, err)
	}
	os.MkdirAll(filepath.Join(top, ".crosscode"), 0o755)
	write := func(s string) { os.WriteFile(filepath.Join(top, PolicyFile), []byte(s), 0o644) }
	write(`{"policy": "claim", "claimTTL": "5m", "denyShared": true}`)
	if p, err := LoadPolicy(top, ""); err != nil || p.Policy != PolicyClaim || p.ttl.Minutes() != 5 || !p.DenyShared {
		t.Fatalf("file: %+v %v", p, err)
	}
	if p, err := LoadPolicy(top, "warn"); err != nil || p.Policy != PolicyWarn {
		t.Fatalf("override: %+v %v", p, err)
	}
	for _, bad := range []string{`{"policy": "block"}`, `{"polcy": "deny"}`, `{"claimTTL": "forever"}`, `{"claimTTL": "9h"}`, `{`} {
		write(bad)
		if _, err := LoadPolicy(top, ""); err == nil {
			t.Errorf("%s: want an error", bad)
		}
	}
}
