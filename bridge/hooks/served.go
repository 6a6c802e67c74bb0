package hooks

// The agent's MCP server answers its hooks.
//
// A hook is a new process before every edit, and opening the database
// was most of its own work: SQLite reads the whole schema on a new
// connection and compiles every statement of the check. The agent's MCP
// server (a stdio crosscode-mcp on the same database) has it open, with
// its statements compiled. So the server listens on a unix socket of its
// own, and a hook that finds one asks it to run the hook (the same code,
// on the hook's input, directory, flags and environment) and prints its
// answer; with no server, or one that cannot answer, the hook opens the
// database itself, as before.
//
// Where: one directory per user, private to them (checked before every
// use, as tmux and ssh-agent do), one folder in it per database (a
// digest of the file's device and inode, so two spellings of a path
// meet), one socket per server process in it. A socket left by a killed
// server refuses connections; the hook removes it and tries the next.

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
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/crosscode/crosscode-mcp/store"
)

// ServerEnv, set to "off", keeps a hook from asking a server: it opens
// the database itself. TraceEnv, set to 1, makes a hook say on stderr
// what answered it.
const (
	ServerEnv = "CROSSCODE_HOOK_SERVER"
	TraceEnv  = "CROSSCODE_HOOK_TRACE"
)

// forwardedEnv is every variable a hook run reads through Config.Getenv:
// a served run reads the hook process's values of these, and nothing
// else (TestForwardedEnv keeps the list complete).
var forwardedEnv = []string{ViaEnv, "GIT_DIR", "GIT_COMMON_DIR", "GIT_WORK_TREE", "CLAUDECODE", "PLUGIN_ROOT",
	"HOME", "USERPROFILE", "CLAUDE_PROJECT_DIR", "GEMINI_PROJECT_DIR"}

// sameEnv are the variables that the parts of a run which start git or
// ask the system (the actor from git's user.email, the repository when
// git's variables point elsewhere) read from the process itself: a
// server serves a hook only when its values are the hook's.
var sameEnv = []string{"HOME", "USER", "XDG_CONFIG_HOME", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "GIT_CONFIG_NOSYSTEM",
	"GIT_DIR", "GIT_COMMON_DIR", "GIT_WORK_TREE"}

// Limits of the exchange: a request holds the hook's input; an answer is
// the client's hook format (a denial, or the agent's news).
const (
	maxRequest = MaxInput*2 + 64<<10 // the input travels as a JSON string
	maxAnswer  = 4 << 20
	// maxServing bounds the runs a server serves at once; more wait.
	maxServing = 16
	// dialTimeout bounds a connection to a server's socket: a live one
	// accepts at once, a dead one refuses at once.
	dialTimeout = 250 * time.Millisecond
)

// request is what a hook sends a server: one run.
type request struct {
	V         int               `json:"v"`
	Client    string            `json:"client"`
	Event     string            `json:"event"`
	Repo      string            `json:"repo,omitempty"`
	Data      string            `json:"data,omitempty"`
	Workspace string            `json:"workspace,omitempty"`
	Actor     string            `json:"actor,omitempty"`
	Service   string            `json:"service,omitempty"`
	Policy    string            `json:"policy,omitempty"`
	Dir       string            `json:"dir"`
	Database  string            `json:"database"`
	TimeoutMS int64             `json:"timeoutMs"`
	Env       map[string]string `json:"env"`
	SameEnv   map[string]string `json:"sameEnv"`
	Input     string            `json:"input"`
}

// reply is a server's answer to a request: the run's answer, or why it
// did not run it (the hook then runs it itself).
type reply struct {
	Out     json.RawMessage `json:"out,omitempty"`
	Msg     string          `json:"msg,omitempty"`
	Failed  bool            `json:"failed,omitempty"`
	Refused string          `json:"refused,omitempty"`
	PID     int             `json:"pid"`
}

// requestVersion is the exchange's version: a server refuses another.
const requestVersion = 1

