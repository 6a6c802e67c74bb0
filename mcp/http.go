package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/crosscode/crosscode-mcp/bridge/coord"
	"github.com/crosscode/crosscode-mcp/protocol"
	"github.com/crosscode/crosscode-mcp/store"
	coordtools "github.com/crosscode/crosscode-mcp/tools/coord"
)

// HTTPHub is what the MCP endpoint needs from the coordination service
// it is mounted in (hub.Server): its tokens, and everything a Coordinator
// inside it uses.
type HTTPHub interface {
	coord.Hub
	// Authenticate returns the workspace of an access token, or
	// store.ErrBadToken.
	Authenticate(ctx context.Context, token string) (string, error)
}

// HTTPConfig configures the service's MCP endpoint (MCP over Streamable
// HTTP, spec section 15).
type HTTPConfig struct {
	// Hub is the service the endpoint is mounted in.
	Hub HTTPHub
	// Mirror is this instance's mirror of the service's log, opened with
	// Projections (a cache: it is rebuilt when lost). The endpoint does
	// not close it.
	Mirror *store.Store
	// AllowOrigins are the browser origins (scheme://host[:port]) whose
	// requests are served; a request with any other Origin gets 403.
	// Requests without an Origin (agents, CLIs) are not affected.
	AllowOrigins []string
	// Version is the server version in the MCP handshake.
	Version string
	// Logger receives logs. Default: discard.
	Logger *slog.Logger
	// Rate and Burst limit the requests of one token: Rate per second on
	// average, Burst at once (a token bucket); past it, 429. Defaults 50
	// and 100.
	Rate  float64
	Burst int
	// CallTimeout bounds one request, its tool call included. Default 30s.
	CallTimeout time.Duration
	// SessionIdle is how long an MCP session without requests keeps its
	// state on this instance (the session itself goes on on any
	// instance: its id carries what it needs). Default 30m.
	SessionIdle time.Duration
}

// HTTPServer is the service's MCP endpoint: one MCP server per workspace,
// each with the coordination tools over a Coordinator inside the service,
// shared by every session of that workspace on this instance.
type HTTPServer struct {
	cfg    HTTPConfig
	log    *slog.Logger
	limits *limiter

	mu  sync.Mutex
	wss map[string]*httpWorkspace

	presence sync.Map            // replica -> time of the last presence this instance reported
	reports  chan presenceReport // to reportPresence
	stop     chan struct{}
	done     chan struct{}
}

// httpWorkspace is one workspace's MCP server.
type httpWorkspace struct {
	coord *coord.Coordinator
	mcp   *server.MCPServer
	http  *server.StreamableHTTPServer
}

