// Package mcp assembles crosscode-mcp's stdio MCP server: identity of the
// calling agent, the coordination client, the tools, and the stdio loop.
package mcp

import (
	"bufio"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/crosscode/crosscode-mcp/bridge/cappy"
	"github.com/crosscode/crosscode-mcp/bridge/coord"
	"github.com/crosscode/crosscode-mcp/bridge/hooks"
	"github.com/crosscode/crosscode-mcp/internal/gitx"
	"github.com/crosscode/crosscode-mcp/internal/identity"
	"github.com/crosscode/crosscode-mcp/internal/ids"
	"github.com/crosscode/crosscode-mcp/protocol"
	"github.com/crosscode/crosscode-mcp/store"
	"github.com/crosscode/crosscode-mcp/tools"
	capturetools "github.com/crosscode/crosscode-mcp/tools/capture"
	coordtools "github.com/crosscode/crosscode-mcp/tools/coord"
)

//go:embed instructions.md
var instructions string

// Config configures the stdio server; cmd/crosscode-mcp fills it from flags
// and the environment.
type Config struct {
	Workspace  string   // default: the repository's top-level folder name
	Service    string   // coordination service URL; empty: local mode
	Token      string   // access token for Service
	Data       string   // local state; default <git common dir>/crosscode
	Repo       string   // the repository the agent works in; default the working directory
	Provider   string   // agent provider; default from clientInfo.name
	SessionRef string   // agent.sessionReference; see SessionReference
	Actor      string   // actorId; default git user.email, else the OS user
	Toolsets   []string // "coord", "capture"; default both
	// Capture: how to launch the game (split on spaces), the controller's
	// loopback address, and the capture config file (default
	// .crosscode/capture.json in the repository, if present).
	GameCmd       string
	CappyListen   string
	CaptureConfig string
	Version       string
	Logger        *slog.Logger
	// Getenv reads the environment (CLAUDE_CODE_SESSION_ID). Default os.Getenv.
	Getenv func(string) string
	// MaxLineBytes caps one JSON-RPC message on stdin. Default 8 MiB.
	MaxLineBytes int
	// Yield, when set, names the other crosscode-mcp server that the
	// client (by its clientInfo.name) was also configured to start, by
	// hand; "" for none. A server started by a client package (plugin,
	// extension) beside one wired by hand then offers no tools, so the
	// agent sees each tool once, with the user's own flags.
	Yield func(clientName string) string
}

// Toolsets are the tool groups --toolsets may name.
var Toolsets = []string{coordtools.Toolset, "capture"}

// Server is an assembled MCP server with its coordination client.
type Server struct {
	MCP     *server.MCPServer
	Coord   *coord.Coordinator
	Store   *store.Store
	Tools   []tools.Tool
	Repo    *gitx.Repo
	Capture *cappy.Service // nil without the capture toolset

	cfg       Config
	log       *slog.Logger
	sessionID string
	provider  protocol.Provider // from --provider, else from clientInfo
	yielded   map[string]string // Config.Yield's answer per client name
	mu        sync.Mutex
	learnMu   sync.Mutex // learnClient's, across its announce

	// Start-up (see Run): ready closes when start returned, with startErr;
	// handlers are the tools' own handlers from then on. A client's
	// initialize answered before is remembered in client, for start.
	ready    chan struct{}
	startErr error
	handlers map[string]server.ToolHandlerFunc
	started  bool
	client   string
	// hookLn answers the hooks of the agents on this database (nil: it
	// could not listen).
	hookLn *hooks.Listener

	// Waking the agent while it idles (wake.go): the policy, the client
	// the wake state was set for, the loop, and how a message is sent.
	wake     *wakePolicy
	wakeFor  string
	stopWake context.CancelFunc
	wakeDone chan struct{}
	notify   func(method string, params map[string]any)
}

