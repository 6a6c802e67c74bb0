package coord

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/crosscode/crosscode-mcp/protocol"
	"github.com/crosscode/crosscode-mcp/store"
)

// Claim lifetimes.
const (
	DefaultClaimTTL  = 30 * time.Minute
	MaxClaimTTL      = 8 * time.Hour
	DefaultIntentTTL = store.IntentTTL
)

// NormalizePatterns cleans agent-supplied paths and globs: leading "./"
// and "/" are dropped, "\" becomes "/", and a trailing "/" means the
// whole directory ("dir/" -> "dir/**"). Each must then be a valid,
// repository-relative glob.
func NormalizePatterns(in []string) ([]string, error) {
	if len(in) == 0 {
		return nil, inputErr("give at least one path or glob, e.g. \"src/game/boss.gd\" or \"assets/boss/**\"")
	}
	out := make([]string, 0, len(in))
	for _, p := range in {
		q := strings.TrimSpace(strings.ReplaceAll(p, `\`, "/"))
		for strings.HasPrefix(q, "./") {
			q = q[2:]
		}
		q = strings.TrimLeft(q, "/")
		if strings.HasSuffix(q, "/") {
			q += "**"
		}
		if q == "" || q == "." {
			q = "**"
		}
		if !doublestar.ValidatePattern(q) || slices.Contains(strings.Split(q, "/"), "..") {
			return nil, inputErr("%q is not a repository-relative path or glob (use / separators, no ..; ** spans directories)", p)
		}
		if !slices.Contains(out, q) {
			out = append(out, q)
		}
	}
	return out, nil
}

func ttlOr(d, def, maxD time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return min(d, maxD)
}

// PublishIntent announces what this actor is about to work on.
func (c *Coordinator) PublishIntent(ctx context.Context, summary string, paths []string, taskID string, ttl time.Duration) (*Published, error) {
	if strings.TrimSpace(summary) == "" {
		return nil, inputErr("summary is required: one line on what you are about to do")
	}
	pats, err := NormalizePatterns(paths)
	if err != nil {
		return nil, err
	}
	now := c.cfg.Now().UTC().Truncate(time.Millisecond)
	exp := now.Add(ttlOr(ttl, DefaultIntentTTL, 24*time.Hour))
	return c.Publish(ctx, protocol.EventIntentPublished, &protocol.Intent{
		ID: NewID(protocol.KindIntent), WorkspaceID: c.cfg.Workspace, ActorID: c.me(ctx).Actor, ReplicaID: c.me(ctx).Replica,
		Summary: summary, Paths: pats, TaskID: taskID, CreatedAt: now, ExpiresAt: &exp,
	})
}

// ClaimResult is the outcome of a claim.
type ClaimResult struct {
	*Published
	Claim *protocol.Claim
	// Status is "granted", "queued" (waiting its turn), "denied" or
	// "wait_expired" once the log ordered the claim ("released" if another
	// call withdrew it meanwhile), or "pending" while it waits in the
	// outbox (then Likely tells what the local copy of the log predicts).
	Status string
	Likely string
	// Conflicts are the claims that denied it (or would), or, while it is
	// queued, what it waits for: claims that hold its paths, and claims
	// queued ahead of it; once its wait ended, those that still do.
	Conflicts []store.Conflict
	// Limit is set when the actor holds too many active claims.
	Limit int
	// Denial is the log's reason for a denial: store.DenialConflict,
	// DenialLimit or DenialDeadlock (then Cycle names the cycle).
	Denial string
	Cycle  []store.WaitEdge
	// Renewed is the claim this one replaced.
	Renewed string
	// ExpiresAt is when the lease ends: a claim granted after waiting
	// holds its lease from the grant. GrantedAt is when it was granted
	// (its ingest, unless it waited).
	ExpiresAt time.Time
	GrantedAt time.Time
	Waited    bool // granted after waiting its turn
	// WaitUntil is when a queued claim's wait ends; Position is its place
	// in line (1: first among the claims waiting for those paths).
	WaitUntil time.Time
	Position  int
}

// ClaimRequest is a claim to make (see Request).
type ClaimRequest struct {
	Patterns  []string
	Exclusive bool
	Reason    string
	// TTL is the lease (default 30 minutes, at most MaxClaimTTL); it starts
	// when the claim is granted.
	TTL time.Duration
	// Renew names one of this actor's active claims to renew.
	Renew string
	// Wait, if set, queues the claim instead of denying it on a
	// conflict, for at most Wait (protocol.MaxClaimWait) from its ingest.
	Wait time.Duration
	// CallWait is how long the call itself waits for a queued (or pending)
	// claim's outcome; at most Wait. 0: it answers at once.
	CallWait time.Duration
	// Progress, if set, is called at least every ProgressEvery while the
	// call waits, with the claim as it stands.
	Progress func(waited time.Duration, res *ClaimResult)
}

// Claim reserves patterns for this actor for ttl (default 30 minutes).
// With renew set to one of this actor's active claims, it claims the same
// patterns anew (for the new ttl) and, when granted, releases the old one.
func (c *Coordinator) Claim(ctx context.Context, patterns []string, exclusive bool, reason string, ttl time.Duration, renew string) (*ClaimResult, error) {
	return c.Request(ctx, ClaimRequest{Patterns: patterns, Exclusive: exclusive, Reason: reason, TTL: ttl, Renew: renew})
}

// Request makes a claim (see ClaimRequest): granted or denied at once,
// or, with Wait, queued; then the call waits up to CallWait for its turn.
func (c *Coordinator) Request(ctx context.Context, r ClaimRequest) (*ClaimResult, error) {
	patterns, exclusive, reason, ttl, renew := r.Patterns, r.Exclusive, r.Reason, r.TTL, r.Renew
	// Cancelling the call cuts its wait short, never the claim: it is
	// made (or not) and answered as it stands.
	waitCtx := ctx
	ctx = context.WithoutCancel(ctx)
	if r.Wait < 0 || r.Wait > protocol.MaxClaimWait {
		return nil, inputErr("waitSeconds must be between 0 and %d", int(protocol.MaxClaimWait.Seconds()))
	}
	var releasedFirst string
	var renewed *store.Entity // the claim to release once the new one is granted
	if renew != "" {
		old, err := c.entity(ctx, protocol.KindClaim, renew)
		if err != nil {
			return nil, inputErr("no claim %q to renew; list yours with workspace_status", renew)
		}
		if st := ClaimState(old, c.cfg.Now()); old.Actor != c.me(ctx).Actor || !holding(st) {
			return nil, inputErr("claim %q is not an active claim of yours (it is %s, held by %s)", renew, st, old.Actor)
		}
		var oc protocol.Claim
		if err := json.Unmarshal(old.Body, &oc); err != nil {
			return nil, err
		}
		if len(patterns) == 0 {
			patterns = oc.Patterns
		}
		if reason == "" {
			reason = oc.Reason
		}
		// At the active-claim limit the new lease would be denied: release
		// the old one first (others may claim the paths in between).
		held, err := c.countEntities(ctx, store.EntityQuery{Kind: protocol.KindClaim, Actor: c.me(ctx).Actor, Status: liveClaims, LiveAt: c.cfg.Now()})
		if err != nil {
			return nil, err
		}
		if held >= store.MaxActiveClaims {
			if _, err := c.release(ctx, old, "renewing at the claim limit"); err != nil {
				return nil, err
			}
			releasedFirst, renew = renew, ""
		} else {
			renewed = old
		}
	}
	pats, err := NormalizePatterns(patterns)
	if err != nil {
		return nil, err
	}
	now := c.cfg.Now().UTC().Truncate(time.Millisecond)
	cl := &protocol.Claim{
		ID: NewID(protocol.KindClaim), WorkspaceID: c.cfg.Workspace, ActorID: c.me(ctx).Actor, ReplicaID: c.me(ctx).Replica,
		Patterns: pats, Exclusive: exclusive, Reason: reason, CreatedAt: now, ExpiresAt: now.Add(ttlOr(ttl, DefaultClaimTTL, MaxClaimTTL)),
	}
	if r.Wait > 0 {
		w := now.Add(r.Wait.Truncate(time.Millisecond))
		cl.WaitUntil = &w
	}
	pub, err := c.Publish(ctx, protocol.EventClaimCreated, cl)
	if err != nil {
		return nil, err
	}
	cl = original(pub, cl)
	res := &ClaimResult{Published: pub, Claim: cl, Status: "pending", Renewed: renew}
	if releasedFirst != "" {
		res.Renewed = releasedFirst
	}
	if err := c.decided(ctx, res); err != nil {
		return nil, err
	}
	if r.CallWait > 0 && (res.Status == "queued" || res.Status == "pending") {
		if err := c.await(waitCtx, ctx, res, min(r.CallWait, r.Wait), r.Progress); err != nil {
			return nil, err
		}
	}
	if renewed != nil && res.Status == "granted" {
		if _, err := c.release(ctx, renewed, "renewed as "+cl.ID); err != nil {
			c.cfg.Logger.Warn("release renewed claim", "claim", renewed.ID, "err", err)
		}
	}
	c.told(cl.ID, res.Status)
	return res, nil
}

// decided fills in res from what the log decided of its claim, if the
// local copy of the log holds it; else (pending) from what that copy
// predicts.
func (c *Coordinator) decided(ctx context.Context, res *ClaimResult) error {
	cl, now := res.Claim, c.cfg.Now()
	res.ExpiresAt = cl.ExpiresAt
	// The log decided it, if the local copy of the log (the mirror, in
	// remote mode) holds it; else it stays pending until it does.
	ent, err := c.entity(ctx, protocol.KindClaim, cl.ID)
	if err == nil && ent.Status != ClaimPending {
		return c.fromEntity(ctx, res, ent, now)
	}
	res.Status = "pending"
	// Not ordered yet: predict from the local copy of the log.
	conflicts, err := c.cfg.Store.ConflictingClaims(ctx, c.cfg.Workspace, cl.Patterns, c.me(ctx).Actor, now)
	if err != nil {
		return err
	}
	res.Conflicts = slices.DeleteFunc(conflicts, func(x store.Conflict) bool { return !cl.Exclusive && !x.Exclusive })
	res.Likely = "granted"
	if len(res.Conflicts) > 0 {
		res.Likely = "denied"
		if cl.WaitUntil != nil {
			res.Likely = "queued"
		}
	}
	return nil
}

// fromEntity fills in res from its claim's state in the log at now.
func (c *Coordinator) fromEntity(ctx context.Context, res *ClaimResult, ent *store.Entity, now time.Time) error {
	res.Likely, res.Conflicts, res.Position = "", nil, 0
	res.WaitUntil, res.ExpiresAt = ent.WaitUntil, ent.ExpiresAt
	switch st := ent.Current(now); st {
	case store.ClaimDenied:
		res.Status = "denied"
		if d := ent.Denial(); d != nil {
			res.Conflicts, res.Limit, res.Denial, res.Cycle = d.Conflicts, d.Limit, d.Reason, d.Cycle
		}
	case store.ClaimQueued:
		res.Status = "queued"
		w, err := c.cfg.Store.ClaimWait(ctx, c.cfg.Workspace, ent, now)
		if err != nil {
			return err
		}
		if w != nil {
			res.Position, res.Conflicts = w.Position, w.Blockers
		}
	case store.ClaimWaitExpired:
		res.Status = "wait_expired"
		// Who still holds its paths, and who waits ahead of it.
		bs, err := c.cfg.Store.ClaimBlockers(ctx, c.cfg.Workspace, ent, now)
		if err != nil {
			return err
		}
		res.Conflicts = bs
	case store.ClaimActive, store.ClaimExpired:
		// Granted (expired already, if the call waited past its lease).
		res.Status = "granted"
		res.GrantedAt, res.Waited = ent.IngestedAt, !ent.GrantAt.IsZero()
		if res.Waited {
			res.GrantedAt = ent.GrantAt
		}
	default:
		res.Status = st // released: withdrawn by another call meanwhile
	}
	return nil
}

// ReleaseResult is the outcome of Release.
type ReleaseResult struct {
	// Released are the claims released, each with its write; Withdrawn
	// are those of them that were still waiting their turn.
	Released  []string
	Withdrawn []string
	Writes    []*Published
	// Unchanged are the claims named that hold nothing to release: denied,
	// released already, expired, or whose wait ended. Releasing is idempotent: asking for a
	// state the claim is already in answers what that state is.
	Unchanged []Unreleased
}

// Unreleased is a claim that needs no release, and why.
type Unreleased struct {
	ClaimID string
	// Status is denied, released, expired or wait_expired.
	Status string
	// At is when: the claim was denied (its ingest), released, or expired.
	At time.Time
	// Conflicts and Limit tell why a denied claim was denied.
	Conflicts []store.Conflict
	Limit     int
}

// Release releases claims of this actor: the given ids, or every active
// (or pending) one when all is set. Every id is checked before any is
// released; those already denied, released or expired are reported
// unchanged.
func (c *Coordinator) Release(ctx context.Context, claimIDs []string, all bool, reason string) (*ReleaseResult, error) {
	res := &ReleaseResult{}
	now := c.cfg.Now()
	var claims []*store.Entity
	if all {
		mine, err := c.entities(ctx, store.EntityQuery{Kind: protocol.KindClaim, Actor: c.me(ctx).Actor, Status: liveClaims, LiveAt: now, Limit: 1000})
		if err != nil {
			return nil, err
		}
		claims = mine
	} else {
		if len(claimIDs) == 0 {
			return nil, inputErr("no claims to release: give claimIds, or all=true")
		}
		seen := map[string]bool{}
		for _, id := range claimIDs {
			if seen[id] {
				continue // named twice
			}
			seen[id] = true
			ent, err := c.entity(ctx, protocol.KindClaim, id)
			if errors.Is(err, store.ErrNotFound) {
				return nil, inputErr("no claim %q in this workspace", id)
			}
			if err != nil {
				return nil, err
			}
			if ent.Actor != c.me(ctx).Actor {
				if h := c.acceptedHandoffOf(ctx, id); h != "" {
					return nil, inputErr("claim %q is %s's until your acceptance of handoff %s is in the log, and this replica has not read it back yet; try again in a moment", id, ent.Actor, h)
				}
				return nil, inputErr("claim %q is held by %s, not you; ask them, or use request_handoff", id, ent.Actor)
			}
			switch st := ClaimState(ent, now); st {
			case store.ClaimActive, ClaimPending, store.ClaimQueued:
				claims = append(claims, ent)
			default:
				res.Unchanged = append(res.Unchanged, unreleased(ent, st))
			}
		}
	}
	for _, ent := range claims {
		p, err := c.release(ctx, ent, reason)
		if err != nil {
			return res, err
		}
		res.Released, res.Writes = append(res.Released, ent.ID), append(res.Writes, p)
		if ClaimState(ent, now) == store.ClaimQueued {
			res.Withdrawn = append(res.Withdrawn, ent.ID)
		}
	}
	return res, nil
}

// unreleased tells why ent, in state st, needs no release.
func unreleased(ent *store.Entity, st string) Unreleased {
	u := Unreleased{ClaimID: ent.ID, Status: st}
	switch st {
	case store.ClaimDenied:
		u.At = ent.IngestedAt
		if d := ent.Denial(); d != nil {
			u.Conflicts, u.Limit = d.Conflicts, d.Limit
		}
	case store.ClaimReleased:
		u.At = ent.UpdatedAt
		var cl protocol.Claim
		if json.Unmarshal(ent.Body, &cl) == nil && cl.ReleasedAt != nil {
			u.At = *cl.ReleasedAt
		}
	case store.ClaimExpired:
		u.At = ent.ExpiresAt
	case store.ClaimWaitExpired:
		u.At = ent.WaitUntil
	}
	return u
}

// release releases ent, an active or pending claim of this actor's.
func (c *Coordinator) release(ctx context.Context, ent *store.Entity, reason string) (*Published, error) {
	var cl protocol.Claim
	if err := json.Unmarshal(ent.Body, &cl); err != nil {
		return nil, err
	}
	at := c.cfg.Now().UTC().Truncate(time.Millisecond)
	cl.ReleasedAt, cl.ReleaseReason = &at, reason
	if cl.ReleaseReason == "" {
		cl.ReleaseReason = "released"
	}
	cl.ActorID = ent.Actor
	return c.Publish(ctx, protocol.EventClaimReleased, &cl)
}

// Conflicts are the claims and intents of others overlapping some paths.
type Conflicts struct {
	Claims  []store.Conflict
	Intents []*store.Entity
}

// CheckConflicts reports the claims (active, each with its queue, or
// queued) and current intents of other actors that overlap paths (paths
// or globs).
func (c *Coordinator) CheckConflicts(ctx context.Context, paths []string) (*Conflicts, error) {
	pats, err := NormalizePatterns(paths)
	if err != nil {
		return nil, err
	}
	now := c.cfg.Now()
	claims, err := c.cfg.Store.ConflictingClaims(ctx, c.cfg.Workspace, pats, c.me(ctx).Actor, now)
	if err != nil {
		return nil, err
	}
	if err := c.cfg.Store.ClaimQueues(ctx, c.cfg.Workspace, claims, now); err != nil {
		return nil, err
	}
	intents, err := c.cfg.Store.OverlappingIntents(ctx, c.cfg.Workspace, pats, c.me(ctx).Actor, now)
	if err != nil {
		return nil, err
	}
	return &Conflicts{Claims: claims, Intents: intents}, nil
}

// RequestHandoff asks another actor (or anyone, when to is empty) to take
// over: claimIDs (default: every active claim of this actor) move to them
// when they accept.
func (c *Coordinator) RequestHandoff(ctx context.Context, to, summary, notes, taskID string, claimIDs []string, branch, commit string) (*Published, *protocol.Handoff, error) {
	if strings.TrimSpace(summary) == "" {
		return nil, nil, inputErr("summary is required: what is done and what is left")
	}
	if to == c.me(ctx).Actor {
		return nil, nil, inputErr("you cannot hand off to yourself (%s)", to)
	}
	if claimIDs == nil {
		mine, err := c.entities(ctx, store.EntityQuery{Kind: protocol.KindClaim, Actor: c.me(ctx).Actor, Status: liveClaims, LiveAt: c.cfg.Now(), Limit: 1000})
		if err != nil {
			return nil, nil, err
		}
		claimIDs = []string{}
		for _, e := range mine {
			if holding(ClaimState(e, c.cfg.Now())) {
				claimIDs = append(claimIDs, e.ID)
			}
		}
	} else {
		for _, id := range claimIDs {
			ent, err := c.entity(ctx, protocol.KindClaim, id)
			if err != nil || ent.Actor != c.me(ctx).Actor || !holding(ClaimState(ent, c.cfg.Now())) {
				return nil, nil, inputErr("claim %q is not an active claim of yours; hand off only your own", id)
			}
		}
	}
	h := &protocol.Handoff{
		ID: NewID(protocol.KindHandoff), WorkspaceID: c.cfg.Workspace, FromActorID: c.me(ctx).Actor, FromReplicaID: c.me(ctx).Replica,
		ToActorID: to, TaskID: taskID, ClaimIDs: claimIDs, Summary: summary, Notes: notes, Branch: branch, Commit: commit,
		Status: protocol.HandoffRequested, CreatedAt: c.cfg.Now().UTC().Truncate(time.Millisecond),
	}
	pub, err := c.Publish(ctx, protocol.EventHandoffRequested, h)
	return pub, original(pub, h), err
}

// RespondHandoff accepts or declines a handoff to this actor, or withdraws
// one of this actor's own.
func (c *Coordinator) RespondHandoff(ctx context.Context, id string, status protocol.HandoffStatus, note string) (*Published, *protocol.Handoff, error) {
	ent, err := c.entity(ctx, protocol.KindHandoff, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil, inputErr("no handoff %q in this workspace", id)
	}
	if err != nil {
		return nil, nil, err
	}
	var h protocol.Handoff
	if err := json.Unmarshal(ent.Body, &h); err != nil {
		return nil, nil, err
	}
	if h.Status != protocol.HandoffRequested {
		return nil, nil, inputErr("handoff %q is already %s", id, h.Status)
	}
	switch status {
	case protocol.HandoffAccepted, protocol.HandoffDeclined:
		if h.FromActorID == c.me(ctx).Actor {
			return nil, nil, inputErr("handoff %q is your own; you can only withdraw it", id)
		}
		if h.ToActorID != "" && h.ToActorID != c.me(ctx).Actor {
			return nil, nil, inputErr("handoff %q is addressed to %s, not you", id, h.ToActorID)
		}
	case protocol.HandoffWithdrawn:
		if h.FromActorID != c.me(ctx).Actor {
			return nil, nil, inputErr("only %s can withdraw handoff %q", h.FromActorID, id)
		}
	default:
		return nil, nil, inputErr("response must be accepted, declined or withdrawn")
	}
	at := c.cfg.Now().UTC().Truncate(time.Millisecond)
	h.Status, h.RespondedAt, h.ResponderActorID, h.ResponseNote = status, &at, c.me(ctx).Actor, note
	pub, err := c.Publish(ctx, protocol.EventHandoffResponded, &h)
	return pub, original(pub, &h), err
}

// CreateTask opens a task.
func (c *Coordinator) CreateTask(ctx context.Context, title, description string, labels []string, assignee string, status protocol.TaskStatus) (*Published, *protocol.Task, error) {
	if strings.TrimSpace(title) == "" {
		return nil, nil, inputErr("title is required")
	}
	if status == "" {
		status = protocol.TaskOpen
	}
	if labels == nil {
		labels = []string{}
	}
	now := c.cfg.Now().UTC().Truncate(time.Millisecond)
	t := &protocol.Task{ID: NewID(protocol.KindTask), WorkspaceID: c.cfg.Workspace, Title: title, Description: description,
		Status: status, AssigneeActorID: assignee, CreatedByActor: c.me(ctx).Actor, Labels: labels, CreatedAt: now, UpdatedAt: now}
	pub, err := c.Publish(ctx, protocol.EventTaskCreated, t)
	return pub, original(pub, t), err
}

// TaskChange holds the fields update_task changes; nil means unchanged.
type TaskChange struct {
	Title, Description, Assignee *string
	Status                       *protocol.TaskStatus
	Labels                       []string
}

// UpdateTask changes a task.
func (c *Coordinator) UpdateTask(ctx context.Context, id string, ch TaskChange) (*Published, *protocol.Task, error) {
	ent, err := c.entity(ctx, protocol.KindTask, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil, inputErr("no task %q in this workspace; list_tasks shows them", id)
	}
	if err != nil {
		return nil, nil, err
	}
	var t protocol.Task
	if err := json.Unmarshal(ent.Body, &t); err != nil {
		return nil, nil, err
	}
	changed := false
	set := func(dst *string, v *string) {
		if v != nil && *dst != *v {
			*dst, changed = *v, true
		}
	}
	set(&t.Title, ch.Title)
	set(&t.Description, ch.Description)
	set(&t.AssigneeActorID, ch.Assignee)
	if ch.Status != nil && t.Status != *ch.Status {
		t.Status, changed = *ch.Status, true
	}
	if ch.Labels != nil && !slices.Equal(ch.Labels, t.Labels) {
		t.Labels, changed = ch.Labels, true
	}
	if !changed {
		return nil, nil, inputErr("nothing to change: give status, assignee, title, description or labels")
	}
	t.UpdatedAt = c.cfg.Now().UTC().Truncate(time.Millisecond)
	if t.UpdatedAt.Before(t.CreatedAt) {
		t.UpdatedAt = t.CreatedAt
	}
	pub, err := c.Publish(ctx, protocol.EventTaskUpdated, &t)
	return pub, original(pub, &t), err
}

// RecordValidation shares the outcome of a test, build, lint, scenario or
// replay run.
func (c *Coordinator) RecordValidation(ctx context.Context, v protocol.Validation) (*Published, *protocol.Validation, error) {
	v.ID, v.WorkspaceID, v.ActorID, v.ReplicaID = NewID(protocol.KindValidation), c.cfg.Workspace, c.me(ctx).Actor, c.me(ctx).Replica
	v.CreatedAt = c.cfg.Now().UTC().Truncate(time.Millisecond)
	if len(v.Paths) > 0 {
		pats, err := NormalizePatterns(v.Paths)
		if err != nil {
			return nil, nil, err
		}
		v.Paths = pats
	}
	pub, err := c.Publish(ctx, protocol.EventValidationComplete, &v)
	return pub, original(pub, &v), err
}

// ShareChanges publishes a change transaction.
func (c *Coordinator) ShareChanges(ctx context.Context, tr protocol.ChangeTransaction) (*Published, *protocol.ChangeTransaction, error) {
	if len(tr.Files) == 0 {
		return nil, nil, inputErr("there are no changes to share: the working tree matches HEAD")
	}
	tr.ID, tr.WorkspaceID, tr.ActorID, tr.ReplicaID = NewID(protocol.KindTransaction), c.cfg.Workspace, c.me(ctx).Actor, c.me(ctx).Replica
	tr.CreatedAt = c.cfg.Now().UTC().Truncate(time.Millisecond)
	if tr.BaseCommit == "" {
		tr.BaseCommit = "none" // a repository without commits yet
	}
	pub, err := c.Publish(ctx, protocol.EventTransactionCreated, &tr)
	return pub, original(pub, &tr), err
}

// Feed reads the workspace log after a position.
func (c *Coordinator) Feed(ctx context.Context, after int64, limit int, kind protocol.Kind) ([]*protocol.Envelope, *store.PageResult, error) {
	if c.rem != nil {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		if err := c.rem.pull(pctx); err != nil {
			c.cfg.Logger.Debug("pull before feed", "err", err)
		}
		cancel()
	}
	if err := c.Sync(ctx); err != nil {
		return nil, nil, err
	}
	page, err := c.cfg.Store.Page(ctx, store.PageQuery{Workspace: c.cfg.Workspace, After: after, Limit: limit, Kind: kind})
	if err != nil {
		return nil, nil, err
	}
	var out []*protocol.Envelope
	for _, op := range page.Ops {
		e, err := op.Envelope()
		if err != nil {
			return nil, nil, err
		}
		out = append(out, e)
	}
	return out, page, nil
}

// Status describes the workspace and this session.
type Status struct {
	Service   string
	Connected bool
	Live      bool
	LastError string
	Head      int64
	Projected int64
	Pending   int
	Refused   int
	MyClaims  []*store.Entity
	// Queues holds, by claim id, the claims waiting for each of MyClaims
	// that holds its paths, first in line first.
	Queues       map[string][]store.Waiter
	OthersClaims int
	OpenTasks    int
	HandoffsToMe []*store.Entity
	Presence     []*protocol.RemotePresence
}

// Status reports the workspace and this session's state.
func (c *Coordinator) Status(ctx context.Context) (*Status, error) {
	s := &Status{}
	var err error
	if c.rem != nil {
		s.Service = c.rem.base
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		if perr := c.rem.pull(pctx); perr != nil {
			s.LastError = perr.Error()
		}
		cancel()
		s.Connected, s.Live = c.rem.connected.Load(), c.rem.live.Load()
		if s.LastError == "" {
			if v, ok := c.rem.lastErr.Load().(string); ok && !s.Connected {
				s.LastError = v
			}
		}
		if s.Pending, s.Refused, err = c.cfg.Store.OutboxCounts(ctx, c.me(ctx).Replica); err != nil {
			return nil, err
		}
	}
	if s.Head, err = c.cfg.Store.Head(ctx, c.cfg.Workspace); err != nil {
		return nil, err
	}
	if s.Projected, err = c.cfg.Store.ProjectedThrough(ctx, c.cfg.Workspace); err != nil {
		return nil, err
	}
	now := c.cfg.Now()
	if s.MyClaims, err = c.entities(ctx, store.EntityQuery{Kind: protocol.KindClaim, Actor: c.me(ctx).Actor, Status: liveClaims, LiveAt: now, Limit: store.MaxActiveClaims * 2}); err != nil {
		return nil, err
	}
	if s.Queues, err = c.queues(ctx, s.MyClaims, now); err != nil {
		return nil, err
	}
	if s.OthersClaims, err = c.cfg.Store.CountEntities(ctx, store.EntityQuery{Workspace: c.cfg.Workspace, Kind: protocol.KindClaim, NotActor: c.me(ctx).Actor, HeldAt: now}); err != nil {
		return nil, err
	}
	if s.OpenTasks, err = c.countEntities(ctx, store.EntityQuery{Kind: protocol.KindTask, Status: []string{"open", "in_progress", "blocked"}}); err != nil {
		return nil, err
	}
	if s.HandoffsToMe, err = c.handoffsToMe(ctx); err != nil {
		return nil, err
	}
	switch {
	case c.svc != nil:
		s.Service, s.Connected, s.Live = c.cfg.Service, true, true
		if s.Presence, err = c.svc.Presence(ctx, c.cfg.Workspace); err != nil {
			return nil, err
		}
	case c.rem == nil:
		if s.Presence, err = c.cfg.Store.Presence(ctx, c.cfg.Workspace); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// handoffsShown bounds the handoffs Status lists.
const handoffsShown = 50

// handoffsToMe lists the open handoff requests of others addressed to
// this actor or to anyone, newest first.
func (c *Coordinator) handoffsToMe(ctx context.Context) ([]*store.Entity, error) {
	requested := []string{string(protocol.HandoffRequested)}
	out, err := c.entities(ctx, store.EntityQuery{Kind: protocol.KindHandoff, Status: requested, Target: c.me(ctx).Actor, NotActor: c.me(ctx).Actor, Limit: handoffsShown})
	if err != nil {
		return nil, err
	}
	// Those addressed to anyone: the store selects no empty target, so
	// page through the open requests of others (those addressed to other
	// actors cannot crowd them out).
	const pageSize = 200
	found := 0
	for before := int64(0); found < handoffsShown; {
		page, err := c.entities(ctx, store.EntityQuery{Kind: protocol.KindHandoff, Status: requested, NotActor: c.me(ctx).Actor, Before: before, Limit: pageSize})
		if err != nil {
			return nil, err
		}
		for _, h := range page {
			if h.Target == "" && found < handoffsShown {
				out, found = append(out, h), found+1
			}
		}
		if len(page) < pageSize {
			break
		}
		before = page[len(page)-1].CreatedSeq
	}
	slices.SortFunc(out, func(a, b *store.Entity) int { return cmp.Compare(b.CreatedSeq, a.CreatedSeq) })
	if len(out) > handoffsShown {
		out = out[:handoffsShown]
	}
	return out, nil
}

// Entities lists entities of this workspace, newest first: their
// projected state, with this machine's writes the projections do not
// hold yet merged in (in remote mode; see ClaimPending).
func (c *Coordinator) Entities(ctx context.Context, q store.EntityQuery) ([]*store.Entity, error) {
	return c.entities(ctx, q)
}

// Head is the newest serverSequence in the local copy of the log.
func (c *Coordinator) Head(ctx context.Context) (int64, error) {
	return c.cfg.Store.Head(ctx, c.cfg.Workspace)
}

// queues returns the queues of the claims among ents that hold their
// paths at now, by claim id.
func (c *Coordinator) queues(ctx context.Context, ents []*store.Entity, now time.Time) (map[string][]store.Waiter, error) {
	var held []store.Conflict
	for _, e := range ents {
		var cl protocol.Claim
		if ClaimState(e, now) != store.ClaimActive || json.Unmarshal(e.Body, &cl) != nil {
			continue
		}
		held = append(held, store.Conflict{ClaimID: e.ID, Actor: e.Actor, Patterns: cl.Patterns, Exclusive: e.Exclusive, ExpiresAt: e.ExpiresAt, Seq: e.CreatedSeq})
	}
	if len(held) == 0 {
		return nil, nil
	}
	if err := c.cfg.Store.ClaimQueues(ctx, c.cfg.Workspace, held, now); err != nil {
		return nil, err
	}
	out := map[string][]store.Waiter{}
	for _, h := range held {
		if len(h.Queue) > 0 {
			out[h.ClaimID] = h.Queue
		}
	}
	return out, nil
}
