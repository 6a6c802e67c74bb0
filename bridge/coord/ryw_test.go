package coord

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crosscode/crosscode-mcp/hub"
	"github.com/crosscode/crosscode-mcp/protocol"
	"github.com/crosscode/crosscode-mcp/store"
)

// Read-your-writes in remote mode: an agent sees its own writes, queued or
// acknowledged, before the mirror has pulled them, across restarts.

// pullBreaker is a proxy in front of a coordination service that passes
// uploads and, while broken is set, fails every read of the log (and the
// WebSocket subscription) with 503, and while down is set every request: the upload's receipt arrives, and the
// pull that should follow it fails, as when the service dies between them.
type pullBreaker struct {
	broken       atomic.Bool // reads fail (set with setBroken)
	down         atomic.Bool // everything fails (set with setDown)
	dropReceipts atomic.Bool // uploads reach the service, their answers are lost
	URL          string

	mu   sync.Mutex
	subs map[net.Conn]bool // the subscriptions (WebSockets) passing through
}

// setBroken breaks reads of the log, or mends them. Breaking also ends
// the subscriptions open through the proxy: one opened before would go on
// bringing the log in (it did, now and then, in CI).
func (p *pullBreaker) setBroken(b bool) {
	p.broken.Store(b)
	if b {
		p.endSubscriptions()
	}
}

// setDown fails every request, or stops failing them; going down ends the
// subscriptions too.
func (p *pullBreaker) setDown(b bool) {
	p.down.Store(b)
	if b {
		p.endSubscriptions()
	}
}

func (p *pullBreaker) endSubscriptions() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.subs {
		c.Close()
	}
	clear(p.subs)
}

func newPullBreaker(t *testing.T, target string) *pullBreaker {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &pullBreaker{subs: map[net.Conn]bool{}}
	rp := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p.down.Load() || p.broken.Load() && r.Method == http.MethodGet {
			http.Error(w, `{"error":{"code":"INTERNAL","message":"pulls are broken"}}`, http.StatusServiceUnavailable)
			return
		}
		if p.dropReceipts.Load() && r.Method == http.MethodPost {
			rec := httptest.NewRecorder()
			rp.ServeHTTP(rec, r)
			http.Error(w, `{"error":{"code":"INTERNAL","message":"the answer was lost"}}`, http.StatusBadGateway)
			return
		}
		rp.ServeHTTP(w, r)
	}))
	srv.Config.ConnState = func(c net.Conn, st http.ConnState) {
		if st == http.StateHijacked { // a WebSocket, proxied
			p.mu.Lock()
			p.subs[c] = true
			p.mu.Unlock()
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

// remoteCoordAt starts a remote-mode coordinator of actor on the replica
// database at path (opened anew: a restarted MCP server reopens it).
func remoteCoordAt(t *testing.T, path, url, token, actor, session string) *Coordinator {
	t.Helper()
	st, err := store.Open(context.Background(), path, &store.Options{Projections: true})
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(Config{Workspace: "mygame", Store: st, Service: url, Token: token, Actor: actor, Replica: "rep_" + actor, Session: session})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()); st.Close() })
	return c
}

