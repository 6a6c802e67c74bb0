package protocol

import (
	"time"
)

// Payload is the typed payload of an envelope: one of *ChangeTransaction,
// *Task, *Claim, *Handoff, *Intent or *Validation.
type Payload interface {
	// EntityID is the payload's id, which equals the envelope id.
	EntityID() string
	// EntityWorkspace is the payload's workspaceId.
	EntityWorkspace() string
	validate(c *checker, t EventType)
}

// Intent announces what an actor is about to work on.
type Intent struct {
	ID          string     `json:"id"`
	WorkspaceID string     `json:"workspaceId"`
	ActorID     string     `json:"actorId"`
	ReplicaID   string     `json:"replicaId"`
	Summary     string     `json:"summary" jsonschema_description:"What the actor is about to do."`
	Paths       []string   `json:"paths" jsonschema_description:"Repository-relative paths or globs the work touches."`
	TaskID      string     `json:"taskId,omitempty"`
	CreatedAt   time.Time  `json:"createdAt"`
	ExpiresAt   *time.Time `json:"expiresAt,omitempty"`
}

// Claim reserves paths for an actor until it is released or expires.
type Claim struct {
	ID            string     `json:"id"`
	WorkspaceID   string     `json:"workspaceId"`
	ActorID       string     `json:"actorId"`
	ReplicaID     string     `json:"replicaId"`
	Patterns      []string   `json:"patterns" jsonschema_description:"Repository-relative globs; ** matches across directories."`
	Exclusive     bool       `json:"exclusive" jsonschema_description:"An exclusive claim conflicts with every overlapping claim of another actor."`
	Reason        string     `json:"reason"`
	CreatedAt     time.Time  `json:"createdAt"`
	ExpiresAt     time.Time  `json:"expiresAt"`
	HandoffID     string     `json:"handoffId,omitempty"`
	ReleasedAt    *time.Time `json:"releasedAt,omitempty" jsonschema_description:"Set on claim.released only."`
	ReleaseReason string     `json:"releaseReason,omitempty"`
	WaitUntil     *time.Time `json:"waitUntil,omitempty" jsonschema_description:"A claim that may wait its turn: when a conflicting claim is active or queued at its ingest, it is queued (not denied) until granted or until waitUntil. The wait is measured from the ingest: it lasts waitUntil minus createdAt, at most an hour."`
}

// MaxClaimWait is how long a claim may wait its turn: waitUntil is at
// most this long after createdAt.
const MaxClaimWait = time.Hour

// Handoff passes work (and claims) from one actor to another.
type Handoff struct {
	ID               string        `json:"id"`
	WorkspaceID      string        `json:"workspaceId"`
	FromActorID      string        `json:"fromActorId"`
	FromReplicaID    string        `json:"fromReplicaId"`
	ToActorID        string        `json:"toActorId,omitempty" jsonschema_description:"Absent: anyone may accept."`
	TaskID           string        `json:"taskId,omitempty"`
	ClaimIDs         []string      `json:"claimIds" jsonschema_description:"Claims that move to the accepting actor."`
	Summary          string        `json:"summary"`
	Notes            string        `json:"notes,omitempty"`
	Branch           string        `json:"branch,omitempty"`
	Commit           string        `json:"commit,omitempty"`
	Status           HandoffStatus `json:"status"`
	CreatedAt        time.Time     `json:"createdAt"`
	RespondedAt      *time.Time    `json:"respondedAt,omitempty"`
	ResponderActorID string        `json:"responderActorId,omitempty"`
	ResponseNote     string        `json:"responseNote,omitempty"`
}

// Task is a unit of work that actors track together.
type Task struct {
	ID              string     `json:"id"`
	WorkspaceID     string     `json:"workspaceId"`
	Title           string     `json:"title"`
	Description     string     `json:"description,omitempty"`
	Status          TaskStatus `json:"status"`
	AssigneeActorID string     `json:"assigneeActorId,omitempty"`
	CreatedByActor  string     `json:"createdByActorId"`
	Labels          []string   `json:"labels"`
	CreatedAt       time.Time  `json:"createdAt"`
	UpdatedAt       time.Time  `json:"updatedAt"`
}

// Validation is the result of a test, build, lint, scenario or replay run.
type Validation struct {
	ID            string           `json:"id"`
	WorkspaceID   string           `json:"workspaceId"`
	ActorID       string           `json:"actorId"`
	ReplicaID     string           `json:"replicaId"`
	Kind          ValidationKind   `json:"kind"`
	Name          string           `json:"name"`
	Status        ValidationStatus `json:"status"`
	Summary       string           `json:"summary,omitempty"`
	Commit        string           `json:"commit,omitempty"`
	TransactionID string           `json:"transactionId,omitempty"`
	TaskID        string           `json:"taskId,omitempty"`
	Paths         []string         `json:"paths,omitempty"`
	CaptureOp     string           `json:"captureOp,omitempty" jsonschema_description:"The capture operation (op) that produced a scenario or replay validation."`
	DurationMs    *int64           `json:"durationMs,omitempty" jsonschema:"minimum=0"`
	CreatedAt     time.Time        `json:"createdAt"`
}

