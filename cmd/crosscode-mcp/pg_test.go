package main

// Several real `serve --db` processes on one PostgreSQL database (a
// throwaway cluster of internal/testing/pgtest): ordering and no gaps under
// concurrent ingest through all of them, fan-out across instances, dedupe
// across instances, retention seen by all, kill -9 of an instance
// mid-stream, and the database restarted under load.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/crosscode/crosscode-mcp/internal/testing/fixture"
	"github.com/crosscode/crosscode-mcp/internal/testing/pgtest"
	"github.com/crosscode/crosscode-mcp/protocol"
)

// pgToken runs `token create --db` and returns the token.
func pgToken(t *testing.T, db, workspace string) string {
	t.Helper()
	out, errOut, code := runCLI(t, "token", "create", "--db", db, "--workspace", workspace)
	if code != 0 || !tokenLine.MatchString(out) {
		t.Fatalf("token create --db: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	return strings.TrimSpace(out)
}

// instances starts n serve processes on db.
func instances(t *testing.T, db string, n int, extra ...string) []*server {
	t.Helper()
	out := make([]*server, n)
	for i := range out {
		out[i] = startServeWith(t, append([]string{"--db", db}, extra...)...)
	}
	return out
}

// watcher is a WebSocket subscription that records every frame's
// serverSequence and the presence frames.
type watcher struct {
	mu       sync.Mutex
	cursor   int64
	seqs     []int64
	presence []protocol.RemotePresence
	err      error
}

func watch(t *testing.T, base, token, replica string) *watcher {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	conn, _, err := websocket.Dial(ctx, strings.Replace(base, "http://", "ws://", 1)+"/v1/subscribe", nil)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	conn.SetReadLimit(4 << 20)
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); conn.CloseNow(); <-done })
	sub, _ := json.Marshal(protocol.WSSubscribe{Type: "subscribe", WorkspaceID: "mygame", ReplicaID: replica, AccessToken: token})
	if err := conn.Write(ctx, websocket.MessageText, sub); err != nil {
		t.Fatal(err)
	}
	_, data, err := conn.Read(ctx)
	var ack protocol.WSSubscribed
	if err != nil || json.Unmarshal(data, &ack) != nil || ack.Type != "subscribed" {
		t.Fatalf("subscribe: %s %v", data, err)
	}
	w := &watcher{cursor: ack.Cursor}
	go func() {
		defer close(done)
		for {
			_, data, err := conn.Read(ctx)
			if err != nil {
				w.mu.Lock()
				w.err = err
				w.mu.Unlock()
				return
			}
			var f struct {
				Type string          `json:"type"`
				Data json.RawMessage `json:"data"`
			}
			var ev struct {
				ServerSequence int64 `json:"serverSequence"`
			}
			if json.Unmarshal(data, &f) != nil || json.Unmarshal(f.Data, &ev) != nil {
				w.mu.Lock()
				w.err = fmt.Errorf("bad frame %s", data)
				w.mu.Unlock()
				return
			}
			w.mu.Lock()
			if f.Type == "presence" {
				var p protocol.RemotePresence
				json.Unmarshal(f.Data, &p)
				w.presence = append(w.presence, p)
			} else {
				w.seqs = append(w.seqs, ev.ServerSequence)
			}
			w.mu.Unlock()
		}
	}()
	return w
}

// check waits until the watcher has every frame from its cursor through
// head, and fails on a gap, a duplicate or a frame out of order.
func (w *watcher) check(t *testing.T, name string, head int64) {
	t.Helper()
	waitFor(t, fmt.Sprintf("%s to receive frames through %d", name, head), func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.err != nil || int64(len(w.seqs)) >= head-w.cursor
	})
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		t.Fatalf("%s: %v", name, w.err)
	}
	for i, s := range w.seqs {
		if s != w.cursor+int64(i+1) {
			t.Fatalf("%s: frame %d is serverSequence %d, want %d (cursor %d): a gap, duplicate or reordering", name, i, s, w.cursor+int64(i+1), w.cursor)
		}
	}
}

