package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/crosscode/crosscode-mcp/hub"
	"github.com/crosscode/crosscode-mcp/internal/cputime"
	"github.com/crosscode/crosscode-mcp/internal/testing/fixture"
	"github.com/crosscode/crosscode-mcp/protocol"
	"github.com/crosscode/crosscode-mcp/store"
)

type service struct {
	url, token string
	st         *store.Store
	srv        *hub.Server
}

// startService runs the hub on loopback over a new SQLite file in dir.
func startService(tb testing.TB, dir string, cfg hub.Config) *service {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	st, err := store.Open(ctx, filepath.Join(dir, "hub.db"), nil)
	if err != nil {
		tb.Fatal(err)
	}
	tok, err := st.CreateToken(ctx, "mygame", "")
	if err != nil {
		tb.Fatal(err)
	}
	url, srv := serveHub(tb, ctx, cancel, st, cfg)
	return &service{url: url, token: tok, st: st, srv: srv}
}

// serveHub serves cfg over st on a loopback port until the benchmark
// ends (then cancel stops it and st is closed), and returns its URL.
func serveHub(tb testing.TB, ctx context.Context, cancel context.CancelFunc, st interface {
	hub.Store
	Close() error
}, cfg hub.Config) (string, *hub.Server) {
	tb.Helper()
	cfg.Store = st
	srv := hub.New(cfg)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		cancel()
		st.Close()
		tb.Fatal(err)
	}
	done := make(chan struct{})
	go func() { srv.Serve(ctx, l); close(done) }()
	tb.Cleanup(func() { cancel(); <-done; st.Close() })
	return "http://" + l.Addr().String(), srv
}

// startNoop serves a handler that reads the body and answers a fixed
// receipt, on the same net/http stack: the ceiling for the ingest path.
func startNoop(tb testing.TB) string {
	tb.Helper()
	receipt := []byte(`{"id":"x","serverSequence":1,"ingestedAt":"2026-11-29T10:15:00.123Z","duplicate":false}` + "\n")
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(http.MaxBytesReader(w, r.Body, protocol.MaxBodyBytes))
		w.Header().Set("Content-Type", "application/json")
		w.Write(receipt)
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(l)
	tb.Cleanup(func() { srv.Close() })
	return "http://" + l.Addr().String()
}

func newClient() *http.Client {
	return &http.Client{Transport: &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256, DisableCompression: true}}
}

func collection(body []byte) string {
	var probe struct {
		Envelope struct {
			Type protocol.EventType `json:"type"`
		} `json:"envelope"`
	}
	json.Unmarshal(body, &probe)
	return probe.Envelope.Type.Kind().Collection()
}

func post(c *http.Client, url, token string, body []byte) (int, []byte, error) {
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// runClients sends b.N envelopes from `clients` concurrent clients, each its
// own replica sending in clientSequence order, and reports envelopes/s.
func runClients(b *testing.B, clients int, base, token string) {
	ts := make([][]target, clients)
	for c := range ts {
		ts[c] = []target{{base, token, "mygame"}}
	}
	runTargets(b, ts)
}

// BenchmarkIngestHTTP: 16 concurrent HTTP clients, every receipt durable
// (WAL, synchronous=FULL); "noop" is a handler that only reads the body on
// the same HTTP stack, for the ratio.
func BenchmarkIngestHTTP(b *testing.B) {
	b.Run("noop/clients=16", func(b *testing.B) {
		runClients(b, 16, startNoop(b), "x")
	})
	b.Run("ingest/clients=16", func(b *testing.B) {
		s := startService(b, b.TempDir(), hub.Config{})
		runClients(b, 16, s.url, s.token)
		reportBatches(b, s)
	})
	// Issue 24: the same stream with every claim willing to wait
	// (waitUntil); the service stores the field and decides nothing more.
	b.Run("ingest-waiting/clients=16", func(b *testing.B) {
		s := startService(b, b.TempDir(), hub.Config{})
		ts := make([][]target, 16)
		for c := range ts {
			ts[c] = []target{{s.url, s.token, "mygame"}}
		}
		runTargetsWith(b, ts, anyWaiting)
		reportBatches(b, s)
	})
	b.Run("noop/clients=1", func(b *testing.B) {
		runClients(b, 1, startNoop(b), "x")
	})
	b.Run("ingest/clients=1", func(b *testing.B) {
		dir := b.TempDir()
		s := startService(b, dir, hub.Config{})
		runClients(b, 1, s.url, s.token)
		reportBatches(b, s)
		if fi, err := os.Stat(filepath.Join(dir, "hub.db-wal")); err == nil {
			b.ReportMetric(float64(fi.Size())/(1<<20), "wal-MiB")
		}
	})
}

func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d[min(len(d)-1, int(float64(len(d))*p))]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func reportBatches(b *testing.B, s *service) {
	st := s.srv.IngestStats()
	if st.Batches > 0 {
		b.ReportMetric(float64(st.Envelopes)/float64(st.Batches), "envelopes/commit")
		b.ReportMetric(float64(st.Busy.Microseconds())/float64(st.Batches), "µs/commit")
	}
}

// cpuSeconds is the process's user+system CPU time so far.
func cpuSeconds() float64 { return cputime.Self().Seconds() }

// anyWaiting is fixture.Replica.Any with every claim willing to wait ten
// minutes for its turn.
func anyWaiting(r *fixture.Replica, prefix string, i int) *protocol.Envelope {
	e := r.Any(prefix, i)
	if c := e.Claim(); c != nil {
		w := c.CreatedAt.Add(10 * time.Minute)
		c.WaitUntil = &w
	}
	return e
}
