package hub_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/crosscode/crosscode-mcp/hub"
	"github.com/crosscode/crosscode-mcp/internal/testing/fixture"
	"github.com/crosscode/crosscode-mcp/internal/testing/sysdeps"
	"github.com/crosscode/crosscode-mcp/protocol"
)

// frameWait bounds every wait for one WebSocket frame.
const frameWait = 15 * time.Second

func (h *testHub) wsURL() string { return "ws" + strings.TrimPrefix(h.URL, "http") + "/v1/subscribe" }

// dial opens a WebSocket to GET /v1/subscribe, closed when the test ends.
func (h *testHub) dial(t testing.TB) *websocket.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), frameWait)
	defer cancel()
	c, _, err := websocket.Dial(ctx, h.wsURL(), nil)
	if err != nil {
		t.Fatalf("dial %s: %v", h.wsURL(), err)
	}
	t.Cleanup(func() { c.CloseNow() })
	return c
}

func writeFrame(t testing.TB, c *websocket.Conn, typ websocket.MessageType, b []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), frameWait)
	defer cancel()
	if err := c.Write(ctx, typ, b); err != nil {
		t.Fatalf("write frame: %v", err)
	}
}

// readRaw reads one frame (the connection is closed if none comes in time).
func readRaw(c *websocket.Conn) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), frameWait)
	defer cancel()
	typ, b, err := c.Read(ctx)
	if err == nil && typ != websocket.MessageText {
		err = fmt.Errorf("a %v frame, want text", typ)
	}
	return b, err
}

// wsConn is a subscribed WebSocket.
type wsConn struct {
	c      *websocket.Conn
	Cursor int64
}

// subscribe dials and subscribes, and wants a "subscribed" answer.
func (h *testHub) subscribe(t testing.TB, workspace, replica, token string) *wsConn {
	t.Helper()
	c := h.dial(t)
	writeFrame(t, c, websocket.MessageText, mustJSON(t, protocol.WSSubscribe{Type: "subscribe", WorkspaceID: workspace, ReplicaID: replica, AccessToken: token}))
	b, err := readRaw(c)
	if err != nil {
		t.Fatalf("subscribe %s/%s: %v", workspace, replica, err)
	}
	wantKeys(t, b, "type", "cursor")
	var ack protocol.WSSubscribed
	if err := strictUnmarshal(b, &ack); err != nil || ack.Type != "subscribed" || ack.Cursor < 0 {
		t.Fatalf("subscribe answer %s (%v)", b, err)
	}
	return &wsConn{c: c, Cursor: ack.Cursor}
}

// read reads and decodes one fan-out frame.
func (w *wsConn) read() (*protocol.FanOut, []byte, error) {
	b, err := readRaw(w.c)
	if err != nil {
		return nil, nil, err
	}
	var f protocol.FanOut
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, b, fmt.Errorf("fan-out frame %s: %w", b, err)
	}
	return &f, b, nil
}

func (w *wsConn) next(t testing.TB) *protocol.FanOut {
	t.Helper()
	f, _, err := w.read()
	if err != nil {
		t.Fatalf("read frame: %v", err)
	}
	return f
}

// drain reads frames until the connection ends and returns why.
func (w *wsConn) drain(t testing.TB) error {
	t.Helper()
	for {
		if _, _, err := w.read(); err != nil {
			return err
		}
	}
}

func websocketStatus(err error) websocket.StatusCode { return websocket.CloseStatus(err) }

// logged returns the common part, timestamp and payload of a logged frame.
func logged(f *protocol.FanOut) (ev protocol.RemoteEvent, at time.Time, payload any, ok bool) {
	switch {
	case f.Operation != nil:
		return f.Operation.RemoteEvent, f.Operation.UpdatedAt, f.Operation.Transaction, true
	case f.Task != nil:
		return f.Task.RemoteEvent, f.Task.UpdatedAt, f.Task.Task, true
	case f.Claim != nil:
		return f.Claim.RemoteEvent, f.Claim.UpdatedAt, f.Claim.Claim, true
	case f.Handoff != nil:
		return f.Handoff.RemoteEvent, f.Handoff.UpdatedAt, f.Handoff.Handoff, true
	case f.Intent != nil:
		return f.Intent.RemoteEvent, f.Intent.UpdatedAt, f.Intent.Intent, true
	case f.Validation != nil:
		return f.Validation.RemoteEvent, f.Validation.CreatedAt, f.Validation.Validation, true
	}
	return protocol.RemoteEvent{}, time.Time{}, nil, false
}

