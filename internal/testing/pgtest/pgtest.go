// Package pgtest runs a throwaway PostgreSQL cluster for tests: initdb into
// a temp dir (as the postgres user when the tests run as root, since initdb
// refuses root), a server listening on a unix socket in that dir only, with
// fsync and synchronous_commit on (and backend_flush_after as docs/service.md
// recommends), and a fresh database per test. One
// cluster serves a whole test binary: call Main from TestMain, which stops
// and removes it when the tests end.
//
// The machine's PostgreSQL 15 or newer is used (Debian's postgresql-15,
// which scripts/deps installs); a missing one fails the test with that advice.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/crosscode/crosscode-mcp/internal/proctree"
	"github.com/crosscode/crosscode-mcp/internal/testing/sysdeps"
)

// Cluster is one running PostgreSQL server.
type Cluster struct {
	Dir    string // the cluster's temp dir: data/, the socket and the log
	bin    string // the PostgreSQL bin dir
	asUser bool   // commands run as the postgres user (we are root)
	uid    int
	gid    int
}

var (
	shared     *Cluster
	sharedErr  error
	sharedOnce sync.Once
	dbCounter  atomic.Int64
)

// Main runs the tests and then stops and removes the cluster, if a test
// started one. Call it from TestMain: os.Exit(pgtest.Main(m)).
func Main(m *testing.M) int {
	code := m.Run()
	if shared != nil {
		if err := shared.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "pgtest:", err)
		}
	}
	return code
}

// Need skips t where no cluster can run: under Wine, which cannot start
// PostgreSQL's Linux server. Shared calls it; call it before Start.
func Need(t testing.TB) {
	t.Helper()
	sysdeps.SkipUnderWine(t, "PostgreSQL's server is a Linux program, which Wine cannot start")
}

// Shared returns the test binary's cluster, starting it on first use, or
// fails t.
func Shared(t testing.TB) *Cluster {
	t.Helper()
	Need(t)
	sharedOnce.Do(func() { shared, sharedErr = Start() })
	if sharedErr != nil {
		t.Fatal(sharedErr)
	}
	return shared
}

// NewDB creates a fresh database in the shared cluster, dropped when the
// test ends, and returns its connection URL.
func NewDB(t testing.TB) string {
	t.Helper()
	c := Shared(t)
	name := fmt.Sprintf("t%d_%d", os.Getpid(), dbCounter.Add(1))
	if err := c.exec("CREATE DATABASE " + name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)"); err != nil {
			t.Logf("pgtest: drop %s: %v", name, err)
		}
	})
	return c.URL(name)
}

// URL is the connection URL of database db.
func (c *Cluster) URL(db string) string {
	return "postgres://postgres@/" + db + "?host=" + c.Dir + "&sslmode=disable"
}

// exec runs one statement in the postgres database.
func (c *Cluster) exec(sql string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		return fmt.Errorf("pgtest: connect: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql); err != nil {
		return fmt.Errorf("pgtest: %s: %w", sql, err)
	}
	return nil
}

// findBin finds the newest PostgreSQL 15+ bin dir with initdb and pg_ctl.
func findBin() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if version(d) >= 15 && isExec(filepath.Join(d, "initdb")) && isExec(filepath.Join(d, "pg_ctl")) {
			return d, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		if _, err := exec.LookPath("pg_ctl"); err == nil {
			return filepath.Dir(p), nil
		}
	}
	return "", errors.New("PostgreSQL 15 or newer is not installed (no initdb and pg_ctl): run scripts/deps (or scripts/test, which runs it) to install postgresql-15")
}

func version(binDir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return v
}

func isExec(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode()&0o111 != 0
}