// New resolves the identity and workspace, opens the local database,
// starts the coordination client and registers the tools.
func New(ctx context.Context, cfg Config) (*Server, error) {
	s, err := assemble(cfg)
	if err != nil {
		return nil, err
	}
	if err := s.start(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// assemble checks cfg and builds the MCP server with every tool's
// definition (the schemas were generated at build time: tools.New), whose
// calls wait until start has opened what they work on. It does no I/O:
// Run answers initialize and tools/list while start runs.
func assemble(cfg Config) (*Server, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.Getenv == nil {
		cfg.Getenv = os.Getenv
	}
	if len(cfg.Toolsets) == 0 {
		cfg.Toolsets = Toolsets
	}
	for _, t := range cfg.Toolsets {
		if !slices.Contains(Toolsets, t) {
			return nil, fmt.Errorf("unknown toolset %q (coord, capture)", t)
		}
	}
	if cfg.Provider != "" && !protocol.Provider(cfg.Provider).Valid() {
		return nil, fmt.Errorf("unknown provider %q (one of %v)", cfg.Provider, protocol.Providers)
	}
	if cfg.Service != "" && cfg.Token == "" {
		return nil, errors.New("--service needs --token (create one with: crosscode-mcp token create --workspace W)")
	}
	s := &Server{cfg: cfg, log: cfg.Logger, sessionID: ids.New("ses"), provider: protocol.Provider(cfg.Provider), ready: make(chan struct{}), wake: newWakePolicy(wakeEvery)}
	hks := &server.Hooks{}
	hks.AddAfterInitialize(func(ctx context.Context, _ any, req *mcpgo.InitializeRequest, _ *mcpgo.InitializeResult) {
		s.initialized(ctx, req.Params.ClientInfo.Name)
	})
	hks.AddAfterDiscover(s.legacyForChannels)
	s.MCP = server.NewMCPServer("crosscode-mcp", cfg.Version,
		server.WithInstructions(instructions),
		server.WithToolCapabilities(false),
		// Claude Code's channels (wake.go); other clients ignore it.
		server.WithExperimental(map[string]any{channelCapability: map[string]any{}}),
		server.WithRecovery(),
		server.WithHooks(hks),
		server.WithToolHandlerMiddleware(s.trackCalls),
		server.WithToolHandlerMiddleware(s.awaitStart),
		server.WithToolHandlerMiddleware(s.stampAgent),
		server.WithToolHandlerMiddleware(fitResult),
		server.WithToolFilter(s.yieldFilter),
	)
	s.notify = s.MCP.SendNotificationToAllClients
	// The definitions only: the handlers come with start's dependencies.
	for _, t := range Registry(nil, nil, nil, cfg.Toolsets) {
		s.MCP.AddTool(t.Def, s.dispatch(t.Def.Name))
	}
	return s, nil
}

// start opens what the tools work on: the repository and the identity,
// then, side by side, the coordination database and client, and the
// capture controller. It closes ready, whatever it returns.
func (s *Server) start(ctx context.Context) (err error) {
	defer func() {
		s.startErr = err
		close(s.ready)
	}()
	if startGate != nil {
		startGate()
	}
	cfg := s.cfg
	dir := cfg.Repo
	if dir == "" {
		if dir, err = os.Getwd(); err != nil {
			return err
		}
	}
	repo, err := identity.OpenRepo(ctx, dir, cfg.Logger)
	if err != nil {
		return err
	}
	s.Repo = repo
	workspace, data, err := identity.Locate(repo, dir, cfg.Workspace, cfg.Data)
	if err != nil {
		return err
	}
	captured := make(chan error, 1)
	if slices.Contains(cfg.Toolsets, capturetools.Toolset) {
		go func() {
			var err error
			s.Capture, err = startCapture(ctx, cfg, repo, dir, data)
			captured <- err
		}()
	} else {
		captured <- nil
	}
	err = s.startCoord(ctx, repo, workspace, data)
	if cerr := <-captured; cerr != nil || err != nil {
		if s.Capture != nil {
			s.Capture.Close()
		}
		if err == nil {
			s.hookLn.Close()
			s.Coord.Close(ctx)
			s.Store.Close()
			err = cerr
		}
		return err
	}
	s.Tools = Registry(s.Coord, repo, s.Capture, cfg.Toolsets)
	s.handlers = map[string]server.ToolHandlerFunc{}
	for _, t := range s.Tools {
		s.handlers[t.Def.Name] = t.Handler
	}
	s.mu.Lock()
	s.started = true
	client := s.client
	s.mu.Unlock()
	s.learnClient(ctx, client) // one that initialized meanwhile
	return nil
}

// startGate, set by tests only, runs first in start: holding it shows
// what the server answers before it has started.
var startGate func()

// startCoord opens the coordination database and starts its client.
func (s *Server) startCoord(ctx context.Context, repo *gitx.Repo, workspace, data string) error {
	cfg := s.cfg
	actor := cfg.Actor
	if actor == "" {
		actor = identity.DefaultActor(ctx, repo)
	}
	replica, err := identity.LoadReplica(repo, data)
	if err != nil {
		return err
	}
	dbPath := identity.DatabasePath(data, cfg.Service, workspace)
	if s.Store, err = store.Open(ctx, dbPath, &store.Options{Projections: true}); err != nil {
		return err
	}
	s.Coord, err = coord.New(coord.Config{Workspace: workspace, Store: s.Store, Service: cfg.Service, Token: cfg.Token,
		Actor: actor, Replica: replica, Session: s.sessionID, Logger: cfg.Logger})
	if err != nil {
		s.Store.Close()
		return err
	}
	s.mu.Lock()
	if s.client != "" && cfg.Provider == "" {
		// The client initialized already: the first presence names it.
		s.provider = identity.ProviderFromClient(s.client)
	}
	s.mu.Unlock()
	s.Coord.SetAgent(s.agent(nil))
	if err := s.Coord.Start(ctx); err != nil {
		// Start may have started the remote loops: stop them before the
		// store closes under them.
		s.Coord.Close(ctx)
		s.Store.Close()
		return err
	}
	// The agents' hooks on this database ask this server rather than
	// open it themselves (bridge/hooks, served.go); without the socket
	// they still work, slower.
	if s.hookLn, err = hooks.Listen(dbPath, s.Store, cfg.Logger); err != nil {
		cfg.Logger.Debug("hooks: not serving them", "err", err)
	}
	cfg.Logger.Info("crosscode-mcp", "workspace", workspace, "mode", s.Coord.Mode(), "actor", actor, "replica", replica, "data", dbPath)
	return nil
}

// initialized learns the client's name from its initialize; before start
// is done, start does.
func (s *Server) initialized(ctx context.Context, name string) {
	s.mu.Lock()
	if !s.started {
		s.client = name
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	s.learnClient(ctx, name)
}

// awaitStart runs before every tool: a call that comes before start is
// done waits for it (a client may call as soon as it has the tool list).
func (s *Server) awaitStart(next server.ToolHandlerFunc) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		select {
		case <-s.ready:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if s.startErr != nil {
			return nil, fmt.Errorf("crosscode-mcp could not start: %w", s.startErr)
		}
		return next(ctx, req)
	}
}

// dispatch is the registered handler of a tool: its own, from start.
func (s *Server) dispatch(name string) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		h := s.handlers[name]
		if h == nil {
			return nil, fmt.Errorf("tool %s has no handler", name)
		}
		return h(ctx, req)
	}
}

