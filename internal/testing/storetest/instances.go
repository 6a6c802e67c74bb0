package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/crosscode/crosscode-mcp/hub"
	"github.com/crosscode/crosscode-mcp/protocol"
)

// InstanceStore is a store the service may run several instances of, on
// one database: it tracks which instance holds each replica's
// subscriptions.
type InstanceStore interface {
	Store
	hub.Connections
}

// OpenInstances makes a fresh, empty database and returns a function that
// opens another store (another instance) on it, whose instances are taken
// for dead after ttl without a heartbeat.
type OpenInstances func(t *testing.T, ttl time.Duration) func() InstanceStore

// RunInstances runs the suite's tests of several instances on one
// database.
func RunInstances(t *testing.T, open OpenInstances) {
	t.Run("PresenceAcrossInstances", func(t *testing.T) { testPresenceAcrossInstances(t, open) })
}

// Two instances on one database: a replica goes offline when its last
// subscription on any instance ends, not while another instance holds
// one; when an instance stops beating, the others set offline the
// replicas only it held, once, and leave the others alone.
func testPresenceAcrossInstances(t *testing.T, open OpenInstances) {
	ctx := context.Background()
	// Long enough that a loaded machine does not make a live instance look
	// dead between two steps (it would set a replica offline early).
	const ttl = 2 * time.Second
	another := open(t, ttl)
	a, b := another(), another()
	if _, err := a.CreateToken(ctx, "mygame", ""); err != nil {
		t.Fatal(err)
	}
	online := func(s InstanceStore, replica string) {
		t.Helper()
		if _, err := s.SetPresence(ctx, "mygame", &protocol.PresenceUpdate{ReplicaID: replica, ActorID: "ada@example.com", SessionID: "ses_" + replica, Status: protocol.PresenceOnline}); err != nil {
			t.Fatal(err)
		}
	}
	connect := func(s InstanceStore, replica string) {
		t.Helper()
		if err := s.Connected(ctx, "mygame", replica); err != nil {
			t.Fatal(err)
		}
	}
	status := func(replica string) protocol.PresenceStatus {
		t.Helper()
		ps, err := b.Presence(ctx, "mygame")
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range ps {
			if p.SenderReplicaID == replica {
				return p.Status
			}
		}
		t.Fatalf("no presence for %s", replica)
		return ""
	}
	for _, r := range []string{"rep_a", "rep_b", "rep_both", "rep_moved"} {
		online(a, r)
	}
	connect(a, "rep_a")
	connect(b, "rep_b")
	connect(a, "rep_both")
	connect(b, "rep_both")
	connect(a, "rep_moved")
	if _, taken, err := a.Heartbeat(ctx); err != nil || taken {
		t.Fatalf("a's first heartbeat: taken for dead %v, %v", taken, err)
	}

	// rep_moved reconnected to b before its old subscription on a ended:
	// it stays online, until it leaves b too.
	connect(b, "rep_moved")
	if p, err := a.MarkOffline(ctx, "mygame", "rep_moved"); err != nil || p != nil {
		t.Fatalf("offline on a while b holds the replica: %+v %v, want nothing", p, err)
	}
	if got := status("rep_moved"); got != protocol.PresenceOnline {
		t.Fatalf("rep_moved is %s, want online", got)
	}
	if p, err := b.MarkOffline(ctx, "mygame", "rep_moved"); err != nil || p == nil || p.Status != protocol.PresenceOffline {
		t.Fatalf("offline on b, its last subscription: %+v %v, want offline", p, err)
	}

	// a stops beating (killed); b's heartbeats keep it alive, and once a
	// is TTL old, b sets offline what only a held.
	deadline := time.Now().Add(10 * ttl)
	var gone []*protocol.RemotePresence
	for len(gone) == 0 && time.Now().Before(deadline) {
		time.Sleep(ttl / 4)
		g, taken, err := b.Heartbeat(ctx)
		if err != nil || taken {
			t.Fatalf("b's heartbeat: taken for dead %v, %v", taken, err)
		}
		gone = append(gone, g...)
	}
	if len(gone) != 1 || gone[0].SenderReplicaID != "rep_a" || gone[0].Status != protocol.PresenceOffline || gone[0].WorkspaceID != "mygame" {
		t.Fatalf("b's heartbeat after a died set offline %+v, want rep_a only", gone)
	}
	for r, want := range map[string]protocol.PresenceStatus{"rep_a": protocol.PresenceOffline, "rep_b": protocol.PresenceOnline, "rep_both": protocol.PresenceOnline} {
		if got := status(r); got != want {
			t.Fatalf("%s is %s, want %s", r, got, want)
		}
	}
	if g, taken, err := b.Heartbeat(ctx); err != nil || taken || len(g) != 0 {
		t.Fatalf("the next heartbeat: %+v %v %v, want nothing (a is gone once)", g, taken, err)
	}

	// a comes back (it was only paused, its subscriptions alive): its
	// heartbeat finds itself taken for dead, records its subscriptions
	// again and sets rep_a, subscribed there all along, online again; and
	// rep_both stays held when b's subscription of it ends.
	if g, taken, err := a.Heartbeat(ctx); err != nil || !taken || len(g) != 0 {
		t.Fatalf("a's heartbeat on coming back: %+v, taken for dead %v, %v; want taken for dead, nothing set offline", g, taken, err)
	}
	var back []*protocol.RemotePresence
	for _, r := range []string{"rep_both", "rep_a"} {
		p, err := a.Reconnected(ctx, "mygame", r)
		if err != nil {
			t.Fatal(err)
		}
		if p != nil {
			back = append(back, p)
		}
	}
	if len(back) != 1 || back[0].SenderReplicaID != "rep_a" || back[0].Status != protocol.PresenceOnline || back[0].WorkspaceID != "mygame" {
		t.Fatalf("a's heartbeat on coming back changed %+v, want rep_a online only", back)
	}
	if got := status("rep_a"); got != protocol.PresenceOnline {
		t.Fatalf("rep_a is %s after a came back, want online", got)
	}
	if p, err := b.MarkOffline(ctx, "mygame", "rep_both"); err != nil || p != nil {
		t.Fatalf("offline on b while a holds rep_both again: %+v %v, want nothing", p, err)
	}
	if p, err := a.MarkOffline(ctx, "mygame", "rep_both"); err != nil || p == nil || p.Status != protocol.PresenceOffline {
		t.Fatalf("offline on a, rep_both's last subscription: %+v %v, want offline", p, err)
	}
}
