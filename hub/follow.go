package hub

import (
	"context"
	"time"
)

// followLoop fans out, every s.follow, the presence that other processes
// wrote to the service's database: in local mode every agent writes into
// the workspace file itself, and the local dashboard serves that file.
// (Their operations reach subscribers through the fan-out's head check,
// which runs at least as often: see fanout.go.) Only workspaces with
// subscribers are followed; presence is compared with what was seen last.
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
		for _, ws := range s.broker.followed() {
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
