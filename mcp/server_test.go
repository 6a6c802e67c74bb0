package mcp

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/crosscode/crosscode-mcp/bridge/coord"
	"github.com/crosscode/crosscode-mcp/protocol"
	"github.com/crosscode/crosscode-mcp/store"
	"github.com/crosscode/crosscode-mcp/tools"
)

func noEnv(string) string { return "" }

// callWithSession is a tools/call whose _meta carries an OpenCode-style
// sessionID.
func callWithSession(tool, session string) mcpgo.CallToolRequest {
	var req mcpgo.CallToolRequest
	req.Params.Name = tool
	req.Params.Meta = &mcpgo.Meta{AdditionalFields: map[string]any{"sessionID": session}}
	return req
}

// TestConcurrentCallsKeepTheirIdentity: tool calls of one session run
// concurrently; each call's envelopes carry the sessionReference of its
// own _meta, not that of whichever call started last.
func TestConcurrentCallsKeepTheirIdentity(t *testing.T) {
	ctx := context.Background()
	s, err := New(ctx, Config{Repo: t.TempDir(), Data: t.TempDir(), Actor: "ada", Toolsets: []string{"coord"}, Getenv: noEnv})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var inFlight sync.WaitGroup
	inFlight.Add(2)
	both := make(chan struct{})
	go func() { inFlight.Wait(); close(both) }()
	h := s.stampAgent(func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		inFlight.Done()
		<-both // both calls have started
		pub, err := s.Coord.PublishIntent(ctx, "x", []string{"src/**"}, "", 0)
		if err != nil {
			return nil, err
		}
		return tools.Result(map[string]string{"ref": pub.Envelope.Agent.SessionReference}), nil
	})
	var wg sync.WaitGroup
	for _, ref := range []string{"oc-session-A", "oc-session-B"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := h(ctx, callWithSession("publish_intent", ref))
			if err != nil {
				t.Error(err)
				return
			}
			if got := res.StructuredContent.(map[string]string)["ref"]; got != ref {
				t.Errorf("the call of %s wrote sessionReference %s", ref, got)
			}
		}()
	}
	wg.Wait()
}

// TestEveryToolKeepsPresenceOnline: a call of any tool, not only a
// coordination one, brings an idle session back online.
func TestEveryToolKeepsPresenceOnline(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "ws.db"), &store.Options{Projections: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	c, err := coord.New(coord.Config{Workspace: "mygame", Store: st, Actor: "ada", Replica: "rep_a", Session: "ses_a", Now: clock, IdleCheck: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	s := &Server{Coord: c, Store: st, cfg: Config{Getenv: noEnv}, log: slog.New(slog.NewTextHandler(io.Discard, nil)), sessionID: "ses_a"}
	status := func() protocol.PresenceStatus {
		ps, _ := st.Presence(ctx, "mygame")
		if len(ps) != 1 {
			return ""
		}
		return ps[0].Status
	}
	mu.Lock()
	now = now.Add(coord.IdleAfter + time.Second)
	mu.Unlock()
	for deadline := time.Now().Add(10 * time.Second); status() != protocol.PresenceIdle; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the session did not go idle")
		}
	}
	h := s.stampAgent(func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		return tools.Result(map[string]any{}), nil
	})
	if _, err := h(ctx, callWithSession("capture_status", "oc-session")); err != nil {
		t.Fatal(err)
	}
	if got := status(); got != protocol.PresenceOnline {
		t.Fatalf("after a capture_status call the session is %s, want online", got)
	}
}
