package dashboard_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/crosscode/crosscode-mcp/dashboard"
	"github.com/crosscode/crosscode-mcp/hub"
	"github.com/crosscode/crosscode-mcp/internal/testing/fixture"
	"github.com/crosscode/crosscode-mcp/protocol"
	"github.com/crosscode/crosscode-mcp/store"
)

const wsName = "mygame"

// service is a running `serve`: the hub with the dashboard mounted, over
// a SQLite file in a temp dir, on a loopback port.
type service struct {
	URL   string
	Token string
	Store *store.Store
	Hub   *hub.Server
}

func newService(t testing.TB, opts *dashboard.Options) *service {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "hub.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	token, err := st.CreateToken(ctx, wsName, "")
	if err != nil {
		t.Fatal(err)
	}
	if opts == nil {
		// As serve does: denials from a mirror with projections.
		mirror, err := store.Open(ctx, filepath.Join(t.TempDir(), "mirror.db"), &store.Options{Projections: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { mirror.Close() })
		opts = &dashboard.Options{Denials: &dashboard.MirroredDenials{Log: st, Mirror: mirror}}
	}
	srv := hub.New(hub.Config{Store: st, Routes: dashboard.New(opts).Routes})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(sctx, l) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
		st.Close()
	})
	return &service{URL: "http://" + l.Addr().String(), Token: token, Store: st, Hub: srv}
}

// post sends a request with the token and decodes a JSON answer into out
// (when not nil); a non-2xx answer is an error.
func (s *service) post(path string, body, out any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequest("POST", s.URL+path, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+s.Token)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	if res.StatusCode/100 != 2 {
		return fmt.Errorf("POST %s: %s: %s", path, res.Status, data)
	}
	if out != nil {
		return json.Unmarshal(data, out)
	}
	return nil
}

