// Package cappy is the Cappy controller: a loopback WebSocket server that a
// game's adapter connects to, authenticated by a per-launch token. It runs
// one operation at a time (an authored scenario, a freeform recording or a
// replay) through a strict state machine, stamps and stores every event as
// it arrives, and keeps the adapter alive with pings.
package cappy

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/crosscode/crosscode-mcp/internal/sanitize"
	"github.com/crosscode/crosscode-mcp/protocol"
	"github.com/crosscode/crosscode-mcp/store"
)

// Config configures a Controller.
type Config struct {
	// Listen is the loopback address to listen on. Default 127.0.0.1:0.
	// Anything but a loopback address is refused.
	Listen string
	// Token is the session token adapters must present. Default: random.
	Token string
	// AllowedOrigins are Origin values (scheme://host[:port], or host
	// patterns) allowed on upgrades; requests without Origin are allowed.
	AllowedOrigins []string
	// RequiredCapabilities are capabilities an adapter must advertise.
	RequiredCapabilities []string
	// Events are the capture config's "events" (NODE_PATH:signal -> event
	// name), handed in welcome to an adapter that advertises
	// protocol.CapConfigEvents.
	Events map[string]string
	// Store keeps captures and replays. Required.
	Store *store.Store
	// ReplayDir is the content-addressed replay store. Required.
	ReplayDir string
	// FrameDir holds the frames' images, a directory per operation.
	// Default: "frames" beside ReplayDir.
	FrameDir string
	// FrameBudget is the most frame bytes one operation keeps (default
	// DefaultFrameBudget); frames past it are dropped and counted.
	FrameBudget int64
	// Logger receives logs. Default: discard.
	Logger *slog.Logger
	// Version is reported in welcome.
	Version string
	// HelloTimeout (default 10s), PingEvery (2s) and PongTimeout (6s).
	HelloTimeout, PingEvery, PongTimeout time.Duration
	// MaxReplayBytes is the largest replay a recording may hand over
	// (default DefaultMaxReplayBytes); a larger one fails the recording
	// with REPLAY_INVALID before anything is copied.
	MaxReplayBytes int64

	hooks     testHooks
	stepGrace time.Duration // how long past its ms a step may go unanswered (DefaultStepGrace)
}

// DefaultMaxReplayBytes is Config.MaxReplayBytes by default (1 GiB).
const DefaultMaxReplayBytes = 1 << 30

// testHooks let tests stop the controller at a point of interest.
type testHooks struct {
	published     func(*Operation) // Start made the operation active, before its capture is stored
	storingReplay func()           // a recording's replay is about to be stored
	writingFrame  func()           // the frame writer is about to write a frame's file
}

// Error is a failure an agent can act on, with its protocol code.
type Error struct {
	Code    string
	Message string
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

func errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Controller is the Cappy controller.
type Controller struct {
	cfg      Config
	log      *slog.Logger
	st       *store.Store
	l        net.Listener
	srv      *http.Server
	token    string
	endpoint string

	mu        sync.Mutex
	origins   map[string]int // origins allowed for a launch (AllowOrigin), beside cfg.AllowedOrigins
	conn      *adapterConn   // the connected adapter, if any
	ready     chan struct{}  // closed once an adapter shook hands and sent its registry
	op        *Operation     // the active operation, if any
	finished  map[string]int // recently finished ops (late messages are ignored)
	finishSeq int
	rejection *Rejection    // the latest handshake refused
	rejected  chan struct{} // closed (and replaced) at each refused handshake

	wg     sync.WaitGroup
	closed chan struct{}
	owner  *ownerLock // held while it runs; its id is on its captures
}

// New listens on the loopback address and starts serving adapters.
func New(cfg Config) (*Controller, error) {
	if cfg.Store == nil || cfg.ReplayDir == "" {
		return nil, errors.New("cappy: Store and ReplayDir are required")
	}
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:0"
	}
	if err := checkLoopback(cfg.Listen); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.HelloTimeout <= 0 {
		cfg.HelloTimeout = 10 * time.Second
	}
	if cfg.PingEvery <= 0 {
		cfg.PingEvery = 2 * time.Second
	}
	if cfg.PongTimeout <= 0 {
		cfg.PongTimeout = 6 * time.Second
	}
	if cfg.MaxReplayBytes <= 0 {
		cfg.MaxReplayBytes = DefaultMaxReplayBytes
	}
	if cfg.FrameDir == "" {
		cfg.FrameDir = filepath.Join(filepath.Dir(cfg.ReplayDir), "frames")
	}
	if cfg.FrameBudget <= 0 {
		cfg.FrameBudget = DefaultFrameBudget
	}
	if cfg.Token == "" {
		var b [24]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, err
		}
		cfg.Token = hex.EncodeToString(b[:])
	}
	owner, err := takeOwnerLock(cfg.FrameDir)
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		owner.release()
		return nil, fmt.Errorf("cappy: listen: %w", err)
	}
	c := &Controller{cfg: cfg, log: cfg.Logger, st: cfg.Store, l: l, token: cfg.Token, endpoint: "ws://" + l.Addr().String(),
		ready: make(chan struct{}), finished: map[string]int{}, closed: make(chan struct{}), rejected: make(chan struct{}), owner: owner}
	c.srv = &http.Server{Handler: http.HandlerFunc(c.serveHTTP), ReadHeaderTimeout: 10 * time.Second, MaxHeaderBytes: 64 << 10,
		ErrorLog: slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelDebug)}
	c.wg.Add(1)
	go func() { defer c.wg.Done(); c.srv.Serve(l) }()
	return c, nil
}

