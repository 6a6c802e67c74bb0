package coord

import (
	"encoding/json"
	"time"

	bc "github.com/crosscode/crosscode-mcp/bridge/coord"
	"github.com/crosscode/crosscode-mcp/internal/sanitize"
	"github.com/crosscode/crosscode-mcp/protocol"
	"github.com/crosscode/crosscode-mcp/store"
)

// Bounds that keep results below tools.MaxResultBytes: lists inside a view
// show at most maxListed entries (the protocol allows 10,000), and a
// result's lists of views are cut to a byte budget, measured by tools.Fit;
// what is left out is counted.
const (
	maxListed = 10

	claimsBudget  = 8 << 10
	intentsBudget = 4 << 10
	listBudget    = 12 << 10
	feedBudget    = 14 << 10

	handoffsBudget = 3 << 10
	onlineBudget   = 2 << 10
)

// ClaimView is a claim as tools show it.
type ClaimView struct {
	ID           string   `json:"claimId"`
	Actor        string   `json:"actor"`
	Patterns     []string `json:"patterns"`
	MorePatterns int      `json:"morePatterns,omitempty"`
	Exclusive    bool     `json:"exclusive"`
	// Status is active, queued (waiting its turn), denied, released,
	// expired or wait_expired; pending for your own claim the log has not
	// decided here yet (queued for upload, or acknowledged by the service
	// and not yet read back from it).
	Status string `json:"status,omitempty"`
	// ExpiresAt is when the lease ends; for a queued claim, when its wait
	// ends.
	ExpiresAt time.Time `json:"expiresAt"`
	// WaitUntil is when a queued claim stops waiting.
	WaitUntil *time.Time `json:"waitUntil,omitempty"`
	Reason    string     `json:"reason,omitempty"`
	// Queue lists the claims waiting for this one, first in line first.
	Queue     []WaiterView `json:"queue,omitempty"`
	MoreQueue int          `json:"moreQueue,omitempty"`
}

// WaiterView is a claim waiting for another, as its queue shows it.
type WaiterView struct {
	ClaimID      string   `json:"claimId"`
	Actor        string   `json:"actor"`
	Patterns     []string `json:"patterns"`
	MorePatterns int      `json:"morePatterns,omitempty"`
	// Position is its place in this queue, from 1.
	Position int `json:"position"`
	// Reason is why it waits (text its agent wrote).
	Reason    string    `json:"reason,omitempty"`
	Since     time.Time `json:"since"`
	WaitUntil time.Time `json:"waitUntil"`
}

func claimView(e *store.Entity, now time.Time, queue []store.Waiter) ClaimView {
	var c protocol.Claim
	_ = json.Unmarshal(e.Body, &c)
	pats, more := linesOf(c.Patterns, maxListed)
	v := ClaimView{ID: e.ID, Actor: line(e.Actor), Patterns: pats, MorePatterns: more, Exclusive: e.Exclusive, Status: bc.ClaimState(e, now), ExpiresAt: e.ExpiresAt, Reason: line(c.Reason)}
	if v.Status == store.ClaimQueued || v.Status == store.ClaimWaitExpired {
		w := e.WaitUntil
		v.ExpiresAt, v.WaitUntil = w, &w
	}
	v.Queue, v.MoreQueue = waiterViews(queue)
	return v
}

func conflictViews(cs []store.Conflict) []ClaimView {
	out := make([]ClaimView, 0, len(cs))
	for _, c := range cs {
		pats, more := linesOf(c.Patterns, maxListed)
		v := ClaimView{ID: c.ClaimID, Actor: line(c.Actor), Patterns: pats, MorePatterns: more, Exclusive: c.Exclusive, Status: store.ClaimActive, ExpiresAt: c.ExpiresAt}
		if c.Queued() {
			v.Status, v.WaitUntil = store.ClaimQueued, c.WaitUntil
			if c.WaitUntil != nil {
				v.ExpiresAt = *c.WaitUntil
			}
		}
		v.Queue, v.MoreQueue = waiterViews(c.Queue)
		out = append(out, v)
	}
	return out
}

