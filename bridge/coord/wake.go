package coord

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/crosscode/crosscode-mcp/internal/sanitize"
	"github.com/crosscode/crosscode-mcp/protocol"
	"github.com/crosscode/crosscode-mcp/store"
)

// Waking an idle agent (spec section 21): the news that needs the agent
// while it idles, found as the log moves, for a message that starts a new
// turn (a Claude Code channel). Finding it never moves the session's news
// position: what a message carries stays, once, for the next tool result.

// The kinds of news that wake an agent (a message's meta "kind").
const (
	WakeClaimGranted   = "claim_granted"      // a claim it waited for was granted
	WakeClaimWaitEnded = "claim_wait_expired" // its wait ended first
	WakeClaimDenied    = "claim_denied"       // refused while it waited (DEADLOCK)
	WakeClaimWaiting   = "claim_waiting"      // another agent waits for a claim it holds
	WakeHandoff        = "handoff_requested"  // a handoff to it
	WakeHandoffAnswer  = "handoff_answered"   // the answer to its handoff
	WakeTask           = "task_assigned"      // a task assigned to it
	WakeValidation     = "validation_failed"  // a validation failed at a commit of its
)

// WakeState says whether news that needs the agent starts a new turn of
// its session while it idles, and how.
type WakeState struct {
	Can bool
	How string
}

// NotWoken is the WakeState of a session no message can wake.
const NotWoken = "only interactive Claude Code sessions can be woken (channels); news reaches you in your next tool result and at your next prompt"

// SetWake records whether this session's agent can be woken (the MCP
// server knows its client).
func (c *Coordinator) SetWake(w WakeState) {
	c.mu.Lock()
	c.wake = w
	c.mu.Unlock()
}

// Wake says whether this session's agent can be woken.
func (c *Coordinator) Wake() WakeState {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.wake.How == "" {
		return WakeState{How: NotWoken}
	}
	return c.wake
}

// Wake is one piece of news that needs the agent.
type Wake struct {
	Kind string
	// Text says what happened, who did it, which paths or ids, and the
	// next tool call, in one line; text of other agents in it is
	// sanitized.
	Text string
	// Meta holds the kind and the ids (claimId, handoffId, taskId,
	// validationId), sanitized.
	Meta map[string]string
	// Seq is the log position the news is at (a claim's outcome: the
	// claim's last change); At, for a claim's outcome, when it came.
	Seq int64
	At  time.Time

	claim, status string // a claim's outcome: the claim and what became of it
}

// ID is the id of what a wake is about (a claim, a handoff, a task, a
// validation).
func (w Wake) ID() string { return w.Meta[wakeIDKey[w.Kind]] }

// Key names what a wake is about, once.
func (w Wake) Key() string { return w.Kind + ":" + w.ID() }

// wakeIDKey is the meta key of the id each kind is about.
var wakeIDKey = map[string]string{
	WakeClaimGranted: "claimId", WakeClaimWaitEnded: "claimId", WakeClaimDenied: "claimId", WakeClaimWaiting: "claimId",
	WakeHandoff: "handoffId", WakeHandoffAnswer: "handoffId", WakeTask: "taskId", WakeValidation: "validationId",
}

// WakeOptions configures a Waker.
type WakeOptions struct {
	// Authored reports whether commit is one this actor made (its git
	// author): a validation that failed there needs it. Nil: only the
	// commits the actor named in the log (its shared changes, handoffs
	// and validations) are its.
	Authored func(ctx context.Context, commit string) bool
}

// Waker finds, scan after scan, the news that needs this session's agent.
// One goroutine uses it.
type Waker struct {
	c    *Coordinator
	opts WakeOptions

	head    int64               // the log's head at the last scan
	from    int64               // the log is scanned through here
	at      time.Time           // claims' outcomes are looked at through here
	outcome map[string]string   // what was found of each claim that waited
	commits map[string]bool     // commits this actor named in the log
	mine    map[string]bool     // Authored's answers
	queued  map[string]struct{} // claims of others found waiting for this actor's
}

// NewWaker starts a Waker where the session's news stands: what the
// session was told, or what happened before it started, never wakes it.
func (c *Coordinator) NewWaker(opts WakeOptions) *Waker {
	c.mu.Lock()
	from, at := c.newsFrom, c.newsAt
	c.mu.Unlock()
	if at.IsZero() {
		at = c.cfg.Now()
	}
	return &Waker{c: c, opts: opts, from: from, at: at, outcome: map[string]string{}, commits: map[string]bool{}, mine: map[string]bool{}, queued: map[string]struct{}{}}
}

