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
	"sync/atomic"
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
	// IdleCheck is how often the session checks whether it went idle.
	// Default 30s.
	IdleCheck time.Duration
	// Hub, if set, makes a Coordinator inside the coordination service,
	// for every agent session of Workspace that connects to the service's
	// MCP endpoint: each call names its caller (WithCaller), so Actor,
	// Replica and Session are not needed; writes go through Hub's ingest,
	// and Store is this instance's mirror of Hub's log. Service names the
	// service in workspace_status (may be empty).
	Hub Hub
	// Offline makes a short-lived client that speaks for an agent between
	// its tool calls (an agent client's hook): in remote mode its writes
	// only queue in the outbox, for the agent's MCP server to upload, and
	// nothing reaches the network; it reports no presence. Do not call
	// Start; Close releases what New took.
	Offline bool
}

// Coordinator is the coordination client of one MCP session.
type Coordinator struct {
	cfg   Config
	local *store.Ingester // local mode
	rem   *remote         // remote mode
	svc   Hub             // inside the service (Config.Hub)

	syncMu sync.Mutex // one mirror catch-up at a time (inside the service)

	mu         sync.Mutex
	newsFrom   int64             // the log position the session's news starts after
	own        []int64           // serverSequences of this session's writes after newsFrom, ascending (local mode)
	notices    []string          // things the agent must be told once (resync, refusals)
	newsAt     time.Time         // when the session's news was last told (claims' outcomes after it are news)
	toldClaims map[string]string // what tool results said of this session's claims (see told)
	lastCall   time.Time
	presence   protocol.PresenceStatus
	agent      protocol.Agent // the session's; a call's context may carry its own
	wake       WakeState      // whether idle news wakes the session's agent

	stop context.CancelFunc
	wg   sync.WaitGroup
	// moved is poked when the mirror took new events from the service
	// (remote mode; see Moved).
	moved chan struct{}

	// Tests only: presenceHook runs before each presence update, and
	// counts tells how much work calls did.
	presenceHook func(context.Context, protocol.PresenceStatus)
	counts       struct{ decoded, entityReads, entityLists atomic.Int64 }
}

