package scratch_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crosscode/crosscode-mcp/internal/scratch"
)

var held *scratch.Dir

// TestMain makes the test binary an owner of a directory when
// SCRATCH_TEST_OWNER names its parent: it prints the directory and waits to
// be killed.
func TestMain(m *testing.M) {
	if parent := os.Getenv("SCRATCH_TEST_OWNER"); parent != "" {
		d, err := scratch.New(parent, "owned-", nil)
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		os.WriteFile(filepath.Join(d.Path(), "data"), []byte("x"), 0o600)
		fmt.Println(d.Path())
		held = d              // the lock lives as long as d: unreachable, its file would be closed by a finalizer
		time.Sleep(time.Hour) // (select {} would be a deadlock, which ends the process)
	}
	os.Exit(m.Run())
}

// owner starts a process that owns a directory in parent and returns it
// with the directory.
func owner(t *testing.T, parent string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "SCRATCH_TEST_OWNER="+parent)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	line = strings.TrimSpace(line)
	if err != nil || !strings.HasPrefix(line, filepath.Join(parent, "owned-")) {
		t.Fatalf("owner printed %q (%v)", line, err)
	}
	return cmd, line
}

func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

// A directory whose owner was killed (no chance to remove it) is removed
// by the next New of its kind; one whose owner runs is kept.
func TestNewRemovesWhatAKilledOwnerLeft(t *testing.T) {
	parent := t.TempDir()
	killed, left := owner(t, parent)
	_, alive := owner(t, parent)
	if err := killed.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed.Wait()
	if _, err := os.Stat(left); err != nil {
		t.Fatalf("the killed owner's directory: %v", err)
	}
	other, err := scratch.New(parent, "other-", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(left); err != nil {
		t.Fatalf("New of another kind removed the killed owner's directory: %v", err)
	}
	other.Remove()

	var stale []string
	d, err := scratch.New(parent, "owned-", func(dir string) { stale = append(stale, dir) })
	if err != nil {
		t.Fatal(err)
	}
	if len(stale) != 1 || stale[0] != left {
		t.Errorf("onStale saw %q, want [%s]", stale, left)
	}
	if _, err := os.Stat(left); !os.IsNotExist(err) {
		t.Errorf("the killed owner's directory is still there (%v): %v", err, entries(t, parent))
	}
	if _, err := os.Stat(left + ".lock"); !os.IsNotExist(err) {
		t.Errorf("the killed owner's lock file is still there (%v)", err)
	}
	if _, err := os.Stat(filepath.Join(alive, "data")); err != nil {
		t.Errorf("the running owner's directory was touched: %v", err)
	}
	if err := d.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(d.Path()); !os.IsNotExist(err) {
		t.Errorf("Remove left %s (%v)", d.Path(), err)
	}
	if n := len(entries(t, parent)); n != 2 {
		t.Errorf("left in the parent: %v, want the running owner's directory and lock", entries(t, parent))
	}
}

// Sweep removes a directory left without its lock file, and keeps a fresh
// lock file without a directory (one being made).
func TestSweepLocklessAndFreshLock(t *testing.T) {
	parent := t.TempDir()
	if err := os.Mkdir(filepath.Join(parent, "k-1"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(parent, "k-2.lock"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if n := scratch.Sweep(parent, "k-", nil); n != 1 {
		t.Errorf("Sweep removed %d directories, want 1", n)
	}
	if got := entries(t, parent); len(got) != 1 || got[0] != "k-2.lock" {
		t.Errorf("left %v, want [k-2.lock]", got)
	}
}