// wakeScan bounds the log a scan reads: past that, the oldest events are
// left to the tool results' news.
const wakeScan = 1000

// wakeTimeEvery is how often a scan looks at what time alone decides (a
// grant when a lease ran out, a wait that ended) when the log has not
// moved.
const wakeTimeEvery = time.Second

// Scan returns the news that needs the agent that came since the previous
// scan, oldest first, leaving out what the session was told meanwhile
// (tool results, its client's hooks) and its actor's own doing.
func (w *Waker) Scan(ctx context.Context) ([]Wake, error) {
	c := w.c
	st, ws, now := c.cfg.Store, c.cfg.Workspace, c.cfg.Now()
	head, err := st.Head(ctx, ws)
	if err != nil {
		return nil, err
	}
	if head == w.head && now.Sub(w.at) < wakeTimeEvery && !now.Before(w.at) {
		return nil, nil // the log did not move, and time decides little
	}
	w.head = head
	told, toldAt := w.told(ctx)
	me := c.cfg.Actor
	var out []Wake
	// What became of its claims that waited: no log event says a grant
	// when a lease ran out.
	ents, err := st.ClaimOutcomes(ctx, ws, me, min(w.from, head), w.at, now)
	if err != nil {
		return nil, err
	}
	for _, e := range ents {
		var holders []store.Conflict
		if e.Current(now) == store.ClaimWaitExpired {
			// Who still holds its paths, as the news and the answer say.
			holders, _ = st.ClaimBlockers(ctx, ws, e, now)
		}
		wk, ok := outcomeWake(e, now, holders)
		if !ok || w.outcome[e.ID] == wk.status || c.toldClaim(e.ID, wk.status) || (wk.Seq <= told && !wk.At.After(toldAt)) {
			continue
		}
		w.outcome[e.ID] = wk.status
		if who := w.releasedBy(ctx, e); who != "" && wk.Kind == WakeClaimGranted {
			wk.Text = sanitize.Line(wk.Text+" ("+who+" released what held it)", newsTextMax*3)
		}
		out = append(out, wk)
	}
	w.at = now
	from := max(w.from, told)
	if head-from > wakeScan {
		from = head - wakeScan
	}
	for from < head {
		page, err := st.Page(ctx, store.PageQuery{Workspace: ws, After: from, Limit: store.MaxPageLimit})
		if err != nil {
			return out, err
		}
		if page.TooOld {
			from = page.ResyncFrom
			continue
		}
		for i := range page.Ops {
			if wk, ok := w.event(ctx, &page.Ops[i], now); ok {
				out = append(out, wk)
			}
		}
		if len(page.Ops) == 0 || !page.HasMore {
			from = max(page.NextCursor, from)
			break
		}
		from = page.NextCursor
	}
	w.from = max(from, head)
	return out, nil
}

// Untold keeps the wakes the session was not told since they were found
// (a tool result's news or its client's hook told them), in order.
func (w *Waker) Untold(ctx context.Context, wakes []Wake) []Wake {
	told, toldAt := w.told(ctx)
	var out []Wake
	for _, wk := range wakes {
		switch {
		case wk.claim != "" && (w.c.toldClaim(wk.claim, wk.status) || (wk.Seq <= told && !wk.At.After(toldAt))):
		case wk.claim == "" && wk.Seq <= told:
		default:
			out = append(out, wk)
		}
	}
	return out
}

// told is how far the session was told its news: the log position and the
// time, by its tool results or by its client's hooks (the news mark they
// share).
func (w *Waker) told(ctx context.Context) (int64, time.Time) {
	c := w.c
	c.mu.Lock()
	seq, at := c.newsFrom, c.newsAt
	c.mu.Unlock()
	if key, shared := c.newsMarkKey(c.me(ctx), c.Agent(ctx).SessionReference); shared {
		if m, mat, _, err := c.cfg.Store.NewsMarkAt(ctx, c.cfg.Workspace, key); err == nil {
			seq = max(seq, m)
			if mat.After(at) {
				at = mat
			}
		}
	}
	return seq, at
}