// Registry lists the tools of the given toolsets, in a stable order.
func Registry(c *coord.Coordinator, repo *gitx.Repo, capture *cappy.Service, toolsets []string) []tools.Tool {
	var list []tools.Tool
	var validations capturetools.Validations
	if slices.Contains(toolsets, coordtools.Toolset) {
		list = append(list, coordtools.All(c, repo)...)
		if c != nil {
			validations = c
		}
	}
	if slices.Contains(toolsets, capturetools.Toolset) {
		list = append(list, capturetools.All(capture, validations)...)
	}
	return list
}

// OpenCapture opens capture alone, as the server would (the same
// repository, data folder and capture config): for the commands that run
// the game without an agent (crosscode-mcp test).
func OpenCapture(ctx context.Context, cfg Config) (*cappy.Service, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	dir := cfg.Repo
	if dir == "" {
		var err error
		if dir, err = os.Getwd(); err != nil {
			return nil, err
		}
	}
	repo, err := identity.OpenRepo(ctx, dir, cfg.Logger)
	if err != nil {
		return nil, err
	}
	_, data, err := identity.Locate(repo, dir, cfg.Workspace, cfg.Data)
	if err != nil {
		return nil, err
	}
	return startCapture(ctx, cfg, repo, dir, data)
}

// startCapture loads the capture config and starts the Cappy controller.
func startCapture(ctx context.Context, cfg Config, repo *gitx.Repo, dir, data string) (*cappy.Service, error) {
	path, optional := cfg.CaptureConfig, false
	top := dir
	if repo != nil {
		top = repo.Top
	}
	if path == "" {
		path, optional = filepath.Join(top, ".crosscode", "capture.json"), true
	}
	cc, err := cappy.LoadConfig(path, optional)
	if err != nil {
		return nil, err
	}
	return cappy.NewService(ctx, cappy.ServiceConfig{Data: filepath.Join(data, "capture"), EndpointFile: filepath.Join(data, "cappy-endpoint.json"), Config: cc, ConfigPath: path, GameCommand: strings.Fields(cfg.GameCmd),
		GameDir: top, Listen: cfg.CappyListen, Version: cfg.Version, Logger: cfg.Logger})
}

