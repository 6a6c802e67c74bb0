// Package hooks is what crosscode-mcp does inside agent clients' hooks
// (`crosscode-mcp hook CLIENT EVENT`): before a file-editing tool runs, it
// stops the edit of a file another agent claimed (or claims a free file
// for the agent, by policy); when a session starts and before each prompt,
// it adds the agent's unread news to its context. It installs and removes
// its entries in the clients' settings files (`hooks install|uninstall`).
//
// A hook answers from the local database only (in remote mode, the
// mirror and the outbox): no network call on the path of an edit. It acts
// as the agent's MCP server does: the same workspace, actor and replica,
// and the client's session id as the session reference. When its state
// cannot be read it lets the edit go and says why on stderr (Strict: it
// denies); it never takes longer than its deadline, and writes nothing on
// stdout but the client's hook format.
package hooks

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/crosscode/crosscode-mcp/bridge/coord"
	"github.com/crosscode/crosscode-mcp/bridge/hooks/wire"
	"github.com/crosscode/crosscode-mcp/internal/gitx"
	"github.com/crosscode/crosscode-mcp/internal/identity"
	"github.com/crosscode/crosscode-mcp/internal/sanitize"
	"github.com/crosscode/crosscode-mcp/protocol"
	"github.com/crosscode/crosscode-mcp/store"
)

// Config configures one hook run; cmd/crosscode-mcp fills it from the
// command line and the environment, with the MCP server's flags.
type Config struct {
	// Client is claude-code, gemini or codex; Event the client's event name.
	Client, Event string
	// Repo is the repository (default: the hook input's cwd, else the
	// working directory). Data, Workspace, Actor and Service are as for
	// the MCP server.
	Repo, Data, Workspace, Actor, Service string
	// Policy overrides the policy file's (deny, claim, warn).
	Policy string
	// Strict denies an edit when the hook cannot check it.
	Strict bool
	// Timeout bounds the whole run. Default 2s.
	Timeout time.Duration
	// Getenv reads the environment. Default os.Getenv.
	Getenv func(string) string
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// Dir is the hook process's working directory. Default os.Getwd.
	Dir string

	// shared, in a run a server serves, is the server's listener: its
	// store answers for its database.
	shared *Listener
}

// MaxInput bounds the hook input read from stdin.
const MaxInput = wire.MaxInput

// DefaultTimeout is Config.Timeout's default.
const DefaultTimeout = 2 * time.Second

// answer is what a hook run says: out on stdout (nil: nothing), msg on
// stderr; failed: the check could not be made (msg says why).
type answer struct {
	out    any
	msg    string
	failed bool
	// via says what answered, for wire.TraceEnv.
	via string
	// served is the reply of the server that ran the hook.
	served *wire.Reply
}

// Run runs one hook: it reads the client's input from stdin and answers
// on stdout. The error is only for a mistake on the command line (an
// unknown client); every other failure is answered (see the package doc).
func Run(ctx context.Context, cfg Config, stdin io.Reader, stdout, stderr io.Writer) error {
	if !slices.Contains(Clients, cfg.Client) {
		return fmt.Errorf("unknown client %q (%s)", cfg.Client, strings.Join(Clients, ", "))
	}
	if cfg.Getenv == nil {
		cfg.Getenv = os.Getenv
	}
	cfg.Client = RunningClient(cfg.Client, cfg.Getenv)
	if cfg.Policy != "" {
		if err := ValidPolicy(cfg.Policy); err != nil {
			return err
		}
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Dir == "" {
		cfg.Dir, _ = os.Getwd()
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	out, msg := finish(cfg, bounded(ctx, cfg, stdin))
	io.WriteString(stderr, msg)
	stdout.Write(out)
	return nil
}

// bounded runs the hook within ctx's deadline: what is not done by then
// is answered as failed.
func bounded(ctx context.Context, cfg Config, stdin io.Reader) answer {
	done := make(chan answer, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- answer{failed: true, msg: fmt.Sprintf("internal error: %v", r)}
			}
		}()
		done <- run(ctx, cfg, stdin)
	}()
	select {
	case a := <-done:
		return a
	case <-ctx.Done():
		return answer{failed: true, msg: fmt.Sprintf("no answer within %s (a busy or locked database?)", cfg.Timeout)}
	}
}

