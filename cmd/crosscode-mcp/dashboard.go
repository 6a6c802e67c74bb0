package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/crosscode/crosscode-mcp/dashboard"
	"github.com/crosscode/crosscode-mcp/hub"
	"github.com/crosscode/crosscode-mcp/internal/identity"
	"github.com/crosscode/crosscode-mcp/internal/scratch"
	"github.com/crosscode/crosscode-mcp/store"
)

// followEvery is how often the local dashboard looks for what the agents
// wrote to the workspace database.
const followEvery = 100 * time.Millisecond

// runDashboard serves the dashboard of the local workspace on loopback:
// the hub's handlers over the workspace database the agents share, plus
// this machine's captures. It prints one URL, with a one-time secret.
func runDashboard(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("crosscode-mcp dashboard", stderr)
	cfg, _, verbose := serverFlags(fs)
	listen := fs.String("listen", "127.0.0.1:0", "loopback address to serve on (host:port; port 0 picks a free one)")
	openIt := fs.Bool("open", false, "open the URL in the default browser (xdg-open, or $BROWSER)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{msg: fmt.Sprintf("dashboard: unexpected argument %q", fs.Arg(0))}
	}
	if cfg.Service != "" {
		return usageError{msg: fmt.Sprintf("dashboard: --service is set: the service's own page is at %s/ (sign in with your token there); this command serves local mode", cfg.Service)}
	}
	if err := loopbackOnly(*listen); err != nil {
		return usageError{msg: "dashboard: " + err.Error()}
	}
	log := newLogger(stderr, *verbose)

	dir := cfg.Repo
	if dir == "" {
		var err error
		if dir, err = os.Getwd(); err != nil {
			return err
		}
	}
	repo, err := identity.OpenRepo(ctx, dir, log)
	if err != nil {
		return err
	}
	workspace, data, err := identity.Locate(repo, dir, cfg.Workspace, cfg.Data)
	if err != nil {
		return err
	}
	st, err := store.Open(ctx, identity.DatabasePath(data, "", workspace), &store.Options{Projections: true})
	if err != nil {
		return err
	}
	defer st.Close()
	if _, err := st.EnsureWorkspace(ctx, workspace, ""); err != nil {
		return err
	}
	captureDir := filepath.Join(data, "capture")
	caps, err := store.Open(ctx, filepath.Join(captureDir, "captures.db"), nil)
	if err != nil {
		return err
	}
	defer caps.Close()
	// Videos are made on demand into a temp dir of this run's own (the
	// next run removes it if this one is killed before it can).
	videos, err := scratch.New("", "crosscode-dashboard-videos-", nil)
	if err != nil {
		return err
	}
	defer videos.Remove()

	l, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	gate := dashboard.NewLocal(workspace, l.Addr().(*net.TCPAddr).Port)
	dash := dashboard.New(&dashboard.Options{
		Captures: caps, FrameDir: filepath.Join(captureDir, "frames"), VideoDir: videos.Path(), MediaDir: filepath.Join(captureDir, "media"),
		Denials: dashboard.ProjectedDenials{Store: st}, Session: gate.Session, Logger: log,
	})
	srv := hub.New(hub.Config{Store: st, Logger: log, Routes: dash.Routes, Authenticate: gate.Authenticate, Wrap: gate.Wrap,
		Follow: followEvery, SweepEvery: -1})
	log.Info("local dashboard", "workspace", workspace, "data", st.Path(), "captures", captureDir, "listen", l.Addr().String())
	url := gate.URL()
	fmt.Fprintln(stdout, url)
	if *openIt {
		openBrowser(log, url)
	}
	return srv.Serve(ctx, l)
}

// loopbackOnly refuses a listen address that is not a loopback IP or
// localhost.
func loopbackOnly(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--listen %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("--listen %q: the local dashboard binds loopback only (127.0.0.1, [::1] or localhost); share a workspace with crosscode-mcp serve instead", addr)
}

// openBrowser opens url with $BROWSER, else xdg-open; failing is only logged.
func openBrowser(log interface{ Warn(string, ...any) }, url string) {
	prog := os.Getenv("BROWSER")
	if prog == "" {
		prog = "xdg-open"
	}
	cmd := exec.Command(prog, url)
	if err := cmd.Start(); err != nil {
		log.Warn("open the browser", "program", prog, "err", err)
		return
	}
	go cmd.Wait()
}