// releasedBy names the other actor whose release made the last change of
// claim e (a grant, when the claim waited for it); "" when it was none.
func (w *Waker) releasedBy(ctx context.Context, e *store.Entity) string {
	if e.Seq <= e.CreatedSeq {
		return ""
	}
	page, err := w.c.cfg.Store.Page(ctx, store.PageQuery{Workspace: w.c.cfg.Workspace, After: e.Seq - 1, Limit: 1})
	if err != nil || len(page.Ops) != 1 || page.Ops[0].Seq != e.Seq {
		return ""
	}
	var r wakeRef
	if json.Unmarshal(page.Ops[0].Body, &r) != nil || r.Type != protocol.EventClaimReleased || r.ActorID == w.c.cfg.Actor {
		return ""
	}
	return sanitize.Line(r.ActorID, 120)
}

// toldClaim reports whether a tool result of the session said that its
// claim id came to status.
func (c *Coordinator) toldClaim(id, status string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.toldClaims[id] == status
}

// wakeRef is what a scan reads of a logged event before deciding to
// decode it whole.
type wakeRef struct {
	Type    protocol.EventType `json:"type"`
	ActorID string             `json:"actorId"`
	Payload struct {
		From       string `json:"fromActorId"`
		To         string `json:"toActorId"`
		Assignee   string `json:"assigneeActorId"`
		WaitUntil  string `json:"waitUntil"`
		Status     string `json:"status"`
		Commit     string `json:"commit"`
		BaseCommit string `json:"baseCommit"`
	} `json:"payload"`
}

// event returns the wake one logged event makes, if it makes one.
func (w *Waker) event(ctx context.Context, op *store.Op, now time.Time) (Wake, bool) {
	var r wakeRef
	if json.Unmarshal(op.Body, &r) != nil {
		return Wake{}, false
	}
	me, p := w.c.cfg.Actor, r.Payload
	if r.ActorID == me {
		// Its own doing wakes nobody; the commits it names are its.
		for _, commit := range []string{p.Commit, p.BaseCommit} {
			if commit != "" && len(w.commits) < maxCommits {
				w.commits[commit] = true
			}
		}
		return Wake{}, false
	}
	switch r.Type {
	case protocol.EventHandoffRequested:
		if p.To != me {
			return Wake{}, false // to anyone: news, but no reason to wake every idle agent
		}
	case protocol.EventHandoffResponded:
		if p.From != me {
			return Wake{}, false
		}
	case protocol.EventTaskCreated, protocol.EventTaskUpdated:
		if p.Assignee != me {
			return Wake{}, false
		}
	case protocol.EventValidationComplete:
		failed := p.Status == string(protocol.ValidationFailed) || p.Status == string(protocol.ValidationErrored)
		if !failed || p.Commit == "" || !w.isMine(ctx, p.Commit) {
			return Wake{}, false
		}
	case protocol.EventClaimCreated:
		if p.WaitUntil == "" {
			return Wake{}, false
		}
	default:
		return Wake{}, false
	}
	e, err := w.c.decode(op)
	if err != nil {
		return Wake{}, false
	}
	return w.describe(ctx, e, now)
}

// maxCommits bounds the commits a Waker remembers as its actor's.
const maxCommits = 4096

// isMine reports whether commit is this actor's: named by it in the log,
// or (Authored) made by it.
func (w *Waker) isMine(ctx context.Context, commit string) bool {
	for c := range w.commits {
		if sameCommit(c, commit) {
			return true
		}
	}
	if w.opts.Authored == nil || !commitRE.MatchString(commit) {
		return false
	}
	mine, ok := w.mine[commit]
	if !ok {
		mine = w.opts.Authored(ctx, commit)
		if len(w.mine) >= maxCommits {
			clear(w.mine)
		}
		w.mine[commit] = mine
	}
	return mine
}

// commitRE is what a commit id looks like: hex, abbreviated or whole.
var commitRE = regexp.MustCompile(`^[0-9a-fA-F]{7,64}$`)

// sameCommit reports whether two commit ids name the same commit, one
// maybe abbreviated.
func sameCommit(a, b string) bool {
	a, b = strings.ToLower(a), strings.ToLower(b)
	if len(a) > len(b) {
		a, b = b, a
	}
	return len(a) >= 7 && strings.HasPrefix(b, a)
}