// finish is what the hook prints for a: its stdout (the client's hook
// format) and its stderr. A served answer is printed as the server
// finished it.
func finish(cfg Config, a answer) (stdout []byte, stderr string) {
	if a.served != nil {
		stdout, stderr = []byte(a.served.Stdout), a.served.Stderr
	} else {
		kind := eventKind(cfg.Client, cfg.Event)
		if a.failed {
			if cfg.Strict && kind == kindEdit {
				a.out = denyAnswer(cfg.Client, cfg.Event, "crosscode-mcp could not check this edit against other agents' claims ("+a.msg+"), and its hook runs with --strict, so the edit is stopped. Fix the cause or ask the user.")
				a.msg = "denied: could not check claims: " + a.msg
			} else if kind == kindEdit {
				a.msg = "allowed without a check: " + a.msg
			}
		}
		if a.msg != "" {
			stderr = "crosscode-mcp hook: " + a.msg + "\n"
		}
		if a.out != nil {
			b, err := json.Marshal(a.out)
			if err != nil {
				stderr += "crosscode-mcp hook: " + err.Error() + "\n"
			} else {
				stdout = append(b, '\n')
			}
		}
	}
	if cfg.Getenv(wire.TraceEnv) == "1" && a.via != "" {
		stderr += "crosscode-mcp hook: answered by " + a.via + "\n"
	}
	return stdout, stderr
}

// run does the work of one hook run.
func run(ctx context.Context, cfg Config, stdin io.Reader) answer {
	kind := eventKind(cfg.Client, cfg.Event)
	if kind == kindOther {
		return answer{} // installed for an event this version does nothing on
	}
	raw, err := io.ReadAll(io.LimitReader(stdin, MaxInput+1))
	if err != nil {
		return answer{failed: true, msg: "read hook input: " + err.Error()}
	}
	if len(raw) > MaxInput {
		return answer{failed: true, msg: fmt.Sprintf("hook input larger than %d bytes", MaxInput)}
	}
	var in Input
	if err := json.Unmarshal(raw, &in); err != nil {
		return answer{failed: true, msg: "malformed hook input: " + err.Error()}
	}
	if cfg.Getenv(ViaEnv) == "plugin" && yieldsToHandWired(cfg, &in) {
		return answer{} // the hooks wired by hand answer this event
	}
	var paths []string
	if kind == kindEdit {
		if paths = editedPaths(cfg.Client, &in); len(paths) == 0 {
			return answer{} // a tool that edits no file
		}
	}
	s, a := open(ctx, cfg, &in, raw)
	if s == nil {
		return a
	}
	defer s.close()
	a = s.answer(ctx, cfg, kind, paths)
	a.via = s.via
	return a
}

// answer runs the event's work in an open session.
func (s *session) answer(ctx context.Context, cfg Config, kind kind, paths []string) answer {
	if kind == kindEdit {
		return s.checkEdit(ctx, cfg, paths)
	}
	text, err := coord.HookNews(ctx, s.st, coord.HookNewsQuery{
		Workspace: s.workspace, Actor: s.actor, Replica: s.replica, SessionRef: s.ref,
		Shared: cfg.Client == "claude-code", Start: kind == kindStart, Now: cfg.Now(),
	})
	if err != nil {
		return answer{failed: true, msg: "news: " + err.Error()}
	}
	if text == "" {
		return answer{}
	}
	return answer{out: contextAnswer(cfg.Event, text)}
}

// session is what a hook run knows of the agent and its repository.
type session struct {
	repo                *gitx.Repo
	cwd                 string
	st                  *store.Store
	own                 bool   // st is the run's, to close
	via                 string // for wire.TraceEnv
	workspace, data, db string
	actor, replica, ref string
	provider            protocol.Provider
}

func (s *session) close() {
	if s.own {
		s.st.Close()
	}
}