// envSnapshot reads names with getenv.
func envSnapshot(names []string, getenv func(string) string) map[string]string {
	m := make(map[string]string, len(names))
	for _, n := range names {
		if v := getenv(n); v != "" {
			m[n] = v
		}
	}
	return m
}

// askServer asks a server on the database at db (fi its file) to run
// the hook. ok false: no server answered, and nothing ran; the hook runs
// itself. A server that took the request and then failed to answer in
// time gives a failed answer (ok true) for news, which is told once; an
// edit check, which changes nothing unless the policy claims (and a
// claim is taken once), is run again by the hook.
func askServer(ctx context.Context, cfg Config, db string, fi os.FileInfo, raw []byte) (a answer, pid int, why string, ok bool) {
	if cfg.Getenv(ServerEnv) == "off" {
		return answer{}, 0, ServerEnv + "=off", false
	}
	dir, err := socketFolder(fi, false)
	if errors.Is(err, os.ErrNotExist) {
		return answer{}, 0, "no MCP server runs on this database", false
	}
	if err != nil {
		return answer{}, 0, err.Error(), false
	}
	names := socketNames(dir)
	if len(names) == 0 {
		return answer{}, 0, "no MCP server runs on this database", false
	}
	deadline, _ := ctx.Deadline()
	req := request{V: requestVersion, Client: cfg.Client, Event: cfg.Event, Repo: cfg.Repo, Data: cfg.Data, Workspace: cfg.Workspace,
		Actor: cfg.Actor, Service: cfg.Service, Policy: cfg.Policy, Dir: cfg.Dir, Database: db,
		TimeoutMS: time.Until(deadline).Milliseconds(), Env: envSnapshot(forwardedEnv, cfg.Getenv),
		SameEnv: envSnapshot(sameEnv, cfg.Getenv), Input: string(raw)}
	body, err := json.Marshal(req)
	if err != nil {
		return answer{}, 0, err.Error(), false
	}
	why = "no MCP server answered"
	for _, name := range names {
		path := filepath.Join(dir, name)
		rep, sent, err := exchange(ctx, path, body)
		switch {
		case err != nil && !sent:
			if isRefused(err) {
				os.Remove(path) // a killed server's
			}
			continue
		case err != nil && eventKind(cfg.Client, cfg.Event) == kindEdit:
			return answer{}, 0, "the MCP server did not answer: " + err.Error(), false
		case err != nil:
			return answer{failed: true, msg: "the MCP server did not answer: " + err.Error()}, 0, "", true
		case rep.Refused != "":
			why = "the MCP server did not serve it: " + rep.Refused
			continue
		}
		a := answer{msg: rep.Msg, failed: rep.Failed}
		if len(rep.Out) > 0 {
			a.out = rep.Out
		}
		return a, rep.PID, "", true
	}
	return answer{}, 0, why, false
}

// exchange sends one request on the socket at path and reads the reply;
// sent says whether the request was written whole.
func exchange(ctx context.Context, path string, body []byte) (rep reply, sent bool, err error) {
	d := net.Dialer{Timeout: dialTimeout}
	conn, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return rep, false, err
	}
	defer conn.Close()
	if deadline, ok := ctx.Deadline(); ok {
		conn.SetDeadline(deadline.Add(-50 * time.Millisecond)) // time to answer from the database
	}
	if _, err := conn.Write(append(body, '\n')); err != nil {
		return rep, false, err
	}
	sent = true
	b, err := io.ReadAll(io.LimitReader(conn, maxAnswer+1))
	if err != nil {
		return rep, sent, err
	}
	if len(b) > maxAnswer {
		return rep, sent, fmt.Errorf("answer larger than %d bytes", maxAnswer)
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		return rep, sent, fmt.Errorf("malformed answer: %w", err)
	}
	return rep, sent, nil
}