// agent is the identity stamped on envelopes, for a call with meta.
func (s *Server) agent(meta map[string]any) protocol.Agent {
	s.mu.Lock()
	p := s.provider
	s.mu.Unlock()
	if p == "" {
		p = protocol.ProviderUnknown
	}
	return protocol.Agent{Provider: p, AdapterID: coord.AdapterID, SessionReference: identity.SessionReference(identity.SessionRefInput{
		Flag: s.cfg.SessionRef, Provider: p, ClaudeEnv: s.cfg.Getenv("CLAUDE_CODE_SESSION_ID"), CallMeta: meta, SessionID: s.sessionID,
	})}
}

// stampAgent runs before every tool: it puts the call's agent identity
// (its _meta may carry OpenCode's sessionID) in the call's context, where
// the envelopes the call writes take it from (calls run concurrently, so
// it is not the session's), and records the call, which keeps the
// session's presence online whichever tool it is.
func (s *Server) stampAgent(next server.ToolHandlerFunc) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		var meta map[string]any
		if req.Params.Meta != nil {
			meta = req.Params.Meta.AdditionalFields
		}
		s.learnClient(ctx, clientName(ctx))
		ctx = coord.WithAgent(ctx, s.agent(meta))
		s.Coord.Touch(ctx)
		return next(ctx, req)
	}
}

// clientName is the calling client's clientInfo.name: from the request
// (protocol versions without initialize carry it on every request), else
// from the session's initialize.
func clientName(ctx context.Context) string {
	if info := server.RequestProtocolInfoFromContext(ctx); info != nil && info.ClientInfo != nil && info.ClientInfo.Name != "" {
		return info.ClientInfo.Name
	}
	if sess, ok := server.ClientSessionFromContext(ctx).(server.SessionWithClientInfo); ok {
		return sess.GetClientInfo().Name
	}
	return ""
}

// yieldFilter offers no tools to a client that Config.Yield says also
// starts a crosscode-mcp server wired by hand (decided once per client
// name: it reads the client's configuration files).
func (s *Server) yieldFilter(ctx context.Context, tools []mcpgo.Tool) []mcpgo.Tool {
	if s.yieldsTo(clientName(ctx)) != "" {
		return nil
	}
	return tools
}

// yieldsTo is the other crosscode-mcp server, wired by hand, that the
// client of that name also starts and that serves it instead of this
// one; "" for none.
func (s *Server) yieldsTo(name string) string {
	if s.cfg.Yield == nil {
		return ""
	}
	s.mu.Lock()
	other, ok := s.yielded[name]
	s.mu.Unlock()
	if !ok {
		other = s.cfg.Yield(name)
		s.mu.Lock()
		if s.yielded == nil {
			s.yielded = map[string]string{}
		}
		s.yielded[name] = other
		s.mu.Unlock()
		if other != "" {
			s.log.Warn("this crosscode-mcp server, started by the crosscode plugin or extension, offers no tools: the client also starts " + other + ", wired by hand, which serves them (remove one of the two to silence this)")
		}
	}
	return other
}

