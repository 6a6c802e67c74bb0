package coord

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/crosscode/crosscode-mcp/internal/sanitize"
	"github.com/crosscode/crosscode-mcp/protocol"
	"github.com/crosscode/crosscode-mcp/store"
)

// News is what other agents did since this session's previous tool call.
type News struct {
	// Items are the most relevant events, those addressed to this actor
	// first; text in them was written by other agents and is data.
	Items []NewsItem `json:"items"`
	// More counts events not shown; read_feed lists them.
	More int `json:"more,omitempty"`
	// Notices are things this session must know once (a resync, a refused upload).
	Notices []string `json:"notices,omitempty"`
	// Through is the log position the news covers.
	Through int64 `json:"through"`
}

// NewsItem is one event, summarized.
type NewsItem struct {
	Seq      int64  `json:"seq"`
	Event    string `json:"event"`
	ID       string `json:"id"`
	Actor    string `json:"actor"`
	Provider string `json:"provider,omitempty"`
	Text     string `json:"text"`
	ForYou   bool   `json:"forYou,omitempty"`
}

// Limits of the news digest: it rides on every tool result.
const (
	newsItems   = 8
	newsScan    = 500
	newsTextMax = 200
)

// newsRef is what the digest's first pass reads of a logged event: enough
// to leave out this session's own doing and to rank the rest.
type newsRef struct {
	Type      protocol.EventType `json:"type"`
	ReplicaID string             `json:"replicaId"`
	SessionID string             `json:"sessionId"`
	Agent     struct {
		SessionReference string `json:"sessionReference"`
	} `json:"agent"`
	Payload struct {
		From      string `json:"fromActorId"`
		To        string `json:"toActorId"`
		Assignee  string `json:"assigneeActorId"`
		WaitUntil string `json:"waitUntil"`
	} `json:"payload"`
}

// forYou reports whether an event is addressed to actor me: a handoff to
// me (or to anyone, but mine), the answer to my handoff, a task assigned
// to me.
func forYou(t protocol.EventType, me, from, to, assignee string) bool {
	switch t {
	case protocol.EventHandoffRequested:
		return to == me || (to == "" && from != me)
	case protocol.EventHandoffResponded:
		return from == me
	case protocol.EventTaskCreated, protocol.EventTaskUpdated:
		return assignee == me
	}
	return false
}

