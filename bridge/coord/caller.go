package coord

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/crosscode/crosscode-mcp/protocol"
)

// Caller is who makes one call when one Coordinator serves many agent
// sessions: the service's MCP endpoint (MCP over HTTP) keeps a Coordinator
// per workspace, and each call names its session's actor, replica (one
// per MCP session), session id and agent identity.
type Caller struct {
	Actor, Replica, Session string
	Agent                   protocol.Agent
	// Key, if set, makes the call's writes idempotent: the n-th write of
	// the call is logged under Key#n once, and a retry of the call (the
	// same Key) gets the original write back instead of a second one.
	Key string
}

type callerKey struct{}

// call is a Caller in a call's context, counting the call's writes.
type call struct {
	Caller
	writes atomic.Int32
}

// WithCaller returns ctx carrying the caller of one call: every
// Coordinator method called with it acts as that caller.
func WithCaller(ctx context.Context, cl Caller) context.Context {
	cl.Agent.AdapterID = AdapterID
	return context.WithValue(ctx, callerKey{}, &call{Caller: cl})
}

func callOf(ctx context.Context) *call {
	c, _ := ctx.Value(callerKey{}).(*call)
	return c
}

// Me is who acts in a call: its caller (WithCaller), else the session the
// Coordinator was made for.
type Me struct {
	Actor, Replica, Session string

	caller bool // from WithCaller
}

// Me is who acts in a call made with ctx.
func (c *Coordinator) Me(ctx context.Context) Me { return c.me(ctx) }

func (c *Coordinator) me(ctx context.Context) Me {
	if cl := callOf(ctx); cl != nil {
		return Me{Actor: cl.Actor, Replica: cl.Replica, Session: cl.Session, caller: true}
	}
	return Me{Actor: c.cfg.Actor, Replica: c.cfg.Replica, Session: c.cfg.Session}
}

// nextKey is the idempotency key of the call's next write ("" for none).
func nextKey(ctx context.Context) string {
	cl := callOf(ctx)
	if cl == nil || cl.Key == "" {
		return ""
	}
	return fmt.Sprintf("%s#%d", cl.Key, cl.writes.Add(1))
}

// original returns what a write logged: def, or when the write was a
// retry's (its key was logged before), the payload logged then.
func original[T protocol.Payload](pub *Published, def T) T {
	if pub != nil && pub.Envelope != nil {
		if p, ok := pub.Envelope.Payload.(T); ok {
			return p
		}
	}
	return def
}