// NewHTTP builds the MCP endpoint. Mount it at /mcp on the service.
func NewHTTP(cfg HTTPConfig) (*HTTPServer, error) {
	if cfg.Hub == nil || cfg.Mirror == nil {
		return nil, errors.New("mcp: HTTPConfig needs Hub and Mirror")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.Rate <= 0 {
		cfg.Rate = 50
	}
	if cfg.Burst <= 0 {
		cfg.Burst = 100
	}
	if cfg.CallTimeout <= 0 {
		cfg.CallTimeout = 30 * time.Second
	}
	if cfg.SessionIdle <= 0 {
		cfg.SessionIdle = 30 * time.Minute
	}
	for i, o := range cfg.AllowOrigins {
		cfg.AllowOrigins[i] = strings.TrimRight(o, "/")
	}
	s := &HTTPServer{cfg: cfg, log: cfg.Logger, limits: newLimiter(cfg.Rate, cfg.Burst), wss: map[string]*httpWorkspace{},
		reports: make(chan presenceReport, 4096), stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		s.reportPresence(s.stop)
	}()
	return s, nil
}

// Close stops the workspaces' MCP servers (their session sweepers) and
// the presence worker.
func (s *HTTPServer) Close() {
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, w := range s.wss {
		w.http.Shutdown(context.Background())
		w.coord.Close(context.Background())
	}
	s.wss = map[string]*httpWorkspace{}
}

// Headers of the endpoint.
const (
	// HeaderActor names the acting actor (spec section 15); default the
	// client's name.
	HeaderActor = "X-Crosscode-Actor"
	// headerSession is the Streamable HTTP session header.
	headerSession = "Mcp-Session-Id"
)

// ServeHTTP answers MCP over Streamable HTTP: the Origin check, the
// token, the per-token rate limit, the body limit, then the workspace's
// MCP server.
func (s *HTTPServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if o := r.Header.Get("Origin"); o != "" && !slices.Contains(s.cfg.AllowOrigins, strings.TrimRight(o, "/")) {
		httpError(w, http.StatusForbidden, protocol.CodeForbidden, fmt.Sprintf("Origin %q is not allowed (serve --allow-origin names the browser origins that may call /mcp)", o))
		return
	}
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || token == "" {
		if r.Method == http.MethodOptions {
			// A CORS preflight carries no token; mcp-go answers it for the
			// allowed origins.
			s.workspaceFor(w, r, "")
			return
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="crosscode-mcp"`)
		httpError(w, http.StatusUnauthorized, protocol.CodeUnauthenticated, "missing Authorization: Bearer <workspace token> (create one with: crosscode-mcp token create --workspace W)")
		return
	}
	ws, err := s.cfg.Hub.Authenticate(r.Context(), token)
	if errors.Is(err, store.ErrBadToken) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="crosscode-mcp", error="invalid_token"`)
		httpError(w, http.StatusUnauthorized, protocol.CodeUnauthenticated, "unknown access token")
		return
	}
	if err != nil {
		s.log.Error("authenticate", "err", err)
		w.Header().Set("Retry-After", "1")
		httpError(w, http.StatusServiceUnavailable, protocol.CodeUnavailable, "the service's database is unavailable; retry")
		return
	}
	if wait, ok := s.limits.allow(token); !ok {
		w.Header().Set("Retry-After", fmt.Sprint(int(wait/time.Second)+1))
		httpError(w, http.StatusTooManyRequests, protocol.CodeRateLimited, fmt.Sprintf("too many requests for this token (%g a second, %d at once); retry after %s", s.cfg.Rate, s.cfg.Burst, wait.Round(time.Millisecond)))
		return
	}
	call := &httpCall{workspace: ws, token: token}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.CallTimeout)
	defer cancel()
	http.NewResponseController(w).SetWriteDeadline(time.Now().Add(s.cfg.CallTimeout + 5*time.Second))
	if a := r.Header.Get(HeaderActor); a != "" {
		if call.actor, err = checkActor(a); err != nil {
			httpError(w, http.StatusBadRequest, protocol.CodeSchemaInvalid, err.Error())
			return
		}
	}
	if r.Method == http.MethodPost {
		body, ok := s.readBody(w, r)
		if !ok {
			return
		}
		if !call.parse(w, r, body) {
			return
		}
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	}
	if id := r.Header.Get(headerSession); id != "" && !call.modern {
		sess, err := openSessionID(id, token)
		if err != nil {
			// Another workspace's, forged, or from before a token change:
			// the client starts a new session.
			jsonRPCError(w, http.StatusNotFound, call.id, mcpgo.INVALID_REQUEST, "unknown MCP session: start a new one (initialize)")
			return
		}
		call.session = sess
	}
	s.workspaceFor(w, r.WithContext(withCall(ctx, call)), ws)
	if r.Method == http.MethodDelete && call.session != nil {
		s.sessionEnded(ctx, ws, call)
	}
}

// workspaceFor hands the request to the workspace's MCP server (made on
// first use).
func (s *HTTPServer) workspaceFor(w http.ResponseWriter, r *http.Request, ws string) {
	hw, err := s.workspace(r.Context(), ws)
	if err != nil {
		s.log.Error("mcp workspace", "workspace", ws, "err", err)
		httpError(w, http.StatusServiceUnavailable, protocol.CodeUnavailable, "the workspace's log cannot be read now; retry")
		return
	}
	hw.http.ServeHTTP(w, r)
}

