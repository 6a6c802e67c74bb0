package coord

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/crosscode/crosscode-mcp/internal/glob"
	"github.com/crosscode/crosscode-mcp/protocol"
	"github.com/crosscode/crosscode-mcp/store"
)

// Holder is a claim of another actor on a path an agent is about to edit.
type Holder struct {
	store.Conflict
	// Pending: the claim waits in this machine's outbox (remote mode): the
	// service has not ordered it yet, so it may still be denied.
	Pending bool
}

// Holders returns the claims of actors other than actor, active at now
// (a queued claim once granted; not one still waiting),
// that cover path (a repository-relative file path as it is on disk, not
// a glob): those check_conflicts reports for it, found the same way. In
// remote mode st is the mirror, and the claims other actors of this
// machine queued in its outbox, which the mirror does not hold yet, are
// added as Pending. It reads only the local database.
func Holders(ctx context.Context, st *store.Store, workspace, actor, path string, now time.Time) ([]Holder, error) {
	if err := projectIfBehind(ctx, st, workspace); err != nil {
		return nil, err
	}
	pattern := glob.Escape(path)
	cs, err := st.ConflictingClaims(ctx, workspace, []string{pattern}, actor, now)
	if err != nil {
		return nil, err
	}
	out := make([]Holder, 0, len(cs))
	for _, c := range cs {
		if !c.Queued() { // a claim that waits holds nothing yet
			out = append(out, Holder{Conflict: c})
		}
	}
	entries, _, err := st.Unmirrored(ctx, workspace, protocol.KindClaim)
	if err != nil || len(entries) == 0 {
		return out, err
	}
	// Replay the outbox's claims in order: a later release ends one.
	queued := map[string]*protocol.Claim{}
	var order []string
	for _, en := range entries {
		e, err := protocol.DecodeEnvelope(en.Body)
		if err != nil {
			continue
		}
		cl, ok := e.Payload.(*protocol.Claim)
		if !ok {
			continue
		}
		if e.Type == protocol.EventClaimReleased {
			delete(queued, cl.ID)
			continue
		}
		if _, seen := queued[cl.ID]; !seen {
			order = append(order, cl.ID)
		}
		queued[cl.ID] = cl
	}
	var query *glob.Set
	for _, id := range order {
		cl := queued[id]
		if cl == nil || cl.ActorID == actor || !cl.ExpiresAt.After(now) || containsClaim(out, id) {
			continue
		}
		if query == nil {
			query = glob.Compile(pattern)
		}
		if query.OverlapsAny(cl.Patterns) {
			out = append(out, Holder{Conflict: store.Conflict{ClaimID: cl.ID, Actor: cl.ActorID, Patterns: cl.Patterns, Exclusive: cl.Exclusive, ExpiresAt: cl.ExpiresAt}, Pending: true})
		}
	}
	return out, nil
}

func containsClaim(hs []Holder, id string) bool {
	for _, h := range hs {
		if h.ClaimID == id {
			return true
		}
	}
	return false
}

// projectIfBehind brings the projections up to the log's head when a
// process that does not project (or the mirror) logged past them: a write
// transaction, so only then.
func projectIfBehind(ctx context.Context, st *store.Store, workspace string) error {
	through, err := st.ProjectedThrough(ctx, workspace)
	if err != nil {
		return err
	}
	head, err := st.Head(ctx, workspace)
	if err != nil || head <= through {
		return err
	}
	return st.Project(ctx, workspace)
}

// HookClaimReason starts the reason of every claim a hook takes, so a
// later edit knows which claims it may renew.
const HookClaimReason = "editing (taken by the crosscode-mcp hook)"

// EditClaim is what ClaimForEdit did.
type EditClaim struct {
	// Held is the actor's claim that covers the path: one it had, the one
	// taken or the one renewed; nil when Result says the claim was denied.
	Held *store.Entity
	// Result is the claim written, if one was (taken or renewed).
	Result *ClaimResult
}

// ClaimForEdit makes sure this actor holds a claim covering path (a
// repository-relative file path) before an edit: a claim it holds already
// serves (a hook's own claim is renewed for ttl once less than half of
// ttl is left); else it takes an exclusive claim for ttl, through Claim,
// as the claim tool does.
func (c *Coordinator) ClaimForEdit(ctx context.Context, path string, ttl time.Duration) (*EditClaim, error) {
	now := c.cfg.Now()
	mine, err := c.entities(ctx, store.EntityQuery{Kind: protocol.KindClaim, Actor: c.cfg.Actor, Status: liveClaims, LiveAt: now, Limit: 2 * store.MaxActiveClaims})
	if err != nil {
		return nil, err
	}
	query := glob.Compile(glob.Escape(path))
	for _, ent := range mine {
		var cl protocol.Claim
		if json.Unmarshal(ent.Body, &cl) != nil || !query.OverlapsAny(cl.Patterns) || !holding(ClaimState(ent, now)) {
			continue
		}
		if !strings.HasPrefix(cl.Reason, HookClaimReason) || ent.ExpiresAt.Sub(now) >= ttl/2 {
			return &EditClaim{Held: ent}, nil
		}
		res, err := c.Claim(ctx, cl.Patterns, true, cl.Reason, ttl, ent.ID)
		if err != nil {
			return nil, err
		}
		if res.Status == "denied" {
			// Others wait for these paths (nobody jumps the line, a renewal
			// neither): the claim held serves until its lease ends.
			return &EditClaim{Held: ent, Result: res}, nil
		}
		return c.editClaim(ctx, res)
	}
	res, err := c.Claim(ctx, []string{path}, true, HookClaimReason, ttl, "")
	if err != nil {
		return nil, err
	}
	return c.editClaim(ctx, res)
}

func (c *Coordinator) editClaim(ctx context.Context, res *ClaimResult) (*EditClaim, error) {
	out := &EditClaim{Result: res}
	if res.Status == "denied" {
		return out, nil
	}
	ent, err := c.entity(ctx, protocol.KindClaim, res.Claim.ID)
	if err != nil {
		return nil, err
	}
	out.Held = ent
	return out, nil
}