// checkLoopback refuses any listen address that is not loopback.
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("cappy: listen address %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("cappy: refusing to listen on %q: the controller binds loopback only (127.0.0.1, ::1 or localhost)", addr)
	}
	return nil
}

// Endpoint is the WebSocket URL adapters connect to (CAPPY_ENDPOINT).
func (c *Controller) Endpoint() string { return c.endpoint }

// Token is the session token adapters present (CAPPY_SESSION_TOKEN).
func (c *Controller) Token() string { return c.token }

// Close fails the active operation, drops the adapter and stops listening.
func (c *Controller) Close() error {
	c.mu.Lock()
	select {
	case <-c.closed:
		c.mu.Unlock()
		return nil
	default:
	}
	// Closed under mu: a connection being accepted either counts itself
	// in wg before this, or sees closed and leaves.
	close(c.closed)
	conn := c.conn
	op := c.op
	c.mu.Unlock()
	if op != nil {
		c.finish(op, outcome{status: StatusFailed, code: protocol.CappyAdapterDisconnected, message: "the controller shut down"})
	}
	if conn != nil {
		conn.ws.Close(websocket.StatusGoingAway, "controller shutting down")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := c.srv.Shutdown(ctx)
	c.wg.Wait()
	c.owner.release()
	return err
}

// Adapter describes the connected adapter.
type Adapter struct {
	Name, Version, Game, GameName, Build string
	Capabilities                         []string
	Scenarios                            []protocol.Scenario
	// Operations counts the operations started with this adapter since it
	// connected: 0 for a game as it launched.
	Operations int
}

// HasCapability reports whether the adapter advertised c.
func (a *Adapter) HasCapability(c string) bool { return slices.Contains(a.Capabilities, c) }

// Connected returns the connected adapter, or nil.
func (c *Controller) Connected() *Adapter {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn == nil || c.conn.scenarios == nil {
		return nil
	}
	h := c.conn.hello
	return &Adapter{Name: h.Adapter.Name, Version: h.Adapter.Version, Game: h.Game.ID, GameName: h.Game.Name, Build: h.Build,
		Capabilities: slices.Clone(h.Capabilities), Scenarios: slices.Clone(c.conn.scenarios), Operations: c.conn.ops}
}

// Disconnect closes the connected adapter's connection (a game launched
// by the controller quits with it) and waits until it is gone.
func (c *Controller) Disconnect(ctx context.Context, why string) error {
	c.mu.Lock()
	a := c.conn
	c.mu.Unlock()
	if a == nil {
		return nil
	}
	a.ws.Close(websocket.StatusNormalClosure, why)
	select {
	case <-a.gone:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// WaitAdapter waits until an adapter shook hands and sent its registry.
func (c *Controller) WaitAdapter(ctx context.Context) (*Adapter, error) {
	for {
		c.mu.Lock()
		ready := c.ready
		c.mu.Unlock()
		select {
		case <-ready:
			if a := c.Connected(); a != nil {
				return a, nil
			}
			// Connected and gone again: wait for the next one.
			time.Sleep(10 * time.Millisecond)
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-c.closed:
			return nil, errors.New("cappy: controller closed")
		}
	}
}

// Rejection is a handshake the controller refused: its reject code and
// message, the adapter's name when its hello said it, and when.
type Rejection struct {
	Code, Message, Adapter string
	At                     time.Time
}

// Rejected returns the latest refused handshake (nil if none) and a
// channel closed at the next one: a launch can give up at once on a game
// whose adapter is refused, instead of waiting for it to time out.
func (c *Controller) Rejected() (*Rejection, <-chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rejection, c.rejected
}

func (c *Controller) noteRejection(code, msg, adapter string) {
	c.log.Warn("adapter refused", "code", code, "message", msg, "adapter", adapter)
	c.mu.Lock()
	c.rejection = &Rejection{Code: code, Message: msg, Adapter: adapter, At: time.Now()}
	close(c.rejected)
	c.rejected = make(chan struct{})
	c.mu.Unlock()
}

// Active is the running operation, or nil.
func (c *Controller) Active() *Operation {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.op
}

// adapterConn is one adapter's WebSocket.
type adapterConn struct {
	ws        *websocket.Conn
	hello     *protocol.Hello
	scenarios []protocol.Scenario // nil until the registry arrives
	writeMu   sync.Mutex
	lastPong  atomic.Int64 // unix nanoseconds, of the last pong that echoed a recent ping
	pinged    atomic.Int64 // number of the last ping sent; its nonce is pingNonce(pinged)
	busy      atomic.Int32 // > 0 while the reader is kept from reading by the controller's own work
	gone      chan struct{}

	ops int // operations started with this adapter, guarded by Controller.mu

	// Agent play, guarded by Controller.mu.
	actions  []protocol.Action       // the latest actions the adapter sent
	inspects map[string]*inspectWait // inspects in flight, by id
	inspectN int
	expired  []string // ids of inspects that timed out: their late answers are ignored

	warnings []string // the adapter's (protocol.MsgWarnings), guarded by Controller.mu
}

// paused runs f on the reader goroutine: work of the controller's own
// (storing a replay, events, an outcome) that keeps the reader from
// reading, so the adapter's pongs wait unread meanwhile. The pinger does
// not hold that time against the adapter: it does not time out while f
// runs, and afterwards the adapter has as long to answer as it had before.
// Calls may nest.
func (a *adapterConn) paused(f func()) {
	if a.busy.Add(1) > 1 {
		defer a.busy.Add(-1)
		f()
		return
	}
	start := time.Now()
	defer func() {
		// The shift before the count: a pinger that sees the reader idle
		// again sees the shifted time.
		a.lastPong.Add(int64(time.Since(start)))
		a.busy.Add(-1)
	}()
	f()
}

func (a *adapterConn) send(ctx context.Context, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	a.writeMu.Lock()
	defer a.writeMu.Unlock()
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return a.ws.Write(wctx, websocket.MessageText, b)
}

// isLoopbackHost reports whether a Host header names this machine.
func isLoopbackHost(host string) bool {
	h := host
	if hh, _, err := net.SplitHostPort(host); err == nil {
		h = hh
	}
	h = strings.Trim(h, "[]")
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

func (c *Controller) originAllowed(origin string) bool {
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	for _, o := range c.cfg.AllowedOrigins {
		if strings.EqualFold(o, origin) || strings.EqualFold(o, u.Host) || strings.EqualFold(o, u.Hostname()) {
			return true
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.origins[strings.ToLower(u.Scheme+"://"+u.Host)] > 0
}

// AllowOrigin allows upgrades from origin (scheme://host:port, exactly)
// until the returned func is called: a browser launch allows its page.
func (c *Controller) AllowOrigin(origin string) (withdraw func()) {
	key := strings.ToLower(origin)
	c.mu.Lock()
	if c.origins == nil {
		c.origins = map[string]int{}
	}
	c.origins[key]++
	c.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			if c.origins[key]--; c.origins[key] <= 0 {
				delete(c.origins, key)
			}
			c.mu.Unlock()
		})
	}
}

// serveHTTP upgrades an adapter's connection after the Host and Origin
// checks: a DNS-rebinding page has a foreign Host; a browser page has a
// foreign Origin.
func (c *Controller) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if !isLoopbackHost(r.Host) {
		http.Error(w, "cappy: Host must be a loopback name", http.StatusForbidden)
		return
	}
	if !c.originAllowed(r.Header.Get("Origin")) {
		http.Error(w, "cappy: Origin not allowed (see allowedOrigins in the capture config)", http.StatusForbidden)
		return
	}
	ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true}) // Origin checked above
	if err != nil {
		return
	}
	ws.SetReadLimit(protocol.CappyMaxMessageBytes)
	// A hijacked connection outlives srv.Shutdown, so Close waits for it
	// through wg; it must not be added once Close is waiting.
	c.mu.Lock()
	select {
	case <-c.closed:
		c.mu.Unlock()
		ws.Close(websocket.StatusGoingAway, "controller shutting down")
		return
	default:
	}
	c.wg.Add(1)
	c.mu.Unlock()
	defer c.wg.Done()
	c.serveAdapter(ws)
}