// News returns the digest of what others did since the previous call and
// moves the session's news position to the log's head.
func (c *Coordinator) News(ctx context.Context) (*News, error) {
	st, ws, now := c.cfg.Store, c.cfg.Workspace, c.cfg.Now()
	me := c.me(ctx)
	ref := c.Agent(ctx).SessionReference
	from, since, key, shared, mark, err := c.newsStart(ctx, me, ref)
	if err != nil {
		return nil, err
	}
	n := &News{Items: []NewsItem{}, Notices: c.takeNotices(), Through: from}
	// What became of this actor's claims that waited, first: no log
	// event may say it (a grant when a lease ran out).
	outcomes := c.outcomes(ctx, me, from, since, now)
	scan := newsScan
	if !me.caller {
		// This session's own writes right after from are never news:
		// they need not be read back and decoded to be left out (the
		// page still ends where it would have).
		own := c.ownFrom(from)
		scan -= int(min(own-from, newsScan-1))
		from = own
	}
	page, err := st.Page(ctx, store.PageQuery{Workspace: ws, After: from, Limit: scan})
	if err != nil {
		return n, err
	}
	if page.TooOld {
		from = page.ResyncFrom
		if page, err = st.Page(ctx, store.PageQuery{Workspace: ws, After: from, Limit: newsScan}); err != nil {
			return n, err
		}
	}
	// First pass, cheap: rank the events without decoding them whole.
	type candidate struct {
		op     *store.Op
		forYou bool
	}
	var cands []candidate
	var waiting []int   // the candidates that are claims willing to wait
	var created []int64 // every claim.created scanned, for describe
	for i := range page.Ops {
		op := &page.Ops[i]
		var r newsRef
		if json.Unmarshal(op.Body, &r) != nil {
			continue
		}
		if r.Type == protocol.EventClaimCreated {
			created = append(created, op.Seq)
		}
		if r.ReplicaID == me.Replica && (r.SessionID == me.Session || (ref != "" && r.Agent.SessionReference == ref)) {
			continue // this session's own doing (or its client's hooks')
		}
		fy := forYou(r.Type, me.Actor, r.Payload.From, r.Payload.To, r.Payload.Assignee)
		if r.Type == protocol.EventClaimCreated && r.Payload.WaitUntil != "" {
			waiting = append(waiting, len(cands))
		}
		cands = append(cands, candidate{op, fy})
	}
	// A claim that waits for one of this actor's is for it: the newest
	// few are looked up (each is a query).
	for i := len(waiting) - 1; i >= 0 && i >= len(waiting)-maxWaitChecks; i-- {
		cd := &cands[waiting[i]]
		if e, err := c.decode(cd.op); err == nil && len(c.waitingFor(ctx, me.Actor, e.ID, now)) > 0 {
			cd.forYou = true
		}
	}
	n.Through = page.NextCursor
	if page.HasMore {
		// Skip the rest: the digest is a glance, read_feed has it all.
		if head, err := st.Head(ctx, ws); err == nil {
			n.More += int(head - page.NextCursor)
			n.Through = head
		}
	}
	// Addressed to this actor first, then the newest; only those shown are
	// decoded and described.
	slices.SortStableFunc(cands, func(a, b candidate) int {
		if a.forYou != b.forYou {
			if a.forYou {
				return -1
			}
			return 1
		}
		return cmp.Compare(b.op.Seq, a.op.Seq)
	})
	var shown []*protocol.Envelope
	i := 0
	for ; i < len(cands) && len(shown) < newsItems; i++ {
		if e, err := c.decode(cands[i].op); err == nil {
			shown = append(shown, e)
		}
	}
	n.More += len(cands) - i
	slices.SortFunc(shown, func(a, b *protocol.Envelope) int { return cmp.Compare(a.ServerSequence, b.ServerSequence) })
	n.Items = append(n.Items, outcomes...)
	n.Items = append(n.Items, c.describe(ctx, shown, func(lo, hi int64) int {
		a, _ := slices.BinarySearch(created, lo)
		b, _ := slices.BinarySearch(created, hi+1)
		return b - a
	})...)
	if !me.caller {
		c.mu.Lock()
		if n.Through > c.newsFrom {
			c.newsFrom = n.Through
			i, _ := slices.BinarySearch(c.own, c.newsFrom+1)
			c.own = slices.Delete(c.own, 0, i)
		}
		if now.After(c.newsAt) {
			c.newsAt = now
		}
		c.mu.Unlock()
	}
	if shared && (n.Through > mark || len(outcomes) > 0) {
		if err := c.marks().SetNewsMarkAt(ctx, ws, key, n.Through, now); err != nil {
			if me.caller {
				return nil, fmt.Errorf("news mark: %w", err)
			}
			c.cfg.Logger.Debug("news mark", "err", err)
		}
	}
	return n, nil
}

// newsMarks keep how far, and until when, each session was told the news.
type newsMarks interface {
	NewsMarkAt(ctx context.Context, workspace, key string) (seq int64, at time.Time, ok bool, err error)
	SetNewsMarkAt(ctx context.Context, workspace, key string, seq int64, now time.Time) error
}

// marks are where news marks are kept: the local database, or for the
// callers of a Coordinator inside the service, the service's own (their
// sessions go on on any instance of it).
func (c *Coordinator) marks() newsMarks {
	if c.svc != nil {
		return c.svc
	}
	return c.cfg.Store
}

