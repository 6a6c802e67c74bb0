package location

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestWorkspace(t *testing.T) {
	root := filepath.Join(string(filepath.Separator), "src")
	for _, c := range []struct{ name, top, common, dir, want string }{
		{"a clone", filepath.Join(root, "mygame"), filepath.Join(root, "mygame", ".git"), filepath.Join(root, "mygame", "src"), "mygame"},
		{"its worktree: the clone's name", filepath.Join(root, "wt-bo"), filepath.Join(root, "mygame", ".git"), filepath.Join(root, "wt-bo"), "mygame"},
		{"a bare clone's worktree: its own name", filepath.Join(root, "wt"), filepath.Join(root, "mygame.git"), filepath.Join(root, "wt"), "wt"},
		{"outside git: the folder's", "", "", filepath.Join(root, "scratch"), "scratch"},
	} {
		if got := Workspace(c.top, c.common, c.dir); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

func TestDataAndDatabase(t *testing.T) {
	common := filepath.Join(string(filepath.Separator), "src", "mygame", ".git")
	data, err := Data(common, "")
	if err != nil || data != filepath.Join(common, "crosscode") {
		t.Fatalf("data: %q %v", data, err)
	}
	if db := Database(data, "", "mygame"); db != filepath.Join(data, "workspace.db") {
		t.Errorf("local mode: %q", db)
	}
	db := Database(data, "https://coord.example.com:8443/", "my game/x")
	if want := filepath.Join(data, "remote", "coord.example.com_8443_--my_game_x.db"); db != want {
		t.Errorf("remote mode: %q, want %q", db, want)
	}
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	outside, err := Data("", filepath.Join(string(filepath.Separator), "work", "scratch"))
	// The folder's path, its unsafe characters made "_" (on Windows with
	// the drive's letter first: "C_work_scratch").
	if err != nil || filepath.Base(filepath.Dir(outside)) != "crosscode-mcp" || !strings.HasSuffix(outside, "work_scratch") {
		t.Errorf("outside git: %q %v", outside, err)
	}
}
