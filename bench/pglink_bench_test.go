package bench

import (
	"net"
	"net/url"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/crosscode/crosscode-mcp/hub"
	"github.com/crosscode/crosscode-mcp/pgstore"
)

// delayLink puts a network link's latency between the service and the
// database: a loopback TCP proxy to the test cluster's socket that
// delivers every byte oneWay after it was sent, in each direction (tc
// netem is not available on these machines). It returns the database's
// URL through the link.
func delayLink(tb testing.TB, db string, oneWay time.Duration) string {
	tb.Helper()
	u, err := url.Parse(db)
	if err != nil {
		tb.Fatal(err)
	}
	sock := filepath.Join(u.Query().Get("host"), ".s.PGSQL.5432")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	var wg sync.WaitGroup
	tb.Cleanup(func() { l.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("unix", sock)
			if err != nil {
				c.Close()
				continue
			}
			wg.Add(2)
			go func() { defer wg.Done(); delayCopy(s, c, oneWay) }()
			go func() { defer wg.Done(); delayCopy(c, s, oneWay) }()
		}
	}()
	q := u.Query()
	q.Del("host")
	return "postgres://postgres@" + l.Addr().String() + u.Path + "?" + q.Encode()
}

// delayCopy copies src to dst, each chunk delay after it was read, in
// order, and closes both when src ends.
func delayCopy(dst, src net.Conn, delay time.Duration) {
	type chunk struct {
		b  []byte
		at time.Time
	}
	ch := make(chan chunk, 4096)
	go func() {
		defer close(ch)
		for {
			buf := make([]byte, 32<<10)
			n, err := src.Read(buf)
			if n > 0 {
				ch <- chunk{buf[:n], time.Now().Add(delay)}
			}
			if err != nil {
				return
			}
		}
	}()
	for c := range ch {
		if w := time.Until(c.at); w > 0 {
			time.Sleep(w)
		}
		if _, err := dst.Write(c.b); err != nil {
			break
		}
	}
	dst.Close()
	src.Close()
	for range ch {
	}
}

// BenchmarkPGIngestOverLink: ingest from 16 clients into one instance
// whose database is behind a link of 0.25 ms each way (0.5 ms round trip,
// a database on another machine of the same data centre): every batch in
// one round trip (the default) and in two (LockedIngest), beside the
// same two with no link, in the same run.
func BenchmarkPGIngestOverLink(b *testing.B) {
	const clients = 16
	for _, c := range []struct {
		name   string
		link   time.Duration
		locked bool
	}{
		{"socket/one-round-trip", 0, false},
		{"socket/locked", 0, true},
		{"link-0.25ms/one-round-trip", 250 * time.Microsecond, false},
		{"link-0.25ms/locked", 250 * time.Microsecond, true},
	} {
		b.Run(c.name, func(b *testing.B) {
			db, toks := newPGDB(b, 0)
			if c.link > 0 {
				db = delayLink(b, db, c.link)
			}
			s := startPGWith(b, db, hub.Config{}, &pgstore.Options{Migrate: true, MaxConns: 8, LockedIngest: c.locked})
			ts := make([][]target, clients)
			for i := range ts {
				ts[i] = []target{{s.url, toks[0], "mygame"}}
			}
			runTargets(b, ts)
			reportPGBatches(b, s)
		})
	}
}