// serveAdapter runs one adapter connection from its first frame on.
func (c *Controller) serveAdapter(ws *websocket.Conn) {
	defer ws.CloseNow()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-c.closed:
			cancel()
		case <-ctx.Done():
		}
	}()
	a := &adapterConn{ws: ws, gone: make(chan struct{})}
	defer close(a.gone)
	adapter := "" // the adapter's name, once its hello says it
	reject := func(code, msg string) {
		c.noteRejection(code, msg, adapter)
		a.send(ctx, protocol.Reject{Type: "reject", Code: code, Message: msg})
		ws.Close(websocket.StatusPolicyViolation, code)
	}
	// A read with a deadline context would have the library close the
	// socket at the deadline, before a reject could be sent: send it from
	// a timer instead, which also ends the read.
	helloTimer := time.AfterFunc(c.cfg.HelloTimeout, func() {
		reject(protocol.CappyInvalidMessage, fmt.Sprintf("no hello within %s", c.cfg.HelloTimeout))
	})
	typ, data, err := ws.Read(ctx)
	if !helloTimer.Stop() {
		return // the timer rejected it
	}
	switch {
	case err != nil:
		return
	case typ != websocket.MessageText:
		reject(protocol.CappyInvalidMessage, "frames must be JSON text, not binary")
		return
	}
	msg, err := protocol.DecodeAdapterMessage(data)
	switch {
	case err != nil:
		reject(protocol.CappyInvalidMessage, "hello: "+err.Error())
		return
	case msg.Hello == nil:
		reject(protocol.CappyInvalidMessage, fmt.Sprintf("the first message must be hello, not %q", msg.Type))
		return
	}
	h := msg.Hello
	adapter = h.Adapter.Name
	if code, why := checkHello(h, c.token, c.cfg.RequiredCapabilities); code != "" {
		reject(code, why)
		return
	}
	c.mu.Lock()
	if c.conn != nil {
		c.mu.Unlock()
		reject(protocol.CappyOperationBusy, "another adapter is connected")
		return
	}
	a.hello = h
	a.lastPong.Store(time.Now().UnixNano())
	c.conn = a
	c.mu.Unlock()
	c.log.Info("adapter connected", "adapter", h.Adapter.Name, "game", h.Game.ID, "capabilities", h.Capabilities)
	defer c.disconnected(a)

	welcome := protocol.Welcome{Type: "welcome", Protocol: protocol.CappyProtocolVersion, Controller: protocol.NameVersion{Name: "cappy", Version: c.cfg.Version}}
	if h.HasCapability(protocol.CapConfigEvents) && len(c.cfg.Events) > 0 {
		welcome.Events = c.cfg.Events
	}
	if h.HasCapability(protocol.CapWarnings) {
		welcome.Accepts = []string{protocol.MsgWarnings}
	}
	if err := a.send(ctx, welcome); err != nil {
		return
	}
	go c.pinger(ctx, a)
	var buf bytes.Buffer // reused: decoding copies what it keeps
	for {
		typ, r, err := ws.Reader(ctx)
		if err == nil {
			buf.Reset()
			_, err = buf.ReadFrom(r)
		}
		data := buf.Bytes()
		if err != nil {
			if websocket.CloseStatus(err) == websocket.StatusMessageTooBig || strings.Contains(err.Error(), "read limited") {
				c.violation(ctx, a, "", protocol.CappyInvalidMessage, fmt.Sprintf("a message over %d bytes", protocol.CappyMaxMessageBytes))
			}
			return
		}
		if typ != websocket.MessageText {
			c.violation(ctx, a, "", protocol.CappyInvalidMessage, "a binary frame (messages are JSON text)")
			continue
		}
		msg, err := protocol.DecodeAdapterMessage(data)
		if err != nil {
			c.violation(ctx, a, opOf(data), protocol.CappyInvalidMessage, err.Error())
			c.inspectInvalid(a, data, err)
			continue
		}
		if msg.Pong != nil || msg.Event != nil || msg.Frame != nil {
			c.handle(ctx, a, msg) // the hot path; an event pauses only to store, a frame never
			continue
		}
		a.paused(func() { c.handle(ctx, a, msg) })
	}
}