// TestReleaseOwnClaimWhenThePullFailed is issue 20's race: the service
// acknowledges a claim (a receipt with its serverSequence), the pull that
// should bring it into the mirror fails, and the agent releases the claim
// it was just answered. Its own write must be visible to it: the release
// goes through, also after its MCP server restarts, and once the pull
// works again the mirror holds exactly what the service decided.
func TestReleaseOwnClaimWhenThePullFailed(t *testing.T) {
	ctx := context.Background()
	hubURL, token := serveHub(t, hub.Config{})
	proxy := newPullBreaker(t, hubURL)
	path := filepath.Join(t.TempDir(), "ada.db")
	ada := remoteCoordAt(t, path, proxy.URL, token, "ada@example.com", "ses_1")
	bo := remoteCoord(t, hubURL, token, "bo@example.com")

	proxy.setBroken(true)
	a, err := ada.Claim(ctx, []string{"src/**"}, true, "a", time.Hour, "")
	if err != nil || !a.Acknowledged {
		t.Fatalf("claim: %v %+v", err, a)
	}
	if a.Status != "pending" {
		t.Fatalf("claim acknowledged but not pulled is %q, want pending (the log decides)", a.Status)
	}
	b, err := ada.Claim(ctx, []string{"docs/**"}, true, "b", time.Hour, "")
	if err != nil || !b.Acknowledged {
		t.Fatalf("claim: %v %+v", err, b)
	}
	// bo reads the service directly: ada's claim was first, so his is denied.
	if d, err := bo.Claim(ctx, []string{"src/x.go"}, true, "x", time.Hour, ""); err != nil || d.Status != "denied" {
		t.Fatalf("bo's claim: %v %+v", err, d)
	}

	// Her own claims are hers to see: pending, since the log's answer is
	// not here yet.
	st, err := ada.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := claimStates(st.MyClaims); len(got) != 2 || got[a.Claim.ID] != ClaimPending || got[b.Claim.ID] != ClaimPending {
		t.Fatalf("her claims before the mirror has them: %v, want both pending", got)
	}
	rel, err := ada.Release(ctx, []string{a.Claim.ID}, false, "done")
	if err != nil {
		t.Fatalf("releasing her own acknowledged claim before the mirror has it: %v", err)
	}
	if len(rel.Released) != 1 || !rel.Writes[0].Acknowledged {
		t.Fatalf("release: %+v", rel)
	}
	// Asked again: already released, not an error, and nothing written.
	again, err := ada.Release(ctx, []string{a.Claim.ID}, false, "done")
	if err != nil || len(again.Released) != 0 || len(again.Unchanged) != 1 || again.Unchanged[0].Status != store.ClaimReleased {
		t.Fatalf("releasing again: %+v %v", again, err)
	}

	// Her MCP server restarts (a new process on the same replica database)
	// while pulls still fail: what she wrote is still hers to see.
	ada.Close(ctx)
	ada = remoteCoordAt(t, path, proxy.URL, token, "ada@example.com", "ses_2")
	st, err = ada.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := claimStates(st.MyClaims); len(got) != 1 || got[b.Claim.ID] != ClaimPending {
		t.Fatalf("her claims after a restart: %v, want %s pending", got, b.Claim.ID)
	}
	if again, err := ada.Release(ctx, []string{a.Claim.ID}, false, ""); err != nil || len(again.Unchanged) != 1 {
		t.Fatalf("releasing a released claim after a restart: %+v %v", again, err)
	}
	all, err := ada.Release(ctx, nil, true, "")
	if err != nil || len(all.Released) != 1 || all.Released[0] != b.Claim.ID {
		t.Fatalf("release all after a restart: %+v %v", all, err)
	}

	// Pulls work again: the mirror brings the log, each write applied once,
	// and the outbox keeps nothing it holds.
	proxy.setBroken(false)
	ada.rem.wake(ada.rem.poke)
	waitUntil(t, func() bool {
		own, err := ada.ownWrites(ctx)
		return err == nil && own == nil
	})
	for _, id := range []string{a.Claim.ID, b.Claim.ID} {
		e, err := ada.cfg.Store.Entity(ctx, "mygame", protocol.KindClaim, id)
		if err != nil || e.Status != store.ClaimReleased {
			t.Fatalf("mirrored %s: %+v %v", id, e, err)
		}
	}
	for seq := int64(1); seq <= 4; seq++ {
		if e, err := ada.cfg.Store.OutboxEntry(ctx, ada.Replica(), seq); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("outbox entry %d kept after the mirror has it: %+v %v", seq, e, err)
		}
	}
	if st, err := ada.Status(ctx); err != nil || len(st.MyClaims) != 0 {
		t.Fatalf("her claims once mirrored: %v %v", claimStates(st.MyClaims), err)
	}
	log, _, err := bo.Feed(ctx, 0, 1000, "")
	if err != nil {
		t.Fatal(err)
	}
	count := map[protocol.EventType]int{}
	for _, e := range log {
		if e.ActorID == "ada@example.com" {
			count[e.Type]++
		}
	}
	if count[protocol.EventClaimCreated] != 2 || count[protocol.EventClaimReleased] != 2 {
		t.Fatalf("ada's envelopes in the service's log: %v, want 2 claims and 2 releases", count)
	}
}

