// Package cappytest is a minimal, scriptable Cappy controller for testing
// game adapters: a WebSocket server on 127.0.0.1 whose test drives the
// protocol by hand and decodes what the adapter sends with the
// controller's strict rules (protocol.DecodeAdapterMessage).
package cappytest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/crosscode/crosscode-mcp/adapters/go/cappy"
	"github.com/crosscode/crosscode-mcp/protocol"
)

// Controller accepts adapter connections on a loopback port.
type Controller struct {
	Endpoint string // ws://127.0.0.1:PORT
	Token    string // the session token adapters must present

	srv   *http.Server
	peers chan *Peer
}

// NewController listens on 127.0.0.1:0.
func NewController() (*Controller, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	c := &Controller{
		Endpoint: "ws://" + l.Addr().String(),
		Token:    "test-token",
		peers:    make(chan *Peer, 8),
	}
	c.srv = &http.Server{Handler: http.HandlerFunc(c.accept), ReadHeaderTimeout: 5 * time.Second}
	go c.srv.Serve(l)
	return c, nil
}

// Options returns adapter options pointing at this controller.
func (c *Controller) Options() *cappy.Options {
	return &cappy.Options{Endpoint: c.Endpoint, Token: c.Token, DialTimeout: 5 * time.Second}
}

// Close stops listening (accepted connections stay open; close their Peers).
func (c *Controller) Close() error { return c.srv.Close() }

func (c *Controller) accept(w http.ResponseWriter, r *http.Request) {
	cw := &corkWriter{ResponseWriter: w}
	conn, err := websocket.Accept(cw, r, nil)
	if err != nil {
		return
	}
	conn.SetReadLimit(protocol.CappyMaxMessageBytes)
	c.peers <- &Peer{Conn: conn, cork: cw.conn}
}

// Accept waits for the next adapter connection.
func (c *Controller) Accept(ctx context.Context) (*Peer, error) {
	select {
	case p := <-c.peers:
		return p, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("cappytest: no adapter connected: %w", ctx.Err())
	}
}

// Peer is one adapter connection, seen from the controller.
type Peer struct {
	Conn *websocket.Conn
	// Actions are the actions the adapter sent after the registry, when
	// its hello advertised protocol.CapInput (read by Handshake).
	Actions *protocol.Actions
	cork    *corkConn
}

// Send writes messages (structs or raw JSON) back to back, as one TCP
// write: the adapter receives them in the same read.
func (p *Peer) Send(ctx context.Context, msgs ...any) error {
	p.cork.cork()
	for _, m := range msgs {
		b, ok := m.([]byte)
		if !ok {
			var err error
			if b, err = json.Marshal(m); err != nil {
				p.cork.uncork()
				return err
			}
		}
		if err := p.Conn.Write(ctx, websocket.MessageText, b); err != nil {
			p.cork.uncork()
			return err
		}
	}
	return p.cork.uncork()
}

// Recv reads and strictly decodes the adapter's next message.
func (p *Peer) Recv(ctx context.Context) (*protocol.AdapterMessage, error) {
	typ, b, err := p.Conn.Read(ctx)
	if err != nil {
		return nil, err
	}
	if typ != websocket.MessageText {
		return nil, errors.New("cappytest: binary frame from the adapter")
	}
	m, err := protocol.DecodeAdapterMessage(b)
	if err != nil {
		return nil, fmt.Errorf("cappytest: invalid adapter message %s: %w", b, err)
	}
	return m, nil
}

// Expect reads the next message and checks its type (and op, when op != "").
func (p *Peer) Expect(ctx context.Context, typ, op string) (*protocol.AdapterMessage, error) {
	m, err := p.Recv(ctx)
	if err != nil {
		return nil, fmt.Errorf("cappytest: waiting for %s: %w", typ, err)
	}
	if m.Type != typ {
		return m, fmt.Errorf("cappytest: got %s (%s), expected %s", m.Type, describe(m), typ)
	}
	if op != "" && m.Op() != op {
		return m, fmt.Errorf("cappytest: %s is for op %q, expected %q", typ, m.Op(), op)
	}
	return m, nil
}

