package gitx

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"
)

// MaxOutput is the most standard output read from one git command. A
// command that writes more fails with an error saying so, except the patch
// of [Repo.Changes], which is cut to its own smaller budget instead.
const MaxOutput = 64 << 20

// maxStderr is how much of a command's standard error is kept for error
// messages; the rest is read and dropped so git never blocks on it.
const maxStderr = 8 << 10

// cmdOpts adjusts one git invocation.
type cmdOpts struct {
	global []string  // options placed before the subcommand, e.g. "-c", "k=v"
	env    []string  // extra environment entries; later entries win
	stdin  io.Reader // nil means /dev/null
	// limit caps standard output (0 means MaxOutput). With truncate, output
	// beyond it is not an error: git is stopped and the first limit bytes
	// are returned with truncated set.
	limit    int
	truncate bool
}

// run runs git sub args... in dir and returns its standard output. git runs
// with core.quotepath=off, GIT_OPTIONAL_LOCKS=0 (so read-only commands never
// take or refresh the index lock) and LC_ALL=C (so messages are not
// translated); the rest of the environment is inherited, which means
// GIT_INDEX_FILE, GIT_DIR and friends set by a calling hook are honoured.
//
// On failure the error reads "git <sub>: <cause>: <stderr>" and wraps the
// *exec.ExitError (see exitCode) or the context's error. out holds what git
// wrote to standard output even when err is set.
func run(ctx context.Context, dir string, o cmdOpts, sub string, args ...string) (out []byte, truncated bool, err error) {
	full := make([]string, 0, 3+len(o.global)+len(args))
	full = append(full, "-c", "core.quotepath=off")
	full = append(full, o.global...)
	full = append(full, sub)
	full = append(full, args...)

	limit := o.limit
	if limit <= 0 || limit > MaxOutput {
		limit = MaxOutput
	}
	stdout := &capWriter{limit: limit}
	stderr := &headWriter{limit: maxStderr}

	cmd := exec.CommandContext(ctx, "git", full...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_OPTIONAL_LOCKS=0", "LC_ALL=C")
	cmd.Env = append(cmd.Env, o.env...)
	cmd.Stdin = o.stdin
	cmd.Stdout = stdout
	cmd.Stderr = stderr
	// If git is killed (context done) or exits while a child it started
	// (a textconv filter, say) still holds the pipes, stop waiting soon.
	cmd.WaitDelay = 2 * time.Second

	err = cmd.Run()
	out = stdout.buf
	if stdout.over {
		if o.truncate {
			// We stopped reading on purpose; git most likely died of
			// SIGPIPE, which is not a failure here.
			return out, true, nil
		}
		return out, false, fmt.Errorf("git %s: output exceeds %d bytes", sub, limit)
	}
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return out, false, fmt.Errorf("git %s: %w", sub, cerr)
		}
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			return out, false, fmt.Errorf("git %s: %w: %s", sub, err, msg)
		}
		return out, false, fmt.Errorf("git %s: %w", sub, err)
	}
	return out, false, nil
}

// exitCode returns the exit status of the git command behind err, or -1 if
// err does not come from a git command that ran and exited.
func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

// errOutputLimit stops os/exec's copy loop; run reports it in its own words.
var errOutputLimit = errors.New("output limit reached")

// capWriter keeps at most limit bytes. Writing more sets over and returns
// an error, which makes os/exec close the pipe so git stops early.
type capWriter struct {
	buf   []byte
	limit int
	over  bool
}

func (w *capWriter) Write(p []byte) (int, error) {
	room := w.limit - len(w.buf)
	if len(p) > room {
		w.buf = append(w.buf, p[:room]...)
		w.over = true
		return room, errOutputLimit
	}
	w.buf = append(w.buf, p...)
	return len(p), nil
}

// headWriter keeps the first limit bytes and silently drops the rest, so a
// chatty git never blocks or dies writing warnings.
type headWriter struct {
	buf   []byte
	limit int
}

func (w *headWriter) Write(p []byte) (int, error) {
	if room := w.limit - len(w.buf); room > 0 {
		w.buf = append(w.buf, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (w *headWriter) String() string { return string(w.buf) }