// TestReleaseDeniedClaim: releasing a claim the log denied is asking for
// what is already so; the answer says when it was denied and who held the
// paths, not an error, and writes nothing.
func TestReleaseDeniedClaim(t *testing.T) {
	ctx := context.Background()
	hubURL, token := serveHub(t, hub.Config{})
	ada := remoteCoord(t, hubURL, token, "ada@example.com")
	bo := remoteCoord(t, hubURL, token, "bo@example.com")
	held, err := ada.Claim(ctx, []string{"src/**"}, true, "a", time.Hour, "")
	if err != nil || held.Status != "granted" {
		t.Fatalf("%+v %v", held, err)
	}
	d, err := bo.Claim(ctx, []string{"src/x.go"}, true, "x", time.Hour, "")
	if err != nil || d.Status != "denied" {
		t.Fatalf("%+v %v", d, err)
	}
	head, _ := bo.Head(ctx)
	res, err := bo.Release(ctx, []string{d.Claim.ID}, false, "")
	if err != nil {
		t.Fatalf("releasing a denied claim: %v", err)
	}
	if len(res.Released) != 0 || len(res.Unchanged) != 1 {
		t.Fatalf("%+v", res)
	}
	u := res.Unchanged[0]
	if u.Status != store.ClaimDenied || u.At.IsZero() || len(u.Conflicts) != 1 || u.Conflicts[0].ClaimID != held.Claim.ID || u.Conflicts[0].Actor != "ada@example.com" {
		t.Fatalf("unchanged: %+v", u)
	}
	if pending, _, _ := bo.cfg.Store.OutboxCounts(ctx, bo.Replica()); pending != 0 {
		t.Fatal("a release of a denied claim was queued")
	}
	if after, _ := hubHead(t, bo); after != head {
		t.Fatalf("the log moved from %d to %d", head, after)
	}
}

// TestReleasePendingClaimWhileDown: with the service down, a claim is
// queued (pending) and its release is queued after it; both upload in
// order when the service is back, and the claim ends released.
func TestReleasePendingClaimWhileDown(t *testing.T) {
	ctx := context.Background()
	hubURL, token := serveHub(t, hub.Config{})
	proxy := newPullBreaker(t, hubURL)
	ada := remoteCoordAt(t, filepath.Join(t.TempDir(), "ada.db"), proxy.URL, token, "ada@example.com", "ses_1")
	proxy.setDown(true)
	c, err := ada.Claim(ctx, []string{"src/**"}, true, "a", time.Hour, "")
	if err != nil || c.Acknowledged || c.Status != "pending" {
		t.Fatalf("claim while down: %+v %v", c, err)
	}
	rel, err := ada.Release(ctx, []string{c.Claim.ID}, false, "")
	if err != nil || len(rel.Released) != 1 || rel.Writes[0].Acknowledged {
		t.Fatalf("releasing a queued claim: %+v %v", rel, err)
	}
	proxy.setDown(false)
	waitUntil(t, func() bool {
		e, err := ada.cfg.Store.Entity(ctx, "mygame", protocol.KindClaim, c.Claim.ID)
		return err == nil && e.Status == store.ClaimReleased
	})
}

func claimStates(es []*store.Entity) map[string]string {
	m := map[string]string{}
	for _, e := range es {
		m[e.ID] = e.Status
	}
	return m
}

// hubHead is the head of the service's log, as c reads it.
func hubHead(t *testing.T, c *Coordinator) (int64, error) {
	t.Helper()
	if err := c.rem.pull(context.Background()); err != nil {
		return 0, err
	}
	return c.Head(context.Background())
}