// ingest posts envelopes in order and returns the last receipt.
func (s *service) ingest(t testing.TB, envs ...*protocol.Envelope) protocol.IngestReceipt {
	t.Helper()
	var r protocol.IngestReceipt
	for _, e := range envs {
		if err := s.post("/v1/"+e.Type.Kind().Collection(), protocol.IngestRequest{Envelope: e}, &r); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// presence posts one replica's presence.
func (s *service) presence(t testing.TB, r *agent, status protocol.PresenceStatus) {
	t.Helper()
	p := protocol.PresenceUpdate{ReplicaID: r.ID, ActorID: r.Actor, SessionID: "ses_" + r.ID, Status: status,
		Agent: &protocol.Agent{Provider: r.Provider, AdapterID: "crosscode-mcp", SessionReference: "sref_" + r.ID}}
	if err := s.post("/v1/presence", p, nil); err != nil {
		t.Fatal(err)
	}
}

// agent builds envelopes of one replica, with times around now (the
// fixture's are in the past, and the page hides expired claims).
type agent struct {
	*fixture.Replica
}

func newAgent(id, actor string, provider protocol.Provider) *agent {
	r := fixture.NewReplica(wsName, id, actor)
	r.Provider = provider
	return &agent{r}
}

func (a *agent) claim(id string, exclusive bool, reason string, patterns ...string) *protocol.Envelope {
	now := time.Now().UTC()
	return a.Envelope(protocol.EventClaimCreated, &protocol.Claim{ID: id, WorkspaceID: a.Workspace, ActorID: a.Actor, ReplicaID: a.ID,
		Patterns: patterns, Exclusive: exclusive, Reason: reason, CreatedAt: now, ExpiresAt: now.Add(45 * time.Minute)})
}

// waitingClaim is a claim that waits its turn for up to wait.
func (a *agent) waitingClaim(id, reason string, wait time.Duration, patterns ...string) *protocol.Envelope {
	now := time.Now().UTC().Truncate(time.Millisecond)
	until := now.Add(wait)
	return a.Envelope(protocol.EventClaimCreated, &protocol.Claim{ID: id, WorkspaceID: a.Workspace, ActorID: a.Actor, ReplicaID: a.ID,
		Patterns: patterns, Exclusive: true, Reason: reason, CreatedAt: now, ExpiresAt: now.Add(20 * time.Minute), WaitUntil: &until})
}

func (a *agent) release(c *protocol.Envelope) *protocol.Envelope {
	cl := *c.Claim()
	now := time.Now().UTC()
	cl.ReleasedAt, cl.ReleaseReason = &now, "done"
	return a.Envelope(protocol.EventClaimReleased, &cl)
}

func (a *agent) intent(id, summary string, paths ...string) *protocol.Envelope {
	return a.Envelope(protocol.EventIntentPublished, &protocol.Intent{ID: id, WorkspaceID: a.Workspace, ActorID: a.Actor, ReplicaID: a.ID,
		Summary: summary, Paths: paths, CreatedAt: time.Now().UTC()})
}

func (a *agent) task(id, title string, status protocol.TaskStatus, assignee string, labels ...string) *protocol.Envelope {
	now := time.Now().UTC()
	if labels == nil {
		labels = []string{}
	}
	return a.Envelope(protocol.EventTaskCreated, &protocol.Task{ID: id, WorkspaceID: a.Workspace, Title: title, Status: status,
		AssigneeActorID: assignee, CreatedByActor: a.Actor, Labels: labels, CreatedAt: now, UpdatedAt: now})
}

func (a *agent) handoff(id, to, summary string, claims ...string) *protocol.Envelope {
	if claims == nil {
		claims = []string{}
	}
	return a.Envelope(protocol.EventHandoffRequested, &protocol.Handoff{ID: id, WorkspaceID: a.Workspace, FromActorID: a.Actor, FromReplicaID: a.ID,
		ToActorID: to, ClaimIDs: claims, Summary: summary, Status: protocol.HandoffRequested, CreatedAt: time.Now().UTC()})
}

// answer is the handoff.responded envelope of a (the responder) to h.
func (a *agent) answer(h *protocol.Envelope, status protocol.HandoffStatus, note string) *protocol.Envelope {
	ho := *h.Handoff()
	now := time.Now().UTC()
	ho.Status, ho.RespondedAt, ho.ResponderActorID, ho.ResponseNote = status, &now, a.Actor, note
	return a.Envelope(protocol.EventHandoffResponded, &ho)
}

func (a *agent) validation(id, name string, status protocol.ValidationStatus, commit, summary string) *protocol.Envelope {
	d := int64(4200)
	return a.Envelope(protocol.EventValidationComplete, &protocol.Validation{ID: id, WorkspaceID: a.Workspace, ActorID: a.Actor, ReplicaID: a.ID,
		Kind: protocol.ValidationTest, Name: name, Status: status, Commit: commit, Summary: summary, DurationMs: &d, CreatedAt: time.Now().UTC()})
}

func (a *agent) transaction(id, summary string, files ...string) *protocol.Envelope {
	fc := []protocol.FileChange{}
	for _, f := range files {
		fc = append(fc, protocol.FileChange{Path: f, Status: protocol.FileModified, Additions: 12, Deletions: 3})
	}
	return a.Envelope(protocol.EventTransactionCreated, &protocol.ChangeTransaction{ID: id, WorkspaceID: a.Workspace, ActorID: a.Actor, ReplicaID: a.ID,
		Summary: summary, BaseCommit: "9fceb02d0ae598e95dc970b74767f19372d61af8", Files: fc, CreatedAt: time.Now().UTC()})
}

// get fetches path with the token (when given) and returns status and body.
func get(url, token string) (int, []byte, http.Header, error) {
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		return 0, nil, nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, 8<<20))
	if errors.Is(err, io.EOF) {
		err = nil
	}
	return res.StatusCode, b, res.Header, err
}

// wait bounds every wait for the page: generous, since CI machines may be
// loaded; a wait ends as soon as its condition holds.
const wait = 60 * time.Second