func describe(m *protocol.AdapterMessage) string {
	if m.Failed != nil {
		return m.Failed.Code + ": " + m.Failed.Message
	}
	return m.Op()
}

// Handshake reads hello, checks the token, sends welcome and reads the
// scenario registry, and then, from an adapter that advertised
// protocol.CapInput, its actions (Peer.Actions).
func (p *Peer) Handshake(ctx context.Context, token string) (*protocol.Hello, *protocol.Scenarios, error) {
	return p.HandshakeWelcome(ctx, token, Welcome())
}

// HandshakeWelcome is Handshake with welcome w (e.g. one with Events).
func (p *Peer) HandshakeWelcome(ctx context.Context, token string, w *protocol.Welcome) (*protocol.Hello, *protocol.Scenarios, error) {
	m, err := p.Expect(ctx, "hello", "")
	if err != nil {
		return nil, nil, err
	}
	if m.Hello.Token != token {
		return m.Hello, nil, fmt.Errorf("cappytest: hello token %q, expected %q", m.Hello.Token, token)
	}
	if err := p.Send(ctx, w); err != nil {
		return m.Hello, nil, err
	}
	s, err := p.Expect(ctx, "scenarios", "")
	if err != nil {
		return m.Hello, nil, err
	}
	if m.Hello.HasCapability(protocol.CapInput) {
		a, err := p.Expect(ctx, "actions", "")
		if err != nil {
			return m.Hello, s.Scenarios, err
		}
		p.Actions = a.Actions
	}
	return m.Hello, s.Scenarios, nil
}

// Collect reads events of op until completed or failed, answering nothing.
func (p *Peer) Collect(ctx context.Context, op string) ([]protocol.Event, *protocol.AdapterMessage, error) {
	var evs []protocol.Event
	for {
		m, err := p.Recv(ctx)
		if err != nil {
			return evs, nil, err
		}
		switch {
		case m.Op() != op:
			return evs, m, fmt.Errorf("cappytest: %s for op %q while collecting %q", m.Type, m.Op(), op)
		case m.Event != nil:
			evs = append(evs, *m.Event)
		case m.Completed != nil, m.Failed != nil:
			return evs, m, nil
		default:
			return evs, m, fmt.Errorf("cappytest: unexpected %s while collecting %q", m.Type, op)
		}
	}
}

// Close closes the connection normally.
func (p *Peer) Close() error { return p.Conn.Close(websocket.StatusNormalClosure, "") }

// Welcome is the controller's welcome.
func Welcome() *protocol.Welcome {
	return &protocol.Welcome{Type: "welcome", Protocol: protocol.CappyProtocolVersion, Controller: protocol.NameVersion{Name: "cappytest", Version: "0"}}
}

// corkWriter hands websocket.Accept a connection whose writes can be held
// back and released as one.
type corkWriter struct {
	http.ResponseWriter
	conn *corkConn
}

func (w *corkWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	h, ok := w.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, errors.New("not a hijacker")
	}
	nc, brw, err := h.Hijack()
	if err != nil {
		return nil, nil, err
	}
	w.conn = &corkConn{Conn: nc}
	return w.conn, bufio.NewReadWriter(brw.Reader, bufio.NewWriter(w.conn)), nil
}

type corkConn struct {
	net.Conn
	mu     sync.Mutex
	corked bool
	held   []byte
}

func (c *corkConn) Write(b []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.corked {
		c.held = append(c.held, b...)
		return len(b), nil
	}
	return c.Conn.Write(b)
}

func (c *corkConn) cork() {
	c.mu.Lock()
	c.corked = true
	c.mu.Unlock()
}

func (c *corkConn) uncork() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.corked = false
	held := c.held
	c.held = nil
	if len(held) == 0 {
		return nil
	}
	_, err := c.Conn.Write(held)
	return err
}
