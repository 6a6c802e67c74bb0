package mcp

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crosscode/crosscode-mcp/bridge/coord"
	"github.com/crosscode/crosscode-mcp/store"
)

// tokenHub knows one token; nothing else of it is called by these tests.
type tokenHub struct{ coord.Hub }

func (tokenHub) Authenticate(_ context.Context, token string) (string, error) {
	if token == "good" {
		return "mygame", nil
	}
	return "", store.ErrBadToken
}

// TestSlowBodyIsCutOff: a client that sends its headers and then trickles
// (here: stops sending) its body is answered and let go once the call's
// time is up; it does not hold the handler.
func TestSlowBodyIsCutOff(t *testing.T) {
	mirror, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "m.db"), &store.Options{Projections: true, Cache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer mirror.Close()
	ep, err := NewHTTP(HTTPConfig{Hub: tokenHub{}, Mirror: mirror, CallTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	srv := httptest.NewServer(ep)
	defer srv.Close()
	conn, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	if _, err := conn.Write([]byte("POST /mcp HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer good\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"jsonrpc\":")); err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(30 * time.Second)) // a hang guard
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to a stalled body: %v", err)
	}
	if res.StatusCode != http.StatusRequestTimeout {
		t.Fatalf("a stalled body: %s, want 408", res.Status)
	}
	t.Logf("answered after %v", time.Since(start))
}