// ChangeTransaction describes a set of working-tree changes an actor shares.
type ChangeTransaction struct {
	ID          string       `json:"id"`
	WorkspaceID string       `json:"workspaceId"`
	ActorID     string       `json:"actorId"`
	ReplicaID   string       `json:"replicaId"`
	Summary     string       `json:"summary"`
	BaseCommit  string       `json:"baseCommit"`
	Branch      string       `json:"branch,omitempty"`
	Files       []FileChange `json:"files"`
	Patch       string       `json:"patch,omitempty" jsonschema_description:"Unified diff, at most 256 KiB." jsonschema:"maxLength=262144"`
	CreatedAt   time.Time    `json:"createdAt"`
}

// FileChange is one file of a ChangeTransaction.
type FileChange struct {
	Path      string     `json:"path"`
	Status    FileStatus `json:"status"`
	Additions int64      `json:"additions" jsonschema:"minimum=0"`
	Deletions int64      `json:"deletions" jsonschema:"minimum=0"`
}

func (p *Intent) EntityID() string            { return p.ID }
func (p *Claim) EntityID() string             { return p.ID }
func (p *Handoff) EntityID() string           { return p.ID }
func (p *Task) EntityID() string              { return p.ID }
func (p *Validation) EntityID() string        { return p.ID }
func (p *ChangeTransaction) EntityID() string { return p.ID }

func (p *Intent) EntityWorkspace() string            { return p.WorkspaceID }
func (p *Claim) EntityWorkspace() string             { return p.WorkspaceID }
func (p *Handoff) EntityWorkspace() string           { return p.WorkspaceID }
func (p *Task) EntityWorkspace() string              { return p.WorkspaceID }
func (p *Validation) EntityWorkspace() string        { return p.WorkspaceID }
func (p *ChangeTransaction) EntityWorkspace() string { return p.WorkspaceID }

func (p *Intent) validate(c *checker, _ EventType) {
	c.id("payload.id", p.ID, true)
	c.id("payload.workspaceId", p.WorkspaceID, true)
	c.id("payload.actorId", p.ActorID, true)
	c.id("payload.replicaId", p.ReplicaID, true)
	c.text("payload.summary", p.Summary, MaxTextBytes, true)
	list(c, "payload.paths", p.Paths, true, false, c.glob)
	c.id("payload.taskId", p.TaskID, false)
	c.when("payload.createdAt", &p.CreatedAt)
	c.maybeWhen("payload.expiresAt", p.ExpiresAt)
	if p.ExpiresAt != nil && c.err == nil && !p.ExpiresAt.After(p.CreatedAt) {
		c.fail("payload.expiresAt", "must be after createdAt")
	}
}

func (p *Claim) validate(c *checker, t EventType) {
	c.id("payload.id", p.ID, true)
	c.id("payload.workspaceId", p.WorkspaceID, true)
	c.id("payload.actorId", p.ActorID, true)
	c.id("payload.replicaId", p.ReplicaID, true)
	list(c, "payload.patterns", p.Patterns, true, true, c.glob)
	c.text("payload.reason", p.Reason, MaxTextBytes, false)
	c.when("payload.createdAt", &p.CreatedAt)
	c.when("payload.expiresAt", &p.ExpiresAt)
	if c.err == nil && !p.ExpiresAt.After(p.CreatedAt) {
		c.fail("payload.expiresAt", "must be after createdAt")
	}
	c.id("payload.handoffId", p.HandoffID, false)
	c.maybeWhen("payload.releasedAt", p.ReleasedAt)
	c.text("payload.releaseReason", p.ReleaseReason, MaxTextBytes, false)
	c.maybeWhen("payload.waitUntil", p.WaitUntil)
	if p.WaitUntil != nil && c.err == nil {
		switch w := p.WaitUntil.Sub(p.CreatedAt); {
		case w <= 0:
			c.fail("payload.waitUntil", "must be after createdAt")
		case w > MaxClaimWait:
			c.fail("payload.waitUntil", "must be at most %s after createdAt", MaxClaimWait)
		}
	}
	switch {
	case t == EventClaimCreated && p.ReleasedAt != nil:
		c.fail("payload.releasedAt", "must be absent on claim.created")
	case t == EventClaimCreated && p.ReleaseReason != "":
		c.fail("payload.releaseReason", "must be absent on claim.created")
	case t == EventClaimReleased && p.ReleasedAt == nil:
		c.fail("payload.releasedAt", "required on claim.released")
	}
}

