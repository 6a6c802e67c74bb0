package hub

import (
	"context"
	"time"

	"github.com/crosscode/crosscode-mcp/protocol"
	"github.com/crosscode/crosscode-mcp/store"
)

// Store is what the service needs from its database. The SQLite store
// (*store.Store, which local mode's workspace database is too) and the
// PostgreSQL one (*pgstore.Store) implement it, and pass one shared test
// suite (internal/testing/storetest).
//
// Every method is safe for concurrent use. IngestBatch is called by one
// committer at a time per Server (the group commit of store.Ingester).
type Store interface {
	// Authenticate returns the workspace an access token belongs to, or
	// store.ErrBadToken.
	Authenticate(ctx context.Context, token string) (workspace string, err error)
	// IngestBatch decides items in order by the rules of spec section 4
	// and commits what they log in one durable transaction, with
	// gapless serverSequences per workspace (see store.BatchFunc).
	IngestBatch(ctx context.Context, items []store.Item) ([]store.Result, error)
	// Page reads a workspace's log after a cursor from one snapshot, or
	// reports the cursor as below the retention watermark.
	Page(ctx context.Context, q store.PageQuery) (*store.PageResult, error)
	// Heads returns the highest committed serverSequence of each named
	// workspace that exists. Every serverSequence up to a head is
	// committed (commits of a workspace are in serverSequence order).
	Heads(ctx context.Context, workspaces []string) (map[string]int64, error)
	// SetPresence records a replica's presence and returns its fan-out data.
	SetPresence(ctx context.Context, workspace string, p *protocol.PresenceUpdate) (*protocol.RemotePresence, error)
	// MarkOffline sets a replica offline unless it is already, returning
	// the new presence or nil.
	MarkOffline(ctx context.Context, workspace, replica string) (*protocol.RemotePresence, error)
	// Presence lists a workspace's presence, most recently updated first.
	Presence(ctx context.Context, workspace string) ([]*protocol.RemotePresence, error)
	// NewsMark and SetNewsMark keep how far each MCP session (of the
	// service's MCP endpoint) was told the news; a mark only moves on.
	NewsMark(ctx context.Context, workspace, key string) (seq int64, ok bool, err error)
	SetNewsMark(ctx context.Context, workspace, key string, seq int64) error
	// NewsMarkAt and SetNewsMarkAt are the same with the time a mark was
	// told through (for what time alone decides: a claim granted when a
	// lease ran out).
	NewsMarkAt(ctx context.Context, workspace, key string) (seq int64, at time.Time, ok bool, err error)
	SetNewsMarkAt(ctx context.Context, workspace, key string, seq int64, now time.Time) error
	// Sweep deletes operations older than their plan's retention, in
	// small batches, raising each workspace's watermark.
	Sweep(ctx context.Context, now time.Time, retentionFor func(plan string) time.Duration, opts *store.SweepOptions) (*store.SweepResult, error)
}

var _ Store = (*store.Store)(nil)