// checkHello is the handshake's verdict on a decoded hello, given the
// session's token and the project's required capabilities: "" when it is
// accepted, else the reject's code and message.
func checkHello(h *protocol.Hello, token string, required []string) (code, msg string) {
	if subtle.ConstantTimeCompare([]byte(h.Token), []byte(token)) != 1 {
		return protocol.CappyUnauthenticated, "wrong session token (use CAPPY_SESSION_TOKEN)"
	}
	if h.Protocol.Min > protocol.CappyProtocolVersion || h.Protocol.Max < protocol.CappyProtocolVersion {
		return protocol.CappyVersionIncompatible, fmt.Sprintf("the controller speaks protocol %d; the adapter %d..%d", protocol.CappyProtocolVersion, h.Protocol.Min, h.Protocol.Max)
	}
	for _, need := range required {
		if !h.HasCapability(need) {
			return protocol.CappyCapabilityMissing, fmt.Sprintf("the project requires capability %q (requiredCapabilities in the capture config), which the game's adapter does not advertise. To add it: %s", need, capabilityFix(h, need))
		}
	}
	return "", ""
}

// opOf digs the op out of a message that did not decode.
func opOf(data []byte) string {
	var v struct {
		Op string `json:"op"`
	}
	json.Unmarshal(data, &v)
	return v.Op
}

