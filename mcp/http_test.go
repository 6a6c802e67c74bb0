package mcp

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crosscode/crosscode-mcp/bridge/coord"
	"github.com/crosscode/crosscode-mcp/protocol"
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

// presenceHub records presence as a service would.
type presenceHub struct {
	tokenHub
	mu   sync.Mutex
	last map[string]*protocol.RemotePresence
	log  []protocol.PresenceStatus
}

func (h *presenceHub) SetPresence(_ context.Context, ws string, p *protocol.PresenceUpdate) (*protocol.RemotePresence, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	rp := &protocol.RemotePresence{WorkspaceID: ws, SenderReplicaID: p.ReplicaID, ActorID: p.ActorID, Status: p.Status, UpdatedAt: time.Now()}
	h.last[p.ReplicaID] = rp
	h.log = append(h.log, p.Status)
	return rp, nil
}

func (h *presenceHub) Presence(context.Context, string) ([]*protocol.RemotePresence, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []*protocol.RemotePresence
	for _, p := range h.last {
		c := *p
		out = append(out, &c)
	}
	return out, nil
}

// TestIdleSessions: a session that made no call for coord.IdleAfter is
// reported idle, unless another instance reported it online since.
func TestIdleSessions(t *testing.T) {
	mirror, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "m.db"), &store.Options{Projections: true, Cache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer mirror.Close()
	hub := &presenceHub{last: map[string]*protocol.RemotePresence{}}
	ep, err := NewHTTP(HTTPConfig{Hub: hub, Mirror: mirror})
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	c, err := coord.New(coord.Config{Workspace: "mygame", Store: mirror, Hub: hub})
	if err != nil {
		t.Fatal(err)
	}
	_, sess := newSessionID("good", "claude-code")
	ctx := withCall(context.Background(), &httpCall{workspace: "mygame", token: "good", session: sess})
	ctx = coord.WithCaller(ctx, callerOf(ctx, nil))
	ep.online(ctx, c)
	waitStatus := func(n int) []protocol.PresenceStatus {
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			hub.mu.Lock()
			got := slices.Clone(hub.log)
			hub.mu.Unlock()
			if len(got) >= n {
				return got
			}
		}
		t.Fatalf("fewer than %d presence reports", n)
		return nil
	}
	waitStatus(1)
	ep.idle(time.Now().Add(coord.IdleAfter / 2))
	ep.idle(time.Now().Add(coord.IdleAfter + time.Minute))
	if got := waitStatus(2); !slices.Equal(got, []protocol.PresenceStatus{protocol.PresenceOnline, protocol.PresenceIdle}) {
		t.Fatalf("presence reports %v, want online then idle", got)
	}
	// Online again with its next call; then another instance reports it
	// online (it calls there): this instance leaves it online.
	ep.online(ctx, c)
	waitStatus(3)
	hub.mu.Lock()
	hub.last[c.Me(ctx).Replica].UpdatedAt = time.Now().Add(coord.IdleAfter)
	hub.mu.Unlock()
	ep.idle(time.Now().Add(coord.IdleAfter + time.Minute))
	if got := waitStatus(3); len(got) != 3 {
		t.Fatalf("presence reports %v: idled a session online through another instance", got)
	}
}