// describe says what a decoded event asks of the agent.
func (w *Waker) describe(ctx context.Context, e *protocol.Envelope, now time.Time) (Wake, bool) {
	who := sanitize.Line(e.ActorID, 120)
	line := func(s string) string { return sanitize.Line(s, newsTextMax) }
	wk := Wake{Seq: e.ServerSequence, Meta: map[string]string{}}
	switch p := e.Payload.(type) {
	case *protocol.Handoff:
		wk.Meta["handoffId"] = sanitize.Line(p.ID, 120)
		if e.Type == protocol.EventHandoffRequested {
			wk.Kind, wk.Text = WakeHandoff, handoffLine(p)
			break
		}
		wk.Kind = WakeHandoffAnswer
		next := "the claims you offered are theirs now; workspace_status shows what you hold"
		if p.Status != protocol.HandoffAccepted {
			next = "the work stays yours: go on with it, or request_handoff to someone else"
		}
		wk.Text = fmt.Sprintf("%s %s your handoff %s (%s)", who, p.Status, p.ID, line(p.Summary))
		if p.ResponseNote != "" {
			wk.Text += ": " + line(p.ResponseNote)
		}
		wk.Text += ". " + next
	case *protocol.Task:
		wk.Kind = WakeTask
		wk.Meta["taskId"] = sanitize.Line(p.ID, 120)
		verb := "assigned you"
		if e.Type == protocol.EventTaskUpdated {
			verb = "updated your"
		}
		wk.Text = fmt.Sprintf("%s %s task %s %q [%s]. Next: update_task taskId %s status in_progress when you start it (list_tasks shows it)",
			who, verb, p.ID, line(p.Title), p.Status, p.ID)
	case *protocol.Validation:
		wk.Kind = WakeValidation
		wk.Meta["validationId"] = sanitize.Line(p.ID, 120)
		wk.Meta["commit"] = sanitize.Line(p.Commit, 64)
		wk.Text = fmt.Sprintf("%s's %s %q %s at your commit %s", who, p.Kind, line(p.Name), p.Status, sanitize.Line(p.Commit, 64))
		if p.Summary != "" {
			wk.Text += ": " + line(p.Summary)
		}
		wk.Text += ". Next: read_feed kind validation for the details, fix it, and record_validation when it passes"
	case *protocol.Claim:
		if _, seen := w.queued[e.ID]; seen {
			return Wake{}, false
		}
		// Its claims that hold what the other waits for (not those that
		// wait in the same line ahead of it).
		mine := slices.DeleteFunc(w.c.waitingFor(ctx, w.c.cfg.Actor, e.ID, now), func(c store.Conflict) bool { return c.Queued() })
		if len(mine) == 0 {
			return Wake{}, false
		}
		if len(w.queued) >= maxCommits {
			clear(w.queued)
		}
		w.queued[e.ID] = struct{}{}
		it := w.c.describeOne(e, map[string]string{e.ID: store.ClaimQueued}, mine, w.c.cfg.Actor)
		wk.Kind, wk.Text = WakeClaimWaiting, it.Actor+" "+it.Text
		wk.Meta["claimId"] = sanitize.Line(e.ID, 120)
		wk.Meta["yourClaimId"] = sanitize.Line(mine[0].ClaimID, 120)
	default:
		return Wake{}, false
	}
	wk.Meta["kind"] = wk.Kind
	wk.Text = sanitize.Line(wk.Text, newsTextMax*3)
	return wk, true
}

// outcomeWake is what became of a claim of this actor that waited, as a
// wake (holders: who still holds the paths of a wait that ended); false
// when nothing did yet.
func outcomeWake(e *store.Entity, now time.Time, holders []store.Conflict) (Wake, bool) {
	at, ok := e.Outcome(now)
	if !ok {
		return Wake{}, false
	}
	it := OutcomeItem(e, now, holders)
	kind := map[string]string{"claim.granted": WakeClaimGranted, "claim.denied": WakeClaimDenied, "claim.wait_expired": WakeClaimWaitEnded}[it.Event]
	return Wake{Kind: kind, Text: it.Text, Seq: e.Seq, At: at, claim: e.ID, status: strings.TrimPrefix(it.Event, "claim."),
		Meta: map[string]string{"kind": kind, "claimId": sanitize.Line(e.ID, 120)}}, true
}