// TestPGInstancesShareOneLog: three instances on one database. Streams of
// ingests through all of them at once make one log, gapless, each
// envelope once, the same read through every instance; a subscriber on
// each instance gets every frame in order without gaps or duplicates,
// whichever instance ingested it; a retry through another instance is a
// duplicate with the original receipt; presence crosses instances.
func TestPGInstancesShareOneLog(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	tok := pgToken(t, db, "mygame")
	ss := instances(t, db, 3)
	clients := make([]*client, len(ss))
	watchers := make([]*watcher, len(ss))
	for i, s := range ss {
		clients[i] = newClient(t, s.URL, tok)
		watchers[i] = watch(t, s.URL, tok, fmt.Sprintf("rep_watch%d", i))
	}

	const streams, each = 6, 40
	var wg sync.WaitGroup
	acks := make([]map[int64]protocol.IngestReceipt, streams)
	sent := make([][][]byte, streams)
	kinds := make([][]protocol.Kind, streams)
	for i := range streams {
		acks[i] = map[int64]protocol.IngestReceipt{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := fixture.NewReplica("mygame", fmt.Sprintf("rep_%d", i), "w@example.com")
			c := clients[i%len(clients)]
			for j := range each {
				e := r.Any(r.ID, j)
				body, _ := json.Marshal(protocol.IngestRequest{Envelope: e})
				status, rc, b, err := c.ingest(body, e.Type.Kind())
				if err != nil || status != http.StatusOK {
					t.Errorf("%s/%d: %d %s %v", r.ID, e.ClientSequence, status, b, err)
					return
				}
				acks[i][e.ClientSequence] = *rc
				sent[i] = append(sent[i], body)
				kinds[i] = append(kinds[i], e.Type.Kind())
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	want := map[key]int64{}
	for i := range streams {
		for cs, rc := range acks[i] {
			want[key{fmt.Sprintf("rep_%d", i), cs}] = rc.ServerSequence
		}
	}
	const total = streams * each
	for i, c := range clients {
		log := c.events(t)
		if len(log) != total {
			t.Fatalf("instance %d reads %d operations, want %d", i, len(log), total)
		}
		wantLog(t, log, want)
	}
	for i, w := range watchers {
		w.check(t, fmt.Sprintf("the subscriber on instance %d", i), total)
	}

	// Dedupe across instances: what instance 0 acknowledged, sent again to
	// instance 1, is a duplicate with the original receipt.
	for cs := int64(1); cs <= each; cs += 9 {
		orig := acks[0][cs]
		status, rc, b, err := clients[1].ingest(sent[0][cs-1], kinds[0][cs-1])
		if err != nil || status != http.StatusOK || !rc.Duplicate || rc.ServerSequence != orig.ServerSequence || !rc.IngestedAt.Equal(orig.IngestedAt) {
			t.Fatalf("retry through another instance: %d %s %v, want a duplicate of %+v", status, b, err, orig)
		}
	}

	// Presence posted to instance 2 reaches the subscriber on instance 0.
	body, _ := json.Marshal(protocol.PresenceUpdate{ReplicaID: "rep_p", ActorID: "p@example.com", SessionID: "ses_p", Status: protocol.PresenceOnline})
	if status, b, err := clients[2].do("POST", "/v1/presence", body); err != nil || status != http.StatusOK {
		t.Fatalf("presence: %d %s %v", status, b, err)
	}
	waitFor(t, "presence from instance 2 on instance 0", func() bool {
		watchers[0].mu.Lock()
		defer watchers[0].mu.Unlock()
		for _, p := range watchers[0].presence {
			if p.SenderReplicaID == "rep_p" && p.Status == protocol.PresenceOnline {
				return true
			}
		}
		return false
	})
}

// TestPGRetentionSeenByAll: what retention on one instance deleted is
// below the watermark on the other: a v2 read there is told cursor-too-old.
func TestPGRetentionSeenByAll(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	tok := pgToken(t, db, "mygame")
	sweeper := startServeWith(t, "--db", db, "--retention", "50ms", "--sweep-every", "20ms")
	other := startServeWith(t, "--db", db) // sweeps by plan: nothing is that old
	r := fixture.NewReplica("mygame", "rep_a", "a@example.com")
	c := newClient(t, sweeper.URL, tok)
	for i := range 5 {
		e := r.Any("ret", i)
		body, _ := json.Marshal(protocol.IngestRequest{Envelope: e})
		if status, _, b, err := c.ingest(body, e.Type.Kind()); err != nil || status != http.StatusOK {
			t.Fatalf("ingest: %d %s %v", status, b, err)
		}
	}
	oc := newClient(t, other.URL, tok)
	waitFor(t, "the other instance to see the sweep", func() bool {
		_, b, err := oc.do("GET", "/v1/events?afterSequence=0&protocolVersion=2", nil)
		p, derr := protocol.DecodePageResponse(b)
		return err == nil && derr == nil && p.TooOld != nil && p.TooOld.ResyncFrom == 5
	})
	if status, b, _ := oc.do("GET", "/v1/events?afterSequence=0", nil); status != http.StatusGone {
		t.Fatalf("v1 read below the watermark on the other instance: %d %s", status, b)
	}
}

// TestPGKill9Instance: SIGKILL one of two instances in the middle of
// concurrent streams through both. The streams of the killed one retry
// what got no receipt through the survivor: every acknowledged envelope
// is in the log exactly once, at its acknowledged serverSequence, with no
// gaps, and the survivor's subscriber saw every frame.
func TestPGKill9Instance(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	tok := pgToken(t, db, "mygame")
	ss := instances(t, db, 2)
	victim, survivor := newClient(t, ss[0].URL, tok), newClient(t, ss[1].URL, tok)
	w := watch(t, ss[1].URL, tok, "rep_watch")
	stop := make(chan struct{})
	vs, vcount, vwait := runStreamsAs(t, victim, "rep_v", 4, stop)
	sstop := make(chan struct{})
	svs, _, swait := runStreamsAs(t, survivor, "rep_s", 4, sstop)
	waitFor(t, "100 receipts from the victim", func() bool { return vcount() >= 100 })
	ss[0].signal(t, syscall.SIGKILL)
	ss[0].wait(t)
	vwait()
	close(sstop)
	swait()
	close(stop)
	if t.Failed() {
		t.FailNow()
	}
	want := map[key]int64{}
	for _, st := range append(vs, svs...) {
		for cs, rc := range st.acks {
			want[key{st.r.ID, cs}] = rc.ServerSequence
		}
	}
	for _, st := range vs {
		if st.failed < 0 {
			t.Fatalf("%s stopped without a failed request", st.r.ID)
		}
		for i := st.failed; i < len(st.sent); i++ {
			status, rc, b, err := survivor.ingest(st.sent[i], st.kinds[i])
			if err != nil || status != http.StatusOK {
				t.Fatalf("retry of %s/%d through the survivor: %d %s %v", st.r.ID, i+1, status, b, err)
			}
			want[key{st.r.ID, int64(i + 1)}] = rc.ServerSequence
		}
	}
	log := survivor.events(t)
	if len(log) != len(want) {
		t.Fatalf("log has %d operations, clients hold %d receipts", len(log), len(want))
	}
	wantLog(t, log, want)
	w.check(t, "the survivor's subscriber", int64(len(log)))
}

// TestPGDatabaseRestart: PostgreSQL restarts (pg_ctl restart, open
// connections cut) under concurrent ingest through two instances. Clients
// retry what got no receipt, as remote mode does; the instances reconnect
// by themselves; every acknowledged envelope is in the log exactly once,
// with no gaps, and a subscriber on each instance saw every frame.
func TestPGDatabaseRestart(t *testing.T) {
	t.Parallel()
	// A cluster of its own, so the restart cuts no other test's connections.
	pgtest.Need(t)
	cluster, err := pgtest.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cluster.Stop() })
	db := cluster.URL("postgres")
	tok := pgToken(t, db, "mygame")
	ss := instances(t, db, 2)
	clients := []*client{newClient(t, ss[0].URL, tok), newClient(t, ss[1].URL, tok)}
	watchers := []*watcher{watch(t, ss[0].URL, tok, "rep_w0"), watch(t, ss[1].URL, tok, "rep_w1")}

	const streams, each = 4, 100
	var mu sync.Mutex
	acked, failures := 0, 0
	want := map[key]int64{}
	var wg sync.WaitGroup
	for i := range streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := fixture.NewReplica("mygame", fmt.Sprintf("rep_%d", i), "w@example.com")
			c := clients[i%2]
			for j := range each {
				e := r.Any(r.ID, j)
				body, _ := json.Marshal(protocol.IngestRequest{Envelope: e})
				failed := false
				for deadline := time.Now().Add(60 * time.Second); ; {
					status, rc, b, err := c.ingest(body, e.Type.Kind())
					if err == nil && status == http.StatusOK {
						if rc.Duplicate && !failed {
							t.Errorf("%s/%d: a first attempt answered duplicate", r.ID, e.ClientSequence)
						}
						mu.Lock()
						want[key{r.ID, e.ClientSequence}] = rc.ServerSequence
						acked++
						mu.Unlock()
						break
					}
					if err == nil && status != http.StatusInternalServerError && status != http.StatusServiceUnavailable {
						t.Errorf("%s/%d: %d %s", r.ID, e.ClientSequence, status, b)
						return
					}
					if time.Now().After(deadline) {
						t.Errorf("%s/%d: no receipt within 60s of retries: %d %s %v", r.ID, e.ClientSequence, status, b, err)
						return
					}
					mu.Lock()
					failures++
					mu.Unlock()
					failed = true
					time.Sleep(20 * time.Millisecond) // a client's retry pause
				}
			}
		}()
	}
	waitFor(t, "100 receipts", func() bool { mu.Lock(); defer mu.Unlock(); return acked >= 100 })
	if err := cluster.Restart(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	for i, c := range clients {
		log := c.events(t)
		if len(log) != streams*each {
			t.Fatalf("instance %d reads %d operations, want %d", i, len(log), streams*each)
		}
		wantLog(t, log, want)
		watchers[i].check(t, fmt.Sprintf("the subscriber on instance %d", i), streams*each)
	}
	t.Logf("%d receipts, %d failed attempts retried across the restart", acked, failures)
}

