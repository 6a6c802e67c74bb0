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
	// Store is the open database. The Server does not close it.
	Store *store.Store
	// Retention, if positive, overrides every plan's history retention.
	Retention time.Duration
	// SweepEvery is how often retention runs. Default 1m.
	SweepEvery time.Duration
	// QueueDepth is how many fan-out frames a WebSocket subscriber may
	// have pending before it is closed as too slow. Default 4096.
	QueueDepth int
	// Logger receives the service's logs. Default: discard.
	Logger *slog.Logger
}

// maxBatch is the most envelopes one commit carries.
const maxBatch = 512

// Server serves the coordination API.
type Server struct {
	cfg      Config
	log      *slog.Logger
	store    *store.Store
	ingester *store.Ingester
	broker   *broker
	mux      *http.ServeMux

	wsWG     sync.WaitGroup // live WebSocket handlers
	shutdown chan struct{}  // closed when the server begins to shut down
	stopOnce sync.Once
}

// New builds a Server over cfg.Store and starts its ingester.
func New(cfg Config) *Server {
	if cfg.SweepEvery <= 0 {
		cfg.SweepEvery = time.Minute
	}
	if cfg.QueueDepth <= 0 {
		cfg.QueueDepth = 4096
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s := &Server{cfg: cfg, log: log, store: cfg.Store, shutdown: make(chan struct{})}
	s.broker = newBroker(log, cfg.QueueDepth, maxBatch, cfg.Store.Head)
	s.ingester = cfg.Store.NewIngester(&store.IngesterOptions{MaxBatch: maxBatch, OnCommit: s.broker.publish})
	s.mux = s.routes()
	return s
}

// Handler is the service's HTTP handler.
func (s *Server) Handler() http.Handler { return s.mux }

// IngestStats reports the ingester's running totals.
func (s *Server) IngestStats() store.IngesterStats { return s.ingester.Stats() }

// RetentionFor is the history retention of a plan, or the override.
func (s *Server) RetentionFor(plan string) time.Duration {
	if s.cfg.Retention > 0 {
		return s.cfg.Retention
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
		Handler:           s.mux,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	sweepCtx, stopSweep := context.WithCancel(context.Background())
	sweepDone := make(chan struct{})
	go func() {
		defer close(sweepDone)
		s.sweepLoop(sweepCtx)
	}()
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
	<-sweepDone
	s.Close()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

func (s *Server) beginShutdown() {
	s.stopOnce.Do(func() { close(s.shutdown) })
}

// Close closes every subscription and drains the ingester. Call it after
// the HTTP server has stopped when not using Serve.
func (s *Server) Close() {
	s.beginShutdown()
	s.wsWG.Wait()
	s.ingester.Close()
}

func (s *Server) sweepLoop(ctx context.Context) {
	t := time.NewTicker(s.cfg.SweepEvery)
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
