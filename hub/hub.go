// Package hub is the coordination service (`crosscode-mcp serve`): the HTTP
// and WebSocket API of the coordination protocol over the store package,
// the same ingest, ordering and retention code that local mode runs
// in-process.
package hub

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/crosscode/crosscode-mcp/store"
)

// Config configures a Server.
type Config struct {
	// Store is the open database (SQLite or PostgreSQL). The Server does
	// not close it.
	Store Store
	// Retention, if positive, overrides every plan's history retention.
	Retention time.Duration
	// SweepEvery is how often retention runs. Default 1m; negative: never
	// (the local dashboard, which must not delete the agents' history).
	SweepEvery time.Duration
	// QueueDepth is how many fan-out frames a WebSocket subscriber may
	// have pending before it is closed as too slow. Default 4096.
	QueueDepth int
	// HeadCheckEvery is how often the heads of the workspaces with
	// subscribers here are read, so that what other instances sharing the
	// database committed reaches them even if a notice was lost.
	// Default 250ms.
	HeadCheckEvery time.Duration
	// Logger receives the service's logs. Default: discard.
	Logger *slog.Logger

	// Routes, if set, adds routes to the service's mux: the dashboard's
	// page and its read endpoints. authed wraps a handler in the
	// service's access-token check.
	Routes func(mux *http.ServeMux, authed func(AuthedFunc) http.Handler)
	// Authenticate, if set, resolves access tokens (of requests and of
	// subscribe frames) instead of the store: the local dashboard's
	// session token. It returns store.ErrBadToken for an unknown one.
	Authenticate func(ctx context.Context, token string) (workspace string, err error)
	// Wrap, if set, wraps the service's whole handler (the local
	// dashboard's Host and cookie checks).
	Wrap func(http.Handler) http.Handler
	// Follow, if positive, is how often the service looks for operations
	// and presence that other processes wrote to its database, to fan
	// them out (the local dashboard: agents ingest into the workspace
	// file themselves). Zero: only what this Server ingests fans out.
	Follow time.Duration
}

// AuthedFunc is a handler behind the access-token check, given the
// token's workspace.
type AuthedFunc func(w http.ResponseWriter, r *http.Request, workspace string)

// maxBatch is the most envelopes one commit carries.
const maxBatch = 512

// Server serves the coordination API.
type Server struct {
	log        *slog.Logger // Config.Logger, or a discarding one
	store      Store        // Config.Store
	retention  time.Duration
	sweepEvery time.Duration
	follow     time.Duration
	ingester   *store.Ingester
	broker     *broker
	fan        *fanout
	mux        *http.ServeMux
	handler    http.Handler                                            // mux, wrapped by Config.Wrap
	auth       func(ctx context.Context, token string) (string, error) // Config.Authenticate or the store's

	// WebSocket handlers outlive srv.Shutdown (their connections are
	// hijacked), so Close waits for them through wsWG. A handler is added
	// under wsMu before it accepts, unless closing is set (under wsMu too),
	// so none is added once Close may be waiting.
	wsMu     sync.Mutex
	closing  bool
	wsWG     sync.WaitGroup // live WebSocket handlers
	shutdown chan struct{}  // closed (with closing set) when the server begins to shut down
}

// New builds a Server over cfg.Store and starts its ingester.
func New(cfg Config) *Server {
	if cfg.SweepEvery == 0 {
		cfg.SweepEvery = time.Minute
	}
	if cfg.HeadCheckEvery <= 0 {
		cfg.HeadCheckEvery = 250 * time.Millisecond
	}
	if cfg.Follow > 0 {
		cfg.HeadCheckEvery = min(cfg.HeadCheckEvery, cfg.Follow)
	}
	if cfg.QueueDepth <= 0 {
		cfg.QueueDepth = 4096
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s := &Server{log: log, store: cfg.Store, retention: cfg.Retention, sweepEvery: cfg.SweepEvery, follow: cfg.Follow, shutdown: make(chan struct{})}
	s.broker = newBroker(log, cfg.QueueDepth, maxBatch, func(ctx context.Context, ws string) (int64, error) {
		heads, err := cfg.Store.Heads(ctx, []string{ws})
		if err != nil {
			return 0, err
		}
		if _, ok := heads[ws]; !ok {
			return 0, fmt.Errorf("workspace %q: %w", ws, store.ErrNoWorkspace)
		}
		return heads[ws], nil
	})
	s.fan = newFanout(s, cfg.HeadCheckEvery)
	s.ingester = store.NewGroupIngester(cfg.Store.IngestBatch, &store.IngesterOptions{MaxBatch: maxBatch, OnCommit: s.fan.committed})
	s.auth = cfg.Authenticate
	if s.auth == nil {
		s.auth = cfg.Store.Authenticate
	}
	s.mux = s.routes(cfg.Routes)
	s.handler = s.mux
	if cfg.Wrap != nil {
		s.handler = cfg.Wrap(s.mux)
	}
	return s
}

// IngestStats reports the ingester's running totals.
func (s *Server) IngestStats() store.IngesterStats { return s.ingester.Stats() }

// RetentionFor is the history retention of a plan, or the override.
func (s *Server) RetentionFor(plan string) time.Duration {
	if s.retention > 0 {
		return s.retention
	}
	if p, ok := store.Plans[plan]; ok {
		return p.Retention()
	}
	return store.Plans[store.DefaultPlan].Retention()
}

// Serve serves on l until ctx ends, running retention every SweepEvery.
// On ctx's end it stops taking requests, finishes those in flight (every
// acknowledged ingest is durable before its answer), closes subscribers and
// returns. It does not close the store.
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	sweepCtx, stopSweep := context.WithCancel(context.Background())
	var background sync.WaitGroup // retention and the follower
	if s.sweepEvery > 0 {
		background.Go(func() { s.sweepLoop(sweepCtx) })
	}
	if s.follow > 0 {
		background.Go(func() { s.followLoop(sweepCtx) })
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()

	var err error
	select {
	case err = <-errc:
	case <-ctx.Done():
		s.log.Info("shutting down")
		shCtx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		s.beginShutdown()
		err = srv.Shutdown(shCtx)
		cancel()
		<-errc
	}
	stopSweep()
	background.Wait()
	s.Close()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// beginShutdown refuses new WebSockets and tells the live ones to end.
func (s *Server) beginShutdown() {
	s.wsMu.Lock()
	defer s.wsMu.Unlock()
	if !s.closing {
		s.closing = true
		close(s.shutdown)
	}
}

// addWS counts a WebSocket handler in wsWG, unless the server is closing.
// It must be called before the connection is accepted (hijacked), since
// srv.Shutdown does not wait for hijacked connections.
func (s *Server) addWS() bool {
	s.wsMu.Lock()
	defer s.wsMu.Unlock()
	if s.closing {
		return false
	}
	s.wsWG.Add(1)
	return true
}

// Close closes every subscription and drains the ingester. Call it after
// the HTTP server has stopped when not using Serve.
func (s *Server) Close() {
	s.beginShutdown()
	s.wsWG.Wait()
	s.ingester.Close()
	s.fan.close()
}

func (s *Server) sweepLoop(ctx context.Context) {
	t := time.NewTicker(s.sweepEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		res, err := s.store.Sweep(ctx, time.Now(), s.RetentionFor, nil)
		switch {
		case err != nil && ctx.Err() == nil:
			s.log.Error("retention sweep", "err", err)
		case res != nil && res.Deleted > 0:
			s.log.Info("retention sweep", "deleted", res.Deleted, "watermarks", fmt.Sprint(res.Watermarks))
		}
	}
}