// TestPGCommandLine: `token create --db` and `serve --db` with a wrong URL,
// a missing database, an unreachable server, or both --data and --db, fail
// with what to fix; `doctor --db` reports the database's state before and
// after the first `serve` migrated it.
func TestPGCommandLine(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	missing := strings.Replace(db, "/t", "/nosuchdb_t", 1)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"token", "create", "--db", "mysql://h/d", "--workspace", "w"}, 1, `scheme "mysql" is not supported`},
		{[]string{"serve", "--db", missing}, 1, "create it first"},
		{[]string{"serve", "--db", "postgres://postgres@/x?host=/nonexistent-dir"}, 1, "cannot reach PostgreSQL"},
		{[]string{"serve", "--data", t.TempDir(), "--db", db}, 2, "give one"},
	} {
		out, errOut, code := runCLI(t, tc.args...)
		if code != tc.code || out != "" || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit %d and %q", tc.args, code, out, errOut, tc.code, tc.want)
		}
	}

	r, code := runDoctorJSON(t, "--db", db)
	if code != 0 || r.check(t, "migrations").Status != "ok" || !strings.Contains(r.check(t, "migrations").Detail, "new database") {
		t.Fatalf("doctor --db on a new database: %d %+v", code, r.Checks)
	}
	if c := r.check(t, "postgresql version"); c.Status != "ok" || !strings.HasPrefix(c.Detail, "1") {
		t.Fatalf("version check: %+v", c)
	}
	if c := r.check(t, "durability"); c.Status != "ok" {
		t.Fatalf("durability check: %+v", c)
	}
	pgToken(t, db, "mygame") // migrates
	if r, code := runDoctorJSON(t, "--db", db); code != 0 || !strings.Contains(r.check(t, "migrations").Detail, "up to date") {
		t.Fatalf("doctor --db after migrating: %d %+v", code, r.Checks)
	}
	if r, code := runDoctorJSON(t, "--db", missing); code != 1 || r.check(t, "database").Status != "fail" || r.check(t, "database").Fix == "" {
		t.Fatalf("doctor --db on a missing database: %d %+v", code, r.Checks)
	}
	// CROSSCODE_HUB_DB stands for --db.
	cmd := command(t, "token", "create", "--workspace", "other")
	cmd.Env = append(cmd.Env, "CROSSCODE_HUB_DB="+db)
	if out, err := cmd.Output(); err != nil || !tokenLine.Match(out) {
		t.Fatalf("token create with CROSSCODE_HUB_DB: %q %v", out, err)
	}
}

