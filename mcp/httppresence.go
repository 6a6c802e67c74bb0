package mcp

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/crosscode/crosscode-mcp/bridge/coord"
	"github.com/crosscode/crosscode-mcp/internal/sanitize"
	"github.com/crosscode/crosscode-mcp/protocol"
)

// Presence of the MCP endpoint's sessions: online at initialize and while
// they call (reported at most every presenceEvery by each instance, off
// the call's path), idle after coord.IdleAfter without a call on any
// instance (as a stdio session goes idle), offline when their client ends
// them.

// presenceEvery is how often an instance reports a busy session online,
// and looks for sessions gone idle.
const presenceEvery = time.Minute

// seen is a session this instance served.
type seen struct {
	reported time.Time    // when this instance last reported it online
	last     atomic.Int64 // its last call here, unix nanoseconds
	report   presenceReport
}

// online reports the calling session online, at most every presenceEvery
// from this instance. The report is written by a background worker, off
// the call's path: presence is best effort, and a burst of new sessions
// must not queue their calls behind presence commits.
func (s *HTTPServer) online(ctx context.Context, c *coord.Coordinator) {
	me := c.Me(ctx)
	now := time.Now()
	if v, ok := s.presence.Load(me.Replica); ok {
		sn := v.(*seen)
		sn.last.Store(now.UnixNano())
		if now.Sub(sn.reported) < presenceEvery {
			return
		}
	}
	sn := &seen{reported: now, report: presenceReport{c: c, ctx: context.WithoutCancel(ctx), status: protocol.PresenceOnline}}
	sn.last.Store(now.UnixNano())
	s.presence.Store(me.Replica, sn)
	select {
	case s.reports <- sn.report:
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

// reportPresence writes the queued presence reports, and every
// presenceEvery reports idle the sessions gone quiet, until stop closes.
func (s *HTTPServer) reportPresence(stop <-chan struct{}) {
	tick := time.NewTicker(presenceEvery)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-tick.C:
			s.idle(now)
		case r := <-s.reports:
			s.write(r)
		}
	}
}

func (s *HTTPServer) write(r presenceReport) {
	ctx, cancel := context.WithTimeout(r.ctx, 10*time.Second)
	defer cancel()
	if err := r.c.SetPresence(ctx, r.status); err != nil {
		s.log.Warn("presence", "err", err)
	}
}

// idle reports idle the sessions that made no call here for
// coord.IdleAfter, unless another instance reported them online since
// (they call through it), and forgets them: a session that calls again is
// reported online again.
func (s *HTTPServer) idle(now time.Time) {
	quiet := map[*coord.Coordinator]map[string]*seen{}
	s.presence.Range(func(k, v any) bool {
		sn := v.(*seen)
		if now.Sub(time.Unix(0, sn.last.Load())) >= coord.IdleAfter {
			s.presence.Delete(k)
			if quiet[sn.report.c] == nil {
				quiet[sn.report.c] = map[string]*seen{}
			}
			quiet[sn.report.c][k.(string)] = sn
		}
		return true
	})
	for c, sessions := range quiet {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		list, err := s.cfg.Hub.Presence(ctx, c.Workspace())
		cancel()
		if err != nil {
			s.log.Warn("presence", "err", err)
			continue
		}
		for _, p := range list {
			if sn := sessions[p.SenderReplicaID]; sn != nil && (p.Status != protocol.PresenceOnline || now.Sub(p.UpdatedAt) < coord.IdleAfter) {
				delete(sessions, p.SenderReplicaID) // not online, or online through another instance
			}
		}
		for _, sn := range sessions {
			r := sn.report
			r.status = protocol.PresenceIdle
			s.write(r)
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
