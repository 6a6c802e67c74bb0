package coord

import (
	"encoding/json"
	"time"

	"github.com/crosscode/crosscode-mcp/internal/sanitize"
	"github.com/crosscode/crosscode-mcp/protocol"
	"github.com/crosscode/crosscode-mcp/store"
)

// ClaimView is a claim as tools show it.
type ClaimView struct {
	ID        string    `json:"claimId"`
	Actor     string    `json:"actor"`
	Patterns  []string  `json:"patterns"`
	Exclusive bool      `json:"exclusive"`
	Status    string    `json:"status,omitempty" jsonschema_description:"active, denied, released or expired."`
	ExpiresAt time.Time `json:"expiresAt"`
	Reason    string    `json:"reason,omitempty"`
}

func claimView(e *store.Entity, now time.Time) ClaimView {
	var c protocol.Claim
	_ = json.Unmarshal(e.Body, &c)
	return ClaimView{ID: e.ID, Actor: line(e.Actor), Patterns: linesOf(c.Patterns), Exclusive: e.Exclusive, Status: e.Current(now), ExpiresAt: e.ExpiresAt, Reason: line(c.Reason)}
}

func conflictViews(cs []store.Conflict) []ClaimView {
	out := make([]ClaimView, 0, len(cs))
	for _, c := range cs {
		out = append(out, ClaimView{ID: c.ClaimID, Actor: line(c.Actor), Patterns: linesOf(c.Patterns), Exclusive: c.Exclusive, ExpiresAt: c.ExpiresAt})
	}
	return out
}

// IntentView is an intent as tools show it.
type IntentView struct {
	ID        string    `json:"intentId"`
	Actor     string    `json:"actor"`
	Summary   string    `json:"summary"`
	Paths     []string  `json:"paths"`
	ExpiresAt time.Time `json:"expiresAt"`
}

func intentViews(es []*store.Entity) []IntentView {
	out := make([]IntentView, 0, len(es))
	for _, e := range es {
		var in protocol.Intent
		_ = json.Unmarshal(e.Body, &in)
		out = append(out, IntentView{ID: e.ID, Actor: line(e.Actor), Summary: line(in.Summary), Paths: linesOf(in.Paths), ExpiresAt: e.ExpiresAt})
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
	return TaskView{ID: t.ID, Title: line(t.Title), Status: string(t.Status), Assignee: line(t.AssigneeActorID), CreatedBy: line(t.CreatedByActor),
		Labels: linesOf(t.Labels), Description: desc, UpdatedAt: t.UpdatedAt}
}

// HandoffView is a handoff as tools show it.
type HandoffView struct {
	ID       string   `json:"handoffId"`
	From     string   `json:"from"`
	To       string   `json:"to,omitempty"`
	Status   string   `json:"status"`
	Summary  string   `json:"summary"`
	Notes    string   `json:"notes,omitempty"`
	TaskID   string   `json:"taskId,omitempty"`
	ClaimIDs []string `json:"claimIds"`
	Branch   string   `json:"branch,omitempty"`
	Commit   string   `json:"commit,omitempty"`
}

// handoffView shows a handoff; brief caps the notes for lists.
func handoffView(h *protocol.Handoff, brief bool) HandoffView {
	notes := text(h.Notes)
	if brief {
		notes = sanitize.Text(h.Notes, 280)
	}
	return HandoffView{ID: h.ID, From: line(h.FromActorID), To: line(h.ToActorID), Status: string(h.Status), Summary: line(h.Summary),
		Notes: notes, TaskID: h.TaskID, ClaimIDs: h.ClaimIDs, Branch: line(h.Branch), Commit: line(h.Commit)}
}

func linesOf(in []string) []string {
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = line(s)
	}
	return out
}