// TestPGKill9InstancePresence: a replica subscribed through an instance
// that is killed goes offline for the subscribers of the other instances
// once the dead instance's heartbeats are a TTL old; a replica that
// subscribed through the survivor too stays online.
func TestPGKill9InstancePresence(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	tok := pgToken(t, db, "mygame")
	// Long enough that a loaded machine does not make the live instances
	// look dead to each other before the kill.
	env := []string{"CROSSCODE_HUB_INSTANCE_TTL=3s"}
	victim, survivor := startServeEnv(t, env, "--db", db), startServeEnv(t, env, "--db", db)
	vc, sc := newClient(t, victim.URL, tok), newClient(t, survivor.URL, tok)
	watch(t, victim.URL, tok, "rep_gone")
	watch(t, victim.URL, tok, "rep_both")
	watch(t, survivor.URL, tok, "rep_both")
	w := watch(t, survivor.URL, tok, "rep_watch")
	for _, r := range []string{"rep_gone", "rep_both"} {
		body, _ := json.Marshal(protocol.PresenceUpdate{ReplicaID: r, ActorID: "p@example.com", SessionID: "ses_" + r, Status: protocol.PresenceOnline})
		if status, b, err := vc.do("POST", "/v1/presence", body); err != nil || status != http.StatusOK {
			t.Fatalf("presence: %d %s %v", status, b, err)
		}
	}
	waitFor(t, "both replicas online on the survivor", func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return len(w.presence) >= 2
	})
	victim.signal(t, syscall.SIGKILL)
	victim.wait(t)
	waitFor(t, "rep_gone offline on the survivor's subscriber", func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		for _, p := range w.presence {
			if p.SenderReplicaID == "rep_gone" && p.Status == protocol.PresenceOffline {
				return true
			}
		}
		return false
	})
	got := presenceOf(t, sc)
	if got["rep_gone"] != protocol.PresenceOffline || got["rep_both"] != protocol.PresenceOnline {
		t.Fatalf("presence after the kill: %v, want rep_gone offline, rep_both online", got)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, p := range w.presence {
		if p.SenderReplicaID == "rep_both" && p.Status == protocol.PresenceOffline {
			t.Fatalf("rep_both, still subscribed through the survivor, was set offline: %+v", p)
		}
	}
}