// newsStart is where the news of the calling session starts: after what
// it was told last (log position, and the time, for what time alone
// decides: a grant when a lease ran out), by its tool results or its
// client's hooks. A caller's session (see WithCaller) keeps its position
// in the service's database alone; its first news starts at the log's
// head, now.
func (c *Coordinator) newsStart(ctx context.Context, me Me, ref string) (from int64, since time.Time, key string, shared bool, mark int64, err error) {
	if me.caller {
		key = NewsKeySession(me.Session)
		seq, at, ok, merr := c.svc.NewsMarkAt(ctx, c.cfg.Workspace, key)
		if merr != nil {
			return 0, time.Time{}, "", false, 0, fmt.Errorf("news mark: %w", merr)
		}
		if !ok {
			if seq, merr = c.cfg.Store.Head(ctx, c.cfg.Workspace); merr != nil {
				return 0, time.Time{}, "", false, 0, merr
			}
			at = c.cfg.Now()
			// Recorded now, so the next call's news starts here.
			if merr := c.svc.SetNewsMarkAt(ctx, c.cfg.Workspace, key, seq, at); merr != nil {
				return 0, time.Time{}, "", false, 0, fmt.Errorf("news mark: %w", merr)
			}
		}
		return seq, at, key, true, seq, nil
	}
	c.mu.Lock()
	from, since = c.newsFrom, c.newsAt
	c.mu.Unlock()
	// A hook of this agent's client may have told it some already.
	key, shared = c.newsMarkKey(me, ref)
	mark, markAt, _, merr := c.cfg.Store.NewsMarkAt(ctx, c.cfg.Workspace, key)
	if merr != nil {
		c.cfg.Logger.Debug("news mark", "err", merr)
	}
	if markAt.After(since) {
		since = markAt
	}
	return max(from, mark), since, key, shared, mark, nil
}

// NewsKeySession is the news mark of an MCP session served by the
// service (MCP over HTTP), by its session id.
func NewsKeySession(session string) string { return "mcp:" + session }

// maxWaitChecks bounds the waiting claims News looks up to see whether
// they wait for this actor's.
const maxWaitChecks = 16

// waitingFor returns the claims of this actor that claim id (another
// actor's) waits for at now; none if it does not wait.
func (c *Coordinator) waitingFor(ctx context.Context, actor, id string, now time.Time) []store.Conflict {
	ent, err := c.cfg.Store.Entity(ctx, c.cfg.Workspace, protocol.KindClaim, id)
	if err != nil || ent.Actor == actor {
		return nil
	}
	w, err := c.cfg.Store.ClaimWait(ctx, c.cfg.Workspace, ent, now)
	if err != nil || w == nil {
		return nil
	}
	return slices.DeleteFunc(w.Blockers, func(b store.Conflict) bool { return b.Actor != actor })
}

// outcomes describes what became, since log position from and time since,
// of this actor's claims that asked to wait (granted, wait ended, denied)
// and that no tool result of this session told already.
func (c *Coordinator) outcomes(ctx context.Context, me Me, from int64, since, now time.Time) []NewsItem {
	ents, err := c.cfg.Store.ClaimOutcomes(ctx, c.cfg.Workspace, me.Actor, from, since, now)
	if err != nil {
		c.cfg.Logger.Debug("claim outcomes", "err", err)
		return nil
	}
	c.mu.Lock()
	ents = slices.DeleteFunc(ents, func(e *store.Entity) bool {
		// The claim's own result said so.
		return c.toldClaims[e.ID] == strings.TrimPrefix(OutcomeItem(e, now, nil).Event, "claim.")
	})
	c.mu.Unlock()
	out := make([]NewsItem, 0, len(ents))
	for _, e := range ents {
		var holders []store.Conflict
		if e.Current(now) == store.ClaimWaitExpired {
			if holders, err = c.cfg.Store.ClaimBlockers(ctx, c.cfg.Workspace, e, now); err != nil {
				c.cfg.Logger.Debug("claim blockers", "err", err)
			}
		}
		out = append(out, OutcomeItem(e, now, holders))
	}
	return out
}