func frameSeq(f *protocol.FanOut) int64 {
	ev, _, _, ok := logged(f)
	if !ok {
		return 0
	}
	return ev.ServerSequence
}

// --- handshake ------------------------------------------------------------

func TestSubscribeHandshake(t *testing.T) {
	h := newHub(t, hub.Config{})
	if w := h.subscribe(t, wsMain, "rep_a", h.Token); w.Cursor != 0 {
		t.Fatalf("cursor of an empty workspace: %d", w.Cursor)
	}
	h.ingestConcurrently(t, 3, 4, "hs")
	if w := h.subscribe(t, wsMain, "rep_a", h.Token); w.Cursor != 12 {
		t.Fatalf("cursor %d, want the head 12", w.Cursor)
	}
	if w := h.subscribe(t, wsOther, "rep_o", h.Other); w.Cursor != 0 {
		t.Fatalf("cursor of the other workspace %d, want 0", w.Cursor)
	}
}

func TestSubscribeRefused(t *testing.T) {
	h := newHub(t, hub.Config{})
	sub := func(ws, rep, tok string) []byte {
		return mustJSON(t, protocol.WSSubscribe{Type: "subscribe", WorkspaceID: ws, ReplicaID: rep, AccessToken: tok})
	}
	cases := []struct {
		name  string
		typ   websocket.MessageType
		frame []byte
		code  protocol.ErrorCode
	}{
		{"bad token", websocket.MessageText, sub(wsMain, "rep_a", "ccm_nope"), protocol.CodeUnauthenticated},
		{"token of another workspace", websocket.MessageText, sub(wsMain, "rep_a", h.Other), protocol.CodeForbidden},
		{"workspace of another token", websocket.MessageText, sub(wsOther, "rep_a", h.Token), protocol.CodeForbidden},
		{"not JSON", websocket.MessageText, []byte("hello"), protocol.CodeSchemaInvalid},
		{"missing fields", websocket.MessageText, []byte(`{"type":"subscribe"}`), protocol.CodeSchemaInvalid},
		{"empty token", websocket.MessageText, sub(wsMain, "rep_a", ""), protocol.CodeSchemaInvalid},
		{"wrong type", websocket.MessageText, []byte(fmt.Sprintf(`{"type":"hello","workspaceId":%q,"replicaId":"rep_a","accessToken":%q}`, wsMain, h.Token)), protocol.CodeSchemaInvalid},
		{"unknown field", websocket.MessageText, []byte(fmt.Sprintf(`{"type":"subscribe","workspaceId":%q,"replicaId":"rep_a","accessToken":%q,"cursor":3}`, wsMain, h.Token)), protocol.CodeSchemaInvalid},
		{"binary frame", websocket.MessageBinary, sub(wsMain, "rep_a", h.Token), protocol.CodeSchemaInvalid},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			conn := h.dial(t)
			writeFrame(t, conn, c.typ, c.frame)
			b, err := readRaw(conn)
			if err != nil {
				t.Fatalf("no error frame: %v", err)
			}
			wantKeys(t, b, "type", "code", "message")
			var e protocol.WSError
			if err := strictUnmarshal(b, &e); err != nil || e.Type != "error" || e.Code != c.code || e.Message == "" {
				t.Fatalf("answer %s, want an error frame with code %s", b, c.code)
			}
			// Then the service closes the socket.
			_, err = readRaw(conn)
			if st := websocketStatus(err); st != protocol.CloseRefused {
				t.Fatalf("after the error frame: %v (status %d), want close %d", err, st, protocol.CloseRefused)
			}
		})
	}
	// A refused subscription gets no frames, and the service still serves.
	w := h.subscribe(t, wsMain, "rep_a", h.Token)
	rc := h.ingest(t, fixture.NewReplica(wsMain, "rep_a", "ada@example.com").Intent("int_1", "a/**"))
	if f := w.next(t); frameSeq(f) != rc.ServerSequence {
		t.Fatalf("frame %+v", f)
	}
}