// waiterViews shows the first maxListed claims of a queue.
func waiterViews(q []store.Waiter) ([]WaiterView, int) {
	n := min(len(q), maxListed)
	if n == 0 {
		return nil, 0
	}
	out := make([]WaiterView, 0, n)
	for i, w := range q[:n] {
		pats, more := linesOf(w.Patterns, 3)
		out = append(out, WaiterView{ClaimID: w.ClaimID, Actor: line(w.Actor), Patterns: pats, MorePatterns: more, Position: i + 1,
			Reason: line(w.Reason), Since: w.Since, WaitUntil: w.WaitUntil})
	}
	return out, len(q) - n
}

// IntentView is an intent as tools show it.
type IntentView struct {
	ID        string    `json:"intentId"`
	Actor     string    `json:"actor"`
	Summary   string    `json:"summary"`
	Paths     []string  `json:"paths"`
	MorePaths int       `json:"morePaths,omitempty"`
	ExpiresAt time.Time `json:"expiresAt"`
}

func intentViews(es []*store.Entity) []IntentView {
	out := make([]IntentView, 0, len(es))
	for _, e := range es {
		var in protocol.Intent
		_ = json.Unmarshal(e.Body, &in)
		paths, more := linesOf(in.Paths, maxListed)
		out = append(out, IntentView{ID: e.ID, Actor: line(e.Actor), Summary: line(in.Summary), Paths: paths, MorePaths: more, ExpiresAt: e.ExpiresAt})
	}
	return out
}

// TaskView is a task as tools show it.
type TaskView struct {
	ID          string    `json:"taskId"`
	Title       string    `json:"title"`
	Status      string    `json:"status"`
	Assignee    string    `json:"assignee,omitempty"`
	CreatedBy   string    `json:"createdBy"`
	Labels      []string  `json:"labels,omitempty"`
	MoreLabels  int       `json:"moreLabels,omitempty"`
	Description string    `json:"description,omitempty"`
	UpdatedAt   time.Time `json:"updatedAt"`
}

// taskView shows a task; brief caps the description for lists, so a page
// of tasks stays far below the result size limit.
func taskView(t *protocol.Task, brief bool) TaskView {
	desc := text(t.Description)
	if brief {
		desc = sanitize.Text(t.Description, 280)
	}
	labels, more := linesOf(t.Labels, maxListed)
	return TaskView{ID: t.ID, Title: line(t.Title), Status: string(t.Status), Assignee: line(t.AssigneeActorID), CreatedBy: line(t.CreatedByActor),
		Labels: labels, MoreLabels: more, Description: desc, UpdatedAt: t.UpdatedAt}
}

// HandoffView is a handoff as tools show it.
type HandoffView struct {
	ID           string   `json:"handoffId"`
	From         string   `json:"from"`
	To           string   `json:"to,omitempty"`
	Status       string   `json:"status"`
	Summary      string   `json:"summary"`
	Notes        string   `json:"notes,omitempty"`
	TaskID       string   `json:"taskId,omitempty"`
	ClaimIDs     []string `json:"claimIds"`
	MoreClaimIDs int      `json:"moreClaimIds,omitempty"`
	Branch       string   `json:"branch,omitempty"`
	Commit       string   `json:"commit,omitempty"`
}

// handoffView shows a handoff; brief caps the notes for lists.
func handoffView(h *protocol.Handoff, brief bool) HandoffView {
	notes := text(h.Notes)
	if brief {
		notes = sanitize.Text(h.Notes, 280)
	}
	claims, more := linesOf(h.ClaimIDs, maxListed)
	return HandoffView{ID: h.ID, From: line(h.FromActorID), To: line(h.ToActorID), Status: string(h.Status), Summary: line(h.Summary),
		Notes: notes, TaskID: h.TaskID, ClaimIDs: claims, MoreClaimIDs: more, Branch: line(h.Branch), Commit: line(h.Commit)}
}

// linesOf sanitizes the first max values of in as lines, and counts the
// rest.
func linesOf(in []string, max int) (out []string, more int) {
	n := min(len(in), max)
	out = make([]string, n)
	for i, s := range in[:n] {
		out[i] = line(s)
	}
	return out, len(in) - n
}
