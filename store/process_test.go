package store

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/crosscode/crosscode-mcp/internal/testing/fixture"
)

// The test binary doubles as a worker process: with STORE_WORKER set it
// ingests envelopes into a shared file and prints each durable receipt.
func TestMain(m *testing.M) {
	if spec := os.Getenv("STORE_WORKER"); spec != "" {
		os.Exit(worker(spec))
	}
	os.Exit(m.Run())
}

// worker ingests count envelopes from one replica into the database at
// path and prints "ack <clientSequence> <serverSequence>" once each is durable.
func worker(spec string) int {
	parts := strings.Split(spec, ",")
	path, replica := parts[0], parts[1]
	count, _ := strconv.Atoi(parts[2])
	ctx := context.Background()
	s, err := Open(ctx, path, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer s.Close()
	if _, err := s.EnsureWorkspace(ctx, "mygame", ""); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	in := s.NewIngester(nil)
	defer in.Close()
	r := fixture.NewReplica("mygame", replica, replica+"@example.com")
	out := bufio.NewWriter(os.Stdout)
	for i := range count {
		e := r.Any(replica, i)
		res, err := in.Ingest(ctx, "mygame", e)
		if err != nil || res.Err != nil {
			fmt.Fprintln(os.Stderr, "ingest:", err, res.Err)
			return 1
		}
		fmt.Fprintf(out, "ack %d %d\n", e.ClientSequence, res.Receipt.ServerSequence)
		out.Flush()
	}
	return 0
}

func startWorker(t *testing.T, path, replica string, count int) (*exec.Cmd, *bufio.Scanner) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("STORE_WORKER=%s,%s,%d", path, replica, count))
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, bufio.NewScanner(stdout)
}

type ack struct{ clientSeq, seq int64 }

func readAck(sc *bufio.Scanner) (ack, bool) {
	if !sc.Scan() {
		return ack{}, false
	}
	var a ack
	if _, err := fmt.Sscanf(sc.Text(), "ack %d %d", &a.clientSeq, &a.seq); err != nil {
		return ack{}, false
	}
	return a, true
}

// TestMultiProcessIngest: four processes write one file at once; the log
// ends gap-free with every envelope exactly once at its acknowledged place.
func TestMultiProcessIngest(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shared.db")
	const procs, each = 4, 150
	acks := make([]map[int64]int64, procs)
	done := make(chan error, procs)
	for p := range procs {
		acks[p] = map[int64]int64{}
		cmd, sc := startWorker(t, path, fmt.Sprintf("rep_%d", p), each)
		go func() {
			for {
				a, ok := readAck(sc)
				if !ok {
					break
				}
				acks[p][a.clientSeq] = a.seq
			}
			done <- cmd.Wait()
		}()
	}
	for range procs {
		if err := <-done; err != nil {
			t.Fatalf("worker: %v", err)
		}
	}
	s, err := Open(context.Background(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	log := assertLog(t, s, "mygame", procs*each)
	for _, e := range log {
		var p int
		fmt.Sscanf(e.ReplicaID, "rep_%d", &p)
		if acks[p][e.ClientSequence] != e.ServerSequence {
			t.Fatalf("%s/%d logged at %d, acknowledged at %d", e.ReplicaID, e.ClientSequence, e.ServerSequence, acks[p][e.ClientSequence])
		}
	}
}

// TestKill9LosesNothingAcknowledged kills a writer with SIGKILL in the
// middle of a stream of ingests: every acknowledged envelope is in the log
// after reopening, exactly once, where it was acknowledged.
func TestKill9LosesNothingAcknowledged(t *testing.T) {
	path := filepath.Join(t.TempDir(), "crash.db")
	cmd, sc := startWorker(t, path, "rep_k", 100000)
	acked := map[int64]int64{}
	for len(acked) < 300 {
		a, ok := readAck(sc)
		if !ok {
			t.Fatal("worker ended early")
		}
		acked[a.clientSeq] = a.seq
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	s, err := Open(context.Background(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	head, _ := s.Head(context.Background(), "mygame")
	if head < int64(len(acked)) {
		t.Fatalf("head %d below %d acknowledged", head, len(acked))
	}
	log := assertLog(t, s, "mygame", head)
	for cs, seq := range acked {
		if log[seq-1].ClientSequence != cs {
			t.Fatalf("acknowledged clientSequence %d at %d, found %d there", cs, seq, log[seq-1].ClientSequence)
		}
	}
	if ok, err := s.IntegrityCheck(context.Background()); err != nil || ok != "ok" {
		t.Fatalf("integrity after kill: %v %q", err, ok)
	}
}

// TestConcurrentFirstOpen: agents started at once in a fresh repository
// all open its new database together (creating it, switching it to WAL,
// migrating it); every one of them succeeds, however their locks meet.
func TestConcurrentFirstOpen(t *testing.T) {
	const rounds, n = 8, 8 // without the retry, a round in 20 or so failed here
	for r := range rounds {
		path := filepath.Join(t.TempDir(), fmt.Sprintf("fresh%d.db", r))
		var wg sync.WaitGroup
		errs := make(chan error, n)
		start := make(chan struct{})
		for range n {
			wg.Go(func() {
				<-start
				s, err := Open(context.Background(), path, &Options{Projections: true})
				if err != nil {
					errs <- err
					return
				}
				errs <- s.Close()
			})
		}
		close(start)
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("round %d: %v", r, err)
			}
		}
	}
}