// TestSubscribeFrameTimeout: a client that connects and sends nothing is
// told why it is refused before the socket closes.
func TestSubscribeFrameTimeout(t *testing.T) {
	t.Cleanup(hub.SetSubscribeWait(100 * time.Millisecond)) // runs after the hub stops
	h := newHub(t, hub.Config{})
	conn := h.dial(t)
	b, err := readRaw(conn)
	if err != nil {
		t.Fatalf("no error frame for a silent client: %v", err)
	}
	wantKeys(t, b, "type", "code", "message")
	var e protocol.WSError
	if err := strictUnmarshal(b, &e); err != nil || e.Type != "error" || e.Code != protocol.CodeSchemaInvalid || !strings.Contains(e.Message, "subscribe frame within 100ms") {
		t.Fatalf("answer %s, want an error frame with code %s naming the wait", b, protocol.CodeSchemaInvalid)
	}
	_, err = readRaw(conn)
	if st := websocketStatus(err); st != protocol.CloseRefused {
		t.Fatalf("after the error frame: %v (status %d), want close %d", err, st, protocol.CloseRefused)
	}
	// The service still serves.
	h.subscribe(t, wsMain, "rep_a", h.Token)
}

// TestShutdownClosesSilentClient: a client that has not subscribed yet is
// told the service is going away when it shuts down, instead of the
// shutdown waiting for the subscribe frame's deadline.
func TestShutdownClosesSilentClient(t *testing.T) {
	t.Cleanup(hub.SetSubscribeWait(time.Hour)) // runs after the hub stops
	h := newHub(t, hub.Config{})
	conn := h.dial(t)
	end := make(chan error, 1)
	go func() {
		_, err := readRaw(conn)
		end <- err
	}()
	if err := h.stop(); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if err := <-end; websocketStatus(err) != websocket.StatusGoingAway {
		t.Fatalf("the silent client's socket ended with %v, want 1001 going away", err)
	}
}

// TestNonWebSocketSubscribeIsJSON: a plain GET of /v1/subscribe (or one from
// a foreign Origin) is refused like every other error, as JSON.
func TestNonWebSocketSubscribeIsJSON(t *testing.T) {
	h := newHub(t, hub.Config{})
	a := h.mustDo(t, "GET", "/v1/subscribe", h.Token, nil)
	if a.Status < 400 || a.Status >= 500 {
		t.Fatalf("plain GET /v1/subscribe: %s", a)
	}
	var body protocol.ErrorBody
	if ct := a.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") || json.Unmarshal(a.Body, &body) != nil || body.Error.Code == "" {
		t.Errorf("plain GET /v1/subscribe answered %d %q %q: want a JSON {\"error\":{\"code\",\"message\"}} body", a.Status, ct, a.Body)
	}

	ctx, cancel := context.WithTimeout(context.Background(), frameWait)
	defer cancel()
	hdr := http.Header{"Origin": {"https://evil.example"}}
	c, resp, err := websocket.Dial(ctx, h.wsURL(), &websocket.DialOptions{HTTPHeader: hdr})
	if err == nil {
		c.CloseNow()
		t.Fatal("a cross-origin browser upgrade was accepted")
	}
	if resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("cross-origin upgrade: %v %v", resp, err)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("cross-origin upgrade refused with Content-Type %q, want a JSON error", ct)
	}
}

// --- fan-out --------------------------------------------------------------