// disconnected fails the active operation and forgets the adapter.
func (c *Controller) disconnected(a *adapterConn) {
	c.mu.Lock()
	if c.conn == a {
		c.conn = nil
		select {
		case <-c.ready:
			c.ready = make(chan struct{})
		default:
		}
	}
	op := c.op
	c.mu.Unlock()
	if op != nil {
		c.finish(op, outcome{status: StatusFailed, code: protocol.CappyAdapterDisconnected, message: "the adapter disconnected during the operation"})
	}
	c.log.Info("adapter disconnected", "adapter", a.hello.Adapter.Name)
}

// pinger pings every PingEvery and drops an adapter silent for PongTimeout.
func (c *Controller) pinger(ctx context.Context, a *adapterConn) {
	t := time.NewTicker(c.cfg.PingEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-a.gone:
			return
		case <-t.C:
		}
		// While the reader is busy with the controller's own work, pongs
		// wait unread: that is not the adapter's silence.
		if a.busy.Load() == 0 && time.Since(time.Unix(0, a.lastPong.Load())) > c.cfg.PongTimeout {
			c.mu.Lock()
			op := c.op
			c.mu.Unlock()
			if op != nil {
				c.finish(op, outcome{status: StatusFailed, code: protocol.CappyAdapterUnresponsive, message: fmt.Sprintf("no pong for %s", c.cfg.PongTimeout)})
			}
			a.ws.Close(websocket.StatusPolicyViolation, protocol.CappyAdapterUnresponsive)
			return
		}
		a.send(ctx, protocol.Ping{Type: "ping", Nonce: pingNonce(a.pinged.Add(1))})
	}
}

