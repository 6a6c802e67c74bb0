package hub

import (
	"context"
	"time"

	"github.com/crosscode/crosscode-mcp/protocol"
	"github.com/crosscode/crosscode-mcp/store"
)

// followLoop fans out, every s.follow, what other processes committed to
// the service's database: in local mode every agent ingests into the
// workspace file itself, and the local dashboard serves that file. Only
// workspaces with subscribers are followed; their operations are read by
// cursor from the highest serverSequence the broker has published (no gap,
// no duplicate: see broker.subscribe) and their presence is compared with
// what was seen last.
func (s *Server) followLoop(ctx context.Context) {
	t := time.NewTicker(s.follow)
	defer t.Stop()
	seen := map[string]map[string]time.Time{} // workspace -> replica -> presence updatedAt
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for ws, head := range s.broker.followed() {
			if err := s.followOps(ctx, ws, head); err != nil && ctx.Err() == nil {
				s.log.Warn("follow operations", "workspace", ws, "err", err)
			}
			if err := s.followPresence(ctx, ws, seen); err != nil && ctx.Err() == nil {
				s.log.Warn("follow presence", "workspace", ws, "err", err)
			}
		}
		for ws := range seen {
			if !s.broker.hasSubscribers(ws) {
				delete(seen, ws)
			}
		}
	}
}

// followOps publishes the workspace's operations after `after`, up to its
// head, a page at a time.
func (s *Server) followOps(ctx context.Context, ws string, after int64) error {
	heads, err := s.store.Heads(ctx, []string{ws})
	if err != nil || heads[ws] <= after {
		return err
	}
	for after < heads[ws] {
		p, err := s.store.Page(ctx, store.PageQuery{Workspace: ws, After: after, Limit: store.MaxPageLimit})
		if err != nil {
			return err
		}
		if p.TooOld {
			// Retention deleted what was not published yet: subscribers see
			// the gap, page, and resync by cursor-too-old.
			s.broker.raise(ws, p.ResyncFrom)
			after = p.ResyncFrom
			continue
		}
		envs := make([]*protocol.Envelope, 0, len(p.Ops))
		for i := range p.Ops {
			e, err := p.Ops[i].Envelope()
			if err != nil {
				return err
			}
			envs = append(envs, e)
		}
		s.broker.publish(envs)
		if len(p.Ops) == 0 || !p.HasMore {
			return nil
		}
		after = p.NextCursor
	}
	return nil
}

// followPresence publishes the presence rows that changed since the last
// look. The first look publishes them all: a presence frame is a state,
// so a subscriber that listed presence already just sees it again, and
// one written as the workspace's first subscriber arrived is not missed.
func (s *Server) followPresence(ctx context.Context, ws string, seen map[string]map[string]time.Time) error {
	list, err := s.store.Presence(ctx, ws)
	if err != nil {
		return err
	}
	last := seen[ws]
	if last == nil {
		last = map[string]time.Time{}
		seen[ws] = last
	}
	for _, p := range list {
		if at, ok := last[p.SenderReplicaID]; ok && !p.UpdatedAt.After(at) {
			continue
		}
		last[p.SenderReplicaID] = p.UpdatedAt
		s.broker.publishPresence(ws, p)
	}
	return nil
}
