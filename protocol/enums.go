package protocol

import (
	"slices"

	"github.com/invopop/jsonschema"
)

// enumSchema is the JSON Schema of a string enum.
func enumSchema[T ~string](values []T, description string) *jsonschema.Schema {
	s := &jsonschema.Schema{Type: "string", Description: description}
	for _, v := range values {
		s.Enum = append(s.Enum, string(v))
	}
	return s
}

// Provider is the agent product that produced an envelope.
type Provider string

// The providers an envelope may name.
const (
	ProviderCursor    Provider = "cursor"
	ProviderCodex     Provider = "codex"
	ProviderClaude    Provider = "claude-code"
	ProviderOpenCode  Provider = "opencode"
	ProviderDevinLike Provider = "devin-like"
	ProviderUnknown   Provider = "unknown"
)

// Providers lists every valid Provider.
var Providers = []Provider{ProviderCursor, ProviderCodex, ProviderClaude, ProviderOpenCode, ProviderDevinLike, ProviderUnknown}

// Valid reports whether p is one of Providers.
func (p Provider) Valid() bool { return slices.Contains(Providers, p) }

// JSONSchema implements jsonschema.JSONSchemer.
func (Provider) JSONSchema() *jsonschema.Schema {
	return enumSchema(Providers, "The agent product that produced the envelope.")
}

// TaskStatus is the state of a Task.
type TaskStatus string

// Task states.
const (
	TaskOpen       TaskStatus = "open"
	TaskInProgress TaskStatus = "in_progress"
	TaskBlocked    TaskStatus = "blocked"
	TaskDone       TaskStatus = "done"
	TaskCancelled  TaskStatus = "cancelled"
)

// TaskStatuses lists every valid TaskStatus.
var TaskStatuses = []TaskStatus{TaskOpen, TaskInProgress, TaskBlocked, TaskDone, TaskCancelled}

// Valid reports whether s is one of TaskStatuses.
func (s TaskStatus) Valid() bool { return slices.Contains(TaskStatuses, s) }

// JSONSchema implements jsonschema.JSONSchemer.
func (TaskStatus) JSONSchema() *jsonschema.Schema {
	return enumSchema(TaskStatuses, "The state of a task.")
}

// HandoffStatus is the state of a Handoff.
type HandoffStatus string

// Handoff states.
const (
	HandoffRequested HandoffStatus = "requested"
	HandoffAccepted  HandoffStatus = "accepted"
	HandoffDeclined  HandoffStatus = "declined"
	HandoffWithdrawn HandoffStatus = "withdrawn"
)

// HandoffStatuses lists every valid HandoffStatus.
var HandoffStatuses = []HandoffStatus{HandoffRequested, HandoffAccepted, HandoffDeclined, HandoffWithdrawn}

// Valid reports whether s is one of HandoffStatuses.
func (s HandoffStatus) Valid() bool { return slices.Contains(HandoffStatuses, s) }

// JSONSchema implements jsonschema.JSONSchemer.
func (HandoffStatus) JSONSchema() *jsonschema.Schema {
	return enumSchema(HandoffStatuses, "The state of a handoff.")
}

// ValidationKind says what a Validation checked.
type ValidationKind string

// Validation kinds.
const (
	ValidationTest     ValidationKind = "test"
	ValidationBuild    ValidationKind = "build"
	ValidationLint     ValidationKind = "lint"
	ValidationScenario ValidationKind = "scenario"
	ValidationReplay   ValidationKind = "replay"
	// ValidationPlays is a run of the saved plays (crosscode-mcp test).
	ValidationPlays ValidationKind = "plays"
	ValidationOther ValidationKind = "other"
)

// ValidationKinds lists every valid ValidationKind.
var ValidationKinds = []ValidationKind{ValidationTest, ValidationBuild, ValidationLint, ValidationScenario, ValidationReplay, ValidationPlays, ValidationOther}

// Valid reports whether k is one of ValidationKinds.
func (k ValidationKind) Valid() bool { return slices.Contains(ValidationKinds, k) }

// JSONSchema implements jsonschema.JSONSchemer.
func (ValidationKind) JSONSchema() *jsonschema.Schema {
	return enumSchema(ValidationKinds, "What the validation checked.")
}

// ValidationStatus is the outcome of a Validation.
type ValidationStatus string

// Validation outcomes.
const (
	ValidationPassed  ValidationStatus = "passed"
	ValidationFailed  ValidationStatus = "failed"
	ValidationErrored ValidationStatus = "errored"
	ValidationSkipped ValidationStatus = "skipped"
)

// ValidationStatuses lists every valid ValidationStatus.
var ValidationStatuses = []ValidationStatus{ValidationPassed, ValidationFailed, ValidationErrored, ValidationSkipped}

// Valid reports whether s is one of ValidationStatuses.
func (s ValidationStatus) Valid() bool { return slices.Contains(ValidationStatuses, s) }

// JSONSchema implements jsonschema.JSONSchemer.
func (ValidationStatus) JSONSchema() *jsonschema.Schema {
	return enumSchema(ValidationStatuses, "The outcome of the validation.")
}

// FileStatus is how a file changed in a ChangeTransaction.
type FileStatus string

// File change kinds.
const (
	FileAdded    FileStatus = "added"
	FileModified FileStatus = "modified"
	FileDeleted  FileStatus = "deleted"
	FileRenamed  FileStatus = "renamed"
)

// FileStatuses lists every valid FileStatus.
var FileStatuses = []FileStatus{FileAdded, FileModified, FileDeleted, FileRenamed}

// Valid reports whether s is one of FileStatuses.
func (s FileStatus) Valid() bool { return slices.Contains(FileStatuses, s) }

// JSONSchema implements jsonschema.JSONSchemer.
func (FileStatus) JSONSchema() *jsonschema.Schema {
	return enumSchema(FileStatuses, "How the file changed.")
}

// PresenceStatus is a replica's presence.
type PresenceStatus string

// Presence states.
const (
	PresenceOnline  PresenceStatus = "online"
	PresenceIdle    PresenceStatus = "idle"
	PresenceOffline PresenceStatus = "offline"
)

// PresenceStatuses lists every valid PresenceStatus.
var PresenceStatuses = []PresenceStatus{PresenceOnline, PresenceIdle, PresenceOffline}

// Valid reports whether s is one of PresenceStatuses.
func (s PresenceStatus) Valid() bool { return slices.Contains(PresenceStatuses, s) }

// JSONSchema implements jsonschema.JSONSchemer.
func (PresenceStatus) JSONSchema() *jsonschema.Schema {
	return enumSchema(PresenceStatuses, "Whether the replica's agent is working (online), waiting (idle) or gone (offline).")
}
