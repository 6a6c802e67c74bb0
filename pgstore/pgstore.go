// Package pgstore keeps the coordination service's state in PostgreSQL
// (15 or newer) with github.com/jackc/pgx/v5, so that several `serve`
// instances can share one database (spec section 9). It implements
// hub.Store with the same ingest rules as the SQLite store (store.Decider)
// and passes the same suite (internal/testing/storetest).
//
// Each workspace's serverSequence comes from its row in heads, locked and
// raised inside the ingest transaction: commits of one workspace are
// serialised on that row, so they commit in serverSequence order and
// without gaps (sequences from nextval would leave gaps and commit out of
// order). Receipts are answered only after COMMIT returns; an error or an
// unknown outcome on COMMIT is an error, and the client's retry is
// deduplicated against what did commit.
package pgstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/crosscode/crosscode-mcp/store"
)

// Options configure Open. A nil *Options means the defaults.
type Options struct {
	// MaxConns is the size of the connection pool. Default 16.
	MaxConns int
	// Migrate applies missing migrations at Open (the service does).
	// Without it, Open fails on a database that is not up to date.
	Migrate bool
	// Logger receives what the store cannot return (the listener's
	// reconnects). Default: discard.
	Logger *slog.Logger
	// InstanceTTL is how long an instance may miss heartbeats before
	// the others take it for dead and set offline the replicas only it
	// held. Default 15s; it beats every third of it.
	InstanceTTL time.Duration
	// LockedIngest makes every ingest batch take two round trips (lock
	// and read the state, then write), as the one-round-trip path falls
	// back to; for measuring that path against it.
	LockedIngest bool
}

// DefaultInstanceTTL is Options.InstanceTTL's default.
const DefaultInstanceTTL = 15 * time.Second

// Store is an open PostgreSQL database of the service.
type Store struct {
	pool *pgxpool.Pool
	url  string // for the listener's own connection
	// instance names this Store in its notices, so it skips its own.
	instance string
	logf     func(msg string, err error)
	ttl      time.Duration // Options.InstanceTTL
	// lockedOnly is Options.LockedIngest.
	lockedOnly bool
	beats      atomic.Int64 // heartbeats sent

	wsMu  sync.RWMutex
	wsIDs map[string]int64 // workspace name -> id; ids never change

	tokens store.TokenCache

	cache ingestCache            // state for one-round-trip ingest (fast.go)
	paths [numPaths]atomic.Int64 // batches per ingest path
}

// MinServerVersion is the oldest PostgreSQL this store supports.
const MinServerVersion = 15

// ParseURL checks a connection string (postgres:// or postgresql:// URL,
// or key=value pairs) and returns its pool config, with an error that
// says what is wrong.
func ParseURL(url string) (*pgxpool.Config, error) {
	if url == "" {
		return nil, errors.New("empty database URL (want postgres://USER@HOST/DB)")
	}
	if i := strings.Index(url, "://"); i >= 0 {
		if scheme := url[:i]; scheme != "postgres" && scheme != "postgresql" {
			return nil, fmt.Errorf("database URL scheme %q is not supported: want postgres://USER@HOST/DB", scheme)
		}
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("database URL: %w", err)
	}
	return cfg, nil
}

// Open connects to the database at url, checks the server's version and
// the schema, applying missing migrations with opts.Migrate.
func Open(ctx context.Context, url string, opts *Options) (*Store, error) {
	o := Options{MaxConns: 16, InstanceTTL: DefaultInstanceTTL}
	if opts != nil {
		o.Migrate, o.Logger = opts.Migrate, opts.Logger
		if opts.MaxConns > 0 {
			o.MaxConns = opts.MaxConns
		}
		if opts.InstanceTTL > 0 {
			o.InstanceTTL = opts.InstanceTTL
		}
		o.LockedIngest = opts.LockedIngest
	}
	cfg, err := ParseURL(url)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = int32(o.MaxConns)
	cfg.MaxConnIdleTime = 5 * time.Minute
	cfg.HealthCheckPeriod = 10 * time.Second
	// Every commit must be durable before its receipt: whatever the
	// server's default, this service's sessions commit synchronously.
	cfg.ConnConfig.RuntimeParams["synchronous_commit"] = "on"
	cfg.ConnConfig.RuntimeParams["application_name"] = "crosscode-mcp serve"
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open database: %w", Explain(err))
	}
	var id [8]byte
	rand.Read(id[:])
	s := &Store{pool: pool, url: url, instance: hex.EncodeToString(id[:]), ttl: o.InstanceTTL, lockedOnly: o.LockedIngest, wsIDs: map[string]int64{}}
	s.logf = func(string, error) {}
	if o.Logger != nil {
		s.logf = func(msg string, err error) { o.Logger.Warn(msg, "err", err) }
	}
	if err := s.check(ctx, o.Migrate); err != nil {
		pool.Close()
		return nil, err
	}
	return s, nil
}

