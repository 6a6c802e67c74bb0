package protocol

import (
	"bytes"
	"encoding/json"
	"time"
)

// ProtocolVersion is the version of the page answers (GET /v1/operations and
// friends) this package speaks; a client asks for it with
// ?protocolVersion=2. It is separate from the envelope's SchemaVersion.
const ProtocolVersion = 2

// MaxBodyBytes is the largest request body the service reads (1 MiB).
const MaxBodyBytes = 1 << 20

// IngestRequest is the body of POST /v1/{transactions,tasks,claims,handoffs,intents,validations}.
type IngestRequest struct {
	Envelope *Envelope `json:"envelope"`
}

// DecodeIngestRequest strictly decodes an ingest body for the endpoint of
// kind. The envelope's type must belong to kind, and the service-assigned
// fields (serverSequence, ingestedAt) must be absent.
func DecodeIngestRequest(data []byte, kind Kind) (*Envelope, error) {
	// Fast path: one strict pass over the request and the envelope's own
	// fields, then one over the payload.
	p, raw := newPlainEnvelope()
	fast := struct {
		Envelope *plainEnvelope `json:"envelope"`
	}{p}
	if decodeStrict(data, &fast, "") == nil {
		if e := new(Envelope); e.finish(p, raw) == nil {
			return checkIngest(e, kind)
		}
		// fast.Envelope starts non-nil, so a body without an envelope
		// also lands here: the slow path names what is missing.
	}
	// Slow path, for failures: decode in steps so the error names its field.
	var req struct {
		Envelope json.RawMessage `json:"envelope"`
	}
	if err := decodeStrict(data, &req, ""); err != nil {
		return nil, err
	}
	if len(req.Envelope) == 0 || bytes.Equal(req.Envelope, []byte("null")) {
		return nil, fieldErr("envelope", "required")
	}
	e := new(Envelope)
	if err := e.UnmarshalJSON(req.Envelope); err != nil {
		return nil, jsonFieldError(err, "envelope")
	}
	return checkIngest(e, kind)
}

// checkIngest applies the endpoint's rules to a decoded envelope.
func checkIngest(e *Envelope, kind Kind) (*Envelope, error) {
	switch {
	case e.Type.Kind() != kind:
		return nil, fieldErr("envelope.type", "%q does not belong on POST /v1/%s (send it to /v1/%s)", e.Type, kind.Collection(), e.Type.Kind().Collection())
	case e.ServerSequence != 0:
		return nil, fieldErr("envelope.serverSequence", "is assigned by the service; leave it out")
	case e.IngestedAt != nil:
		return nil, fieldErr("envelope.ingestedAt", "is assigned by the service; leave it out")
	}
	return e, nil
}

// IngestReceipt answers a successful ingest. A duplicate (same replicaId,
// clientSequence and content) gets its original receipt with Duplicate set.
type IngestReceipt struct {
	ID             string    `json:"id"`
	ServerSequence int64     `json:"serverSequence" jsonschema:"minimum=1"`
	IngestedAt     time.Time `json:"ingestedAt"`
	Duplicate      bool      `json:"duplicate"`
}

// Page is one page of a cursor read. A version-2 answer carries Status "ok"
// and ProtocolVersion 2; a version-1 answer has neither. Items are whole
// envelopes with serverSequence and ingestedAt, in server order.
type Page struct {
	Status          string      `json:"status,omitempty" jsonschema:"enum=ok"`
	ProtocolVersion int         `json:"protocolVersion,omitempty" jsonschema:"enum=2"`
	Items           []*Envelope `json:"items"`
	NextCursor      int64       `json:"nextCursor" jsonschema:"minimum=0" jsonschema_description:"Pass as afterSequence to read on."`
	HasMore         bool        `json:"hasMore"`
}

// CursorTooOld answers a version-2 read whose cursor points into history
// that retention deleted. The reader adopts ResyncFrom and continues.
type CursorTooOld struct {
	Status          string  `json:"status" jsonschema:"enum=cursor-too-old"`
	ProtocolVersion int     `json:"protocolVersion" jsonschema:"enum=2"`
	ResyncFrom      int64   `json:"resyncFrom" jsonschema:"minimum=0" jsonschema_description:"The oldest cursor that can still be served in full."`
	RetentionDays   float64 `json:"retentionDays" jsonschema:"minimum=0"`
}

// Status values of page answers.
const (
	StatusOK           = "ok"
	StatusCursorTooOld = "cursor-too-old"
)

// PageResponse is what a version-2 reader parses: a Page or a CursorTooOld.
type PageResponse struct {
	Page   *Page
	TooOld *CursorTooOld
}

