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
	// Status is active, denied, released or expired; pending for your own
	// claim the log has not decided here yet (queued, or acknowledged by
	// the service and not yet read back from it).
	Status    string    `json:"status,omitempty"`
	ExpiresAt time.Time `json:"expiresAt"`
	Reason    string    `json:"reason,omitempty"`
}

func claimView(e *store.Entity, now time.Time) ClaimView {
	var c protocol.Claim
	_ = json.Unmarshal(e.Body, &c)
	pats, more := linesOf(c.Patterns, maxListed)
	return ClaimView{ID: e.ID, Actor: line(e.Actor), Patterns: pats, MorePatterns: more, Exclusive: e.Exclusive, Status: bc.ClaimState(e, now), ExpiresAt: e.ExpiresAt, Reason: line(c.Reason)}
}

func conflictViews(cs []store.Conflict) []ClaimView {
	out := make([]ClaimView, 0, len(cs))
	for _, c := range cs {
		pats, more := linesOf(c.Patterns, maxListed)
		out = append(out, ClaimView{ID: c.ClaimID, Actor: line(c.Actor), Patterns: pats, MorePatterns: more, Exclusive: c.Exclusive, ExpiresAt: c.ExpiresAt})
	}
	return out
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