// check checks the server's version and the schema, migrating if asked.
func (s *Store) check(ctx context.Context, migrate bool) error {
	v, err := s.ServerVersion(ctx)
	if err != nil {
		return fmt.Errorf("open database: %w", err)
	}
	if v/10000 < MinServerVersion {
		return fmt.Errorf("open database: PostgreSQL %d.%d is too old: crosscode-mcp needs %d or newer", v/10000, v%10000, MinServerVersion)
	}
	if migrate {
		return s.migrate(ctx)
	}
	have, err := s.Version(ctx)
	if err != nil {
		return fmt.Errorf("open database: %w", err)
	}
	if have != SchemaVersion {
		return fmt.Errorf("open database: schema version %d, this binary needs %d: run `crosscode-mcp serve --db URL` once to migrate it", have, SchemaVersion)
	}
	return nil
}

// ServerVersion is the server's version number (150004 for 15.4).
func (s *Store) ServerVersion(ctx context.Context) (int, error) {
	var v int
	if err := s.pool.QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&v); err != nil {
		return 0, Explain(err)
	}
	return v, nil
}

// Setting reads one server setting as this store's sessions see it.
func (s *Store) Setting(ctx context.Context, name string) (string, error) {
	var v string
	err := s.pool.QueryRow(ctx, "SELECT current_setting($1)", name).Scan(&v)
	return v, Explain(err)
}

// Close closes the pool. Pending calls must have finished.
func (s *Store) Close() error {
	s.pool.Close()
	return nil
}

// Explain turns the errors a wrong setup gives into ones that say what to
// do: a server that is not there, a missing database, a refused login.
func Explain(err error) error {
	if err == nil {
		return nil
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case pe.Code == "3D000":
			return fmt.Errorf("%s: create it first (createdb, or CREATE DATABASE): %w", pe.Message, err)
		case pe.Code == "28P01", pe.Code == "28000":
			return fmt.Errorf("%s: check the user and password in the database URL: %w", pe.Message, err)
		case strings.HasPrefix(pe.Code, "08"), pe.Code == "57P01", pe.Code == "57P02", pe.Code == "57P03":
			// Connection exceptions; shutting down, crashed, starting up.
			return fmt.Errorf("%w: %s: %w", store.ErrUnavailable, pe.Message, err)
		}
		return err
	}
	var ne *net.OpError
	if errors.As(err, &ne) || strings.Contains(err.Error(), "connect: ") {
		return fmt.Errorf("%w: cannot reach PostgreSQL (is it running, and is the host in the database URL right?): %w", store.ErrUnavailable, err)
	}
	if pgconn.SafeToRetry(err) || pgconn.Timeout(err) || errors.Is(err, io.ErrUnexpectedEOF) || strings.Contains(err.Error(), "conn closed") {
		return fmt.Errorf("%w: the connection to PostgreSQL was lost: %w", store.ErrUnavailable, err)
	}
	return err
}

// tx runs fn in a transaction.
func (s *Store) tx(ctx context.Context, fn func(pgx.Tx) error) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return Explain(err)
	}
	defer tx.Rollback(context.Background())
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

func (s *Store) log(msg string, err error) { s.logf(msg, err) }

func micros(t time.Time) int64      { return t.UnixMicro() }
func fromMicros(us int64) time.Time { return time.UnixMicro(us).UTC() }

// Info is what doctor reports of a database.
type Info struct {
	ServerVersion int    // e.g. 150004
	Schema        int    // the schema version it holds, 0 for a new database
	Fsync         string // the server's fsync setting
	Synchronous   string // synchronous_commit as the service's sessions see it
}

// Inspect connects to the database at url without changing or checking
// anything and reports what doctor needs.
func Inspect(ctx context.Context, url string) (*Info, error) {
	cfg, err := ParseURL(url)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = 1
	cfg.ConnConfig.RuntimeParams["synchronous_commit"] = "on"
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, Explain(err)
	}
	s := &Store{pool: pool}
	defer s.Close()
	var info Info
	if info.ServerVersion, err = s.ServerVersion(ctx); err != nil {
		return nil, err
	}
	if info.Schema, err = s.Version(ctx); err != nil {
		return nil, err
	}
	if info.Fsync, err = s.Setting(ctx, "fsync"); err != nil {
		return nil, err
	}
	if info.Synchronous, err = s.Setting(ctx, "synchronous_commit"); err != nil {
		return nil, err
	}
	return &info, nil
}

// Pool is the store's connection pool, for maintenance and benchmarks.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }
