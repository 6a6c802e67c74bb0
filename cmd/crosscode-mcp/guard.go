package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/crosscode/crosscode-mcp/bridge/coord"
	"github.com/crosscode/crosscode-mcp/bridge/hooks/wire"
	"github.com/crosscode/crosscode-mcp/internal/gitx"
	"github.com/crosscode/crosscode-mcp/internal/identity"
	"github.com/crosscode/crosscode-mcp/store"
)

// guardMarker identifies the pre-commit hook that guard install writes.
const guardMarker = "# crosscode-mcp guard"

// guardFlags are the flags that locate the workspace, as the server's
// (shared with the hook client: wire.AddWorkspaceFlags).
type guardFlags = wire.WorkspaceFlags

func addGuardFlags(fs *flag.FlagSet) guardFlags { return wire.AddWorkspaceFlags(fs, os.Getenv) }

func runGuard(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usageError{msg: "usage: crosscode-mcp guard install|uninstall|check [--repo DIR] [server flags]"}
	}
	fs := newFlagSet("crosscode-mcp guard "+args[0], stderr)
	g := addGuardFlags(fs)
	force := fs.Bool("force", false, "install: replace a pre-commit hook that is not crosscode-mcp's")
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	dir := *g.Repo
	if dir == "" {
		dir, _ = os.Getwd()
	}
	repo, err := gitx.Open(ctx, dir)
	if errors.Is(err, gitx.ErrNotRepo) {
		return fmt.Errorf("guard: %s is not in a git repository", dir)
	}
	if err != nil {
		return err
	}
	switch args[0] {
	case "install":
		return guardInstall(ctx, repo, g, *force, stdout)
	case "uninstall":
		return guardUninstall(ctx, repo, stdout)
	case "check":
		return guardCheck(ctx, repo, g, stderr)
	}
	return usageError{msg: fmt.Sprintf("guard: unknown command %q (install, uninstall, check)", args[0])}
}

func hookPath(ctx context.Context, repo *gitx.Repo) (string, error) {
	dir, err := repo.HooksDir(ctx)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "pre-commit"), nil
}

// guardInstall writes a pre-commit hook that runs `guard check` with the
// same workspace flags.
func guardInstall(ctx context.Context, repo *gitx.Repo, g guardFlags, force bool, stdout io.Writer) error {
	path, err := hookPath(ctx, repo)
	if err != nil {
		return err
	}
	if old, err := os.ReadFile(path); err == nil && !strings.Contains(string(old), guardMarker) && !force {
		return fmt.Errorf("guard: %s exists and is not crosscode-mcp's; add `crosscode-mcp guard check` to it yourself, or pass --force to replace it", path)
	}
	exe, err := os.Executable()
	if err != nil {
		exe = "crosscode-mcp"
	}
	// Git for Windows runs hooks with its own sh, which takes a Windows path
	// with "/" (C:/Users/...) as it is: ToSlash (a no-op elsewhere).
	cmd := []string{shellQuote(filepath.ToSlash(exe)), "guard", "check"}
	for name, v := range map[string]*string{"--data": g.Data, "--workspace": g.Workspace, "--actor": g.Actor, "--service": g.Service} {
		if *v != "" {
			arg := *v
			if name == "--data" {
				arg = filepath.ToSlash(arg)
			}
			cmd = append(cmd, name, shellQuote(arg))
		}
	}
	script := "#!/bin/sh\n" + guardMarker + ": refuses commits that touch paths another agent claimed exclusively.\n" +
		"# Remove with: crosscode-mcp guard uninstall. Bypass once with: git commit --no-verify\n" +
		"exec " + strings.Join(cmd, " ") + "\n"
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "installed %s\n", path)
	return nil
}

func guardUninstall(ctx context.Context, repo *gitx.Repo, stdout io.Writer) error {
	path, err := hookPath(ctx, repo)
	if err != nil {
		return err
	}
	old, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) || (err == nil && !strings.Contains(string(old), guardMarker)) {
		fmt.Fprintln(stdout, "no crosscode-mcp pre-commit hook installed")
		return nil
	}
	if err != nil {
		return err
	}
	if err := os.Remove(path); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "removed %s\n", path)
	return nil
}

// guardCheck refuses (exit 1) when a staged path is inside another
// actor's active exclusive claim.
func guardCheck(ctx context.Context, repo *gitx.Repo, g guardFlags, stderr io.Writer) error {
	paths, err := repo.StagedPaths(ctx)
	if err != nil || len(paths) == 0 {
		return err
	}
	workspace, data, err := identity.Locate(repo, repo.Top, *g.Workspace, *g.Data)
	if err != nil {
		return err
	}
	db := identity.DatabasePath(data, *g.Service, workspace)
	if _, err := os.Stat(db); errors.Is(err, os.ErrNotExist) {
		return nil // no coordination in this repository yet
	}
	actor := *g.Actor
	if actor == "" {
		actor = identity.DefaultActor(ctx, repo)
	}
	st, err := store.Open(ctx, db, &store.Options{Projections: true})
	if err != nil {
		return err
	}
	defer st.Close()
	if _, err := st.Workspace(ctx, workspace); errors.Is(err, store.ErrNoWorkspace) {
		return nil
	}
	held, err := coord.HeldPaths(ctx, st, workspace, actor, paths, time.Now())
	if err != nil {
		return err
	}
	if len(held) == 0 {
		return nil
	}
	fmt.Fprintf(stderr, "crosscode-mcp guard: this commit touches paths another agent claimed exclusively (you are %s):\n", actor)
	for _, h := range held {
		fmt.Fprintf(stderr, "  %s: held by %s until %s (claim %s on %s)\n", h.Path, h.Claim.Actor, h.Claim.ExpiresAt.Local().Format(time.Kitchen), h.Claim.ClaimID, strings.Join(h.Claim.Patterns, ", "))
	}
	fmt.Fprintln(stderr, "Unstage them, wait for the claim to end, or ask for a handoff. To commit anyway: git commit --no-verify")
	return exitError{code: 1}
}

// exitError ends the process with code without printing anything more.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
