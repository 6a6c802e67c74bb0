package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/crosscode/crosscode-mcp/dashboard"
	"github.com/crosscode/crosscode-mcp/hub"
	"github.com/crosscode/crosscode-mcp/store"
)

// defaultHubData is where `serve` and `token create` keep the service's
// database when --data is not given: $CROSSCODE_HUB_DATA, else
// $XDG_DATA_HOME/crosscode-mcp/hub, else ~/.local/share/crosscode-mcp/hub.
func defaultHubData() string {
	if d := os.Getenv("CROSSCODE_HUB_DATA"); d != "" {
		return d
	}
	if d := os.Getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "crosscode-mcp", "hub")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".local", "share", "crosscode-mcp", "hub")
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
	data := fs.String("data", defaultHubData(), "directory of the service's SQLite database")
	retention := fs.Duration("retention", 0, "history retention for every workspace, overriding the plans' (e.g. 720h); 0 = by plan")
	sweepEvery := fs.Duration("sweep-every", time.Minute, "how often retention runs")
	verbose := fs.Bool("v", false, "log debug details")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{msg: fmt.Sprintf("serve: unexpected argument %q", fs.Arg(0))}
	}
	log := newLogger(stderr, *verbose)

	st, err := store.Open(ctx, hubDB(*data), nil)
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
	// log's retention for long).
	cache := filepath.Join(*data, "dashboard-cache")
	if err := os.RemoveAll(cache); err != nil {
		return fmt.Errorf("dashboard cache: %w", err)
	}
	defer os.RemoveAll(cache)
	mirror, err := store.Open(ctx, filepath.Join(cache, "mirror.db"), &store.Options{Projections: true})
	if err != nil {
		return err
	}
	defer mirror.Close()
	dash := dashboard.New(&dashboard.Options{Logger: log, Denials: &dashboard.MirroredDenials{Log: st, Mirror: mirror}})
	srv := hub.New(hub.Config{Store: st, Retention: *retention, SweepEvery: *sweepEvery, Logger: log, Routes: dash.Routes})
	log.Info("coordination service", "data", st.Path(), "retention", retentionText(*retention), "sweepEvery", *sweepEvery)
	fmt.Fprintf(stdout, "listening on http://%s\n", l.Addr())
	return srv.Serve(ctx, l)
}

func retentionText(d time.Duration) string {
	if d <= 0 {
		return "by plan"
	}
	return d.String()
}