func (p *Handoff) validate(c *checker, t EventType) {
	c.id("payload.id", p.ID, true)
	c.id("payload.workspaceId", p.WorkspaceID, true)
	c.id("payload.fromActorId", p.FromActorID, true)
	c.id("payload.fromReplicaId", p.FromReplicaID, true)
	c.id("payload.toActorId", p.ToActorID, false)
	c.id("payload.taskId", p.TaskID, false)
	list(c, "payload.claimIds", p.ClaimIDs, true, false, func(f, v string) { c.id(f, v, true) })
	c.text("payload.summary", p.Summary, MaxTextBytes, true)
	c.text("payload.notes", p.Notes, MaxTextBytes, false)
	c.id("payload.branch", p.Branch, false)
	c.id("payload.commit", p.Commit, false)
	if !p.Status.Valid() {
		c.fail("payload.status", "must be one of requested, accepted, declined, withdrawn; got %q", p.Status)
	}
	c.when("payload.createdAt", &p.CreatedAt)
	c.maybeWhen("payload.respondedAt", p.RespondedAt)
	c.id("payload.responderActorId", p.ResponderActorID, false)
	c.text("payload.responseNote", p.ResponseNote, MaxTextBytes, false)
	switch {
	case t == EventHandoffRequested && p.Status != HandoffRequested:
		c.fail("payload.status", "must be \"requested\" on handoff.requested")
	case t == EventHandoffRequested && (p.RespondedAt != nil || p.ResponderActorID != "" || p.ResponseNote != ""):
		c.fail("payload.respondedAt", "response fields must be absent on handoff.requested")
	case t == EventHandoffResponded && p.Status == HandoffRequested:
		c.fail("payload.status", "must be accepted, declined or withdrawn on handoff.responded")
	case t == EventHandoffResponded && p.RespondedAt == nil:
		c.fail("payload.respondedAt", "required on handoff.responded")
	case t == EventHandoffResponded && p.ResponderActorID == "":
		c.fail("payload.responderActorId", "required on handoff.responded")
	}
}

func (p *Task) validate(c *checker, _ EventType) {
	c.id("payload.id", p.ID, true)
	c.id("payload.workspaceId", p.WorkspaceID, true)
	c.text("payload.title", p.Title, 1024, true)
	c.text("payload.description", p.Description, MaxTextBytes, false)
	if !p.Status.Valid() {
		c.fail("payload.status", "must be one of open, in_progress, blocked, done, cancelled; got %q", p.Status)
	}
	c.id("payload.assigneeActorId", p.AssigneeActorID, false)
	c.id("payload.createdByActorId", p.CreatedByActor, true)
	list(c, "payload.labels", p.Labels, true, false, func(f, v string) { c.id(f, v, true) })
	c.when("payload.createdAt", &p.CreatedAt)
	c.when("payload.updatedAt", &p.UpdatedAt)
	if c.err == nil && p.UpdatedAt.Before(p.CreatedAt) {
		c.fail("payload.updatedAt", "must not be before createdAt")
	}
}

func (p *Validation) validate(c *checker, _ EventType) {
	c.id("payload.id", p.ID, true)
	c.id("payload.workspaceId", p.WorkspaceID, true)
	c.id("payload.actorId", p.ActorID, true)
	c.id("payload.replicaId", p.ReplicaID, true)
	if !p.Kind.Valid() {
		c.fail("payload.kind", "must be one of test, build, lint, scenario, replay, other; got %q", p.Kind)
	}
	c.text("payload.name", p.Name, 1024, true)
	if !p.Status.Valid() {
		c.fail("payload.status", "must be one of passed, failed, errored, skipped; got %q", p.Status)
	}
	c.text("payload.summary", p.Summary, MaxTextBytes, false)
	c.id("payload.commit", p.Commit, false)
	c.id("payload.transactionId", p.TransactionID, false)
	c.id("payload.taskId", p.TaskID, false)
	list(c, "payload.paths", p.Paths, false, false, c.glob)
	c.id("payload.captureOp", p.CaptureOp, false)
	if p.DurationMs != nil && *p.DurationMs < 0 {
		c.fail("payload.durationMs", "must not be negative")
	}
	c.when("payload.createdAt", &p.CreatedAt)
}

func (p *ChangeTransaction) validate(c *checker, _ EventType) {
	c.id("payload.id", p.ID, true)
	c.id("payload.workspaceId", p.WorkspaceID, true)
	c.id("payload.actorId", p.ActorID, true)
	c.id("payload.replicaId", p.ReplicaID, true)
	c.text("payload.summary", p.Summary, MaxTextBytes, true)
	c.id("payload.baseCommit", p.BaseCommit, true)
	c.id("payload.branch", p.Branch, false)
	list(c, "payload.files", p.Files, true, false, func(f string, fc FileChange) {
		c.relPath(f+".path", fc.Path)
		if !fc.Status.Valid() {
			c.fail(f+".status", "must be one of added, modified, deleted, renamed; got %q", fc.Status)
		}
		if fc.Additions < 0 {
			c.fail(f+".additions", "must not be negative")
		}
		if fc.Deletions < 0 {
			c.fail(f+".deletions", "must not be negative")
		}
	})
	if len(p.Patch) > MaxPatchBytes {
		c.fail("payload.patch", "too long: %d bytes, at most %d (256 KiB)", len(p.Patch), MaxPatchBytes)
	} else {
		c.text("payload.patch", p.Patch, MaxPatchBytes, false)
	}
	c.when("payload.createdAt", &p.CreatedAt)
}