// OutcomeItem tells an actor what became of its claim that asked to wait;
// holders, for a wait that ended, are who still holds its paths (and
// waits ahead).
func OutcomeItem(e *store.Entity, now time.Time, holders []store.Conflict) NewsItem {
	var cl protocol.Claim
	_ = json.Unmarshal(e.Body, &cl)
	pats := sanitize.Line(strings.Join(cl.Patterns, ", "), newsTextMax)
	it := NewsItem{Seq: e.Seq, ID: e.ID, Actor: sanitize.Line(e.Actor, 120), ForYou: true}
	switch st := e.Current(now); {
	case st == store.ClaimDenied:
		it.Event = "claim.denied"
		d := e.Denial()
		switch {
		case d != nil && d.Reason == store.DenialDeadlock:
			it.Text = fmt.Sprintf("your claim %s on %s was denied: DEADLOCK, waiting would close a cycle (%s). Release or hand off what others wait for, or claim later", e.ID, pats, CycleText(d.Cycle, e.Actor))
		case d != nil && d.Reason == store.DenialLimit:
			it.Text = fmt.Sprintf("your claim %s on %s was denied: you hold or wait for %d claims, the most allowed", e.ID, pats, d.Limit)
		default:
			it.Text = fmt.Sprintf("your claim %s on %s was denied: others hold these paths", e.ID, pats)
		}
	case e.GrantedBy(now):
		it.Event = "claim.granted"
		it.Text = fmt.Sprintf("your claim %s on %s was granted at %s after waiting; its lease ends at %s. Edit these paths now; release_claim when done",
			e.ID, pats, e.GrantAt.UTC().Format(time.RFC3339), e.ExpiresAt.UTC().Format(time.RFC3339))
	default:
		it.Event = "claim.wait_expired"
		who := "they look free now"
		if len(holders) > 0 {
			who = HoldersText(holders, 2, 1)
		}
		it.Text = fmt.Sprintf("your wait for %s (claim %s) ended at %s before it was granted: %s. Claim again with waitSeconds to queue again, or work on something else",
			pats, e.ID, e.WaitUntil.UTC().Format(time.RFC3339), who)
	}
	it.Text = sanitize.Line(it.Text, newsTextMax*3)
	return it
}

// HoldersText says who holds, or waits ahead for, a claim's paths: the
// first n of cs, each with up to pats of its patterns, the rest counted.
// Text others wrote is sanitized.
func HoldersText(cs []store.Conflict, n, pats int) string {
	var hs []string
	for i, c := range cs {
		if i == n {
			hs = append(hs, fmt.Sprintf("and %d more", len(cs)-i))
			break
		}
		shown := c.Patterns[:min(len(c.Patterns), pats)]
		held := sanitize.Line(strings.Join(shown, ", "), newsTextMax)
		if more := len(c.Patterns) - len(shown); more > 0 {
			held += fmt.Sprintf(" and %d more", more)
		}
		who := sanitize.Line(c.Actor, 120)
		if c.Queued() {
			hs = append(hs, fmt.Sprintf("%s waits for %s (claim %s, queued ahead)", who, held, c.ClaimID))
			continue
		}
		hs = append(hs, fmt.Sprintf("%s holds %s until %s (claim %s)", who, held, c.ExpiresAt.UTC().Format(time.RFC3339), c.ClaimID))
	}
	return strings.Join(hs, "; ")
}

// CycleText says who waits for whom in a wait-for cycle, as `me` reads it.
func CycleText(cycle []store.WaitEdge, me string) string {
	whose := func(a string) string {
		if a == me {
			return "yours"
		}
		return sanitize.Line(a, 120) + "'s"
	}
	parts := make([]string, 0, len(cycle))
	for _, e := range cycle {
		parts = append(parts, fmt.Sprintf("claim %s (%s) waits for claim %s (%s)", e.ClaimID, whose(e.Actor), e.WaitsFor, whose(e.Holder)))
	}
	return strings.Join(parts, "; ")
}

