package mcp

import (
	"context"
	"time"

	"github.com/crosscode/crosscode-mcp/bridge/coord"
	"github.com/crosscode/crosscode-mcp/internal/sanitize"
	"github.com/crosscode/crosscode-mcp/protocol"
)

// Presence of the MCP endpoint's sessions: online at initialize and while
// they call (reported at most every presenceEvery by each instance, off
// the call's path), offline when their client ends them.

// presenceEvery is how often an instance reports a busy session online.
const presenceEvery = time.Minute

// online reports the calling session online, at most every presenceEvery
// from this instance. The report is written by a background worker, off
// the call's path: presence is best effort, and a burst of new sessions
// must not queue their calls behind presence commits.
func (s *HTTPServer) online(ctx context.Context, c *coord.Coordinator) {
	me := c.Me(ctx)
	now := time.Now()
	if last, ok := s.presence.Load(me.Replica); ok && now.Sub(last.(time.Time)) < presenceEvery {
		return
	}
	s.presence.Store(me.Replica, now)
	select {
	case s.reports <- presenceReport{c: c, ctx: context.WithoutCancel(ctx), status: protocol.PresenceOnline}:
	default:
		s.presence.Delete(me.Replica) // the queue is full: the next call reports it
	}
}

// presenceReport is a session's presence for the worker to write.
type presenceReport struct {
	c      *coord.Coordinator
	ctx    context.Context // carries the caller
	status protocol.PresenceStatus
}

// reportPresence writes the queued presence reports until stop closes.
func (s *HTTPServer) reportPresence(stop <-chan struct{}) {
	forget := time.NewTicker(presenceEvery)
	defer forget.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-forget.C:
			// Sessions not seen for a while are forgotten here (their next
			// call reports them again), so the map does not grow for ever.
			s.presence.Range(func(k, v any) bool {
				if now.Sub(v.(time.Time)) > 2*presenceEvery {
					s.presence.Delete(k)
				}
				return true
			})
		case r := <-s.reports:
			ctx, cancel := context.WithTimeout(r.ctx, 10*time.Second)
			if err := r.c.SetPresence(ctx, r.status); err != nil {
				s.log.Warn("presence", "err", err)
			}
			cancel()
		}
	}
}

// sessionStarted runs after initialize: the session is online, and its
// news starts here.
func (s *HTTPServer) sessionStarted(ctx context.Context, c *coord.Coordinator, client string) {
	call := callFrom(ctx)
	if call == nil || call.workspace == "" {
		return
	}
	ctx = coord.WithCaller(ctx, callerOf(ctx, nil))
	if err := c.Sync(ctx); err != nil {
		s.log.Warn("session start", "err", err)
		return
	}
	if err := c.StartNews(ctx); err != nil {
		s.log.Warn("session start", "err", err)
	}
	s.online(ctx, c)
	s.log.Debug("mcp session", "workspace", call.workspace, "client", sanitize.Line(client, 120), "actor", c.Me(ctx).Actor)
}

// sessionEnded reports a session its client ended (DELETE) offline.
func (s *HTTPServer) sessionEnded(ctx context.Context, ws string, call *httpCall) {
	hw, err := s.workspace(ctx, ws)
	if err != nil {
		return
	}
	ctx = coord.WithCaller(withCall(ctx, call), callerOf(withCall(ctx, call), nil))
	s.presence.Delete(hw.coord.Me(ctx).Replica)
	if err := hw.coord.SetPresence(ctx, protocol.PresenceOffline); err != nil {
		s.log.Warn("presence", "err", err)
	}
}
