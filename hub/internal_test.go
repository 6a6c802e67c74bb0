package hub

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"testing/synctest"

	"github.com/crosscode/crosscode-mcp/internal/testing/fixture"
	"github.com/crosscode/crosscode-mcp/protocol"
	"github.com/crosscode/crosscode-mcp/store"
)

// TestBrokerSubscribeReadsHeadOutsideTheLock: the store's head is read
// without the broker's lock (publish, on the commit path, needs it), a
// commit published during that read is covered by the cursor, and the
// head read is kept, so a quiet workspace is read once.
func TestBrokerSubscribeReadsHeadOutsideTheLock(t *testing.T) {
	discard := slog.New(slog.NewTextHandler(io.Discard, nil))
	rep := fixture.NewReplica("busy", "rep_w", "w@example.com")
	logged := func(seq int64) []*protocol.Envelope {
		e := rep.Intent("int_"+string(rune('a'+seq)), "src/**")
		e.ServerSequence = seq
		return []*protocol.Envelope{e}
	}
	var b *broker
	calls := map[string]int{}
	heads := func(_ context.Context, ws string) (int64, error) {
		calls[ws]++
		if !b.mu.TryLock() {
			t.Errorf("subscribe holds the broker's lock while it reads the head of %s from the store", ws)
			return 0, nil
		}
		b.mu.Unlock()
		if ws == "busy" {
			// Sequence 3 commits and is published after the read
			// returns 2 but before the subscriber is registered.
			b.publish(logged(3))
			return 2, nil
		}
		return 5, nil
	}
	b = newBroker(discard, 8, 8, heads)

	sub, cursor, err := b.subscribe(context.Background(), "busy", "rep_a")
	if err != nil {
		t.Fatal(err)
	}
	if cursor != 3 {
		t.Fatalf("cursor %d, want 3: sequence 3 was published before the subscriber was registered, so it must be covered", cursor)
	}
	b.publish(logged(4))
	select {
	case frames := <-sub.queue:
		if len(frames) != 1 || frames[0].seq != 4 {
			t.Fatalf("queued %+v, want sequence 4 only", frames)
		}
	default:
		t.Fatal("sequence 4 was not queued to the subscriber")
	}

	for range 3 {
		if _, cursor, err := b.subscribe(context.Background(), "quiet", "rep_q"); err != nil || cursor != 5 {
			t.Fatalf("quiet workspace: cursor %d, %v; want 5", cursor, err)
		}
	}
	if calls["quiet"] != 1 {
		t.Fatalf("the head of a quiet workspace was read from the store %d times for 3 subscribes, want once", calls["quiet"])
	}
}

// hijackGate is a ResponseWriter whose Hijack blocks until released: a
// WebSocket handler held between its shutdown check and Accept's return.
type hijackGate struct {
	*httptest.ResponseRecorder
	hijacking chan struct{} // closed when Hijack is called
	release   chan struct{}
	conn      net.Conn
}

func (g *hijackGate) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	close(g.hijacking)
	<-g.release
	return g.conn, bufio.NewReadWriter(bufio.NewReader(g.conn), bufio.NewWriter(g.conn)), nil
}

func upgradeRequest() *http.Request {
	r := httptest.NewRequest(http.MethodGet, "/v1/subscribe", nil)
	r.Header.Set("Connection", "Upgrade")
	r.Header.Set("Upgrade", "websocket")
	r.Header.Set("Sec-WebSocket-Version", "13")
	r.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
	return r
}

// TestCloseWaitsForAcceptingWebSocket: Close waits for a subscribe handler
// that passed its shutdown check but has not yet accepted its connection
// (srv.Shutdown does not wait for hijacked connections), and a subscribe
// after the shutdown began is refused with a JSON 503.
func TestCloseWaitsForAcceptingWebSocket(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "hub.db"), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		s := New(Config{Store: st})

		server, client := net.Pipe()
		client.Close() // the peer is gone: the handler ends as soon as it runs
		gate := &hijackGate{ResponseRecorder: httptest.NewRecorder(), hijacking: make(chan struct{}), release: make(chan struct{}), conn: server}
		handlerDone := make(chan struct{})
		go func() {
			defer close(handlerDone)
			s.subscribe(gate, upgradeRequest())
		}()
		<-gate.hijacking

		closed := make(chan struct{})
		go func() {
			defer close(closed)
			s.Close()
		}()
		synctest.Wait() // Close is as far as it gets while the handler is held
		select {
		case <-closed:
			t.Error("Close returned while a subscribe handler was still accepting its WebSocket")
		default:
		}
		close(gate.release)
		<-closed
		<-handlerDone

		rec := httptest.NewRecorder()
		s.subscribe(rec, upgradeRequest())
		var body protocol.ErrorBody
		if rec.Code != http.StatusServiceUnavailable || json.Unmarshal(rec.Body.Bytes(), &body) != nil || body.Error.Code != protocol.CodeUnavailable {
			t.Fatalf("subscribe after Close: %d %s, want a JSON 503", rec.Code, rec.Body)
		}
	})
}