// newsMarkKey names the news mark this session shares with its client's
// hooks: its session reference when the client gave one (Claude Code's
// session id is both the MCP server's and the hooks'); shared, the mark
// also records what this session's tool results told. Else it is the
// mark hooks keep per actor and working copy (a client such as Gemini CLI
// tells hooks its session id but not its MCP servers), which this session
// only reads: other sessions of the actor in this working copy have news
// of their own.
func (c *Coordinator) newsMarkKey(me Me, ref string) (key string, shared bool) {
	if ref != "" && ref != me.Session {
		return NewsKeyRef(ref), true
	}
	return NewsKeyReplica(me.Replica, me.Actor), false
}

// NewsKeyRef is the news mark of an agent session known by its session
// reference.
func NewsKeyRef(ref string) string { return "ref:" + ref }

// NewsKeyReplica is the news mark of an actor in a working copy, for
// sessions whose MCP server and hooks share no session reference.
func NewsKeyReplica(replica, actor string) string { return "replica:" + replica + ":" + actor }

// decode decodes a logged operation.
func (c *Coordinator) decode(op *store.Op) (*protocol.Envelope, error) {
	c.counts.decoded.Add(1)
	return op.Envelope()
}

// Describe summarizes events (a page of the log, as Feed returns) as news
// items.
func (c *Coordinator) Describe(ctx context.Context, events []*protocol.Envelope) []NewsItem {
	return c.describe(ctx, events, func(lo, hi int64) int {
		n := 0
		for _, e := range events {
			if e.Type == protocol.EventClaimCreated && e.ServerSequence >= lo && e.ServerSequence <= hi {
				n++
			}
		}
		return n
	})
}

// describe summarizes events, each in a line, with other agents' text
// sanitized. createdIn counts the claims the log created at serverSequences
// lo through hi: the claims' current status is then read in one query.
func (c *Coordinator) describe(ctx context.Context, events []*protocol.Envelope, createdIn func(lo, hi int64) int) []NewsItem {
	status := c.claimStatuses(ctx, events, createdIn)
	now := c.cfg.Now()
	me := c.me(ctx).Actor
	var waits map[string][]store.Conflict // claims of others waiting for this actor's
	for _, e := range events {
		if e.Type == protocol.EventClaimCreated && e.ActorID != me && status[e.ID] == store.ClaimQueued {
			if mine := c.waitingFor(ctx, me, e.ID, now); len(mine) > 0 {
				if waits == nil {
					waits = map[string][]store.Conflict{}
				}
				waits[e.ID] = mine
			}
		}
	}
	out := make([]NewsItem, 0, len(events))
	for _, e := range events {
		out = append(out, c.describeOne(e, status, waits[e.ID], me))
	}
	return out
}

// claimStatuses reads the current status of the claims events create.
func (c *Coordinator) claimStatuses(ctx context.Context, events []*protocol.Envelope, createdIn func(lo, hi int64) int) map[string]string {
	var ids []string
	var lo, hi int64
	for _, e := range events {
		if e.Type != protocol.EventClaimCreated {
			continue
		}
		if len(ids) == 0 || e.ServerSequence < lo {
			lo = e.ServerSequence
		}
		hi = max(hi, e.ServerSequence)
		ids = append(ids, e.ID)
	}
	if len(ids) == 0 {
		return nil
	}
	out := make(map[string]string, len(ids))
	now := c.cfg.Now()
	// The claims created at lo..hi are the newest through hi.
	n := max(createdIn(lo, hi), len(ids))
	list, err := c.entities(ctx, store.EntityQuery{Kind: protocol.KindClaim, Before: hi + 1, Limit: n})
	if err == nil {
		for _, ent := range list {
			out[ent.ID] = ent.Current(now)
		}
	}
	if err == nil && len(list) < n {
		return out // the claims missing are not projected yet
	}
	for _, id := range ids {
		if _, ok := out[id]; !ok {
			if ent, err := c.entity(ctx, protocol.KindClaim, id); err == nil {
				out[id] = ent.Current(now)
			}
		}
	}
	return out
}