func TestFanOutFrames(t *testing.T) {
	h := newHub(t, hub.Config{})
	a := fixture.NewReplica(wsMain, "rep_a", "ada@example.com")
	b := fixture.NewReplica(wsMain, "rep_b", "bo@example.com")
	h.ingest(t, a.Intent("int_0", "x/**"))
	w := h.subscribe(t, wsMain, "rep_watch", h.Token)
	other := h.subscribe(t, wsOther, "rep_o", h.Other)
	if w.Cursor != 1 {
		t.Fatalf("cursor %d", w.Cursor)
	}
	sent := []*protocol.Envelope{
		a.Transaction("txn_1", "src/game/boss.gd"),
		b.Task("tsk_1", protocol.TaskOpen, false),
		a.Claim("clm_1", true, "src/game/**"),
		a.Handoff("hof_1", "bo@example.com", []string{"clm_1"}, ""),
		b.Intent("int_1", "assets/boss/**"),
		b.Validation("val_1", protocol.ValidationFailed),
		b.Task("tsk_1", protocol.TaskBlocked, true),
		b.Handoff("hof_1", "", nil, protocol.HandoffAccepted),
		a.Release("clm_1", "src/game/**"),
	}
	var receipts []protocol.IngestReceipt
	for _, e := range sent {
		receipts = append(receipts, h.ingest(t, e))
	}
	wantType := map[protocol.Kind]string{
		protocol.KindTransaction: "operation", protocol.KindTask: "task", protocol.KindClaim: "claim",
		protocol.KindHandoff: "handoff", protocol.KindIntent: "intent", protocol.KindValidation: "validation",
	}
	for i, e := range sent {
		f, raw, err := w.read()
		if err != nil {
			t.Fatal(err)
		}
		if f.Type != wantType[e.Type.Kind()] {
			t.Fatalf("frame for %s has type %q, want %q", e.Type, f.Type, wantType[e.Type.Kind()])
		}
		ev, at, payload, ok := logged(f)
		if !ok {
			t.Fatalf("frame %s has no data", raw)
		}
		want := protocol.RemoteEvent{EventID: e.ID, ServerSequence: receipts[i].ServerSequence, WorkspaceID: wsMain, SenderReplicaID: e.ReplicaID}
		if ev != want {
			t.Fatalf("frame %d: %+v, want %+v", i, ev, want)
		}
		if !at.Equal(receipts[i].IngestedAt) {
			t.Fatalf("frame %d timestamp %v, want the ingestedAt %v", i, at, receipts[i].IngestedAt)
		}
		if got, want := string(mustJSON(t, payload)), string(mustJSON(t, e.Payload)); got != want {
			t.Fatalf("frame %d payload\n got %s\nwant %s", i, got, want)
		}
		var outer struct {
			Type string
			Data json.RawMessage
		}
		if err := json.Unmarshal(raw, &outer); err != nil {
			t.Fatal(err)
		}
		wantKeys(t, raw, "type", "data")
		stamp, entity := "updatedAt", string(e.Type.Kind())
		switch e.Type.Kind() {
		case protocol.KindValidation:
			stamp = "createdAt"
		case protocol.KindTransaction:
			entity = "transaction"
		}
		wantKeys(t, outer.Data, "eventId", "serverSequence", "workspaceId", "senderReplicaId", stamp, entity)
	}

	// The other workspace's subscriber saw none of that, only its own.
	o := fixture.NewReplica(wsOther, "rep_o", "olga@example.com")
	orc := decodeReceipt(t, h.post(t, h.Other, o.Claim("clm_o", false, "src/**")))
	if f := other.next(t); f.Claim == nil || f.Claim.ServerSequence != orc.ServerSequence || f.Claim.WorkspaceID != wsOther || f.Claim.EventID != "clm_o" {
		t.Fatalf("other workspace's frame %+v", f)
	}
	last := h.ingest(t, a.Intent("int_2", "y/**"))
	if f := w.next(t); frameSeq(f) != last.ServerSequence || f.Intent == nil || f.Intent.EventID != "int_2" {
		t.Fatalf("after the other workspace's ingest, frame %+v", f)
	}
}

// collect reads logged frames in the background, sending their sequences.
func collect(w *wsConn) (<-chan int64, <-chan error) {
	seqs := make(chan int64, 100000)
	errc := make(chan error, 1)
	go func() {
		for {
			f, raw, err := w.read()
			if err != nil {
				errc <- err
				return
			}
			s := frameSeq(f)
			if s == 0 {
				errc <- fmt.Errorf("unexpected frame %s", raw)
				return
			}
			seqs <- s
		}
	}()
	return seqs, errc
}

// wantSequence receives from seqs exactly from+1..to, in order.
func wantSequence(t testing.TB, name string, seqs <-chan int64, errc <-chan error, from, to int64) []int64 {
	t.Helper()
	var got []int64
	timer := time.NewTimer(30 * time.Second)
	defer timer.Stop()
	for next := from + 1; next <= to; next++ {
		select {
		case s := <-seqs:
			if s != next {
				t.Fatalf("%s: received serverSequence %d, want %d (after %d in order)", name, s, next, len(got))
			}
			got = append(got, s)
		case err := <-errc:
			t.Fatalf("%s: connection ended after %d frames (want %d..%d): %v", name, len(got), from+1, to, err)
		case <-timer.C:
			t.Fatalf("%s: received %d frames within 30s, want %d..%d", name, len(got), from+1, to)
		}
	}
	return got
}

