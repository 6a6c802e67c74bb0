// Command crosscode-mcp is the stdio MCP server that lets coding agents
// coordinate on one repository and play the game they are editing, and the
// coordination service they can share (`crosscode-mcp serve`).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// A client that closes our stderr (or stdout) before we are done (the
	// mcp-go client closes stdin and stderr at once) must not kill us by
	// SIGPIPE at the next log line, before the game and the browser are
	// stopped and the store closed: a write to a closed pipe is then only
	// an error. Notify, not Ignore: an ignored signal would stay ignored in
	// the game and the browser we start.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	stopProfile := startProfile(os.Getenv("CROSSCODE_CPUPROFILE"))
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stopProfile()
	var ue usageError
	var ee exitError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
	case errors.As(err, &ee):
		os.Exit(ee.code)
	case errors.As(err, &ue):
		if !ue.printed {
			fmt.Fprintln(os.Stderr, "crosscode-mcp:", err)
		}
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "crosscode-mcp:", err)
		os.Exit(1)
	}
}

// startProfile writes a CPU profile of the whole run to path, for
// benchmarks of the real process (BENCHMARKS.md); "" profiles nothing.
func startProfile(path string) (stop func()) {
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err == nil {
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "crosscode-mcp: CROSSCODE_CPUPROFILE:", err)
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}

// newLogger is every command's log: text on stderr, at info level, or
// debug with -v.
func newLogger(stderr io.Writer, verbose bool) *slog.Logger {
	level := slog.LevelInfo
	if verbose {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
}

// usageError is a command-line mistake (exit status 2).
type usageError struct {
	msg     string
	printed bool // the flag package already printed it, with the usage
}

func (e usageError) Error() string { return e.msg }

// parseFlags parses args into fs; a mistake is a usageError that the flag
// package has already printed, -h is flag.ErrHelp.
func parseFlags(fs *flag.FlagSet, args []string) error {
	err := fs.Parse(args)
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return err
	}
	return usageError{msg: err.Error(), printed: true}
}

const usage = `crosscode-mcp: coordination and game capture for coding agents

Usage:
  crosscode-mcp [flags]                      the stdio MCP server (what agents start)
  crosscode-mcp demo [--keep]                a tour: two agents coordinate, then play the demo game
  crosscode-mcp test [NAME|GLOB ...] [--junit FILE] [--report DIR] [--update] [--json] [--publish] [server flags]
                                             run the saved plays as regression tests (exit 0, 1 failed, 2 could not run)
  crosscode-mcp doctor [server flags] [--json]
                                             check a setup and say how to fix what breaks it
  crosscode-mcp serve --listen ADDR --data DIR | --db URL
                                             the coordination service (SQLite, or PostgreSQL
                                             shared by several instances)
  crosscode-mcp dashboard [server flags] [--listen ADDR] [--open]
                                             the live dashboard of the local workspace (prints one URL)
  crosscode-mcp token create --workspace W [--data DIR | --db URL] [--plan P]
                                             create a workspace access token
  crosscode-mcp guard install|uninstall|check
                                             optional pre-commit hook: refuse commits touching
                                             paths another agent claimed exclusively
  crosscode-mcp hooks install|uninstall --client claude-code|gemini|codex [--scope project|user]
                                             agent hooks: stop edits of files another agent
                                             claimed, and bring news at each prompt
  crosscode-mcp hook CLIENT EVENT            what those hooks run (client's JSON on stdin)
  crosscode-mcp skill install|uninstall --client opencode [--scope user|project]
                                             the working rules as an Agent Skill, where OpenCode
                                             reads skills (the other clients' packages bring it)
  crosscode-mcp godot install-addon [DIR]    write the Cappy addon into the Godot project in DIR
  crosscode-mcp demo-game                    the reference game adapter (reads CAPPY_ENDPOINT, CAPPY_SESSION_TOKEN)
  crosscode-mcp version                      print the version

Run 'crosscode-mcp COMMAND -h' for a command's flags.
`

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		switch args[0] {
		case "serve":
			return runServe(ctx, args[1:], stdout, stderr)
		case "dashboard":
			return runDashboard(ctx, args[1:], stdout, stderr)
		case "token":
			return runToken(ctx, args[1:], stdout, stderr)
		case "guard":
			return runGuard(ctx, args[1:], stdout, stderr)
		case "hook":
			return runHook(ctx, args[1:], stdin, stdout, stderr)
		case "skill":
			return runSkill(ctx, args[1:], stdout, stderr)
		case "hooks":
			return runHooks(ctx, args[1:], stdout, stderr)
		case "doctor":
			return runDoctor(ctx, args[1:], stdout, stderr)
		case "demo":
			return runDemo(ctx, args[1:], stdout, stderr)
		case "demo-game":
			return runDemoGame(ctx, args[1:], stdout, stderr)
		case "test":
			return runTest(ctx, args[1:], stdout, stderr)
		case "godot":
			return runGodot(ctx, args[1:], stdout, stderr)
		case "version", "--version", "-version":
			fmt.Fprintln(stdout, versionString())
			return nil
		case "help", "-h", "-help", "--help":
			fmt.Fprint(stdout, usage)
			return nil
		}
	}
	return runStdio(ctx, args, stdin, stdout, stderr)
}
