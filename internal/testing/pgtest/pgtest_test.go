package pgtest

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crosscode/crosscode-mcp/internal/proctree"
)

func TestMain(m *testing.M) {
	if os.Getenv("PGTEST_ORPHAN") == "1" {
		// A test process that dies without stopping its cluster.
		c, err := Start()
		if err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(2)
		}
		os.Stdout.WriteString(c.Dir + "\n")
		os.Exit(3)
	}
	os.Exit(Main(m))
}

// The cluster of a test process that died without stopping it (a panic,
// kill -9) is stopped and removed by the next Start.
func TestOrphanClusterIsReaped(t *testing.T) {
	Need(t)
	cmd := exec.Command(os.Args[0], "-test.run", "^$")
	cmd.Env = append(os.Environ(), "PGTEST_ORPHAN=1")
	out, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 {
		t.Fatalf("orphan process: %v, stdout %q", err, out)
	}
	dir := strings.TrimSpace(string(out))
	pidFile := filepath.Join(dir, "data", "postmaster.pid")
	f, err := os.Open(pidFile)
	if err != nil {
		t.Fatalf("the orphan's cluster is not running: %v", err)
	}
	line, _ := bufio.NewReader(f).ReadString('\n')
	f.Close()
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || !proctree.Alive(pid) {
		t.Fatalf("the orphan's postmaster %q is not alive: %v", line, err)
	}

	c, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("the orphan's dir %s is still there: %v", dir, err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for proctree.Alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("the orphan's postmaster %d still runs", pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := os.Stat(filepath.Join(c.Dir, "owner")); err != nil {
		t.Fatalf("a new cluster has no owner file: %v", err)
	}
}