// DecodePageResponse strictly decodes a version-2 page answer.
func DecodePageResponse(data []byte) (*PageResponse, error) {
	var head struct {
		Status string `json:"status"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, jsonFieldError(err, "")
	}
	switch head.Status {
	case StatusCursorTooOld:
		var c CursorTooOld
		if err := decodeStrict(data, &c, ""); err != nil {
			return nil, err
		}
		if c.ProtocolVersion != ProtocolVersion {
			return nil, fieldErr("protocolVersion", "must be 2")
		}
		return &PageResponse{TooOld: &c}, nil
	case StatusOK:
		var p Page
		if err := decodeStrict(data, &p, ""); err != nil {
			return nil, err
		}
		if p.ProtocolVersion != ProtocolVersion {
			return nil, fieldErr("protocolVersion", "must be 2")
		}
		if p.Items == nil {
			return nil, fieldErr("items", "required")
		}
		return &PageResponse{Page: &p}, nil
	case "":
		return nil, fieldErr("status", "required")
	}
	return nil, fieldErr("status", "must be %q or %q, got %q", StatusOK, StatusCursorTooOld, head.Status)
}

// PresenceUpdate is the body of POST /v1/presence.
type PresenceUpdate struct {
	ReplicaID string         `json:"replicaId"`
	ActorID   string         `json:"actorId"`
	SessionID string         `json:"sessionId,omitempty"`
	Agent     *Agent         `json:"agent,omitempty"`
	Status    PresenceStatus `json:"status"`
}

// DecodePresenceUpdate strictly decodes and validates a presence update.
func DecodePresenceUpdate(data []byte) (*PresenceUpdate, error) {
	var p PresenceUpdate
	if err := decodeStrict(data, &p, ""); err != nil {
		return nil, err
	}
	return &p, p.Validate()
}

// Validate checks a presence update.
func (p *PresenceUpdate) Validate() error {
	c := &checker{}
	c.id("replicaId", p.ReplicaID, true)
	c.id("actorId", p.ActorID, true)
	c.id("sessionId", p.SessionID, false)
	if p.Agent != nil {
		if !p.Agent.Provider.Valid() {
			c.fail("agent.provider", "must be one of %v; got %q", Providers, p.Agent.Provider)
		}
		c.id("agent.adapterId", p.Agent.AdapterID, false)
		c.id("agent.sessionReference", p.Agent.SessionReference, false)
	}
	if !p.Status.Valid() {
		c.fail("status", "must be one of online, idle, offline; got %q", p.Status)
	}
	return c.result()
}

// WebSocket messages.

// WSSubscribe is the first frame a client sends on GET /v1/subscribe.
type WSSubscribe struct {
	Type        string `json:"type" jsonschema:"enum=subscribe"`
	WorkspaceID string `json:"workspaceId"`
	ReplicaID   string `json:"replicaId"`
	AccessToken string `json:"accessToken"`
}

// DecodeWSSubscribe strictly decodes a subscribe frame.
func DecodeWSSubscribe(data []byte) (*WSSubscribe, error) {
	var s WSSubscribe
	if err := decodeStrict(data, &s, ""); err != nil {
		return nil, err
	}
	c := &checker{}
	if s.Type != "subscribe" {
		c.fail("type", "must be \"subscribe\", got %q", s.Type)
	}
	c.id("workspaceId", s.WorkspaceID, true)
	c.id("replicaId", s.ReplicaID, true)
	c.id("accessToken", s.AccessToken, true)
	return &s, c.result()
}

// WSSubscribed acknowledges a subscription. Cursor is the workspace's head
// serverSequence at subscription time: every later operation arrives as a
// fan-out frame; earlier ones are read with GET /v1/events.
type WSSubscribed struct {
	Type   string `json:"type" jsonschema:"enum=subscribed"`
	Cursor int64  `json:"cursor" jsonschema:"minimum=0"`
}

// WSError refuses a subscription (and is followed by a close).
type WSError struct {
	Type    string    `json:"type" jsonschema:"enum=error"`
	Code    ErrorCode `json:"code"`
	Message string    `json:"message"`
}

// WebSocket close codes the service uses besides the standard ones.
const (
	// CloseSlowConsumer closes a subscriber whose queue overflowed; the
	// close reason names the cursor to resume from with GET /v1/events.
	CloseSlowConsumer = 4008
	// CloseRefused closes a subscription refused with a WSError frame.
	CloseRefused = 4003
)

// RemoteEvent is the part every logged fan-out frame's data carries.
type RemoteEvent struct {
	EventID         string `json:"eventId" jsonschema_description:"The envelope id (the entity id)."`
	ServerSequence  int64  `json:"serverSequence" jsonschema:"minimum=1"`
	WorkspaceID     string `json:"workspaceId"`
	SenderReplicaID string `json:"senderReplicaId"`
}

// RemoteOperation is the data of an "operation" frame (transaction.created).
type RemoteOperation struct {
	RemoteEvent
	UpdatedAt   time.Time          `json:"updatedAt"`
	Transaction *ChangeTransaction `json:"transaction"`
}

// RemoteTask is the data of a "task" frame.
type RemoteTask struct {
	RemoteEvent
	UpdatedAt time.Time `json:"updatedAt"`
	Task      *Task     `json:"task"`
}

// RemoteClaim is the data of a "claim" frame.
type RemoteClaim struct {
	RemoteEvent
	UpdatedAt time.Time `json:"updatedAt"`
	Claim     *Claim    `json:"claim"`
}

// RemoteHandoff is the data of a "handoff" frame.
type RemoteHandoff struct {
	RemoteEvent
	UpdatedAt time.Time `json:"updatedAt"`
	Handoff   *Handoff  `json:"handoff"`
}

// RemoteIntent is the data of an "intent" frame.
type RemoteIntent struct {
	RemoteEvent
	UpdatedAt time.Time `json:"updatedAt"`
	Intent    *Intent   `json:"intent"`
}

// RemoteValidation is the data of a "validation" frame. Validations are
// immutable, so it carries createdAt instead of updatedAt.
type RemoteValidation struct {
	RemoteEvent
	CreatedAt  time.Time   `json:"createdAt"`
	Validation *Validation `json:"validation"`
}

// RemotePresence is the data of a "presence" frame. Presence is not part of
// the ordered log, so it has no eventId or serverSequence.
type RemotePresence struct {
	WorkspaceID     string         `json:"workspaceId"`
	SenderReplicaID string         `json:"senderReplicaId"`
	ActorID         string         `json:"actorId"`
	SessionID       string         `json:"sessionId,omitempty"`
	Agent           *Agent         `json:"agent,omitempty"`
	Status          PresenceStatus `json:"status"`
	UpdatedAt       time.Time      `json:"updatedAt"`
}

// FanOut is one WebSocket fan-out frame: {"type": ..., "data": {...}}.
// Exactly one of the pointers is set, matching Type.
type FanOut struct {
	Type       string
	Operation  *RemoteOperation
	Presence   *RemotePresence
	Task       *RemoteTask
	Claim      *RemoteClaim
	Handoff    *RemoteHandoff
	Intent     *RemoteIntent
	Validation *RemoteValidation
}

// FanOutTypes lists the seven fan-out frame types.
var FanOutTypes = []string{"operation", "presence", "task", "claim", "handoff", "intent", "validation"}

func (f *FanOut) data() any {
	switch f.Type {
	case "operation":
		return f.Operation
	case "presence":
		return f.Presence
	case "task":
		return f.Task
	case "claim":
		return f.Claim
	case "handoff":
		return f.Handoff
	case "intent":
		return f.Intent
	case "validation":
		return f.Validation
	}
	return nil
}

// MarshalJSON encodes the frame.
func (f FanOut) MarshalJSON() ([]byte, error) {
	return marshalCompact(struct {
		Type string `json:"type"`
		Data any    `json:"data"`
	}{f.Type, f.data()})
}

// UnmarshalJSON strictly decodes a frame.
func (f *FanOut) UnmarshalJSON(data []byte) error {
	var raw struct {
		Type string          `json:"type"`
		Data json.RawMessage `json:"data"`
	}
	if err := decodeStrict(data, &raw, ""); err != nil {
		return err
	}
	*f = FanOut{Type: raw.Type}
	switch raw.Type {
	case "operation":
		f.Operation = new(RemoteOperation)
	case "presence":
		f.Presence = new(RemotePresence)
	case "task":
		f.Task = new(RemoteTask)
	case "claim":
		f.Claim = new(RemoteClaim)
	case "handoff":
		f.Handoff = new(RemoteHandoff)
	case "intent":
		f.Intent = new(RemoteIntent)
	case "validation":
		f.Validation = new(RemoteValidation)
	default:
		return fieldErr("type", "unknown fan-out type %q", raw.Type)
	}
	if len(raw.Data) == 0 || bytes.Equal(raw.Data, []byte("null")) {
		return fieldErr("data", "required")
	}
	return decodeStrict(raw.Data, f.data(), "data")
}

// NewFanOut builds the fan-out frame for a logged envelope (one with
// ServerSequence and IngestedAt).
func NewFanOut(e *Envelope) *FanOut {
	ev := RemoteEvent{EventID: e.ID, ServerSequence: e.ServerSequence, WorkspaceID: e.WorkspaceID, SenderReplicaID: e.ReplicaID}
	var at time.Time
	if e.IngestedAt != nil {
		at = *e.IngestedAt
	}
	f := &FanOut{Type: e.Type.Kind().FanOutType()}
	switch p := e.Payload.(type) {
	case *ChangeTransaction:
		f.Operation = &RemoteOperation{ev, at, p}
	case *Task:
		f.Task = &RemoteTask{ev, at, p}
	case *Claim:
		f.Claim = &RemoteClaim{ev, at, p}
	case *Handoff:
		f.Handoff = &RemoteHandoff{ev, at, p}
	case *Intent:
		f.Intent = &RemoteIntent{ev, at, p}
	case *Validation:
		f.Validation = &RemoteValidation{ev, at, p}
	}
	return f
}