// TestOwnWritesVisibleToEveryTool: every call that reads back what the
// agent wrote sees it before the mirror does: update_task on its new task,
// list_tasks and workspace_status, respond_handoff (withdraw) on its own
// handoff, and renewing its own claim.
func TestOwnWritesVisibleToEveryTool(t *testing.T) {
	ctx := context.Background()
	hubURL, token := serveHub(t, hub.Config{})
	proxy := newPullBreaker(t, hubURL)
	ada := remoteCoordAt(t, filepath.Join(t.TempDir(), "ada.db"), proxy.URL, token, "ada@example.com", "ses_1")
	for _, mode := range []string{"acknowledged", "queued"} {
		proxy.setBroken(true)
		proxy.setDown(mode == "queued")
		_, task, err := ada.CreateTask(ctx, "boss fight "+mode, "", nil, "", "")
		if err != nil {
			t.Fatal(err)
		}
		doing := protocol.TaskInProgress
		me := ada.Actor()
		pub, upd, err := ada.UpdateTask(ctx, task.ID, TaskChange{Status: &doing, Assignee: &me})
		if err != nil || upd.Status != doing || pub.Acknowledged != (mode == "acknowledged") {
			t.Fatalf("%s: updating her new task: %+v %+v %v", mode, pub, upd, err)
		}
		list, err := ada.Entities(ctx, store.EntityQuery{Kind: protocol.KindTask, Status: []string{string(protocol.TaskInProgress)}, Target: me})
		if err != nil || len(list) == 0 || list[0].ID != task.ID {
			t.Fatalf("%s: her tasks in progress: %v %v", mode, list, err)
		}
		if _, _, err := ada.UpdateTask(ctx, task.ID, TaskChange{Status: &doing}); err == nil {
			t.Fatalf("%s: an update that changes nothing (she set that status already) was accepted", mode)
		}

		_, h, err := ada.RequestHandoff(ctx, "bo@example.com", "take the boss", "", "", []string{}, "", "")
		if err != nil {
			t.Fatal(err)
		}
		if _, r, err := ada.RespondHandoff(ctx, h.ID, protocol.HandoffWithdrawn, "changed my mind"); err != nil || r.Status != protocol.HandoffWithdrawn {
			t.Fatalf("%s: withdrawing her new handoff: %+v %v", mode, r, err)
		}
		if _, _, err := ada.RespondHandoff(ctx, h.ID, protocol.HandoffWithdrawn, ""); err == nil {
			t.Fatalf("%s: withdrawn twice", mode)
		}

		c, err := ada.Claim(ctx, []string{"src/" + mode + "/**"}, true, "x", time.Hour, "")
		if err != nil || c.Status != "pending" {
			t.Fatalf("%s: claim: %+v %v", mode, c, err)
		}
		r, err := ada.Claim(ctx, nil, true, "", 2*time.Hour, c.Claim.ID)
		if err != nil || r.Renewed != c.Claim.ID {
			t.Fatalf("%s: renewing her pending claim: %+v %v", mode, r, err)
		}
		st, err := ada.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got := claimStates(st.MyClaims); got[c.Claim.ID] != ClaimPending || got[r.Claim.ID] != ClaimPending {
			t.Fatalf("%s: her claims: %v", mode, got)
		}

		// Once the mirror has it all, it shows what the service decided.
		proxy.setBroken(false)
		proxy.setDown(false)
		ada.rem.wake(ada.rem.kick)
		waitUntil(t, func() bool {
			ada.rem.wake(ada.rem.poke)
			own, err := ada.ownWrites(ctx)
			return err == nil && own == nil
		})
		e, err := ada.entity(ctx, protocol.KindTask, task.ID)
		if err != nil || e.Status != string(doing) || e.Target != me {
			t.Fatalf("%s: mirrored task: %+v %v", mode, e, err)
		}
		if e, err := ada.entity(ctx, protocol.KindHandoff, h.ID); err != nil || e.Status != string(protocol.HandoffWithdrawn) {
			t.Fatalf("%s: mirrored handoff: %+v %v", mode, e, err)
		}
		if e, err := ada.entity(ctx, protocol.KindClaim, r.Claim.ID); err != nil || e.Status != store.ClaimActive {
			t.Fatalf("%s: mirrored renewal: %+v %v", mode, e, err)
		}
	}
}