// Start creates and starts a cluster in a new temp dir.
func Start() (*Cluster, error) {
	bin, err := findBin()
	if err != nil {
		return nil, err
	}
	reapOrphans(bin)
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	// The owner file names this process, so a later Start can stop the
	// cluster if this process dies without stopping it (a panic, a
	// timeout, kill -9: Main's Stop never runs then).
	if err := os.WriteFile(filepath.Join(dir, "owner"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	c := &Cluster{Dir: dir, bin: bin}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("pgtest: initdb refuses root and there is no postgres user (%v): run scripts/deps to install postgresql-15", err)
		}
		c.asUser = true
		c.uid, _ = strconv.Atoi(u.Uid)
		c.gid, _ = strconv.Atoi(u.Gid)
		if err := os.Chown(dir, c.uid, c.gid); err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("pgtest: %w", err)
		}
	}
	data := filepath.Join(dir, "data")
	// initdb's own --no-sync only skips flushing the fresh files of a
	// throwaway cluster; the server below runs with fsync on.
	if out, err := c.run("initdb", "-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-locale", "--no-sync"); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("pgtest: initdb: %v: %s", err, out)
	}
	conf := strings.Join([]string{
		"listen_addresses = ''",
		"unix_socket_directories = '" + dir + "'",
		"fsync = on",
		"synchronous_commit = on",
		"max_connections = 300",
		"shared_buffers = 128MB",
		"log_min_messages = warning",
		// What "Scale out" in docs/service.md recommends for steady commit latency:
		// backends hand their dirty pages to the disk as they go, so a
		// checkpoint's fsync of a table a sweep rewrote does not stall
		// every commit behind it (measured: 0.54 s without it).
		"backend_flush_after = 256kB",
	}, "\n") + "\n"
	f, err := os.OpenFile(filepath.Join(data, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err == nil {
		_, err = f.WriteString(conf)
		err = errors.Join(err, f.Close())
	}
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("pgtest: configure: %w", err)
	}
	if out, err := c.run("pg_ctl", "-D", data, "-l", filepath.Join(dir, "log"), "-w", "-t", "60", "start"); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "log"))
		os.RemoveAll(dir)
		return nil, fmt.Errorf("pgtest: start: %v: %s\n%s", err, out, log)
	}
	return c, nil
}

// reapOrphans stops and removes the clusters of test processes that died
// without stopping them: pgtest dirs whose owner process is gone.
func reapOrphans(bin string) {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "pgtest-*"))
	for _, dir := range dirs {
		b, err := os.ReadFile(filepath.Join(dir, "owner"))
		if err != nil {
			continue // not ours, or still being created
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 0 || proctree.Alive(pid) {
			continue // its owner is alive (or cannot be told apart)
		}
		if _, err := os.Stat(filepath.Join(dir, "data", "postmaster.pid")); err != nil {
			os.RemoveAll(dir) // its server is not running
			continue
		}
		c := &Cluster{Dir: dir, bin: bin}
		if fi, err := os.Stat(dir); err == nil {
			if uid, gid, ok := owner(fi); ok && os.Geteuid() == 0 && uid != 0 {
				c.asUser, c.uid, c.gid = true, uid, gid
			}
		}
		if err := c.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "pgtest: removing the cluster of dead test process %d: %v\n", pid, err)
		}
	}
}

// run runs a PostgreSQL program, as the postgres user when we are root.
func (c *Cluster) run(prog string, args ...string) ([]byte, error) {
	cmd := exec.Command(filepath.Join(c.bin, prog), args...)
	if c.asUser {
		runAs(cmd, c.uid, c.gid)
	}
	cmd.Dir = c.Dir
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	return cmd.CombinedOutput()
}

// Restart restarts the server (fast shutdown: open connections are cut).
func (c *Cluster) Restart() error {
	if out, err := c.run("pg_ctl", "-D", filepath.Join(c.Dir, "data"), "-l", filepath.Join(c.Dir, "log"), "-w", "-t", "60", "-m", "fast", "restart"); err != nil {
		return fmt.Errorf("pgtest: restart: %v: %s", err, out)
	}
	return nil
}

// Stop stops the server at once and removes its dir.
func (c *Cluster) Stop() error {
	out, err := c.run("pg_ctl", "-D", filepath.Join(c.Dir, "data"), "-w", "-m", "immediate", "stop")
	if err != nil {
		err = fmt.Errorf("pgtest: stop: %v: %s", err, out)
	}
	return errors.Join(err, os.RemoveAll(c.Dir))
}