func pingNonce(n int64) string { return "p" + strconv.FormatInt(n, 10) }

// pongWindow is how many of the latest pings a pong may answer: an answer
// to an older ping, or to none, says nothing about the adapter now.
const pongWindow = 8

// echoesRecentPing reports whether nonce is one of the latest pings'.
func (a *adapterConn) echoesRecentPing(nonce string) bool {
	k, err := strconv.ParseInt(strings.TrimPrefix(nonce, "p"), 10, 64)
	if err != nil || !strings.HasPrefix(nonce, "p") || pingNonce(k) != nonce {
		return false
	}
	last := a.pinged.Load()
	return k >= 1 && k <= last && k > last-pongWindow
}

// violation tells the adapter what it did wrong and fails the active
// operation when the message was about it (or named no operation, or one
// that is not active). The error then names the active operation, so that
// the adapter stops working on what the controller failed.
func (c *Controller) violation(ctx context.Context, a *adapterConn, op, code, msg string) {
	c.log.Warn("adapter protocol violation", "code", code, "message", msg, "op", op)
	c.mu.Lock()
	active := c.op
	_, late := c.finished[op]
	c.mu.Unlock()
	fail := active != nil && !late && (op == "" || op == active.ID)
	errOp := op
	if fail {
		errOp = active.ID
	}
	a.send(ctx, protocol.CappyError{Type: "error", Code: code, Message: msg, Op: errOp})
	if fail {
		a.paused(func() {
			c.finish(active, outcome{status: StatusFailed, code: code, message: "the adapter sent " + msg})
		})
	}
}

// over tells the adapter that an operation it still talks about has ended
// (cancelled, timed out): what it sends for it is moot.
func (c *Controller) over(ctx context.Context, a *adapterConn, id string) {
	a.send(ctx, protocol.CappyError{Type: "error", Code: protocol.CappyOutOfState, Message: "operation " + id + " is over", Op: id})
}

// handle dispatches one decoded message.
func (c *Controller) handle(ctx context.Context, a *adapterConn, m *protocol.AdapterMessage) {
	switch {
	case m.Pong != nil:
		if a.echoesRecentPing(m.Pong.Nonce) {
			a.lastPong.Store(time.Now().UnixNano())
		} else {
			c.log.Debug("adapter pong ignored: it echoes no recent ping", "nonce", sanitize.Line(m.Pong.Nonce, 64))
		}
		return
	case m.Scenarios != nil:
		c.mu.Lock()
		first := a.scenarios == nil
		a.scenarios = m.Scenarios.Scenarios
		if a.scenarios == nil {
			a.scenarios = []protocol.Scenario{}
		}
		if first && c.conn == a {
			close(c.ready)
		}
		c.mu.Unlock()
		return
	case m.Hello != nil:
		c.violation(ctx, a, "", protocol.CappyOutOfState, "a second hello")
		return
	case m.Actions != nil:
		if !a.hello.HasCapability(protocol.CapInput) {
			c.violation(ctx, a, "", protocol.CappyOutOfState, fmt.Sprintf("actions, but the adapter does not advertise %q", protocol.CapInput))
			return
		}
		c.mu.Lock()
		a.actions = m.Actions.Actions
		c.mu.Unlock()
		return
	case m.InspectResult != nil:
		c.inspectAnswer(ctx, a, m.InspectResult)
		return
	case m.Warnings != nil:
		c.adapterWarnings(a, m.Warnings)
		return
	}
	// An operation message: most often about the active one.
	id := m.Op()
	c.mu.Lock()
	op := c.op
	active := op != nil && op.ID == id
	late := false
	if !active {
		_, late = c.finished[id]
	}
	c.mu.Unlock()
	switch {
	case active:
		op.handle(ctx, c, a, m)
	case late:
		c.over(ctx, a, id)
	default:
		c.violation(ctx, a, "", protocol.CappyOutOfState, fmt.Sprintf("%s for operation %q, which is not the active one", m.Type, id))
	}
}