// TestReleaseAfterAcceptingHandoff: a claim moves to the actor who accepts
// its handoff only once the log orders the acceptance (the first answer
// decides). Until the mirror has it, releasing the claim says so instead
// of calling it someone else's; then the release goes through.
func TestReleaseAfterAcceptingHandoff(t *testing.T) {
	ctx := context.Background()
	hubURL, token := serveHub(t, hub.Config{})
	proxy := newPullBreaker(t, hubURL)
	ada := remoteCoord(t, hubURL, token, "ada@example.com")
	bo := remoteCoordAt(t, filepath.Join(t.TempDir(), "bo.db"), proxy.URL, token, "bo@example.com", "ses_1")
	x, err := ada.Claim(ctx, []string{"src/**"}, true, "x", time.Hour, "")
	if err != nil || x.Status != "granted" {
		t.Fatalf("%+v %v", x, err)
	}
	_, h, err := ada.RequestHandoff(ctx, bo.Actor(), "yours", "", "", []string{x.Claim.ID}, "", "")
	if err != nil {
		t.Fatal(err)
	}
	waitUntil(t, func() bool {
		_, err := bo.entity(ctx, protocol.KindHandoff, h.ID)
		return err == nil
	})
	proxy.setBroken(true)
	if p, _, err := bo.RespondHandoff(ctx, h.ID, protocol.HandoffAccepted, ""); err != nil || !p.Acknowledged {
		t.Fatalf("accept: %+v %v", p, err)
	}
	_, err = bo.Release(ctx, []string{x.Claim.ID}, false, "")
	var ie *InputError
	if !errors.As(err, &ie) || !strings.Contains(ie.Message, "your acceptance of handoff "+h.ID) {
		t.Fatalf("releasing a claim whose handoff he accepted, before the mirror has it: %v", err)
	}
	proxy.setBroken(false)
	bo.rem.wake(bo.rem.poke)
	waitUntil(t, func() bool {
		own, err := bo.ownWrites(ctx)
		return err == nil && own == nil
	})
	if res, err := bo.Release(ctx, []string{x.Claim.ID}, false, ""); err != nil || len(res.Released) != 1 {
		t.Fatalf("releasing it once mirrored: %+v %v", res, err)
	}
}

// TestLostReceiptNotAppliedTwice: an upload reaches the service but its
// receipt is lost, so the write stays pending here. Once the mirror brings
// that envelope, it is the log's, not this replica's to merge again: a
// later change by someone else shows, and it is not uploaded again.
func TestLostReceiptNotAppliedTwice(t *testing.T) {
	ctx := context.Background()
	hubURL, token := serveHub(t, hub.Config{})
	proxy := newPullBreaker(t, hubURL)
	ada := remoteCoordAt(t, filepath.Join(t.TempDir(), "ada.db"), proxy.URL, token, "ada@example.com", "ses_1")
	bo := remoteCoord(t, hubURL, token, "bo@example.com")
	_, task, err := ada.CreateTask(ctx, "boss fight", "", nil, "", "")
	if err != nil {
		t.Fatal(err)
	}
	proxy.setBroken(true)
	proxy.dropReceipts.Store(true)
	doing, done := protocol.TaskInProgress, protocol.TaskDone
	if p, _, err := ada.UpdateTask(ctx, task.ID, TaskChange{Status: &doing}); err != nil || p.Acknowledged {
		t.Fatalf("update whose receipt is lost: %+v %v", p, err)
	}
	if e, err := ada.entity(ctx, protocol.KindTask, task.ID); err != nil || e.Status != string(doing) {
		t.Fatalf("her own pending update: %+v %v", e, err)
	}
	// bo reads it from the service and finishes the task after her.
	waitUntil(t, func() bool {
		bo.rem.wake(bo.rem.poke)
		e, err := bo.entity(ctx, protocol.KindTask, task.ID)
		return err == nil && e.Status == string(doing)
	})
	if _, _, err := bo.UpdateTask(ctx, task.ID, TaskChange{Status: &done}); err != nil {
		t.Fatal(err)
	}
	// Her pulls work again (her receipts are still lost): the mirror holds
	// her update and bo's after it.
	proxy.setBroken(false)
	waitUntil(t, func() bool {
		ada.rem.wake(ada.rem.poke)
		e, err := ada.entity(ctx, protocol.KindTask, task.ID)
		return err == nil && e.Status == string(done)
	})
	if pending, _, _ := ada.cfg.Store.OutboxCounts(ctx, ada.Replica()); pending != 0 {
		t.Fatalf("%d entries pending that the log holds", pending)
	}
}
