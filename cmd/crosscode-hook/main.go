// Command crosscode-hook is crosscode-mcp's hook client, what the
// crosscode plugin and extension start before every edit and prompt:
//
//	crosscode-hook [flags] CLIENT EVENT
//
// with the arguments, input and answer of `crosscode-mcp hook` (its
// flags too). It asks the agent's MCP server, which has the database
// open, to run the hook, and prints its answer; when no server serves it
// (none runs, another environment, Windows), it runs `crosscode-mcp
// hook` with the same arguments and input, which answers from the
// database. It is a small program apart from crosscode-mcp, linking the
// standard library and the exchange only (bridge/hooks/wire), because
// what an agent waits for before each edit is mostly a program's start:
// the whole crosscode-mcp binary initialises the packages of everything
// it holds first.
//
// crosscode-mcp is, in order: $CROSSCODE_MCP_BIN; the crosscode-mcp
// next to this program; crosscode-mcp on PATH. With none, the edit goes
// ahead unchecked and stderr says why: a hook never blocks an agent for
// want of the binary.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"time"

	"github.com/crosscode/crosscode-mcp/bridge/hooks/wire"
	"github.com/crosscode/crosscode-mcp/internal/location"
)

// timeout is the whole run's, as `crosscode-mcp hook`'s.
const timeout = 2 * time.Second

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv))
}

// run is one hook run; its result is the exit code.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	raw, err := io.ReadAll(io.LimitReader(stdin, wire.MaxInput+1))
	if err != nil {
		raw = nil // crosscode-mcp reads nothing either, and says so
	}
	req, db, why := request(args, raw, getenv)
	if req != nil {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		var fi os.FileInfo
		if fi, err = os.Stat(db); err != nil {
			why = "no coordination state at " + db
		} else {
			var rep wire.Reply
			var o wire.Outcome
			rep, o, why = wire.Ask(ctx, req, fi)
			if o == wire.Served {
				io.WriteString(stdout, rep.Stdout)
				io.WriteString(stderr, rep.Stderr)
				if getenv(wire.TraceEnv) == "1" {
					fmt.Fprintf(stderr, "crosscode-mcp hook: answered by the MCP server (pid %d)\n", rep.PID)
				}
				return 0
			}
		}
	}
	return full(args, raw, why, stdout, stderr, getenv)
}

// request is the run to ask a server for, and the database it is on; nil
// with why when this program does not ask (crosscode-mcp then runs
// alone, and says what is wrong with the command line or the input).
func request(args []string, raw []byte, getenv func(string) string) (req *wire.Request, db, why string) {
	if getenv(wire.ServerEnv) == "off" {
		return nil, "", wire.ServerEnv + "=off"
	}
	if runtime.GOOS == "windows" {
		return nil, "", "hooks are served by the MCP server on unix systems only"
	}
	// The flags of `crosscode-mcp hook` (cmd/crosscode-mcp, runHook): its
	// usage and mistakes are crosscode-mcp's to tell.
	fs := flag.NewFlagSet("crosscode-hook", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	g := wire.AddWorkspaceFlags(fs, getenv)
	policy := fs.String("policy", "", "")
	strict := fs.Bool("strict", false, "")
	if err := fs.Parse(args); err != nil || fs.NArg() != 2 {
		return nil, "", "the command line is crosscode-mcp's to read"
	}
	if len(raw) > wire.MaxInput {
		return nil, "", "an input too large"
	}
	var in struct {
		Cwd string `json:"cwd"`
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		return nil, "", "an input that is not JSON"
	}
	wd, err := os.Getwd()
	if err != nil {
		return nil, "", err.Error()
	}
	if getenv("GIT_DIR") != "" || getenv("GIT_COMMON_DIR") != "" || getenv("GIT_WORK_TREE") != "" {
		return nil, "", "git's environment names a repository: git finds it"
	}
	dir := *g.Repo
	if dir == "" {
		dir = in.Cwd
	}
	if dir == "" {
		dir = wd
	}
	r, err := wire.Discover(dir)
	if err != nil {
		return nil, "", err.Error()
	}
	ws := *g.Workspace
	if ws == "" {
		ws = location.Workspace(r.Top, r.CommonDir, dir)
	}
	d := *g.Data
	if d == "" {
		if d, err = location.Data(r.CommonDir, dir); err != nil {
			return nil, "", err.Error()
		}
	}
	db = location.Database(d, *g.Service, ws)
	return &wire.Request{Client: fs.Arg(0), Event: fs.Arg(1), Repo: *g.Repo, Data: *g.Data, Workspace: *g.Workspace, Actor: *g.Actor,
		Service: *g.Service, Policy: *policy, Strict: *strict, Dir: wd,
		Env: wire.Env(wire.ForwardedEnv, getenv), SameEnv: wire.Env(wire.SameEnv, getenv), Input: string(raw)}, db, ""
}

// full runs `crosscode-mcp hook` with args and the input, and returns its
// exit code. why (no server served the run) keeps it from asking again.
func full(args []string, raw []byte, why string, stdout, stderr io.Writer, getenv func(string) string) int {
	bin, err := crosscodeMCP(getenv)
	if err != nil {
		fmt.Fprintf(stderr, "crosscode-hook: %v: the edit is allowed unchecked. Install crosscode-mcp next to crosscode-hook or on your PATH, or set CROSSCODE_MCP_BIN.\n", err)
		return 0
	}
	cmd := exec.Command(bin, append([]string{"hook"}, args...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(raw), stdout, stderr
	cmd.Env = os.Environ()
	if why != "" {
		cmd.Env = append(cmd.Env, wire.NotServedEnv+"="+why)
	}
	err = cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return ee.ExitCode()
	case err != nil:
		fmt.Fprintf(stderr, "crosscode-hook: %s: %v: the edit is allowed unchecked\n", bin, err)
		return 0
	}
	return 0
}

// crosscodeMCP finds the crosscode-mcp binary.
func crosscodeMCP(getenv func(string) string) (string, error) {
	if p := getenv("CROSSCODE_MCP_BIN"); p != "" {
		return p, nil
	}
	name := "crosscode-mcp"
	if runtime.GOOS == "windows" {
		name += ".exe"
	}
	if self, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(self), name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p, nil
		}
	}
	p, err := exec.LookPath("crosscode-mcp")
	if err != nil {
		return "", errors.New("no crosscode-mcp binary found: not in CROSSCODE_MCP_BIN, not next to crosscode-hook, not on PATH")
	}
	return p, nil
}