// open finds the repository, the local database and the agent's identity.
// A nil session comes with the answer to give instead: the whole run's
// when the agent's MCP server ran it (askServer).
func open(ctx context.Context, cfg Config, in *Input, raw []byte) (*session, answer) {
	s := &session{cwd: cfg.Repo, provider: identity.ProviderFromClient(cfg.Client)}
	if s.cwd == "" {
		s.cwd = in.Cwd
	}
	if s.cwd == "" {
		s.cwd = cfg.Dir
	}
	var err error
	if s.repo, err = findRepo(ctx, s.cwd, cfg.Getenv); err != nil {
		return nil, answer{failed: true, msg: fmt.Sprintf("%s: %v", s.cwd, err)}
	}
	if s.workspace, s.data, err = identity.Locate(s.repo, s.repo.Top, cfg.Workspace, cfg.Data); err != nil {
		return nil, answer{failed: true, msg: err.Error()}
	}
	s.db = identity.DatabasePath(s.data, cfg.Service, s.workspace)
	fi, err := os.Stat(s.db)
	if err != nil {
		return nil, answer{failed: true, msg: fmt.Sprintf("no coordination state at %s (has a crosscode-mcp server run in this repository with these flags?)", s.db)}
	}
	via := "the database"
	if cfg.shared != nil {
		s.st = cfg.shared.storeFor(fi)
		via = ""
	} else {
		a, why := askServer(ctx, cfg, fi, raw)
		if a != nil {
			return nil, *a
		}
		via += " (" + why + ")"
	}
	if s.st == nil {
		if s.st, err = store.Open(ctx, s.db, &store.Options{Projections: true, Lazy: true, Readers: 1, BusyTimeout: cfg.Timeout}); err != nil {
			return nil, answer{failed: true, msg: "open " + s.db + ": " + err.Error(), via: via}
		}
		s.own = true
	}
	s.via = via
	if _, err := s.st.Workspace(ctx, s.workspace); err != nil {
		s.close()
		if errors.Is(err, store.ErrNoWorkspace) {
			return nil, answer{} // nobody coordinates in this workspace yet
		}
		return nil, answer{failed: true, msg: err.Error()}
	}
	s.ref = sessionRef(in.SessionID)
	if s.replica, err = identity.LoadReplica(s.repo, s.data); err != nil {
		s.close()
		return nil, answer{failed: true, msg: err.Error()}
	}
	s.actor = s.resolveActor(ctx, cfg)
	return s, answer{}
}

// sessionRef is the client's session id as a session reference: as it
// is when it is a clean id, else a digest of it.
func sessionRef(id string) string {
	if id != "" && len(id) <= 200 && sanitize.Line(id, 0) == id && strings.TrimSpace(id) == id {
		return id
	}
	if id == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(id))
	return "ref-" + hex.EncodeToString(sum[:16])
}

// resolveActor is the actor the agent's MCP server acts as: --actor (or
// CROSSCODE_ACTOR), else the one that server reported in this working
// copy's presence for this session, else its default (git user.email).
func (s *session) resolveActor(ctx context.Context, cfg Config) string {
	if cfg.Actor != "" {
		return cfg.Actor
	}
	if ps, err := s.st.Presence(ctx, s.workspace); err == nil {
		for _, p := range ps {
			if p.SenderReplicaID != s.replica || p.Status == protocol.PresenceOffline {
				continue
			}
			// Claude Code gives its MCP servers the session id its hooks
			// get; other clients do not, and the working copy's one
			// session then speaks for it.
			if (p.Agent != nil && p.Agent.SessionReference == s.ref) || cfg.Client != "claude-code" {
				return p.ActorID
			}
		}
	}
	return identity.DefaultActor(ctx, s.repo)
}

// checkEdit decides an edit of paths.
func (s *session) checkEdit(ctx context.Context, cfg Config, paths []string) answer {
	pol, err := LoadPolicy(s.repo.Top, cfg.Policy)
	if err != nil {
		return answer{failed: true, msg: err.Error()}
	}
	res := newResolver(s.repo, s.cwd)
	now := cfg.Now()
	var denials, notes []string
	var failed []string
	for _, p := range paths {
		rel, err := res.rel(p)
		if err != nil {
			failed = append(failed, err.Error())
			continue
		}
		holders, err := coord.Holders(ctx, s.st, s.workspace, s.actor, rel, now)
		if err != nil {
			return answer{failed: true, msg: "claims: " + err.Error()}
		}
		var blocking, other []coord.Holder
		for _, h := range holders {
			if h.Exclusive || pol.DenyShared {
				blocking = append(blocking, h)
			} else {
				other = append(other, h)
			}
		}
		switch {
		case len(blocking) > 0 && pol.Policy == PolicyWarn:
			notes = append(notes, heldText(rel, blocking, now)+" The policy is warn, so the edit goes ahead: tell them, or ask with request_handoff.")
		case len(blocking) > 0:
			denials = append(denials, heldText(rel, blocking, now))
		case pol.Policy == PolicyClaim && len(other) > 0:
			notes = append(notes, heldText(rel, other, now)+" (shared: the edit goes ahead, unclaimed)")
		case pol.Policy == PolicyClaim:
			note, deny, err := s.claim(ctx, cfg, rel, pol.ttl, now)
			if err != nil {
				return answer{failed: true, msg: "claim " + rel + ": " + err.Error()}
			}
			if deny != "" {
				denials = append(denials, deny)
			} else if note != "" {
				notes = append(notes, note)
			}
		}
	}
	a := answer{}
	if len(failed) > 0 {
		a.failed, a.msg = true, strings.Join(failed, "; ")
	}
	switch {
	case len(denials) > 0:
		a.out = denyAnswer(cfg.Client, cfg.Event, "crosscode-mcp stopped this edit: "+strings.Join(denials, " ")+
			" Do not write the file another way. To wait for it without polling, call the claim tool with these paths and waitSeconds (e.g. 600):"+
			" you get it when it is free, first come first served, and the grant reaches you in your next tool result."+
			" Or work on something else meanwhile, or ask the holder with request_handoff.")
		a.failed = false // what could be checked decided it
	case len(notes) > 0:
		a.out = noteAnswer(cfg.Client, cfg.Event, "crosscode-mcp: "+strings.Join(notes, " "))
	}
	return a
}