// Listener serves the hooks of the agents on one database. Close it
// before the store.
type Listener struct {
	ln     net.Listener
	path   string
	db     string
	fi     os.FileInfo
	st     *store.Store
	log    *slog.Logger
	slots  chan struct{}
	wg     sync.WaitGroup
	mu     sync.Mutex
	closed bool
	conns  map[net.Conn]struct{}
	served int
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
	dir, err := socketFolder(fi, true)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, strconv.Itoa(os.Getpid())+".sock")
	os.Remove(path) // a killed process's of the same pid
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	l := &Listener{ln: ln, path: path, db: db, fi: fi, st: st, log: log, slots: make(chan struct{}, maxServing), conns: map[net.Conn]struct{}{}}
	l.wg.Add(1)
	go l.serve()
	return l, nil
}

// Path is the listener's socket.
func (l *Listener) Path() string { return l.path }

// Served counts the runs the listener answered.
func (l *Listener) Served() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.served
}

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
	var rep reply
	rep.PID = os.Getpid()
	if err := l.run(conn, &rep); err != nil {
		rep = reply{Refused: err.Error(), PID: rep.PID}
	}
	b, err := json.Marshal(rep)
	if err != nil {
		b, _ = json.Marshal(reply{Refused: err.Error(), PID: rep.PID})
	}
	conn.Write(b)
}

// run reads a request from conn and runs it into rep; an error refuses
// it.
func (l *Listener) run(conn net.Conn, rep *reply) error {
	dec := json.NewDecoder(io.LimitReader(conn, maxRequest))
	var req request
	if err := dec.Decode(&req); err != nil {
		return fmt.Errorf("malformed request: %w", err)
	}
	if req.V != requestVersion {
		return fmt.Errorf("request version %d, this server speaks %d", req.V, requestVersion)
	}
	if !slices.Contains(Clients, req.Client) {
		return fmt.Errorf("unknown client %q", req.Client)
	}
	if req.Policy != "" {
		if err := ValidPolicy(req.Policy); err != nil {
			return err
		}
	}
	for _, n := range sameEnv {
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
	timeout := min(max(time.Duration(req.TimeoutMS)*time.Millisecond, 0), DefaultTimeout*5)
	if timeout <= 0 {
		return errors.New("no time left")
	}
	env := req.Env
	cfg := Config{Client: req.Client, Event: req.Event, Repo: req.Repo, Data: req.Data, Workspace: req.Workspace,
		Actor: req.Actor, Service: req.Service, Policy: req.Policy, Dir: req.Dir, Timeout: timeout,
		Getenv: func(n string) string { return env[n] }, Now: time.Now, shared: l}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	a := func() (a answer) {
		defer func() {
			if r := recover(); r != nil {
				a = answer{failed: true, msg: fmt.Sprintf("internal error: %v", r)}
			}
		}()
		return run(ctx, cfg, strings.NewReader(req.Input))
	}()
	if a.out != nil {
		b, err := json.Marshal(a.out)
		if err != nil {
			return err
		}
		rep.Out = b
	}
	rep.Msg, rep.Failed = a.msg, a.failed
	l.mu.Lock()
	l.served++
	l.mu.Unlock()
	return nil
}

// storeFor is the listener's store when db is its database.
func (l *Listener) storeFor(db string) *store.Store {
	fi, err := os.Stat(db)
	if err != nil || !os.SameFile(fi, l.fi) {
		return nil
	}
	return l.st
}

// socketNames lists a folder's sockets, newest first: the server most
// recently started is the likeliest to live.
func socketNames(dir string) []string {
	es, _ := os.ReadDir(dir)
	type named struct {
		name string
		t    time.Time
	}
	var ns []named
	for _, e := range es {
		if !strings.HasSuffix(e.Name(), ".sock") {
			continue
		}
		var t time.Time
		if fi, err := e.Info(); err == nil {
			t = fi.ModTime()
		}
		ns = append(ns, named{e.Name(), t})
	}
	sort.Slice(ns, func(i, j int) bool { return ns[i].t.After(ns[j].t) })
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = n.name
	}
	return out
}