// writeStream runs writers concurrent ingesters of each envelopes; acked
// counts the receipts. It returns a function that waits for them.
func (h *testHub) writeStream(t testing.TB, writers, each int, prefix string, acked *atomic.Int64) func() {
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := fixture.NewReplica(wsMain, fmt.Sprintf("%s_%d", prefix, w), "w@example.com")
			for i := range each {
				e := r.Any(prefix, i)
				b, _ := json.Marshal(protocol.IngestRequest{Envelope: e})
				a, err := h.do("POST", ingestPath(e), h.Token, strings.NewReader(string(b)))
				if err == nil && a.Status != http.StatusOK {
					err = fmt.Errorf("%s/%d: %s", e.ReplicaID, e.ClientSequence, a)
				}
				if err != nil {
					errs <- err
					return
				}
				acked.Add(1)
			}
		}()
	}
	return func() {
		t.Helper()
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
	}
}

func TestFanOutOrderConcurrentWriters(t *testing.T) {
	h := newHub(t, hub.Config{})
	h.ingestConcurrently(t, 2, 5, "pre")
	early := h.subscribe(t, wsMain, "rep_early", h.Token)
	if early.Cursor != 10 {
		t.Fatalf("cursor %d, want 10", early.Cursor)
	}
	earlySeqs, earlyErr := collect(early)

	const writers, each = 10, 60
	var acked atomic.Int64
	wait := h.writeStream(t, writers, each, "ord", &acked)
	// Subscribe again in the middle of the stream.
	for deadline := time.Now().Add(30 * time.Second); acked.Load() < writers*each/3; {
		if time.Now().After(deadline) {
			t.Fatal("writers stalled")
		}
		time.Sleep(time.Millisecond)
	}
	mid := h.subscribe(t, wsMain, "rep_mid", h.Token)
	midSeqs, midErr := collect(mid)
	wait()
	head := int64(10 + writers*each)
	if mid.Cursor < 10 || mid.Cursor > head {
		t.Fatalf("mid-stream cursor %d outside 10..%d", mid.Cursor, head)
	}
	wantSequence(t, "early subscriber", earlySeqs, earlyErr, early.Cursor, head)
	wantSequence(t, "mid-stream subscriber", midSeqs, midErr, mid.Cursor, head)
	// And nothing after the head.
	for _, c := range []<-chan int64{earlySeqs, midSeqs} {
		select {
		case s := <-c:
			t.Fatalf("extra frame %d after the head %d", s, head)
		default:
		}
	}
	wantGapFree(t, h.readAll(t, h.Token, "/v1/events", 0), head)
}

func TestReconnectCatchUp(t *testing.T) {
	h := newHub(t, hub.Config{})
	first := h.subscribe(t, wsMain, "rep_r", h.Token)
	const writers, each = 8, 80
	var acked atomic.Int64
	wait := h.writeStream(t, writers, each, "rc", &acked)

	seen := map[int64]int{}
	var lastSeen int64
	for range 150 {
		f := first.next(t)
		s := frameSeq(f)
		if s != lastSeen+1 {
			t.Fatalf("first socket: %d after %d", s, lastSeen)
		}
		seen[s]++
		lastSeen = s
	}
	first.c.CloseNow() // the connection drops mid-stream
	// Reconnect a while later, so the catch-up has something to read.
	for deadline := time.Now().Add(30 * time.Second); acked.Load() < lastSeen+150 && acked.Load() < writers*each; {
		if time.Now().After(deadline) {
			t.Fatal("writers stalled")
		}
		time.Sleep(time.Millisecond)
	}

	second := h.subscribe(t, wsMain, "rep_r", h.Token)
	if second.Cursor < lastSeen {
		t.Fatalf("new cursor %d below the last frame received, %d", second.Cursor, lastSeen)
	}
	liveSeqs, liveErr := collect(second)
	// Catch up by cursor from the last frame seen to the new cursor.
	for _, e := range h.readAll(t, h.Token, "/v1/events", lastSeen) {
		if e.ServerSequence > second.Cursor {
			break
		}
		seen[e.ServerSequence]++
	}
	wait()
	head := int64(writers * each)
	for _, s := range wantSequence(t, "reconnected subscriber", liveSeqs, liveErr, second.Cursor, head) {
		seen[s]++
	}
	for s := int64(1); s <= head; s++ {
		if seen[s] != 1 {
			t.Fatalf("serverSequence %d seen %d times (first socket to %d, cursor %d, head %d)", s, seen[s], lastSeen, second.Cursor, head)
		}
	}
	if len(seen) != int(head) {
		t.Fatalf("%d sequences seen, want %d", len(seen), head)
	}
	t.Logf("first socket 1..%d, catch-up to %d, live to %d", lastSeen, second.Cursor, head)
}