// heldText says who holds rel, by which claims, until when.
func heldText(rel string, hs []coord.Holder, now time.Time) string {
	var parts []string
	for _, h := range hs {
		kind := "shared"
		if h.Exclusive {
			kind = "exclusive"
		}
		if h.Queued() {
			parts = append(parts, fmt.Sprintf("%s waits for it, ahead of you in line (%s claim %s on %s)",
				sanitize.Line(h.Actor, 120), kind, h.ClaimID, sanitize.Line(strings.Join(h.Patterns, ", "), 200)))
			continue
		}
		p := fmt.Sprintf("%s holds it (%s claim %s on %s, for %s more, until %s UTC",
			sanitize.Line(h.Actor, 120), kind, h.ClaimID, sanitize.Line(strings.Join(h.Patterns, ", "), 200),
			h.ExpiresAt.Sub(now).Round(time.Minute), h.ExpiresAt.UTC().Format("15:04"))
		if h.Pending {
			p += "; queued on this machine, not yet ordered by the service"
		}
		parts = append(parts, p+")")
	}
	return fmt.Sprintf("%s is claimed by another agent: %s.", rel, strings.Join(parts, "; "))
}

// claim takes (or renews) the agent's claim on rel before its edit, as
// the claim tool does. It returns a note for the agent, or why the edit
// is denied (the claim lost to another, ordered first).
func (s *session) claim(ctx context.Context, cfg Config, rel string, ttl time.Duration, now time.Time) (note, deny string, err error) {
	if strings.ContainsAny(rel, `*?[]{}\`) {
		return "", "", nil // not a name a claim pattern can hold as itself
	}
	c, err := coord.New(coord.Config{
		Workspace: s.workspace, Store: s.st, Service: cfg.Service, Actor: s.actor, Replica: s.replica,
		Session: "hook-" + s.replica, Offline: true, Now: cfg.Now,
	})
	if err != nil {
		return "", "", err
	}
	defer c.Close(ctx)
	c.SetAgent(protocol.Agent{Provider: s.provider, SessionReference: s.ref})
	ec, err := c.ClaimForEdit(ctx, rel, ttl)
	if err != nil {
		var in *coord.InputError
		if errors.As(err, &in) {
			return "", "", errors.New(in.Message)
		}
		return "", "", err
	}
	if ec.Held == nil {
		hs := make([]coord.Holder, 0, len(ec.Result.Conflicts))
		for _, c := range ec.Result.Conflicts {
			hs = append(hs, coord.Holder{Conflict: c})
		}
		if len(hs) == 0 {
			return fmt.Sprintf("could not claim %s: you hold %d claims, the most there may be; release some with release_claim.", rel, ec.Result.Limit), "", nil
		}
		return "", heldText(rel, hs, now), nil
	}
	if ec.Result == nil {
		return "", "", nil // a claim of the agent's covers it already
	}
	return fmt.Sprintf("claimed %s for you (exclusive claim %s until %s UTC; later edits renew it; release_claim releases it with your others).",
		rel, ec.Held.ID, ec.Held.ExpiresAt.UTC().Format("15:04")), "", nil
}