// learnClient sets the provider from the client's name, unless --provider
// fixed it, and announces the session again when it changed; and starts
// waking the agent while it idles when the client can be woken.
func (s *Server) learnClient(ctx context.Context, name string) {
	if name == "" {
		return
	}
	s.startWaking(ctx, name)
	if s.cfg.Provider != "" {
		return
	}
	// Held until the presence names the client: the initialize and a
	// first tool call may learn it at once, and the call must not run
	// (nor its client's hooks, which read who the agent is from the
	// presence) before the presence that names its session is written.
	s.learnMu.Lock()
	defer s.learnMu.Unlock()
	p := identity.ProviderFromClient(name)
	s.mu.Lock()
	changed := s.provider != p
	s.provider = p
	s.mu.Unlock()
	if changed {
		s.Coord.SetAgent(s.agent(nil))
		s.Coord.Announce(ctx) // presence again, now with the provider
	}
}

// Close sets the session offline and closes the database.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s.mu.Lock()
	stop, done := s.stopWake, s.wakeDone
	s.wakeFor = "\x00" // closed: no more waking
	s.mu.Unlock()
	if stop != nil {
		stop()
		<-done
	}
	var cerr error
	if s.Capture != nil {
		cerr = s.Capture.Close()
	}
	return errors.Join(cerr, s.hookLn.Close(), s.Coord.Close(ctx), s.Store.Close())
}

// Run serves MCP on stdin/stdout until ctx ends or stdin closes. It
// answers initialize and tools/list at once, while it opens the
// repository, the databases and the capture controller (start) beside
// them: a client waits for the tool list before its agent can begin, and
// none of that is needed for it. Tool calls wait for the start. When the
// start fails, the server stops with its error, as it did when it started
// first and served after.
func Run(ctx context.Context, cfg Config, stdin io.Reader, stdout io.Writer) error {
	s, err := assemble(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		if s.start(ctx) != nil {
			cancel()
		}
	}()
	err = s.Serve(ctx, stdin, stdout)
	<-s.ready
	switch {
	case errors.Is(s.startErr, context.Canceled):
		return nil // stopped (a signal) while it started
	case s.startErr != nil:
		return s.startErr
	}
	s.Close()
	return err
}

// Serve runs the stdio loop. Stdout carries MCP messages only.
func (s *Server) Serve(ctx context.Context, stdin io.Reader, stdout io.Writer) error {
	max := s.cfg.MaxLineBytes
	if max <= 0 {
		max = 8 << 20
	}
	stdio := server.NewStdioServer(s.MCP)
	stdio.SetErrorLogger(log.New(slogWriter{s.log}, "", 0))
	err := stdio.Listen(ctx, newLineCap(stdin, max, s.log), stdout)
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

type slogWriter struct{ log *slog.Logger }

func (w slogWriter) Write(p []byte) (int, error) {
	w.log.Warn(strings.TrimSpace(string(p)))
	return len(p), nil
}

// lineCap passes stdin through, line by line, replacing any line longer
// than max with a line that is not JSON (the server answers it with a
// parse error) so one huge message cannot exhaust memory.
type lineCap struct {
	r   *bufio.Reader
	max int
	log *slog.Logger
	buf []byte
}

func newLineCap(r io.Reader, max int, log *slog.Logger) io.Reader {
	return &lineCap{r: bufio.NewReaderSize(r, 64<<10), max: max, log: log}
}

func (l *lineCap) Read(p []byte) (int, error) {
	for len(l.buf) == 0 {
		line, err := l.readLine()
		if len(line) > 0 {
			l.buf = line
			break
		}
		if err != nil {
			return 0, err
		}
	}
	n := copy(p, l.buf)
	l.buf = l.buf[n:]
	return n, nil
}

func (l *lineCap) readLine() ([]byte, error) {
	var line []byte
	for {
		chunk, err := l.r.ReadSlice('\n')
		if len(line)+len(chunk) > l.max {
			// Too long: drop the rest of the line.
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = l.r.ReadSlice('\n')
			}
			l.log.Warn("dropped an oversized message", "limitBytes", l.max)
			return []byte("oversized message dropped\n"), errOrNil(err)
		}
		line = append(line, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return line, err
	}
}

func errOrNil(err error) error {
	if errors.Is(err, bufio.ErrBufferFull) {
		return nil
	}
	return err
}
