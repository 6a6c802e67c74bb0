package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/crosscode/crosscode-mcp/bridge/hooks"
	"github.com/crosscode/crosscode-mcp/internal/gitx"
)

// runHook is `crosscode-mcp hook [flags] CLIENT EVENT`, what an agent
// client runs as its hook: the client's input on stdin, its answer on
// stdout. A mistake on its command line exits 1, which the clients take
// as a hook that failed without stopping the agent (2 would stop it).
func runHook(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlagSet("crosscode-mcp hook", stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: crosscode-mcp hook [flags] %s EVENT\n", strings.Join(hooks.Clients, "|"))
		fs.PrintDefaults()
	}
	g := addGuardFlags(fs)
	policy := fs.String("policy", "", "deny, claim or warn: overrides "+filepath.ToSlash(hooks.PolicyFile))
	strict := fs.Bool("strict", false, "deny an edit when its claims cannot be checked (default: allow, and say why on stderr)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return exitError{code: 1}
	}
	if fs.NArg() != 2 {
		fs.Usage()
		return exitError{code: 1}
	}
	err := hooks.Run(ctx, hooks.Config{
		Client: fs.Arg(0), Event: fs.Arg(1), Repo: *g.Repo, Data: *g.Data, Workspace: *g.Workspace,
		Actor: *g.Actor, Service: *g.Service, Policy: *policy, Strict: *strict,
	}, stdin, stdout, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "crosscode-mcp hook:", err)
		return exitError{code: 1}
	}
	return nil
}

// runHooks is `crosscode-mcp hooks install|uninstall --client C [--scope S]`.
func runHooks(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || (args[0] != "install" && args[0] != "uninstall") {
		return usageError{msg: "usage: crosscode-mcp hooks install|uninstall --client claude-code|gemini|codex [--scope project|user] [--policy P] [--strict] [server flags]"}
	}
	fs := newFlagSet("crosscode-mcp hooks "+args[0], stderr)
	client := fs.String("client", "", "the agent client: "+strings.Join(hooks.Clients, ", "))
	scope := fs.String("scope", "project", "project (the repository's settings) or user (yours, for every project)")
	g := addGuardFlags(fs)
	policy := fs.String("policy", "", "install: the hook's policy (deny, claim, warn), over "+filepath.ToSlash(hooks.PolicyFile))
	strict := fs.Bool("strict", false, "install: deny edits when claims cannot be checked")
	exe := fs.String("exe", "", "install: how the client starts crosscode-mcp (default: this binary's path)")
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	if !slices.Contains(hooks.Clients, *client) {
		return usageError{msg: fmt.Sprintf("hooks: unknown client %q: --client is one of %s", *client, strings.Join(hooks.Clients, ", "))}
	}
	if !slices.Contains(hooks.Scopes, *scope) {
		return usageError{msg: fmt.Sprintf("hooks: unknown scope %q (project, user)", *scope)}
	}
	cfg := hooks.InstallConfig{Client: *client, Scope: *scope}
	if *scope != "user" {
		dir := *g.Repo
		if dir == "" {
			dir, _ = os.Getwd()
		}
		repo, err := gitx.Open(ctx, dir)
		switch {
		case errors.Is(err, gitx.ErrNotRepo):
			return fmt.Errorf("hooks: %s is not in a git repository (use --scope user, or --repo DIR)", dir)
		case err != nil:
			return err
		}
		cfg.Top = repo.Top
	}
	if args[0] == "uninstall" {
		path, changed, err := hooks.Uninstall(cfg)
		if err != nil {
			return err
		}
		if changed {
			fmt.Fprintf(stdout, "removed crosscode-mcp's hooks from %s\n", path)
		} else {
			fmt.Fprintf(stdout, "no crosscode-mcp hooks in %s\n", path)
		}
		return nil
	}
	if *policy != "" {
		if err := hooks.ValidPolicy(*policy); err != nil {
			return usageError{msg: "hooks: " + err.Error()}
		}
	}
	quote := hookQuoter(runtime.GOOS, *client)
	cmd := *exe
	if cmd == "" {
		path, err := os.Executable()
		if err != nil {
			path = "crosscode-mcp"
		}
		if client := hookClientBeside(path); client != "" {
			// The hook client: the same arguments but `hook`, a fraction of
			// the start (cmd/crosscode-hook).
			cmd = quote(filepath.ToSlash(client))
		} else {
			cmd = quote(filepath.ToSlash(path)) + " hook"
		}
		if runtime.GOOS == "windows" && *client == "gemini" {
			cmd = "& " + cmd // PowerShell runs a quoted path only with its call operator
		}
	} else {
		cmd += " hook"
	}
	for _, f := range []struct {
		name string
		v    *string
	}{{"--data", g.Data}, {"--workspace", g.Workspace}, {"--actor", g.Actor}, {"--service", g.Service}, {"--policy", policy}} {
		if *f.v != "" {
			v := *f.v
			if f.name == "--data" {
				v = filepath.ToSlash(v)
			}
			cmd += " " + f.name + " " + quote(v)
		}
	}
	if *strict {
		cmd += " --strict"
	}
	cfg.Command = cmd
	path, changed, err := hooks.Install(cfg)
	if err != nil {
		return err
	}
	if changed {
		fmt.Fprintf(stdout, "installed crosscode-mcp's hooks in %s\n", path)
	} else {
		fmt.Fprintf(stdout, "crosscode-mcp's hooks are already in %s\n", path)
	}
	if *client == "codex" {
		fmt.Fprintln(stdout, "Codex runs a new hook only after you review it (/hooks in its TUI), and a project's hooks only in a trusted project.")
	}
	return nil
}

// hookQuoter quotes a word of a hook command for the shell the client
// runs it with: sh (and Git Bash, Claude Code's on Windows) reads single
// quotes; on Windows, Gemini CLI runs PowerShell, whose single quotes are
// literal too, and Codex runs cmd.exe, which knows only double quotes
// (paths and flag values hold no double quote).
func hookQuoter(goos, client string) func(string) string {
	if goos == "windows" && client == "codex" {
		return func(s string) string { return `"` + s + `"` }
	}
	if goos == "windows" && client == "gemini" {
		return func(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
	}
	return shellQuote
}

// hookClientBeside is the hook client (crosscode-hook) next to the
// crosscode-mcp binary at path, as the release archives and the npm
// packages have it on unix systems; "" when there is none (Windows, a
// build of crosscode-mcp alone).
func hookClientBeside(path string) string {
	if runtime.GOOS == "windows" {
		return ""
	}
	if r, err := filepath.EvalSymlinks(path); err == nil {
		path = r
	}
	p := filepath.Join(filepath.Dir(path), "crosscode-hook")
	if fi, err := os.Stat(p); err != nil || fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
		return ""
	}
	return p
}
