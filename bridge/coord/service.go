package coord

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/crosscode/crosscode-mcp/protocol"
	"github.com/crosscode/crosscode-mcp/store"
)

// Hub is the coordination service a Coordinator runs inside: the
// service's MCP endpoint (MCP over HTTP) keeps one Coordinator per
// workspace for every agent session that connects by URL. Its writes go
// through the service's own ingest, in-process, and Config.Store is this
// instance's mirror of the service's log (with projections), caught up
// before each call, so what any instance or any stdio agent logged is
// seen at once.
type Hub interface {
	// IngestItem logs one envelope through the service's ingest (and its
	// fan-out) and returns once it is durable; rule refusals are in
	// Result.Err.
	IngestItem(ctx context.Context, it store.Item) (store.Result, error)
	// Page and Heads read the service's log.
	Page(ctx context.Context, q store.PageQuery) (*store.PageResult, error)
	Heads(ctx context.Context, workspaces []string) (map[string]int64, error)
	// SetPresence records and fans out a replica's presence; Presence
	// lists a workspace's.
	SetPresence(ctx context.Context, workspace string, p *protocol.PresenceUpdate) (*protocol.RemotePresence, error)
	Presence(ctx context.Context, workspace string) ([]*protocol.RemotePresence, error)
	// NewsMarkAt and SetNewsMarkAt keep each session's news position (log
	// position and time told) in the service's database, so a session's
	// news goes on on any instance.
	NewsMarkAt(ctx context.Context, workspace, key string) (seq int64, at time.Time, ok bool, err error)
	SetNewsMarkAt(ctx context.Context, workspace, key string, seq int64, now time.Time) error
}

// mirrorCursor names the cursor of the mirror of the service's log.
func (c *Coordinator) mirrorCursor() string { return "hub-mirror:" + c.cfg.Workspace }

// Sync catches the mirror up with the service's log, so a call reads
// every operation committed before it began, through any instance. Only
// for a Coordinator inside the service (Config.Hub); otherwise a no-op.
func (c *Coordinator) Sync(ctx context.Context) error {
	if c.svc == nil {
		return nil
	}
	heads, err := c.svc.Heads(ctx, []string{c.cfg.Workspace})
	if err != nil {
		return fmt.Errorf("read the log's head: %w", err)
	}
	return c.syncThrough(ctx, heads[c.cfg.Workspace])
}

// syncThrough mirrors the service's log until the mirror holds seq.
func (c *Coordinator) syncThrough(ctx context.Context, seq int64) error {
	st, ws, name := c.cfg.Store, c.cfg.Workspace, c.mirrorCursor()
	if cur, err := st.Cursor(ctx, name); err == nil && cur >= seq {
		return nil
	}
	c.syncMu.Lock()
	defer c.syncMu.Unlock()
	cursor, err := st.Cursor(ctx, name)
	if err != nil {
		return err
	}
	for cursor < seq {
		p, err := c.svc.Page(ctx, store.PageQuery{Workspace: ws, After: cursor, Limit: store.MaxPageLimit})
		if err != nil {
			return fmt.Errorf("read the log: %w", err)
		}
		if p.TooOld {
			if err := st.Resync(ctx, ws, name, p.ResyncFrom); err != nil {
				return err
			}
			cursor = p.ResyncFrom
			continue
		}
		envs := make([]*protocol.Envelope, 0, len(p.Ops))
		for i := range p.Ops {
			e, err := p.Ops[i].Envelope()
			if err != nil {
				return fmt.Errorf("read the log: %w", err)
			}
			envs = append(envs, e)
		}
		if len(envs) > 0 || p.NextCursor > cursor {
			if err := st.Mirror(ctx, ws, envs, name, p.NextCursor); err != nil {
				return err
			}
		}
		if !p.HasMore || p.NextCursor <= cursor {
			break
		}
		cursor = p.NextCursor
	}
	return nil
}

// publishToService logs env through the service's ingest, with the
// call's idempotency key, and mirrors the log through it, so the
// projections (claim arbitration) include it. A retried call's write
// comes back as the original.
func (c *Coordinator) publishToService(ctx context.Context, env *protocol.Envelope) (*Published, error) {
	res, err := c.svc.IngestItem(ctx, store.Item{Workspace: c.cfg.Workspace, Envelope: env, NextSequence: true, Key: nextKey(ctx)})
	if err := ingestErr(res, err); err != nil {
		return nil, err
	}
	rc := res.Receipt
	if err := c.syncThrough(ctx, rc.ServerSequence); err != nil {
		return nil, err
	}
	pub := &Published{Envelope: env, Acknowledged: true, ServerSequence: rc.ServerSequence, IngestedAt: rc.IngestedAt}
	if rc.Duplicate {
		// The call is a retry, and this write was logged by the first try:
		// answer with what was logged then.
		orig, err := c.logged(ctx, rc.ServerSequence)
		if err != nil {
			return nil, err
		}
		pub.Envelope = orig
	}
	return pub, nil
}

// logged reads the mirrored operation at serverSequence seq.
func (c *Coordinator) logged(ctx context.Context, seq int64) (*protocol.Envelope, error) {
	p, err := c.cfg.Store.Page(ctx, store.PageQuery{Workspace: c.cfg.Workspace, After: seq - 1, Limit: 1})
	if err != nil {
		return nil, err
	}
	if len(p.Ops) == 0 || p.Ops[0].Seq != seq {
		return nil, fmt.Errorf("operation %d is not in the log any more", seq)
	}
	return p.Ops[0].Envelope()
}

// SetPresence reports the presence of the calling session (see
// WithCaller) through the service. Only for a Coordinator inside the
// service.
func (c *Coordinator) SetPresence(ctx context.Context, status protocol.PresenceStatus) error {
	if c.svc == nil {
		return errors.New("SetPresence: only inside the service")
	}
	me, agent := c.me(ctx), c.Agent(ctx)
	_, err := c.svc.SetPresence(ctx, c.cfg.Workspace, &protocol.PresenceUpdate{ReplicaID: me.Replica, ActorID: me.Actor, SessionID: me.Session, Agent: &agent, Status: status})
	return err
}