// workspace returns the workspace's MCP server, made on first use. The
// empty workspace serves only CORS preflights.
func (s *HTTPServer) workspace(ctx context.Context, ws string) (*httpWorkspace, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if hw := s.wss[ws]; hw != nil {
		return hw, nil
	}
	name := ws
	if name == "" {
		name = "-" // a placeholder: no tool of it is ever called
	}
	c, err := coord.New(coord.Config{Workspace: name, Store: s.cfg.Mirror, Hub: s.cfg.Hub, Logger: s.log})
	if err != nil {
		return nil, err
	}
	c.SetWake(coord.WakeState{How: "sessions of the service's /mcp are not woken while they idle (only a Claude Code session of the stdio server is, through channels): news reaches you in your next tool result"})
	if ws != "" {
		// Only the workspace's row in the mirror: each call catches the
		// mirror up itself (Sync), one workspace's catch-up at a time, so a
		// long first catch-up holds no other workspace's calls.
		if _, err := s.cfg.Mirror.EnsureWorkspace(ctx, ws, ""); err != nil {
			return nil, err
		}
	}
	hooks := &server.Hooks{}
	hooks.AddAfterInitialize(func(ctx context.Context, _ any, req *mcpgo.InitializeRequest, _ *mcpgo.InitializeResult) {
		s.sessionStarted(ctx, c, req.Params.ClientInfo.Name)
	})
	m := server.NewMCPServer("crosscode-mcp", s.cfg.Version,
		server.WithInstructions(instructions),
		server.WithToolCapabilities(false),
		server.WithRecovery(),
		server.WithHooks(hooks),
		server.WithToolHandlerMiddleware(s.stampCaller(c)),
		server.WithToolHandlerMiddleware(fitResult),
	)
	if ws != "" {
		// The coordination tools, the definitions the stdio server uses;
		// capture needs the game's machine, and is not offered.
		for _, t := range Registry(c, nil, nil, []string{coordtools.Toolset}) {
			m.AddTool(t.Def, t.Handler)
		}
	}
	opts := []server.StreamableHTTPOption{
		server.WithSessionIdManagerResolver(sessionIDs{}),
		// No standalone GET stream (405): nothing is pushed to clients
		// (news rides on results), and no client holds a connection open.
		server.WithDisableStreaming(true),
		// Loopback requests with a public Host come from a reverse proxy
		// on this machine: the token and the Origin check guard instead.
		server.WithDisableLocalhostProtection(true),
		server.WithStreamableHTTPLogger(s.log),
		server.WithSessionIdleTTL(s.cfg.SessionIdle),
	}
	if len(s.cfg.AllowOrigins) > 0 {
		opts = append(opts, server.WithStreamableHTTPCORS(
			server.WithCORSAllowedOrigins(s.cfg.AllowOrigins...),
			server.WithCORSAllowedHeaders("Authorization", "Content-Type", headerSession, mcpgo.HeaderProtocolVersion, HeaderActor, "Mcp-Method", "Mcp-Name", "Last-Event-ID"),
			server.WithCORSExposedHeaders(headerSession),
		))
	}
	hw := &httpWorkspace{coord: c, mcp: m, http: server.NewStreamableHTTPServer(m, opts...)}
	s.wss[ws] = hw
	return hw, nil
}

// readBody reads a POST body of at most 1 MiB (else 413), within the
// call's time.
func (s *HTTPServer) readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	if r.ContentLength > protocol.MaxBodyBytes {
		httpError(w, http.StatusRequestEntityTooLarge, protocol.CodePayloadTooLarge, fmt.Sprintf("body of %d bytes is over the 1 MiB limit", r.ContentLength))
		return nil, false
	}
	rc := http.NewResponseController(w)
	rc.SetReadDeadline(time.Now().Add(s.cfg.CallTimeout))
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, protocol.MaxBodyBytes))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		httpError(w, http.StatusRequestEntityTooLarge, protocol.CodePayloadTooLarge, "body is over the 1 MiB limit")
		return nil, false
	case errors.Is(err, os.ErrDeadlineExceeded):
		httpError(w, http.StatusRequestTimeout, protocol.CodeSchemaInvalid, fmt.Sprintf("the body did not arrive within %s", s.cfg.CallTimeout))
		return nil, false
	case err != nil:
		httpError(w, http.StatusBadRequest, protocol.CodeSchemaInvalid, "read body: "+err.Error())
		return nil, false
	}
	rc.SetReadDeadline(time.Time{})
	return body, true
}

// httpError answers with the service's JSON error shape.
func httpError(w http.ResponseWriter, status int, code protocol.ErrorCode, msg string) {
	b, _ := json.Marshal(protocol.ErrorBody{Error: protocol.ErrorDetail{Code: code, Message: msg}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// jsonRPCError answers with a JSON-RPC error.
func jsonRPCError(w http.ResponseWriter, status int, id json.RawMessage, code int, msg string) {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}{JSONRPC: "2.0", ID: id, Error: struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}{code, msg}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}
