package main

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/crosscode/crosscode-mcp/internal/testing/pgtest"
)

// TestServeDBCacheAfterKill9: serve --db keeps the dashboard's cache in a
// temp dir of its own. Killed (kill -9), it cannot remove it; the next
// serve on the machine does. Stopped, it removes its own: the temp dir is
// as it was.
func TestServeDBCacheAfterKill9(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	tmp := filepath.Join(t.TempDir(), "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	env := []string{"TMPDIR=" + tmp, "TMP=" + tmp, "TEMP=" + tmp}
	caches := func() []string {
		t.Helper()
		var dirs []string
		entries, err := os.ReadDir(tmp)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			dirs = append(dirs, e.Name())
		}
		return dirs
	}

	killed := startServeEnv(t, env, "--db", db)
	left := caches()
	if len(left) != 2 { // the cache and its lock file
		t.Fatalf("serve --db's temp dir holds %v, want its cache and the cache's lock", left)
	}
	killed.signal(t, syscall.SIGKILL)
	killed.wait(t)

	next := startServeEnv(t, env, "--db", db)
	now := caches()
	for _, name := range left {
		for _, n := range now {
			if n == name {
				t.Errorf("the next serve kept %s of the killed one (temp dir: %v)", name, now)
			}
		}
	}
	if len(now) != 2 {
		t.Errorf("with the next serve, the temp dir holds %v, want its cache and the cache's lock", now)
	}
	next.signal(t, syscall.SIGTERM)
	if code := next.wait(t); code != 0 {
		t.Fatalf("serve exited %d after SIGTERM (stderr: %s)", code, next.stderr)
	}
	if now := caches(); len(now) != 0 {
		t.Errorf("a stopped serve left %v in its temp dir", now)
	}
}
