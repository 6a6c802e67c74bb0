package hooks

// The agent's MCP server answers its hooks (the exchange and where the
// sockets are: package wire).
//
// A hook is a new process before every edit, and opening the database
// was most of its own work: SQLite reads the whole schema on a new
// connection and compiles every statement of the check. The agent's MCP
// server (a stdio crosscode-mcp on the same database) has it open, with
// its statements compiled. So the server listens on a unix socket of its
// own, and a hook that finds one asks it to run the hook (the same code,
// on the hook's input, directory, flags and environment) and prints what
// it answers; with no server, or one that cannot answer, the hook opens
// the database itself, as before.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/crosscode/crosscode-mcp/bridge/hooks/wire"
	"github.com/crosscode/crosscode-mcp/store"
)

// maxServing bounds the runs a server serves at once; more wait.
const maxServing = 16

// askServer asks the servers on the database at db (fi, its file) to
// run the hook. A nil answer: none did, and why says why.
func askServer(ctx context.Context, cfg Config, fi os.FileInfo, raw []byte) (a *answer, why string) {
	if cfg.Getenv(wire.ServerEnv) == "off" {
		return nil, wire.ServerEnv + "=off"
	}
	if why := cfg.Getenv(wire.NotServedEnv); why != "" {
		return nil, why // crosscode-hook asked already
	}
	req := &wire.Request{Client: cfg.Client, Event: cfg.Event, Repo: cfg.Repo, Data: cfg.Data, Workspace: cfg.Workspace,
		Actor: cfg.Actor, Service: cfg.Service, Policy: cfg.Policy, Strict: cfg.Strict, Dir: cfg.Dir,
		Env: wire.Env(wire.ForwardedEnv, cfg.Getenv), SameEnv: wire.Env(wire.SameEnv, cfg.Getenv), Input: string(raw)}
	rep, o, why := wire.Ask(ctx, req, fi)
	switch {
	case o == wire.Served:
		return &answer{served: &rep, via: fmt.Sprintf("the MCP server (pid %d)", rep.PID)}, ""
	case o == wire.Lost && eventKind(cfg.Client, cfg.Event) != kindEdit:
		// News may have been told: not again.
		return &answer{failed: true, msg: why}, ""
	}
	return nil, why
}

// Listener serves the hooks of the agents on one database. Close it
// before the store.
type Listener struct {
	ln     net.Listener
	path   string
	fi     os.FileInfo
	st     *store.Store
	log    *slog.Logger
	slots  chan struct{}
	wg     sync.WaitGroup
	mu     sync.Mutex
	closed bool
}

// Listen starts serving hooks on the database at db, open as st. It
// fails where the system has no unix sockets for it (Windows) or the
// socket's directory is not the user's alone; the server goes on
// without it, and hooks open the database themselves.
func Listen(db string, st *store.Store, log *slog.Logger) (*Listener, error) {
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	fi, err := os.Stat(db)
	if err != nil {
		return nil, err
	}
	dir, err := wire.SocketFolder(fi, true)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, strconv.Itoa(os.Getpid())+".sock")
	os.Remove(path) // a killed process's of the same pid
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	l := &Listener{ln: ln, path: path, fi: fi, st: st, log: log, slots: make(chan struct{}, maxServing)}
	l.wg.Add(1)
	go l.serve()
	return l, nil
}

// Path is the listener's socket.
func (l *Listener) Path() string { return l.path }

// Close stops serving, waits for the runs under way and removes the
// socket (and its folder, when no other server's is left in it).
func (l *Listener) Close() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	l.mu.Unlock()
	err := l.ln.Close() // removes the socket file
	l.wg.Wait()
	os.Remove(filepath.Dir(l.path)) // only when empty
	return err
}

func (l *Listener) serve() {
	defer l.wg.Done()
	for {
		l.slots <- struct{}{}
		conn, err := l.ln.Accept()
		if err != nil {
			<-l.slots
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			l.mu.Lock()
			closed := l.closed
			l.mu.Unlock()
			if !closed {
				l.log.Warn("hooks: stopped serving", "socket", l.path, "err", err)
			}
			return
		}
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			defer func() { <-l.slots }()
			l.handle(conn)
		}()
	}
}

// handle serves one connection: one request, one reply.
func (l *Listener) handle(conn net.Conn) {
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(DefaultTimeout + 3*time.Second))
	rep := wire.Reply{PID: os.Getpid()}
	if err := l.run(conn, &rep); err != nil {
		rep = wire.Reply{Refused: err.Error(), PID: rep.PID}
	}
	b, err := json.Marshal(rep)
	if err != nil {
		b, _ = json.Marshal(wire.Reply{Refused: err.Error(), PID: rep.PID})
	}
	conn.Write(b)
}

// run reads a request from conn and runs it into rep; an error refuses
// it.
func (l *Listener) run(conn net.Conn, rep *wire.Reply) error {
	dec := json.NewDecoder(io.LimitReader(conn, wire.MaxRequest))
	var req wire.Request
	if err := dec.Decode(&req); err != nil {
		return fmt.Errorf("malformed request: %w", err)
	}
	if req.V != wire.Version {
		return fmt.Errorf("request version %d, this server speaks %d", req.V, wire.Version)
	}
	if !slices.Contains(Clients, req.Client) {
		return fmt.Errorf("unknown client %q", req.Client)
	}
	if req.Policy != "" {
		if err := ValidPolicy(req.Policy); err != nil {
			return err
		}
	}
	for _, n := range wire.SameEnv {
		if req.SameEnv[n] != os.Getenv(n) {
			return fmt.Errorf("the hook's %s is not the server's", n)
		}
	}
	if len(req.Input) > MaxInput {
		return fmt.Errorf("hook input larger than %d bytes", MaxInput)
	}
	if !filepath.IsAbs(req.Dir) {
		return fmt.Errorf("the hook's directory %q is not absolute", req.Dir)
	}
	timeout := min(time.Duration(req.TimeoutMS)*time.Millisecond, DefaultTimeout*5)
	if timeout <= 0 {
		return errors.New("no time left")
	}
	env := req.Env
	getenv := func(n string) string { return env[n] }
	cfg := Config{Client: RunningClient(req.Client, getenv), Event: req.Event, Repo: req.Repo, Data: req.Data, Workspace: req.Workspace,
		Actor: req.Actor, Service: req.Service, Policy: req.Policy, Strict: req.Strict, Dir: req.Dir, Timeout: timeout,
		Getenv: getenv, Now: time.Now, shared: l}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	stdout, stderr := finish(cfg, bounded(ctx, cfg, strings.NewReader(req.Input)))
	rep.Stdout, rep.Stderr = string(stdout), stderr
	return nil
}

// storeFor is the listener's store when fi is its database's file.
func (l *Listener) storeFor(fi os.FileInfo) *store.Store {
	if !os.SameFile(fi, l.fi) {
		return nil
	}
	return l.st
}