// describeOne summarizes one event for actor me; status holds claims'
// current status, mine the claims of me that the event's claim waits for.
func (c *Coordinator) describeOne(e *protocol.Envelope, status map[string]string, mine []store.Conflict, me string) NewsItem {
	it := NewsItem{Seq: e.ServerSequence, Event: string(e.Type), ID: e.ID, Actor: sanitize.Line(e.ActorID, 120)}
	if e.Agent != nil {
		it.Provider = string(e.Agent.Provider)
	}
	line := func(s string) string { return sanitize.Line(s, newsTextMax) }
	switch p := e.Payload.(type) {
	case *protocol.Intent:
		it.Text = fmt.Sprintf("intends to %s (%s)", line(p.Summary), line(strings.Join(p.Paths, ", ")))
	case *protocol.Claim:
		if e.Type == protocol.EventClaimReleased {
			it.Text = fmt.Sprintf("released %s", line(strings.Join(p.Patterns, ", ")))
			break
		}
		st, ok := status[e.ID]
		if !ok {
			st = "pending"
		}
		kind := "shared"
		if p.Exclusive {
			kind = "exclusive"
		}
		if len(mine) > 0 {
			// Tell the holder who waits for which of its claims, since
			// when and why.
			var yours []string
			for _, m := range mine {
				yours = append(yours, fmt.Sprintf("%s (%s)", m.ClaimID, line(strings.Join(m.Patterns, ", "))))
			}
			since := e.CreatedAt
			if e.IngestedAt != nil {
				since = *e.IngestedAt
			}
			ends := since // the wait runs from the ingest (see store/queue.go)
			if p.WaitUntil != nil {
				ends = since.Add(p.WaitUntil.Sub(p.CreatedAt))
			}
			it.ForYou = true
			it.Text = fmt.Sprintf("waits for your claim %s since %s (%s, its wait ends %s): %s. Finish and release_claim, or request_handoff to them",
				strings.Join(yours, ", "), since.UTC().Format(time.RFC3339), kind, ends.UTC().Format(time.RFC3339), line(p.Reason))
			break
		}
		until := p.ExpiresAt
		if st == store.ClaimQueued && p.WaitUntil != nil {
			until = *p.WaitUntil
		}
		it.Text = fmt.Sprintf("claimed %s (%s, %s until %s): %s", line(strings.Join(p.Patterns, ", ")), kind, st, until.Format(time.Kitchen), line(p.Reason))
	case *protocol.Handoff:
		it.ForYou = forYou(e.Type, me, p.FromActorID, p.ToActorID, "")
		if e.Type == protocol.EventHandoffRequested {
			to := p.ToActorID
			if to == "" {
				to = "anyone"
			}
			it.Text = fmt.Sprintf("asks %s to take over (%d claims): %s", sanitize.Line(to, 120), len(p.ClaimIDs), line(p.Summary))
		} else {
			it.Text = fmt.Sprintf("%s handoff %s: %s", p.Status, p.ID, line(p.ResponseNote))
		}
	case *protocol.Task:
		it.ForYou = forYou(e.Type, me, "", "", p.AssigneeActorID)
		verb := "created"
		if e.Type == protocol.EventTaskUpdated {
			verb = "updated"
		}
		it.Text = fmt.Sprintf("%s task %q [%s]", verb, line(p.Title), p.Status)
		if p.AssigneeActorID != "" {
			it.Text += " assigned to " + sanitize.Line(p.AssigneeActorID, 120)
		}
	case *protocol.Validation:
		it.Text = fmt.Sprintf("%s %s %s: %s", p.Kind, line(p.Name), p.Status, line(p.Summary))
	case *protocol.ChangeTransaction:
		it.Text = fmt.Sprintf("shared changes to %d files: %s", len(p.Files), line(p.Summary))
	}
	it.Text = sanitize.Line(it.Text, newsTextMax*2)
	return it
}

// StartNews starts the news of the calling session (see WithCaller) at
// the log's head, unless it has a position already. Only inside the
// service; elsewhere a session's news starts when it starts.
func (c *Coordinator) StartNews(ctx context.Context) error {
	if c.svc == nil || !c.me(ctx).caller {
		return nil
	}
	_, _, _, _, _, err := c.newsStart(ctx, c.me(ctx), "")
	return err
}
