// Package coord is the coordination client of crosscode-mcp: it turns what
// an agent does into envelopes stamped with its identity, commits them
// durably before answering, and keeps the local copy of the workspace log
// and its projections current.
//
// Local mode (no service): every process of a repository shares one SQLite
// workspace database and runs the same ingest, ordering and arbitration
// code as the coordination service, in-process. Remote mode: envelopes go
// through a durable outbox to a coordination service over HTTP, and the
// service's log is mirrored locally by cursor and WebSocket fan-out.
package coord

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/crosscode/crosscode-mcp/protocol"
	"github.com/crosscode/crosscode-mcp/store"
)

// Config configures a Coordinator.
type Config struct {
	// Workspace is the workspace id.
	Workspace string
	// Store is the local database, opened with Projections. In local mode
	// it is the workspace log itself; in remote mode it mirrors the
	// service's log and holds the outbox.
	Store *store.Store
	// Service is the coordination service's base URL; empty for local mode.
	Service string
	// Token is the service's access token.
	Token string
	// Actor and Replica identify who and which working copy acts; Session
	// is this MCP session's id.
	Actor, Replica, Session string
	// Logger receives logs. Default: discard.
	Logger *slog.Logger
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// HTTPTimeout bounds one request to the service. Default 10s.
	HTTPTimeout time.Duration
	// AckWait is how long a write waits for the service's receipt before
	// answering "queued". Default 3s.
	AckWait time.Duration
}

// Coordinator is the coordination client of one MCP session.
type Coordinator struct {
	cfg   Config
	log   *slog.Logger
	st    *store.Store
	now   func() time.Time
	local *store.Ingester // local mode
	rem   *remote         // remote mode

	mu       sync.Mutex
	newsFrom int64    // the log position the session's news starts after
	notices  []string // things the agent must be told once (resync, refusals)
	lastCall time.Time
	presence protocol.PresenceStatus
	agent    protocol.Agent

	stop      context.CancelFunc
	wg        sync.WaitGroup
	idleCheck time.Duration // how often idleness is checked
}

// New builds a Coordinator. Call Start, and Close when done.
func New(cfg Config) (*Coordinator, error) {
	if cfg.Store == nil || cfg.Workspace == "" || cfg.Actor == "" || cfg.Replica == "" || cfg.Session == "" {
		return nil, errors.New("coord: Store, Workspace, Actor, Replica and Session are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.HTTPTimeout <= 0 {
		cfg.HTTPTimeout = 10 * time.Second
	}
	if cfg.AckWait <= 0 {
		cfg.AckWait = 3 * time.Second
	}
	c := &Coordinator{cfg: cfg, log: cfg.Logger, st: cfg.Store, now: cfg.Now, idleCheck: 30 * time.Second,
		agent: protocol.Agent{Provider: protocol.ProviderUnknown, AdapterID: AdapterID}}
	if cfg.Service == "" {
		c.local = cfg.Store.NewIngester(&store.IngesterOptions{GatherWait: -1})
	} else {
		c.rem = newRemote(c)
	}
	return c, nil
}

// AdapterID is stamped as agent.adapterId on every envelope.
const AdapterID = "crosscode-mcp"

// Mode is "local" or "remote".
func (c *Coordinator) Mode() string {
	if c.rem != nil {
		return "remote"
	}
	return "local"
}

// Workspace is the workspace id.
func (c *Coordinator) Workspace() string { return c.cfg.Workspace }

// Actor is the acting actor's id.
func (c *Coordinator) Actor() string { return c.cfg.Actor }

// Replica is the working copy's replica id.
func (c *Coordinator) Replica() string { return c.cfg.Replica }

// Session is the MCP session id.
func (c *Coordinator) Session() string { return c.cfg.Session }

// SetAgent records the calling agent's provider and session reference,
// stamped on every envelope from now on.
func (c *Coordinator) SetAgent(a protocol.Agent) {
	a.AdapterID = AdapterID
	c.mu.Lock()
	c.agent = a
	c.mu.Unlock()
}

// Agent is the agent identity stamped on envelopes.
func (c *Coordinator) Agent() protocol.Agent {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.agent
}

// Start opens the workspace, sets the session online and, in remote mode,
// starts uploading the outbox and following the service's log. The
// session's news starts at the current head.
func (c *Coordinator) Start(ctx context.Context) error {
	if _, err := c.st.EnsureWorkspace(ctx, c.cfg.Workspace, ""); err != nil {
		return err
	}
	bg, cancel := context.WithCancel(context.Background())
	c.stop = cancel
	if c.rem != nil {
		c.rem.start(bg)
		// Catch up before the first answer, but never wait long: the
		// service may be down, and local state answers meanwhile.
		pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
		if err := c.rem.pull(pctx); err != nil {
			c.log.Warn("initial pull", "err", err)
		}
		pcancel()
	} else if err := c.st.Project(ctx, c.cfg.Workspace); err != nil {
		return err
	}
	head, err := c.st.Head(ctx, c.cfg.Workspace)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.newsFrom, c.lastCall = head, c.now()
	c.mu.Unlock()
	c.setPresence(ctx, protocol.PresenceOnline)
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		c.idleLoop(bg)
	}()
	return nil
}

// Announce reports this session online (again), with the current agent identity.
func (c *Coordinator) Announce(ctx context.Context) {
	c.setPresence(ctx, protocol.PresenceOnline)
}

// IdleAfter is how long a session without tool calls stays online.
const IdleAfter = 10 * time.Minute

// Touch records a tool call: the session is online again if it was idle.
func (c *Coordinator) Touch(ctx context.Context) {
	c.mu.Lock()
	c.lastCall = c.now()
	idle := c.presence == protocol.PresenceIdle
	c.mu.Unlock()
	if idle {
		c.setPresence(ctx, protocol.PresenceOnline)
	}
}

func (c *Coordinator) idleLoop(ctx context.Context) {
	t := time.NewTicker(c.idleCheck)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		c.mu.Lock()
		goIdle := c.presence == protocol.PresenceOnline && c.now().Sub(c.lastCall) >= IdleAfter
		c.mu.Unlock()
		if goIdle {
			c.setPresence(ctx, protocol.PresenceIdle)
		}
	}
}

func (c *Coordinator) setPresence(ctx context.Context, status protocol.PresenceStatus) {
	agent := c.Agent()
	p := &protocol.PresenceUpdate{ReplicaID: c.cfg.Replica, ActorID: c.cfg.Actor, SessionID: c.cfg.Session, Agent: &agent, Status: status}
	c.mu.Lock()
	c.presence = status
	c.mu.Unlock()
	var err error
	if c.rem != nil {
		err = c.rem.postPresence(ctx, p)
	} else {
		_, err = c.st.SetPresence(ctx, c.cfg.Workspace, p)
	}
	if err != nil {
		c.log.Warn("presence", "status", status, "err", err)
	}
}

// Close sets the session offline, lets the outbox finish what it can in
// a moment, and stops.
func (c *Coordinator) Close(ctx context.Context) error {
	c.setPresence(ctx, protocol.PresenceOffline)
	if c.stop != nil {
		c.stop()
	}
	c.wg.Wait()
	if c.rem != nil {
		c.rem.wait()
	}
	if c.local != nil {
		return c.local.Close()
	}
	return nil
}

// notice queues a message for the agent's next tool result.
func (c *Coordinator) notice(format string, args ...any) {
	c.mu.Lock()
	c.notices = append(c.notices, fmt.Sprintf(format, args...))
	c.mu.Unlock()
}

// takeNotices returns and clears the queued messages.
func (c *Coordinator) takeNotices() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.notices
	c.notices = nil
	return n
}