// TestPGMCPOverHTTPWithoutAffinity: two serve instances on one PostgreSQL
// database behind a round-robin balancer with no session affinity: every
// request of a session may land on either. Two agents connected by URL
// (one on the 2025-11-25 handshake, one on 2026-07-28) work through the
// whole story; their sessions, news and arbitration go on across
// instances.
func TestPGMCPOverHTTPWithoutAffinity(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	tok := pgToken(t, db, "mygame")
	ss := instances(t, db, 2)
	var served [2]atomic.Int64
	var next atomic.Int64
	proxies := make([]*httputil.ReverseProxy, len(ss))
	for i, s := range ss {
		u, _ := url.Parse(s.URL)
		proxies[i] = httputil.NewSingleHostReverseProxy(u)
	}
	lb := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := int(next.Add(1) % int64(len(ss)))
		served[i].Add(1)
		proxies[i].ServeHTTP(w, r)
	}))
	t.Cleanup(lb.Close)
	ada := startHTTPAgent(t, "ada", ss[0], lb.URL, tok, httpAgentOpts{legacy: true, clientName: "claude-code", actor: "ada@example.com"})
	bo := startHTTPAgent(t, "bo", ss[1], lb.URL, tok, httpAgentOpts{clientName: "cursor", actor: "bo@example.com"})
	collaborate(t, ada, bo)
	if a, b := served[0].Load(), served[1].Load(); a < 10 || b < 10 {
		t.Fatalf("the balancer sent %d and %d requests to the instances", a, b)
	}
	envs := newClient(t, ss[1].URL, tok).events(t)
	checkStamps(t, envs, map[string][2]string{"ada@example.com": {"claude-code", ""}, "bo@example.com": {"cursor", ""}})
	replicas := map[string]map[string]bool{}
	for _, e := range envs {
		if replicas[e.ActorID] == nil {
			replicas[e.ActorID] = map[string]bool{}
		}
		replicas[e.ActorID][e.ReplicaID] = true
	}
	if len(replicas["ada@example.com"]) != 1 || len(replicas["bo@example.com"]) != 1 {
		t.Fatalf("a session wrote from several replicas across instances: %v", replicas)
	}
}