var cursorInReason = regexp.MustCompile(`afterSequence=(\d+)`)

// dialSmallBuffer dials like dial, but with a small socket receive buffer,
// so (with smallSendBuffers on the service's side) a client that stops
// reading stalls the service's writes after a few dozen frames instead of
// after megabytes.
func (h *testHub) dialSmallBuffer(t testing.TB) *websocket.Conn {
	t.Helper()
	d := &net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) { serr = setReceiveBuffer(fd, 4096) })
		return errors.Join(err, serr)
	}}
	tr := &http.Transport{DialContext: d.DialContext}
	ctx, cancel := context.WithTimeout(context.Background(), frameWait)
	defer cancel()
	c, _, err := websocket.Dial(ctx, h.wsURL(), &websocket.DialOptions{HTTPClient: &http.Client{Transport: tr}})
	if err != nil {
		t.Fatalf("dial %s: %v", h.wsURL(), err)
	}
	t.Cleanup(func() { c.CloseNow() })
	return c
}

// smallSendBuffers makes the service's side of every connection buffer
// little, like dialSmallBuffer does for the client's.
func smallSendBuffers(l net.Listener) net.Listener { return sndbufListener{l} }

type sndbufListener struct{ net.Listener }

func (l sndbufListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetWriteBuffer(4096)
	}
	return c, err
}

func TestSlowSubscriber(t *testing.T) {
	// The service's write to the slow subscriber blocks from its 35th
	// frame or so until the test reads it, after every writer is done;
	// with the default writeWait a loaded machine took longer, and the
	// service dropped the connection without its close frame.
	t.Cleanup(hub.SetWriteWait(2 * time.Minute))
	h := newHub(t, hub.Config{QueueDepth: 8}, smallSendBuffers)
	// The slow subscriber never reads while the stream runs.
	sc := h.dialSmallBuffer(t)
	writeFrame(t, sc, websocket.MessageText, mustJSON(t, protocol.WSSubscribe{Type: "subscribe", WorkspaceID: wsMain, ReplicaID: "rep_slow", AccessToken: h.Token}))
	b, err := readRaw(sc)
	var ack protocol.WSSubscribed
	if err != nil || json.Unmarshal(b, &ack) != nil || ack.Type != "subscribed" {
		t.Fatalf("subscribe: %s %v", b, err)
	}
	slow := &wsConn{c: sc, Cursor: ack.Cursor}
	reader := h.subscribe(t, wsMain, "rep_reader", h.Token)
	readerSeqs, readerErr := collect(reader)

	// Four writers: one commit carries at most four frames, half the queue
	// (see TestLargeCommitDoesNotCloseFastSubscriber for more).
	const writers, each = 4, 150
	var acked atomic.Int64
	wait := h.writeStream(t, writers, each, "slow", &acked) // fails on any refused ingest
	wait()
	head := int64(writers * each)
	wantSequence(t, "reading subscriber", readerSeqs, readerErr, reader.Cursor, head)

	// The slow one gets a prefix of the stream, then a 4008 close naming
	// the cursor to resume from.
	last := slow.Cursor
	for {
		var f *protocol.FanOut
		if f, _, err = slow.read(); err != nil {
			break
		}
		if s := frameSeq(f); s != last+1 {
			t.Fatalf("slow subscriber: %d after %d", s, last)
		}
		last++
	}
	var ce websocket.CloseError
	if last == head && !errors.As(err, &ce) {
		sysdeps.SkipUnderWine(t, "Wine keeps its own socket buffers, whatever SO_SNDBUF and SO_RCVBUF say, and all 600 frames fit in them: no subscriber is slow")
	}
	if !errors.As(err, &ce) || ce.Code != protocol.CloseSlowConsumer {
		t.Fatalf("slow subscriber ended with %v after %d frames, want close %d", err, last, protocol.CloseSlowConsumer)
	}
	if last == head {
		t.Fatalf("the slow subscriber received all %d frames before being closed as slow", head)
	}
	m := cursorInReason.FindStringSubmatch(ce.Reason)
	if m == nil || !strings.Contains(ce.Reason, string(protocol.CodeSlowConsumer)) {
		t.Fatalf("close reason %q does not name the cursor", ce.Reason)
	}
	if cur, _ := strconv.ParseInt(m[1], 10, 64); cur != last {
		t.Fatalf("close reason names cursor %d, but the last frame delivered was %d", cur, last)
	}
	// Resuming from it by cursor gives the rest.
	rest := h.readAll(t, h.Token, "/v1/events", last)
	if int64(len(rest)) != head-last || (len(rest) > 0 && rest[0].ServerSequence != last+1) {
		t.Fatalf("resume from %d: %d operations", last, len(rest))
	}
	t.Logf("slow subscriber closed after %d of %d frames", last, head)
}

