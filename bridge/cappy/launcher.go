package cappy

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/crosscode/crosscode-mcp/internal/proctree"
	"github.com/crosscode/crosscode-mcp/protocol"
)

// Launcher starts the game with CAPPY_ENDPOINT and CAPPY_SESSION_TOKEN,
// keeps its output in a log, and stops it (and its children) on Stop.
type Launcher struct {
	Command []string
	Dir     string
	Env     map[string]string
	LogPath string
	// MaxLogBytes caps the log; past it, the log starts over (the previous
	// one is kept as LogPath.1). Default 8 MiB.
	MaxLogBytes int64
	// Output, when set, receives the game's output instead of LogPath (a
	// browser launcher's dev server writes into the browser's log).
	Output io.Writer

	mu      sync.Mutex
	seed    *int64 // CAPPY_SEED of the next launch (nil: protocol.DefaultSeed)
	cmd     *exec.Cmd
	tree    *proctree.Tree
	exited  chan struct{}
	exitErr error
	starts  int
	started time.Time // of the last start
}

// Running reports whether the game process is alive.
func (l *Launcher) Running() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.runningLocked()
}

// runningLocked is Running with l.mu held.
func (l *Launcher) runningLocked() bool {
	if l.cmd == nil {
		return false
	}
	select {
	case <-l.exited:
		return false
	default:
		return true
	}
}

// Exited returns a channel closed when the game process last started
// exits (nil before the first start).
func (l *Launcher) Exited() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.exited
}

// Info describes the game process.
type LaunchInfo struct {
	Command  []string
	PID      int
	Running  bool
	Starts   int
	LastExit string
	LogPath  string
	Started  time.Time // when the game was last launched
}

// Info reports the game process's state.
func (l *Launcher) Info() LaunchInfo {
	l.mu.Lock()
	defer l.mu.Unlock()
	running := l.runningLocked()
	in := LaunchInfo{Command: l.Command, Running: running, Starts: l.starts, LogPath: l.LogPath, Started: l.started}
	if l.cmd != nil && l.cmd.Process != nil {
		in.PID = l.cmd.Process.Pid
	}
	if !running && l.cmd != nil && l.exitErr != nil {
		in.LastExit = l.exitErr.Error()
	} else if !running && l.cmd != nil {
		in.LastExit = "exited"
	}
	return in
}

// Start launches the game unless it is running.
func (l *Launcher) Start(endpoint, token string) error {
	if len(l.Command) == 0 {
		return errors.New("no game command: set game.command in .crosscode/capture.json or pass --game-cmd")
	}
	// Checked and launched in one critical section: of concurrent
	// Starts, one launches and the others find it running.
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.runningLocked() {
		return nil
	}
	var logw io.WriteCloser
	if l.Output != nil {
		logw = nopCloser{l.Output}
	} else {
		if err := os.MkdirAll(filepath.Dir(l.LogPath), 0o700); err != nil {
			return err
		}
		var err error
		if logw, err = newCappedLog(l.LogPath, l.MaxLogBytes); err != nil {
			return err
		}
	}
	fmt.Fprintf(logw, "--- %s: launching %q\n", time.Now().Format(time.RFC3339), l.Command)
	cmd := exec.Command(l.Command[0], l.Command[1:]...)
	cmd.Dir = l.Dir
	cmd.Env = os.Environ()
	for k, v := range l.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Env = append(cmd.Env, "CAPPY_ENDPOINT="+endpoint, "CAPPY_SESSION_TOKEN="+token, protocol.SeedEnv+"="+strconv.FormatInt(l.seedLocked(), 10))
	cmd.Stdout, cmd.Stderr = logw, logw
	proctree.Prepare(cmd)  // Stop, and this process's end, stop the game and all it started
	launched := time.Now() // before the game can connect
	if err := cmd.Start(); err != nil {
		logw.Close()
		return fmt.Errorf("launch %q: %w", l.Command[0], err)
	}
	tree, err := proctree.Attach(cmd)
	if err != nil {
		cmd.Wait()
		logw.Close()
		return fmt.Errorf("launch %q: %w", l.Command[0], err)
	}
	l.cmd, l.tree, l.exited, l.exitErr = cmd, tree, make(chan struct{}), nil
	l.starts++
	l.started = launched
	exited := l.exited
	go func() {
		err := cmd.Wait()
		tree.Close() // what the game left running goes with it (Windows)
		fmt.Fprintf(logw, "--- %s: exited: %v\n", time.Now().Format(time.RFC3339), err)
		logw.Close()
		l.mu.Lock()
		l.exitErr = err
		l.mu.Unlock()
		close(exited)
	}()
	return nil
}

// SetSeed sets the seed the next launch hands the game (CAPPY_SEED):
// the seed of the recording or replay it is launched for.
func (l *Launcher) SetSeed(seed int64) {
	l.mu.Lock()
	l.seed = &seed
	l.mu.Unlock()
}

// Seed is the seed of the next launch, and of the last one unless
// SetSeed changed it since.
func (l *Launcher) Seed() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seedLocked()
}

func (l *Launcher) seedLocked() int64 {
	if l.seed == nil {
		return protocol.DefaultSeed
	}
	return *l.seed
}

// Stop terminates the game and every process it started: SIGTERM to its
// process group, then SIGKILL after grace (on Windows, its Job Object is
// terminated at once).
func (l *Launcher) Stop(grace time.Duration) {
	l.mu.Lock()
	cmd, tree, exited := l.cmd, l.tree, l.exited
	l.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return
	}
	select {
	case <-exited:
		return
	default:
	}
	tree.Terminate()
	select {
	case <-exited:
	case <-time.After(grace):
		tree.Kill()
		<-exited
	}
}

// nopCloser is a writer that Close leaves open.
type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// Tail returns up to n bytes from the end of the game's log.
func (l *Launcher) Tail(n int64) string { return tailFile(l.LogPath, n) }

// tailFile returns up to n bytes from the end of a file.
func tailFile(path string, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return ""
	}
	off := max(fi.Size()-n, 0)
	b := make([]byte, fi.Size()-off)
	if _, err := f.ReadAt(b, off); err != nil && err != io.EOF {
		return ""
	}
	return string(b)
}

// cappedLog appends to a file and starts it over past max bytes.
type cappedLog struct {
	mu   sync.Mutex
	path string
	max  int64
	f    *os.File
	size int64
}

func newCappedLog(path string, max int64) (*cappedLog, error) {
	if max <= 0 {
		max = 8 << 20
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	fi, _ := f.Stat()
	return &cappedLog{path: path, max: max, f: f, size: fi.Size()}, nil
}

func (c *cappedLog) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.f == nil {
		return len(p), nil
	}
	if c.size+int64(len(p)) > c.max {
		c.f.Close()
		os.Rename(c.path, c.path+".1")
		f, err := os.OpenFile(c.path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
		if err != nil {
			c.f = nil
			return len(p), nil
		}
		c.f, c.size = f, 0
	}
	n, err := c.f.Write(p)
	c.size += int64(n)
	return n, err
}

func (c *cappedLog) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.f == nil {
		return nil
	}
	err := c.f.Close()
	c.f = nil
	return err
}
