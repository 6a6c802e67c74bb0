package cappytest

import (
	"context"
	"testing"
	"time"

	"github.com/crosscode/crosscode-mcp/adapters/go/cappy"
	"github.com/crosscode/crosscode-mcp/protocol"
)

// Harness runs cappy.Run for one game against a new Controller, for one
// test: the test plays the controller through Peer. Its helpers fail the
// test on an error.
type Harness struct {
	T    testing.TB
	Ctx  context.Context // ends with the test, or after 30 s
	Ctl  *Controller
	Peer *Peer
	// RunErr receives what Run returned. A test that takes it puts it
	// back, for the cleanup to find.
	RunErr chan error
	// Stop cancels Run's context.
	Stop context.CancelFunc
}

// Start starts cappy.Run(g) against a new Controller and accepts its
// connection. At the end of the test it stops Run and waits (up to 10 s)
// for it to return.
func Start(t testing.TB, g cappy.Game) *Harness {
	t.Helper()
	return StartWith(t, g, nil)
}

// StartWith is Start with adapter options (nil: the defaults); their
// Endpoint and Token are this controller's.
func StartWith(t testing.TB, g cappy.Game, o *cappy.Options) *Harness {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	ctl, err := NewController()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ctl.Close() })
	runCtx, stop := context.WithCancel(ctx)
	h := &Harness{T: t, Ctx: ctx, Ctl: ctl, RunErr: make(chan error, 1), Stop: stop}
	opts := ctl.Options()
	if o != nil {
		withEndpoint := *o
		withEndpoint.Endpoint, withEndpoint.Token = opts.Endpoint, opts.Token
		if withEndpoint.DialTimeout == 0 {
			withEndpoint.DialTimeout = opts.DialTimeout
		}
		opts = &withEndpoint
	}
	go func() { h.RunErr <- cappy.Run(runCtx, g, opts) }()
	h.Peer, err = ctl.Accept(ctx)
	if err != nil {
		stop()
		<-h.RunErr
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Keep reading so that Run's closing handshake completes.
		go func() {
			for {
				if _, _, err := h.Peer.Conn.Read(context.Background()); err != nil {
					return
				}
			}
		}()
		stop()
		select {
		case <-h.RunErr:
		case <-time.After(10 * time.Second):
			t.Error("cappytest: Run did not return after its context was cancelled")
		}
		h.Peer.Conn.CloseNow()
	})
	return h
}

// Handshake reads hello, answers welcome and reads the registry.
func (h *Harness) Handshake() (*protocol.Hello, *protocol.Scenarios) {
	h.T.Helper()
	hello, sc, err := h.Peer.Handshake(h.Ctx, h.Ctl.Token)
	if err != nil {
		h.T.Fatal(err)
	}
	return hello, sc
}

// Send sends messages back to back (see Peer.Send).
func (h *Harness) Send(msgs ...any) {
	h.T.Helper()
	if err := h.Peer.Send(h.Ctx, msgs...); err != nil {
		h.T.Fatal(err)
	}
}

// Expect reads the next message, which must be of type typ (and about op,
// when op != "").
func (h *Harness) Expect(typ, op string) *protocol.AdapterMessage {
	h.T.Helper()
	m, err := h.Peer.Expect(h.Ctx, typ, op)
	if err != nil {
		h.T.Fatal(err)
	}
	return m
}

// Collect reads op's events until its completed or failed.
func (h *Harness) Collect(op string) ([]protocol.Event, *protocol.AdapterMessage) {
	h.T.Helper()
	evs, end, err := h.Peer.Collect(h.Ctx, op)
	if err != nil {
		h.T.Fatal(err)
	}
	return evs, end
}

// CollectCapture reads op's events and frames until its completed or
// failed, checking frames against req (see Peer.CollectCapture).
func (h *Harness) CollectCapture(op string, req *protocol.FramesRequest) *Capture {
	h.T.Helper()
	c, err := h.Peer.CollectCapture(h.Ctx, op, req)
	if err != nil {
		h.T.Fatal(err)
	}
	return c
}