// TestLargeCommitDoesNotCloseFastSubscriber: a subscriber that reads as
// fast as it can is not "too slow", even when one group commit logs more
// envelopes than QueueDepth.
func TestLargeCommitDoesNotCloseFastSubscriber(t *testing.T) {
	h := newHub(t, hub.Config{QueueDepth: 8})
	reader := h.subscribe(t, wsMain, "rep_reader", h.Token)
	seqs, errc := collect(reader)
	const writers, each = 32, 10
	var acked atomic.Int64
	h.writeStream(t, writers, each, "burst", &acked)()
	wantSequence(t, "fast subscriber", seqs, errc, reader.Cursor, writers*each)
}

// --- presence -------------------------------------------------------------

func TestPresence(t *testing.T) {
	h := newHub(t, hub.Config{})
	watch := h.subscribe(t, wsMain, "rep_watch", h.Token)
	peer := h.subscribe(t, wsMain, "rep_p", h.Token)

	up := protocol.PresenceUpdate{ReplicaID: "rep_p", ActorID: "pat@example.com", SessionID: "ses_p",
		Agent: &protocol.Agent{Provider: protocol.ProviderCodex, AdapterID: "crosscode-mcp"}, Status: protocol.PresenceOnline}
	a := h.mustDo(t, "POST", "/v1/presence", h.Token, mustJSON(t, up))
	if a.Status != http.StatusOK {
		t.Fatalf("POST /v1/presence: %s", a)
	}
	wantJSON(t, a)
	var echoed protocol.RemotePresence
	if err := strictUnmarshal(a.Body, &echoed); err != nil || echoed.SenderReplicaID != "rep_p" || echoed.Status != protocol.PresenceOnline || echoed.WorkspaceID != wsMain {
		t.Fatalf("POST /v1/presence answered %s (%v)", a.Body, err)
	}
	wantPresence := func(w *wsConn, replica string, status protocol.PresenceStatus) *protocol.RemotePresence {
		t.Helper()
		f := w.next(t)
		if f.Type != "presence" || f.Presence == nil {
			t.Fatalf("frame %+v, want presence", f)
		}
		p := f.Presence
		if p.SenderReplicaID != replica || p.Status != status || p.WorkspaceID != wsMain || p.UpdatedAt.IsZero() {
			t.Fatalf("presence frame %+v, want %s %s", p, replica, status)
		}
		return p
	}
	p := wantPresence(watch, "rep_p", protocol.PresenceOnline)
	if p.ActorID != "pat@example.com" || p.SessionID != "ses_p" || p.Agent == nil || p.Agent.Provider != protocol.ProviderCodex {
		t.Fatalf("presence frame %+v", p)
	}
	wantPresence(peer, "rep_p", protocol.PresenceOnline)

	list := func(token string) []*protocol.RemotePresence {
		t.Helper()
		a := h.mustDo(t, "GET", "/v1/presence", token, nil)
		if a.Status != http.StatusOK {
			t.Fatalf("GET /v1/presence: %s", a)
		}
		wantJSON(t, a)
		var body struct {
			Items []*protocol.RemotePresence `json:"items"`
		}
		if err := strictUnmarshal(a.Body, &body); err != nil || body.Items == nil {
			t.Fatalf("GET /v1/presence: %s (%v)", a.Body, err)
		}
		return body.Items
	}
	status := func(items []*protocol.RemotePresence, replica string) protocol.PresenceStatus {
		for _, p := range items {
			if p.SenderReplicaID == replica {
				return p.Status
			}
		}
		return ""
	}
	if got := list(h.Token); len(got) != 1 || status(got, "rep_p") != protocol.PresenceOnline || got[0].ActorID != "pat@example.com" {
		t.Fatalf("GET /v1/presence: %+v", got)
	}
	if got := list(h.Other); len(got) != 0 {
		t.Fatalf("the other workspace sees %d presences", len(got))
	}

	// An invalid update is refused and changes nothing.
	bad := up
	bad.Status = "away"
	if msg := wantError(t, h.mustDo(t, "POST", "/v1/presence", h.Token, mustJSON(t, bad)), http.StatusBadRequest, protocol.CodeSchemaInvalid); !strings.Contains(msg, "status") {
		t.Fatalf("message %q does not name status", msg)
	}
	wantError(t, h.mustDo(t, "POST", "/v1/presence", h.Token, []byte(`{"replicaId":"rep_p","actorId":"a","status":"online","mood":"good"}`)), http.StatusBadRequest, protocol.CodeSchemaInvalid)

	// The peer's socket drops: it is marked offline, and the others told.
	peer.c.CloseNow()
	wantPresence(watch, "rep_p", protocol.PresenceOffline)
	if got := list(h.Token); status(got, "rep_p") != protocol.PresenceOffline {
		t.Fatalf("after the drop: %+v", got)
	}

	// A replica with two sockets stays online while one remains.
	q1 := h.subscribe(t, wsMain, "rep_q", h.Token)
	q2 := h.subscribe(t, wsMain, "rep_q", h.Token)
	up.ReplicaID = "rep_q"
	h.mustDo(t, "POST", "/v1/presence", h.Token, mustJSON(t, up))
	wantPresence(watch, "rep_q", protocol.PresenceOnline)
	q1.c.CloseNow()
	q2.next(t) // its own online frame
	// A marker update after the drop: the next frame the watcher gets is
	// the marker, not rep_q going offline.
	up.ReplicaID = "rep_marker"
	h.mustDo(t, "POST", "/v1/presence", h.Token, mustJSON(t, up))
	wantPresence(watch, "rep_marker", protocol.PresenceOnline)
	q2.c.CloseNow()
	wantPresence(watch, "rep_q", protocol.PresenceOffline)
}

