package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/crosscode/crosscode-mcp/internal/gitx"
	"github.com/crosscode/crosscode-mcp/internal/skill"
)

// runSkill is `crosscode-mcp skill install|uninstall --client opencode
// [--scope user|project]`: the Agent Skill where a client without a
// package format reads skills (Claude Code, Codex and Gemini CLI get it
// with the plugin or extension).
func runSkill(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || (args[0] != "install" && args[0] != "uninstall") {
		return usageError{msg: "usage: crosscode-mcp skill install|uninstall --client opencode [--scope user|project] [--repo DIR]"}
	}
	fs := newFlagSet("crosscode-mcp skill "+args[0], stderr)
	client := fs.String("client", "opencode", "the agent client: opencode")
	scope := fs.String("scope", "user", "user (every project) or project (the repository's .opencode/skills)")
	repoDir := fs.String("repo", "", "the repository, for --scope project (default: the working directory)")
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return err
	}
	top := ""
	if *scope == "project" {
		dir := *repoDir
		if dir == "" {
			dir, _ = os.Getwd()
		}
		repo, err := gitx.Open(ctx, dir)
		switch {
		case errors.Is(err, gitx.ErrNotRepo):
			return fmt.Errorf("skill: %s is not in a git repository (use --scope user, or --repo DIR)", dir)
		case err != nil:
			return err
		}
		top = repo.Top
	}
	dir, err := skill.Dir(*client, *scope, home, os.Getenv("XDG_CONFIG_HOME"), top)
	if err != nil {
		return usageError{msg: err.Error()}
	}
	if args[0] == "uninstall" {
		changed, err := skill.Uninstall(dir)
		if err != nil {
			return err
		}
		if changed {
			fmt.Fprintf(stdout, "removed the crosscode skill from %s\n", dir)
		} else {
			fmt.Fprintf(stdout, "no crosscode skill in %s\n", dir)
		}
		return nil
	}
	changed, err := skill.Install(dir)
	if err != nil {
		return err
	}
	if changed {
		fmt.Fprintf(stdout, "wrote the crosscode skill to %s\n", dir)
	} else {
		fmt.Fprintf(stdout, "the crosscode skill is in %s already\n", dir)
	}
	return nil
}
