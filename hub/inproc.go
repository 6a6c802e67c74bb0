package hub

import (
	"context"
	"net/http"
	"time"

	"github.com/crosscode/crosscode-mcp/protocol"
	"github.com/crosscode/crosscode-mcp/store"
)

// What the service's MCP endpoint (package mcp, mounted with Handle) uses
// in-process: the same ingest (its group commit and fan-out), log, presence
// and tokens as the HTTP API, without a request to itself.

// Handle adds a handler to the service's mux (the MCP endpoint).
func (s *Server) Handle(pattern string, h http.Handler) { s.mux.Handle(pattern, h) }

// Authenticate returns the workspace of an access token, or
// store.ErrBadToken.
func (s *Server) Authenticate(ctx context.Context, token string) (string, error) {
	return s.auth(ctx, token)
}

// IngestItem logs one envelope as POST /v1/{kind} does, through the
// service's group commit and fan-out, once it is durable.
func (s *Server) IngestItem(ctx context.Context, it store.Item) (store.Result, error) {
	return s.ingester.IngestItem(ctx, it)
}

// Page reads a workspace's log.
func (s *Server) Page(ctx context.Context, q store.PageQuery) (*store.PageResult, error) {
	return s.store.Page(ctx, q)
}

// Heads returns the committed heads of the named workspaces.
func (s *Server) Heads(ctx context.Context, workspaces []string) (map[string]int64, error) {
	return s.store.Heads(ctx, workspaces)
}

// SetPresence records a replica's presence and fans it out, as POST
// /v1/presence does.
func (s *Server) SetPresence(ctx context.Context, workspace string, p *protocol.PresenceUpdate) (*protocol.RemotePresence, error) {
	rp, err := s.store.SetPresence(ctx, workspace, p)
	if err != nil {
		return nil, err
	}
	s.fan.presenceChanged(workspace, rp)
	return rp, nil
}

// Presence lists a workspace's presence.
func (s *Server) Presence(ctx context.Context, workspace string) ([]*protocol.RemotePresence, error) {
	return s.store.Presence(ctx, workspace)
}

// NewsMarkAt keeps each MCP session's news position, and the time it was
// told through.
func (s *Server) NewsMarkAt(ctx context.Context, workspace, key string) (int64, time.Time, bool, error) {
	return s.store.NewsMarkAt(ctx, workspace, key)
}

// SetNewsMarkAt moves a session's news position on.
func (s *Server) SetNewsMarkAt(ctx context.Context, workspace, key string, seq int64, now time.Time) error {
	return s.store.SetNewsMarkAt(ctx, workspace, key, seq, now)
}
