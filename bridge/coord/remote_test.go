package coord

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crosscode/crosscode-mcp/hub"
	"github.com/crosscode/crosscode-mcp/protocol"
	"github.com/crosscode/crosscode-mcp/store"
)

// serveHub runs a coordination service on loopback over cfg.Store, or over
// a database of its own if that is nil.
func serveHub(t *testing.T, cfg hub.Config) (url, token string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	st, _ := cfg.Store.(*store.Store)
	if st == nil {
		var err error
		if st, err = store.Open(ctx, filepath.Join(t.TempDir(), "hub.db"), nil); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
	}
	token, err := st.CreateToken(ctx, "mygame", "")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Store = st
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { hub.New(cfg).Serve(ctx, l); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return "http://" + l.Addr().String(), token
}

func remoteCoord(t *testing.T, url, token, actor string) *Coordinator {
	t.Helper()
	return remoteCoordAt(t, filepath.Join(t.TempDir(), "replica.db"), url, token, actor, "ses_"+actor)
}

// TestRemoteResyncAfterRetention: a replica whose cursor points into
// history the service deleted adopts resyncFrom, rebuilds its projections
// from there, and tells the agent.
func TestRemoteResyncAfterRetention(t *testing.T) {
	// Retention runs here when the test says, not on a timer, so a slow
	// machine cannot let it delete more than the test means it to.
	hubSt, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "hub.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hubSt.Close() })
	url, token := serveHub(t, hub.Config{Store: hubSt})
	ada := remoteCoord(t, url, token, "ada@example.com")
	old, err := ada.Claim(context.Background(), []string{"src/**"}, true, "old", time.Hour, "")
	if err != nil || old.Status != "granted" {
		t.Fatalf("claim: %v %+v", err, old)
	}
	// Retention deletes everything logged so far, then something new is logged.
	time.Sleep(5 * time.Millisecond)
	cut := time.Now()
	if res, err := hubSt.Sweep(context.Background(), cut, func(string) time.Duration { return time.Nanosecond }, nil); err != nil || res.Deleted == 0 {
		t.Fatalf("sweep: %v %+v", err, res)
	}
	if _, err := ada.PublishIntent(context.Background(), "after the sweep", []string{"docs/**"}, "", 0); err != nil {
		t.Fatal(err)
	}
	bo := remoteCoord(t, url, token, "bo@example.com")
	news, err := bo.News(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(news.Notices) == 0 || !strings.Contains(news.Notices[0], "deleted by retention") {
		t.Fatalf("no resync notice: %+v", news)
	}
	// bo's projections hold what followed the watermark, not the deleted claim.
	if _, err := bo.cfg.Store.Entity(context.Background(), "mygame", protocol.KindClaim, old.Claim.ID); err == nil {
		t.Fatal("a claim from deleted history is in the rebuilt projections")
	}
	intents, err := bo.Entities(context.Background(), store.EntityQuery{Kind: protocol.KindIntent})
	if err != nil || len(intents) != 1 {
		t.Fatalf("intents after resync: %v %d", err, len(intents))
	}
}

// TestRemoteUploadOrderAndRefusal: writes upload in clientSequence order;
// a write the service refuses is reported, not retried for ever.
func TestRemoteUploadOrderAndRefusal(t *testing.T) {
	url, token := serveHub(t, hub.Config{})
	ada := remoteCoord(t, url, token, "ada@example.com")
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := ada.PublishIntent(context.Background(), "intent", []string{"a/**"}, "", 0); err != nil {
				t.Errorf("intent %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	pending, refused, err := ada.cfg.Store.OutboxCounts(context.Background(), ada.Replica())
	if err != nil || pending != 0 || refused != 0 {
		t.Fatalf("outbox: %d pending %d refused %v", pending, refused, err)
	}
	// An envelope whose id the service already has is refused for good.
	dup := ada.envelope(context.Background(), protocol.EventIntentPublished, &protocol.Intent{ID: "int_fixed", WorkspaceID: "mygame", ActorID: ada.Actor(), ReplicaID: ada.Replica(),
		Summary: "x", Paths: []string{"a"}, CreatedAt: time.Now().UTC()})
	if _, err := ada.rem.publish(context.Background(), dup); err != nil {
		t.Fatal(err)
	}
	again := ada.envelope(context.Background(), protocol.EventIntentPublished, &protocol.Intent{ID: "int_fixed", WorkspaceID: "mygame", ActorID: ada.Actor(), ReplicaID: ada.Replica(),
		Summary: "y", Paths: []string{"b"}, CreatedAt: time.Now().UTC()})
	_, err = ada.rem.publish(context.Background(), again)
	var ref *RefusedError
	if !errors.As(err, &ref) || ref.Code != protocol.CodeIDConflict {
		t.Fatalf("reused id: %v", err)
	}
	if _, refused, _ := ada.cfg.Store.OutboxCounts(context.Background(), ada.Replica()); refused != 1 {
		t.Fatalf("refused count %d", refused)
	}
	news, _ := ada.News(context.Background())
	if len(news.Notices) != 1 || !strings.Contains(news.Notices[0], "ID_CONFLICT") {
		t.Fatalf("refusal notice: %+v", news.Notices)
	}
}

// TestPresenceGoesIdle: no tool call for IdleAfter makes the session idle;
// the next call makes it online again.
func TestPresenceGoesIdle(t *testing.T) {
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "ws.db"), &store.Options{Projections: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	c, err := New(Config{Workspace: "mygame", Store: st, Actor: "ada", Replica: "rep_a", Session: "ses_a", Now: clock, IdleCheck: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	status := func() protocol.PresenceStatus {
		ps, _ := st.Presence(context.Background(), "mygame")
		if len(ps) != 1 {
			return ""
		}
		return ps[0].Status
	}
	if s := status(); s != protocol.PresenceOnline {
		t.Fatalf("at start: %s", s)
	}
	mu.Lock()
	now = now.Add(IdleAfter + time.Second)
	mu.Unlock()
	waitUntil(t, func() bool { return status() == protocol.PresenceIdle })
	c.Touch(context.Background())
	if s := status(); s != protocol.PresenceOnline {
		t.Fatalf("after a call: %s", s)
	}
	c.Close(context.Background())
	if s := status(); s != protocol.PresenceOffline {
		t.Fatalf("after close: %s", s)
	}
}

// The bound only stops a test that hangs: on a 2-core machine running a
// second test suite beside this one, an outbox that drains in well under
// a second when quiet was seen to need more than 10 s.
func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatal("condition not met in 90s")
}

// TestRemoteWritesQueueAtOnceWhileDown: once an upload failed because the
// service does not answer, writes answer "queued" at once (AckWait here is
// an hour, so a write that waited for it would never return), and the
// outbox uploads by itself as soon as the service answers again.
func TestRemoteWritesQueueAtOnceWhileDown(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there until the service starts below
	hubSt, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "hub.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hubSt.Close() })
	token, err := hubSt.CreateToken(context.Background(), "mygame", "")
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "replica.db"), &store.Options{Projections: true})
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(Config{Workspace: "mygame", Store: st, Service: "http://" + addr, Token: token, Actor: "ada@example.com", Replica: "rep_ada", Session: "ses_ada", AckWait: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()); st.Close() })

	done := make(chan error, 1)
	go func() {
		for i := range 5 {
			p, err := c.PublishIntent(context.Background(), fmt.Sprint("while down ", i), []string{"a/**"}, "", 0)
			if err == nil && p.Acknowledged {
				err = fmt.Errorf("write %d acknowledged with no service", i)
			}
			if err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("writes waited for their receipts while the service was down, instead of answering queued")
	}
	if pending, _, _ := st.OutboxCounts(context.Background(), "rep_ada"); pending != 5 {
		t.Fatalf("%d writes pending, want 5", pending)
	}

	l, err = net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("the service's address was taken meanwhile: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() { hub.New(hub.Config{Store: hubSt}).Serve(ctx, l); close(served) }()
	t.Cleanup(func() { cancel(); <-served })
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		pending, _, _ := st.OutboxCounts(context.Background(), "rep_ada")
		if pending == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d writes still pending 30s after the service came back", pending)
		}
	}
	p, err := c.PublishIntent(context.Background(), "back", []string{"b/**"}, "", 0)
	if err != nil || !p.Acknowledged || p.ServerSequence != 6 {
		t.Fatalf("write after the service came back: %+v %v, want acknowledged at 6", p, err)
	}
}

// TestPresenceLocalFirst: in remote mode the local mirror has a new
// presence before the service answers its post: the client's hooks read
// who the agent is from there, and one run while the service is slow
// must not act as the machine's default actor.
func TestPresenceLocalFirst(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// A service that takes connections and never answers.
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				buf := make([]byte, 4096)
				for {
					if _, err := conn.Read(buf); err != nil {
						return
					}
				}
			}()
		}
	}()
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "replica.db"), &store.Options{Projections: true})
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(Config{Workspace: "mygame", Store: st, Service: "http://" + l.Addr().String(), Token: "t", Actor: "ada@example.com", Replica: "rep_ada", Session: "ses_ada", AckWait: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close(); c.Close(context.Background()); st.Close() })
	c.SetAgent(protocol.Agent{Provider: protocol.ProviderClaude, SessionReference: "ada-session"})
	announced := make(chan struct{})
	go func() { c.Announce(context.Background()); close(announced) }()
	deadline := time.Now().Add(time.Second)
	for {
		ps, err := st.Presence(context.Background(), "mygame")
		if err != nil {
			t.Fatal(err)
		}
		if len(ps) == 1 && ps[0].Agent != nil && ps[0].Agent.SessionReference == "ada-session" {
			break
		}
		select {
		case <-announced:
			t.Fatalf("the local presence was written only after the service's post: %+v", ps)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no local presence naming the session while the service is slow: %+v", ps)
		}
		time.Sleep(5 * time.Millisecond)
	}
	<-announced
}
