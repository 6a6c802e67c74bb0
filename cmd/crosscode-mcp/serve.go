package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/crosscode/crosscode-mcp/dashboard"
	"github.com/crosscode/crosscode-mcp/hub"
	"github.com/crosscode/crosscode-mcp/internal/scratch"
	"github.com/crosscode/crosscode-mcp/mcp"
	"github.com/crosscode/crosscode-mcp/pgstore"
	"github.com/crosscode/crosscode-mcp/store"
)

// defaultHubData is where `serve` and `token create` keep the service's
// database when --data is not given: $CROSSCODE_HUB_DATA, else
// crosscode-mcp/hub in the user's data dir (userDataDir).
func defaultHubData() string {
	if d := os.Getenv("CROSSCODE_HUB_DATA"); d != "" {
		return d
	}
	if d := userDataDir(); d != "" {
		return filepath.Join(d, "crosscode-mcp", "hub")
	}
	return "crosscode-hub"
}

// hubDB is the service's database file inside its data dir.
func hubDB(dir string) string { return filepath.Join(dir, "hub.db") }

func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("crosscode-mcp serve", stderr)
	listen := fs.String("listen", "127.0.0.1:7420", "address to listen on (host:port); use 0.0.0.0:PORT to serve a team, behind TLS")
	data, db := hubStoreFlags(fs)
	retention := fs.Duration("retention", 0, "history retention for every workspace, overriding the plans' (e.g. 720h); 0 = by plan")
	sweepEvery := fs.Duration("sweep-every", time.Minute, "how often retention runs")
	verbose := fs.Bool("v", false, "log debug details")
	var origins listFlag
	fs.Var(&origins, "allow-origin", "a browser origin (scheme://host[:port]) allowed to call /mcp; repeat for more (requests with any other Origin get 403)")
	mcpRate := fs.Float64("mcp-rate", 50, "requests a second one token may make to /mcp on average (twice as many at once); past it, 429")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{msg: fmt.Sprintf("serve: unexpected argument %q", fs.Arg(0))}
	}
	log := newLogger(stderr, *verbose)
	if err := oneStore(fs, *db); err != nil {
		return err
	}

	st, where, err := openHubStore(ctx, *data, *db, log)
	if err != nil {
		return err
	}
	defer st.Close()
	l, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	// The dashboard's denials come from a mirror of the log with
	// projections: a cache rebuilt by each run (so it never outgrows the
	// log's retention for long), in the data dir, or a temp dir of this
	// instance's own when the state is in PostgreSQL (several instances
	// may run on one machine; the next to start removes the cache of one
	// killed before it could).
	cache := filepath.Join(*data, "dashboard-cache")
	if *db != "" {
		scr, err := scratch.New("", "crosscode-dashboard-cache-", nil)
		if err != nil {
			return fmt.Errorf("dashboard cache: %w", err)
		}
		defer scr.Remove()
		cache = scr.Path()
	} else if err := os.RemoveAll(cache); err != nil {
		return fmt.Errorf("dashboard cache: %w", err)
	}
	defer os.RemoveAll(cache)
	mirror, err := store.Open(ctx, filepath.Join(cache, "mirror.db"), &store.Options{Projections: true})
	if err != nil {
		return err
	}
	defer mirror.Close()
	dash := dashboard.New(&dashboard.Options{Logger: log, Denials: &dashboard.MirroredDenials{Log: st, Mirror: mirror}})
	// MCP over HTTP reads from its own mirror, in the same cache.
	mcpMirror, err := store.Open(ctx, filepath.Join(cache, "mcp-mirror.db"), &store.Options{Projections: true, Cache: true})
	if err != nil {
		return err
	}
	defer mcpMirror.Close()
	cfg := hub.Config{Store: st, Retention: *retention, SweepEvery: *sweepEvery, Logger: log, Routes: dash.Routes}
	if *db != "" {
		// Other instances announce presence changes; reading it every
		// second too covers a lost notice.
		cfg.Follow = time.Second
	}
	srv := hub.New(cfg)
	endpoint, err := mcp.NewHTTP(mcp.HTTPConfig{Hub: srv, Mirror: mcpMirror, AllowOrigins: origins, Version: version, Logger: log, Rate: *mcpRate, Burst: int(2 * *mcpRate)})
	if err != nil {
		return err
	}
	defer endpoint.Close()
	srv.Handle("/mcp", endpoint)
	log.Info("coordination service", "database", where, "retention", retentionText(*retention), "sweepEvery", *sweepEvery)
	fmt.Fprintf(stdout, "listening on http://%s\n", l.Addr())
	return srv.Serve(ctx, l)
}

// hubStoreFlags adds --data and --db, the two places the service's state
// can be: a SQLite file in a directory, or a PostgreSQL database.
func hubStoreFlags(fs *flag.FlagSet) (data, db *string) {
	data = fs.String("data", defaultHubData(), "directory of the service's SQLite database")
	db = fs.String("db", os.Getenv("CROSSCODE_HUB_DB"), "PostgreSQL URL (postgres://USER@HOST/DB) of the service's database, which several serve instances may share; instead of --data [CROSSCODE_HUB_DB]")
	return data, db
}

// oneStore refuses --data with --db: the state is in one place.
func oneStore(fs *flag.FlagSet, db string) error {
	dataSet := false
	fs.Visit(func(f *flag.Flag) { dataSet = dataSet || f.Name == "data" })
	if dataSet && db != "" {
		return usageError{msg: fmt.Sprintf("%s: --data (SQLite) and --db or CROSSCODE_HUB_DB (PostgreSQL) name two databases; give one", fs.Name())}
	}
	return nil
}

// hubStore is the service's database, of either kind.
type hubStore interface {
	hub.Store
	CreateToken(ctx context.Context, workspace, plan string) (string, error)
	Close() error
}

// openHubStore opens the PostgreSQL database at db (migrating it), or
// else the SQLite file in data, and says which for the log.
func openHubStore(ctx context.Context, data, db string, log *slog.Logger) (hubStore, string, error) {
	ttl, err := instanceTTL()
	if err != nil {
		return nil, "", err
	}
	if db != "" {
		st, err := pgstore.Open(ctx, db, &pgstore.Options{Migrate: true, Logger: log, InstanceTTL: ttl})
		if err != nil {
			return nil, "", err
		}
		return st, redactURL(db), nil
	}
	st, err := store.Open(ctx, hubDB(data), &store.Options{InstanceTTL: ttl})
	if err != nil {
		return nil, "", err
	}
	return st, st.Path(), nil
}

// instanceTTL reads CROSSCODE_HUB_INSTANCE_TTL: how long a service
// instance may miss its heartbeats before the others (or, on SQLite, the
// next one after a crash) set offline the replicas it held (zero: the
// stores' default, 15s).
func instanceTTL() (time.Duration, error) {
	v := os.Getenv("CROSSCODE_HUB_INSTANCE_TTL")
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 300*time.Millisecond {
		return 0, fmt.Errorf("CROSSCODE_HUB_INSTANCE_TTL=%q: want a duration of at least 300ms, such as 15s", v)
	}
	return d, nil
}

// redactURL hides a password in a database URL.
func redactURL(db string) string {
	if u, err := url.Parse(db); err == nil && u.Scheme != "" {
		return u.Redacted()
	}
	return "(a PostgreSQL connection string)"
}

func retentionText(d time.Duration) string {
	if d <= 0 {
		return "by plan"
	}
	return d.String()
}

// listFlag is a flag that may be given several times.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(v string) error {
	*l = append(*l, v)
	return nil
}
