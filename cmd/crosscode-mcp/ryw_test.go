package main

import (
	"bytes"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/crosscode/crosscode-mcp/protocol"
)

// TestReleaseOwnClaimAcrossServiceKill9 is issue 20 with real processes:
// the service (`serve`) is killed with SIGKILL after it acknowledged an
// agent's claim and before the agent could pull it into its mirror. The
// agent's release of that claim works (queued), also from a restarted
// agent process, and once the service is back the log holds each of the
// agent's writes exactly once.
func TestReleaseOwnClaimAcrossServiceKill9(t *testing.T) {
	hubData := t.TempDir()
	token := createToken(t, hubData, "mygame")
	svc := startServe(t, hubData)
	host := strings.TrimPrefix(svc.URL, "http://")

	// A proxy between the agent and the service: armed, it kills the
	// service once the service has answered a claim's upload, before the
	// receipt goes on to the agent, whose pull then finds no service.
	var armed, holdPulls atomic.Bool
	var killed *server
	target, _ := url.Parse(svc.URL)
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.ErrorLog = log.New(io.Discard, "", 0) // the service is down on purpose
	rp.ModifyResponse = func(resp *http.Response) error {
		if resp.Request.Method != http.MethodPost || resp.Request.URL.Path != "/v1/claims" || resp.StatusCode != http.StatusOK || !armed.CompareAndSwap(true, false) {
			return nil
		}
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
		killed.cmd.Process.Signal(syscall.SIGKILL)
		<-killed.exited
		holdPulls.Store(false)
		return nil
	}
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// While armed, reads of the log wait for the kill (a fan-out frame
		// would otherwise let the agent pull before it): the pull comes
		// after the service is gone.
		if r.Method == http.MethodGet && r.URL.Path == "/v1/events" && holdPulls.Load() {
			http.Error(w, "not yet", http.StatusServiceUnavailable)
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(proxy.Close)

	repo := gitRepo(t)
	args := []string{"--actor", "ada@example.com", "--service", proxy.URL, "--token", token}
	ada := startAgent(t, "ada", agentOpts{clientName: "claude-code", dir: repo, args: args})
	if st := ada.call("workspace_status", nil); field(st, "service", "connected") != true {
		t.Fatalf("status: %v", st["service"])
	}

	killed = svc
	holdPulls.Store(true)
	armed.Store(true)
	a := ada.call("claim", map[string]any{"patterns": []string{"src/**"}})
	select {
	case <-svc.exited:
	default:
		t.Fatal("the service was not killed during the claim")
	}
	if field(a, "write", "status") != "acknowledged" || a["status"] != "pending" {
		t.Fatalf("claim acknowledged, then the service died: %v", a)
	}
	aID := a["claimId"].(string)
	rel, isErr := ada.callRaw("release_claim", map[string]any{"claimIds": []string{aID}})
	if isErr {
		t.Fatalf("releasing her own claim after the service died: %s", rel["error"])
	}
	if r := rel["released"].([]any); len(r) != 1 || r[0] != aID || field(rel["writes"].([]any)[0].(map[string]any), "status") != "queued" {
		t.Fatalf("release: %v", rel)
	}
	b := ada.call("claim", map[string]any{"patterns": []string{"docs/**"}})
	if b["status"] != "pending" || field(b, "write", "status") != "queued" {
		t.Fatalf("claim while the service is down: %v", b)
	}
	bID := b["claimId"].(string)

	// Her server is killed too, and restarted while the service is down:
	// what she wrote is still hers.
	ada.kill9()
	ada = startAgent(t, "ada again", agentOpts{clientName: "claude-code", dir: repo, args: args})
	st := ada.call("workspace_status", nil)
	if yc := st["yourClaims"].([]any); len(yc) != 1 || field(yc[0].(map[string]any), "claimId") != bID || field(yc[0].(map[string]any), "status") != "pending" {
		t.Fatalf("her claims after both restarts: %v", st["yourClaims"])
	}
	again, isErr := ada.callRaw("release_claim", map[string]any{"claimIds": []string{aID, bID}})
	if isErr {
		t.Fatalf("releasing after her restart: %s", again["error"])
	}
	if r := again["released"].([]any); len(r) != 1 || r[0] != bID {
		t.Fatalf("released %v, want %s", r, bID)
	}
	if u := again["unchanged"].([]any); len(u) != 1 || field(u[0].(map[string]any), "status") != "released" {
		t.Fatalf("unchanged %v, want %s already released", u, aID)
	}

	// The service comes back on its address; her outbox drains in order.
	svc = startServe(t, hubData, "--listen", host)
	waitFor(t, "ada's outbox to drain and her mirror to catch up", func() bool {
		st, _ := ada.callRaw("workspace_status", nil)
		n, _ := field(st, "service", "pendingUploads").(float64)
		yc, _ := st["yourClaims"].([]any)
		return field(st, "service", "connected") == true && n == 0 && len(yc) == 0
	})
	// bo works in his own clone (a replica of his own).
	bo := startAgent(t, "bo", agentOpts{clientName: "cursor", dir: gitRepo(t), args: []string{"--actor", "bo@example.com", "--service", svc.URL, "--token", token}})
	if c := bo.call("claim", map[string]any{"patterns": []string{"src/x.go", "docs/y.md"}}); c["status"] != "granted" {
		t.Fatalf("bo's claim over ada's released ones: %v", c)
	}
	count := map[string]int{}
	for _, e := range newClient(t, svc.URL, token).events(t) {
		if e.ID == aID || e.ID == bID {
			count[e.ID+" "+string(e.Type)]++
		}
	}
	for _, id := range []string{aID, bID} {
		for _, typ := range []protocol.EventType{protocol.EventClaimCreated, protocol.EventClaimReleased} {
			if n := count[id+" "+string(typ)]; n != 1 {
				t.Errorf("%s %s is %d times in the log, want once", id, typ, n)
			}
		}
	}
}
