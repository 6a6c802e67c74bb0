package coord

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/crosscode/crosscode-mcp/internal/ids"
	"github.com/crosscode/crosscode-mcp/protocol"
	"github.com/crosscode/crosscode-mcp/store"
)

// Published is the outcome of a write.
type Published struct {
	Envelope *protocol.Envelope
	// Acknowledged: the workspace log holds it at ServerSequence. In local
	// mode always; in remote mode once the service answered. Otherwise it
	// is queued: committed to the local outbox, and uploaded, in order and
	// exactly once, when the service answers.
	Acknowledged   bool
	ServerSequence int64
	IngestedAt     time.Time
}

// RefusedError is a write refused by a rule of the protocol
// (ID_CONFLICT, CLIENT_SEQUENCE_REGRESSION, UNKNOWN_ENTITY, SCHEMA_INVALID).
type RefusedError struct {
	Code    protocol.ErrorCode
	Message string
}

func (e *RefusedError) Error() string { return string(e.Code) + ": " + e.Message }

// InputError is a request the agent must change: it names what is wrong.
type InputError struct{ Message string }

func (e *InputError) Error() string { return e.Message }

func inputErr(format string, args ...any) error {
	return &InputError{Message: fmt.Sprintf(format, args...)}
}

// idPrefix is the id prefix of each kind's entities.
var idPrefix = map[protocol.Kind]string{
	protocol.KindTransaction: "txn", protocol.KindTask: "tsk", protocol.KindClaim: "clm",
	protocol.KindHandoff: "hnd", protocol.KindIntent: "int", protocol.KindValidation: "val",
}

// NewID returns a fresh, time-ordered id for an entity of kind.
func NewID(kind protocol.Kind) string { return ids.New(idPrefix[kind]) }

// envelope wraps payload in an envelope stamped with this session's
// identity and the calling agent's (see WithAgent).
func (c *Coordinator) envelope(ctx context.Context, t protocol.EventType, p protocol.Payload) *protocol.Envelope {
	agent := c.Agent(ctx)
	return &protocol.Envelope{
		ID: p.EntityID(), SchemaVersion: protocol.SchemaVersion, WorkspaceID: c.cfg.Workspace,
		ReplicaID: c.me(ctx).Replica, ActorID: c.me(ctx).Actor, SessionID: c.me(ctx).Session, Agent: &agent,
		Type: t, CreatedAt: c.cfg.Now().UTC().Truncate(time.Millisecond), Payload: p,
	}
}

// Publish commits an envelope of type t carrying p, durably, before it
// returns: in local mode into the shared workspace log (with its
// serverSequence and the projections updated), in remote mode into the
// outbox, waiting up to AckWait for the service's receipt.
func (c *Coordinator) Publish(ctx context.Context, t protocol.EventType, p protocol.Payload) (*Published, error) {
	env := c.envelope(ctx, t, p)
	if err := env.Validate(); err != nil {
		return nil, &InputError{Message: err.Error()}
	}
	if c.rem != nil {
		return c.rem.publish(ctx, env)
	}
	if c.svc != nil {
		return c.publishToService(ctx, env)
	}
	res, err := c.local.IngestItem(ctx, store.Item{Workspace: c.cfg.Workspace, Envelope: env, NextSequence: true})
	if err := ingestErr(res, err); err != nil {
		return nil, err
	}
	if res.Logged != nil {
		c.loggedOwn(res.Receipt.ServerSequence)
	}
	return &Published{Envelope: env, Acknowledged: true, ServerSequence: res.Receipt.ServerSequence, IngestedAt: res.Receipt.IngestedAt}, nil
}

// maxOwn bounds how many of its own writes a session remembers for its
// news (see ownFrom): past that, the oldest are read as any others.
const maxOwn = 64

// loggedOwn records that this session's write is in the log at seq (local
// mode): the session's news need not read it back (it is never news).
func (c *Coordinator) loggedOwn(seq int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if seq <= c.newsFrom {
		return
	}
	if i, found := slices.BinarySearch(c.own, seq); !found {
		c.own = slices.Insert(c.own, i, seq)
	}
	if len(c.own) > maxOwn {
		c.own = slices.Delete(c.own, 0, len(c.own)-maxOwn)
	}
}

// ownFrom returns from advanced over this session's own writes that
// follow it in the log (from+1, from+2, ... while they are its own): the
// news starts after them, as it would skip them.
func (c *Coordinator) ownFrom(from int64) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	i, _ := slices.BinarySearch(c.own, from+1)
	for ; i < len(c.own) && c.own[i] == from+1; i++ {
		from++
	}
	return from
}

// ingestErr is the error of an ingest (the local store's or the
// service's): a rule the envelope broke as a RefusedError, anything else
// as a failed publish.
func ingestErr(res store.Result, err error) error {
	if err == nil {
		err = res.Err
	}
	var rule *store.RuleError
	switch {
	case errors.As(err, &rule):
		return &RefusedError{Code: rule.Code, Message: rule.Message}
	case err != nil:
		return fmt.Errorf("publish: %w", err)
	}
	return nil
}