// New builds a Coordinator. Call Start, and Close when done.
func New(cfg Config) (*Coordinator, error) {
	if cfg.Store == nil || cfg.Workspace == "" {
		return nil, errors.New("coord: Store and Workspace are required")
	}
	if cfg.Hub == nil && (cfg.Actor == "" || cfg.Replica == "" || cfg.Session == "") {
		return nil, errors.New("coord: Actor, Replica and Session are required")
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
	if cfg.IdleCheck <= 0 {
		cfg.IdleCheck = 30 * time.Second
	}
	c := &Coordinator{cfg: cfg, agent: protocol.Agent{Provider: protocol.ProviderUnknown, AdapterID: AdapterID}, moved: make(chan struct{}, 1)}
	switch {
	case cfg.Hub != nil:
		c.svc = cfg.Hub
	case cfg.Service == "":
		c.local = cfg.Store.NewIngester(&store.IngesterOptions{GatherWait: -1})
	default:
		c.rem = newRemote(c)
	}
	return c, nil
}

// AdapterID is stamped as agent.adapterId on every envelope.
const AdapterID = "crosscode-mcp"

// Mode is "local" or "remote" (a Coordinator inside the service serves
// agents whose state is on the service: remote).
func (c *Coordinator) Mode() string {
	if c.rem != nil || c.svc != nil {
		return "remote"
	}
	return "local"
}

// Workspace is the workspace id.
func (c *Coordinator) Workspace() string { return c.cfg.Workspace }

// Moved receives when the local copy of the service's log took new events
// (remote mode: the fan-out's frames make the mirror pull). In local mode
// other processes write the shared database, and nothing says so: read
// it again now and then.
func (c *Coordinator) Moved() <-chan struct{} { return c.moved }

// Actor is the acting actor's id.
func (c *Coordinator) Actor() string { return c.cfg.Actor }

// Replica is the working copy's replica id.
func (c *Coordinator) Replica() string { return c.cfg.Replica }

// SetAgent records the session's agent identity (its provider and
// session reference): what envelopes and presence carry when the call's
// context has none (see WithAgent).
func (c *Coordinator) SetAgent(a protocol.Agent) {
	a.AdapterID = AdapterID
	c.mu.Lock()
	c.agent = a
	c.mu.Unlock()
}

type agentKey struct{}

// WithAgent returns ctx carrying the identity of the agent making one
// call: envelopes written with ctx are stamped with it. Calls of one
// session run concurrently, each with its own _meta, so a call's identity
// travels with the call rather than being set on the session.
func WithAgent(ctx context.Context, a protocol.Agent) context.Context {
	a.AdapterID = AdapterID
	return context.WithValue(ctx, agentKey{}, a)
}

// Agent is the agent identity of a call made with ctx: the one WithAgent
// put there, else the session's.
func (c *Coordinator) Agent(ctx context.Context) protocol.Agent {
	if cl := callOf(ctx); cl != nil {
		return cl.Agent
	}
	if a, ok := ctx.Value(agentKey{}).(protocol.Agent); ok {
		return a
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.agent
}

// Start opens the workspace, sets the session online and, in remote mode,
// starts uploading the outbox and following the service's log. The
// session's news starts at the current head.
func (c *Coordinator) Start(ctx context.Context) error {
	if _, err := c.cfg.Store.EnsureWorkspace(ctx, c.cfg.Workspace, ""); err != nil {
		return err
	}
	if c.svc != nil {
		// Inside the service: sessions come and go with their calls.
		return c.Sync(ctx)
	}
	bg, cancel := context.WithCancel(context.Background())
	c.stop = cancel
	if c.rem != nil {
		c.rem.start(bg)
		// Catch up before the first answer, but never wait long: the
		// service may be down, and local state answers meanwhile.
		pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
		if err := c.rem.pull(pctx); err != nil {
			c.cfg.Logger.Warn("initial pull", "err", err)
		}
		pcancel()
	} else if err := c.cfg.Store.Project(ctx, c.cfg.Workspace); err != nil {
		return err
	}
	head, err := c.cfg.Store.Head(ctx, c.cfg.Workspace)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.newsFrom, c.lastCall = head, c.cfg.Now()
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

// reannounce reports the session's presence again, as it stands (online
// or idle), if it was reported at all: the service marks a replica
// offline when its WebSocket drops, so a reconnected one says it is back.
func (c *Coordinator) reannounce(ctx context.Context) {
	c.mu.Lock()
	p := c.presence
	c.mu.Unlock()
	if p == protocol.PresenceOnline || p == protocol.PresenceIdle {
		c.setPresence(ctx, p)
	}
}

// IdleAfter is how long a session without tool calls stays online.
const IdleAfter = 10 * time.Minute

// Touch records a tool call (any tool's): the session is online again if
// it was idle.
func (c *Coordinator) Touch(ctx context.Context) {
	if c.svc != nil {
		return // the service's sessions report their own (SetPresence)
	}
	c.mu.Lock()
	c.lastCall = c.cfg.Now()
	idle := c.presence == protocol.PresenceIdle
	c.mu.Unlock()
	if idle {
		c.setPresence(ctx, protocol.PresenceOnline)
	}
}

func (c *Coordinator) idleLoop(ctx context.Context) {
	t := time.NewTicker(c.cfg.IdleCheck)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		c.mu.Lock()
		goIdle := c.presence == protocol.PresenceOnline && c.cfg.Now().Sub(c.lastCall) >= IdleAfter
		c.mu.Unlock()
		if goIdle {
			c.setPresence(ctx, protocol.PresenceIdle)
		}
	}
}

func (c *Coordinator) setPresence(ctx context.Context, status protocol.PresenceStatus) {
	if c.presenceHook != nil {
		c.presenceHook(ctx, status)
	}
	agent := c.Agent(ctx)
	p := &protocol.PresenceUpdate{ReplicaID: c.cfg.Replica, ActorID: c.cfg.Actor, SessionID: c.cfg.Session, Agent: &agent, Status: status}
	c.mu.Lock()
	c.presence = status
	c.mu.Unlock()
	var err error
	if c.rem != nil {
		// The local mirror keeps it too, first: the hooks of this agent's
		// client read who it is from there, with no network call, and a
		// hook run while the service is slow to answer must already find
		// it (else it acts as the machine's default actor).
		if _, lerr := c.cfg.Store.SetPresence(ctx, c.cfg.Workspace, p); lerr != nil {
			c.cfg.Logger.Debug("local presence", "err", lerr)
		}
		err = c.rem.postPresence(ctx, p)
	} else {
		_, err = c.cfg.Store.SetPresence(ctx, c.cfg.Workspace, p)
	}
	if err != nil {
		c.cfg.Logger.Warn("presence", "status", status, "err", err)
	}
}

// Close stops the session's loops, waits for them, and then sets the
// session offline (so no idle update in flight lands after it).
func (c *Coordinator) Close(ctx context.Context) error {
	if c.stop != nil {
		c.stop()
	}
	c.wg.Wait()
	if c.rem != nil {
		c.rem.wait()
	}
	if !c.cfg.Offline && c.svc == nil {
		c.setPresence(ctx, protocol.PresenceOffline)
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
