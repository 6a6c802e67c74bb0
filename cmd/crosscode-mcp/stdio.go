package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/crosscode/crosscode-mcp/bridge/hooks"
	"github.com/crosscode/crosscode-mcp/internal/gitx"
	"github.com/crosscode/crosscode-mcp/mcp"
)

// serverFlags defines the stdio server's flags (each also readable from the
// environment), shared with doctor so it checks the same setup.
func serverFlags(fs *flag.FlagSet) (*mcp.Config, *string, *bool) {
	env := func(name, def string) string {
		if v := os.Getenv(name); v != "" {
			return v
		}
		return def
	}
	cfg := &mcp.Config{}
	fs.StringVar(&cfg.Workspace, "workspace", env("CROSSCODE_WORKSPACE", ""), "workspace id [CROSSCODE_WORKSPACE] (default: the repository's top-level folder name)")
	fs.StringVar(&cfg.Service, "service", env("CROSSCODE_SERVICE", ""), "coordination service base URL [CROSSCODE_SERVICE]; absent: local mode")
	fs.StringVar(&cfg.Token, "token", env("CROSSCODE_TOKEN", ""), "access token for --service [CROSSCODE_TOKEN]")
	fs.StringVar(&cfg.Data, "data", env("CROSSCODE_DATA", ""), "where local state lives [CROSSCODE_DATA] (default: <git common dir>/crosscode)")
	fs.StringVar(&cfg.Repo, "repo", "", "the repository the agent works in (default: the working directory)")
	fs.StringVar(&cfg.Provider, "provider", env("CROSSCODE_PROVIDER", ""), "agent provider stamped on envelopes [CROSSCODE_PROVIDER] (default: from the MCP client's name)")
	fs.StringVar(&cfg.SessionRef, "session-ref", env("CROSSCODE_SESSION_REF", ""), "agent.sessionReference [CROSSCODE_SESSION_REF] (default: the agent's own session id when it passes one, else a new id)")
	fs.StringVar(&cfg.Actor, "actor", env("CROSSCODE_ACTOR", ""), "actorId [CROSSCODE_ACTOR] (default: git user.email, else the OS user)")
	toolsets := fs.String("toolsets", "coord,capture", "tool groups to serve: coord, capture or both")
	fs.StringVar(&cfg.GameCmd, "game-cmd", "", "how to launch the game for capture, e.g. \"godot --path .\" (default: game.command of the capture config)")
	fs.StringVar(&cfg.CappyListen, "cappy-listen", "", "Cappy controller listen address, loopback only (default: the capture config's, else 127.0.0.1:0)")
	fs.StringVar(&cfg.CaptureConfig, "capture-config", "", "capture config (default: .crosscode/capture.json in the repository, if present)")
	verbose := fs.Bool("v", false, "debug logs on stderr")
	return cfg, toolsets, verbose
}

// viaEnv is set to "plugin" in the environment of a server that the
// crosscode plugin or extension starts (their MCP server entries).
const viaEnv = "CROSSCODE_VIA"

// runStdio runs the stdio MCP server: what an agent starts from its MCP
// config. Stdout carries MCP only; logs go to stderr.
func runStdio(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlagSet("crosscode-mcp", stderr)
	cfg, toolsets, verbose := serverFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{msg: fmt.Sprintf("unexpected argument %q\n\n%s", fs.Arg(0), usage)}
	}
	cfg.Toolsets = parseToolsets(*toolsets)
	cfg.Logger = newLogger(stderr, *verbose)
	cfg.Version = thisBuild().Version // serverInfo.version: "1.2.3", or "dev"
	// The hooks of the client packages (plugin, extension) start the
	// binary the server last ran from: record it, beside the start (it is
	// one small read when nothing changed; a failure only means those hooks
	// look on PATH instead).
	recorded := make(chan struct{})
	go func() {
		defer close(recorded)
		if exe, err := os.Executable(); err == nil {
			if err := hooks.RecordBinary(exe); err != nil {
				cfg.Logger.Warn("the client packages' hooks will look for crosscode-mcp on PATH: " + err.Error())
			}
		}
	}()
	defer func() { <-recorded }()
	if os.Getenv(viaEnv) == "plugin" {
		// Started by the plugin or extension: leave the tools to a server
		// the same client was wired to start by hand, if any.
		if home, err := os.UserHomeDir(); err == nil {
			dir := cfg.Repo
			if dir == "" {
				dir, _ = os.Getwd()
			}
			if r, err := gitx.Open(ctx, dir); err == nil {
				dir = r.Top
			}
			cfg.Yield = handWired(home, dir)
		}
	}
	return mcp.Run(ctx, *cfg, stdin, stdout)
}

// parseToolsets splits --toolsets' comma-separated list.
func parseToolsets(s string) []string {
	var out []string
	for _, t := range strings.Split(s, ",") {
		if t = strings.TrimSpace(t); t != "" {
			out = append(out, t)
		}
	}
	return out
}
