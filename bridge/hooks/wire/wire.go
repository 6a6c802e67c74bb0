// Package wire is what a hook and the agent's MCP server say to each
// other, and how a hook finds the server: the exchange of
// bridge/hooks/served.go. It is apart from package hooks, and links the
// standard library only (and internal/location), so that
// cmd/crosscode-hook, the hook client started before every edit, stays a
// small program that starts in a fraction of what the whole crosscode-mcp
// binary takes (TestHookClientDeps keeps it so).
//
// The exchange, on a unix socket: one connection per hook run; the hook
// writes one Request (JSON, then a newline) and reads one Reply (JSON)
// until the server closes. A server that cannot run the request says
// why in Reply.Refused, and the hook answers from the database itself.
//
// Where: one directory per user, private to them (checked before every
// use, as tmux and ssh-agent do), one folder in it per database (its
// file's device and inode, so two spellings of a path meet), one socket
// per server process in it (PID.sock). A socket left by a killed server
// refuses connections: the hook removes it and tries the next.
package wire

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// ServerEnv, set to "off", keeps a hook from asking a server: it opens
// the database itself. TraceEnv, set to 1, makes a hook say on stderr
// what answered it. ViaEnv is set to "plugin" by the packages' launcher.
const (
	ServerEnv = "CROSSCODE_HOOK_SERVER"
	TraceEnv  = "CROSSCODE_HOOK_TRACE"
	ViaEnv    = "CROSSCODE_HOOK_VIA"
	// NotServedEnv is set by crosscode-hook when it hands a run to
	// `crosscode-mcp hook` because no server served it: why. That run
	// does not ask again.
	NotServedEnv = "CROSSCODE_HOOK_NOT_SERVED"
)

// ForwardedEnv is every variable a hook run reads from its environment:
// a served run reads the hook process's values of these, and nothing
// else (bridge/hooks' TestForwardedEnv keeps the list complete).
var ForwardedEnv = []string{ViaEnv, TraceEnv, "GIT_DIR", "GIT_COMMON_DIR", "GIT_WORK_TREE", "CLAUDECODE", "PLUGIN_ROOT",
	"HOME", "USERPROFILE", "CLAUDE_PROJECT_DIR", "GEMINI_PROJECT_DIR"}

// SameEnv are the variables that the parts of a run which start git or
// ask the system (the actor from git's user.email, the repository when
// git's variables point elsewhere) read from the process itself: a
// server serves a hook only when its values are the hook's.
var SameEnv = []string{"HOME", "USER", "XDG_CONFIG_HOME", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "GIT_CONFIG_NOSYSTEM",
	"GIT_DIR", "GIT_COMMON_DIR", "GIT_WORK_TREE"}

// Limits of the exchange.
const (
	// MaxInput bounds the hook input (read from the client on stdin).
	MaxInput = 1 << 20
	// MaxRequest bounds a request: the input travels as a JSON string.
	MaxRequest = MaxInput*2 + 64<<10
	// MaxReply bounds a reply: the client's hook format, a denial or the
	// agent's news.
	MaxReply = 4 << 20
	// dialTimeout bounds a connection: a live server accepts at once, a
	// dead one's socket refuses at once.
	dialTimeout = 250 * time.Millisecond
	// ServerWait bounds the wait for a server's reply: it answers in a
	// millisecond or two; one that takes this long is taken as lost, and
	// the rest of the hook's time is left to answer from the database.
	ServerWait = time.Second
)

// Version is the exchange's version: a server refuses another.
const Version = 1

// Request is one hook run, as the hook process has it: the command
// line's client, event and flags, its directory, its environment
// (ForwardedEnv, SameEnv) and the client's input.
type Request struct {
	V         int               `json:"v"`
	Client    string            `json:"client"`
	Event     string            `json:"event"`
	Repo      string            `json:"repo,omitempty"`
	Data      string            `json:"data,omitempty"`
	Workspace string            `json:"workspace,omitempty"`
	Actor     string            `json:"actor,omitempty"`
	Service   string            `json:"service,omitempty"`
	Policy    string            `json:"policy,omitempty"`
	Strict    bool              `json:"strict,omitempty"`
	Dir       string            `json:"dir"`
	TimeoutMS int64             `json:"timeoutMs"`
	Env       map[string]string `json:"env"`
	SameEnv   map[string]string `json:"sameEnv"`
	Input     string            `json:"input"`
}

// Reply is a server's answer: what the hook prints, or why it did not
// run the request (the hook then runs it itself).
type Reply struct {
	Stdout  string `json:"stdout,omitempty"`
	Stderr  string `json:"stderr,omitempty"`
	Refused string `json:"refused,omitempty"`
	PID     int    `json:"pid"`
}

// Env reads names with getenv, leaving out the empty ones.
func Env(names []string, getenv func(string) string) map[string]string {
	m := make(map[string]string, len(names))
	for _, n := range names {
		if v := getenv(n); v != "" {
			m[n] = v
		}
	}
	return m
}

// Outcome is what came of asking.
type Outcome int

const (
	// NotServed: no server ran the request; the hook runs it itself.
	NotServed Outcome = iota
	// Served: a server ran it; the reply holds its output.
	Served
	// Lost: a server took the request whole and gave no answer in time.
	// It may have run it: news (told once) is not run again; an edit
	// check (a claim by policy is taken once) may be.
	Lost
)

// Ask asks the servers on the database whose file is fi to run req,
// the newest first. why says why nothing served it.
func Ask(ctx context.Context, req *Request, fi os.FileInfo) (rep Reply, o Outcome, why string) {
	dir, err := SocketFolder(fi, false)
	if errors.Is(err, os.ErrNotExist) {
		return rep, NotServed, "no MCP server runs on this database"
	}
	if err != nil {
		return rep, NotServed, err.Error()
	}
	names := socketNames(dir)
	if len(names) == 0 {
		return rep, NotServed, "no MCP server runs on this database"
	}
	req.V = Version
	if deadline, ok := ctx.Deadline(); ok {
		req.TimeoutMS = time.Until(deadline).Milliseconds()
	}
	body, err := json.Marshal(req)
	if err != nil {
		return rep, NotServed, err.Error()
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
		case err != nil:
			return rep, Lost, "the MCP server did not answer: " + err.Error()
		case rep.Refused != "":
			why = "the MCP server did not serve it: " + rep.Refused
			continue
		}
		return rep, Served, ""
	}
	return Reply{}, NotServed, why
}

// exchange sends one request on the socket at path and reads the reply;
// sent says whether the request was written whole.
func exchange(ctx context.Context, path string, body []byte) (rep Reply, sent bool, err error) {
	d := net.Dialer{Timeout: dialTimeout}
	conn, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return rep, false, err
	}
	defer conn.Close()
	deadline := time.Now().Add(ServerWait)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	conn.SetDeadline(deadline)
	if _, err := conn.Write(append(body, '\n')); err != nil {
		return rep, false, err
	}
	b, err := io.ReadAll(io.LimitReader(conn, MaxReply+1))
	if err != nil {
		return rep, true, err
	}
	if len(b) > MaxReply {
		return rep, true, fmt.Errorf("reply larger than %d bytes", MaxReply)
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		return rep, true, fmt.Errorf("malformed reply: %w", err)
	}
	return rep, true, nil
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