// TestPresenceSurvivesRestart: a graceful shutdown closes every socket, but
// the replicas are not leaving: they stay online for the next instance.
func TestPresenceSurvivesRestart(t *testing.T) {
	h := newHub(t, hub.Config{})
	w := h.subscribe(t, wsMain, "rep_p", h.Token)
	up := protocol.PresenceUpdate{ReplicaID: "rep_p", ActorID: "pat@example.com", SessionID: "ses_p", Status: protocol.PresenceOnline}
	if a := h.mustDo(t, "POST", "/v1/presence", h.Token, mustJSON(t, up)); a.Status != http.StatusOK {
		t.Fatalf("POST /v1/presence: %s", a)
	}
	if f := w.next(t); f.Presence == nil || f.Presence.Status != protocol.PresenceOnline {
		t.Fatalf("frame %+v, want rep_p online", f)
	}
	end := make(chan error, 1)
	go func() { end <- w.drain(t) }()
	if err := h.stop(); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if err := <-end; websocketStatus(err) != websocket.StatusGoingAway {
		t.Fatalf("subscriber closed with %v, want 1001 going away", err)
	}

	h.reopen(t)
	h.serve(t, hub.Config{})
	a := h.mustDo(t, "GET", "/v1/presence", h.Token, nil)
	var body struct {
		Items []*protocol.RemotePresence `json:"items"`
	}
	if a.Status != http.StatusOK || json.Unmarshal(a.Body, &body) != nil {
		t.Fatalf("GET /v1/presence: %s", a)
	}
	if len(body.Items) != 1 || body.Items[0].SenderReplicaID != "rep_p" || body.Items[0].Status != protocol.PresenceOnline {
		t.Fatalf("after a restart the presence is %s, want rep_p still online", a.Body)
	}
}
