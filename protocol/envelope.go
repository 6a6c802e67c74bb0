package protocol

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/invopop/jsonschema"
)

// SchemaVersion is the only envelope schemaVersion this package accepts.
const SchemaVersion = 1

// EventType is an envelope's type.
type EventType string

// The nine event types.
const (
	EventTransactionCreated EventType = "transaction.created"
	EventTaskCreated        EventType = "task.created"
	EventTaskUpdated        EventType = "task.updated"
	EventClaimCreated       EventType = "claim.created"
	EventClaimReleased      EventType = "claim.released"
	EventHandoffRequested   EventType = "handoff.requested"
	EventHandoffResponded   EventType = "handoff.responded"
	EventIntentPublished    EventType = "intent.published"
	EventValidationComplete EventType = "validation.completed"
)

// EventTypes lists the nine event types in a stable order.
var EventTypes = []EventType{
	EventTransactionCreated, EventTaskCreated, EventTaskUpdated,
	EventClaimCreated, EventClaimReleased, EventHandoffRequested,
	EventHandoffResponded, EventIntentPublished, EventValidationComplete,
}

// JSONSchema implements jsonschema.JSONSchemer.
func (EventType) JSONSchema() *jsonschema.Schema {
	return enumSchema(EventTypes, "The event type; it decides the payload's shape.")
}

// Kind is the kind of entity an event is about. Each kind has its own
// ingest endpoint (POST /v1/<collection>) and page (GET /v1/<collection>).
type Kind string

// The six entity kinds.
const (
	KindTransaction Kind = "transaction"
	KindTask        Kind = "task"
	KindClaim       Kind = "claim"
	KindHandoff     Kind = "handoff"
	KindIntent      Kind = "intent"
	KindValidation  Kind = "validation"
)

// Kinds lists the six kinds in a stable order.
var Kinds = []Kind{KindTransaction, KindTask, KindClaim, KindHandoff, KindIntent, KindValidation}

// Collection is the URL segment of the kind's endpoints, e.g. "claims".
func (k Kind) Collection() string { return string(k) + "s" }

// FanOutType is the WebSocket fan-out frame type for the kind: "operation"
// for transactions, the kind's name otherwise.
func (k Kind) FanOutType() string {
	if k == KindTransaction {
		return "operation"
	}
	return string(k)
}

// KindForCollection maps an endpoint segment ("claims") to its Kind.
func KindForCollection(collection string) (Kind, bool) {
	for _, k := range Kinds {
		if k.Collection() == collection {
			return k, true
		}
	}
	return "", false
}

type eventInfo struct {
	kind       Kind
	opens      bool // the event opens an entity (vs changes an existing one)
	newPayload func() Payload
}

var events = map[EventType]eventInfo{
	EventTransactionCreated: {KindTransaction, true, func() Payload { return new(ChangeTransaction) }},
	EventTaskCreated:        {KindTask, true, func() Payload { return new(Task) }},
	EventTaskUpdated:        {KindTask, false, func() Payload { return new(Task) }},
	EventClaimCreated:       {KindClaim, true, func() Payload { return new(Claim) }},
	EventClaimReleased:      {KindClaim, false, func() Payload { return new(Claim) }},
	EventHandoffRequested:   {KindHandoff, true, func() Payload { return new(Handoff) }},
	EventHandoffResponded:   {KindHandoff, false, func() Payload { return new(Handoff) }},
	EventIntentPublished:    {KindIntent, true, func() Payload { return new(Intent) }},
	EventValidationComplete: {KindValidation, true, func() Payload { return new(Validation) }},
}

// Valid reports whether t is one of the nine event types.
func (t EventType) Valid() bool { _, ok := events[t]; return ok }

// Kind is the entity kind the event is about ("" for an unknown type).
func (t EventType) Kind() Kind { return events[t].kind }

// Opens reports whether the event opens a new entity (task.created,
// claim.created, ...) rather than changing an existing one (task.updated,
// claim.released, handoff.responded).
func (t EventType) Opens() bool { return events[t].opens }

// Agent identifies the agent product and session behind an envelope.
type Agent struct {
	Provider         Provider `json:"provider"`
	AdapterID        string   `json:"adapterId,omitempty" jsonschema_description:"The software that emitted the envelope, e.g. crosscode-mcp."`
	SessionReference string   `json:"sessionReference,omitempty" jsonschema_description:"The agent's own session id, for finding the conversation behind a change."`
}

// Envelope wraps every event a replica uploads. ServerSequence and
// IngestedAt are assigned by the service; they are absent on ingest and
// present on envelopes read back from a page.
type Envelope struct {
	ID             string     `json:"id" jsonschema_description:"The entity id; equals payload.id."`
	SchemaVersion  int        `json:"schemaVersion" jsonschema:"enum=1"`
	WorkspaceID    string     `json:"workspaceId"`
	ReplicaID      string     `json:"replicaId" jsonschema_description:"The clone or worktree that emitted the envelope."`
	ActorID        string     `json:"actorId"`
	SessionID      string     `json:"sessionId,omitempty"`
	Agent          *Agent     `json:"agent,omitempty"`
	Type           EventType  `json:"type"`
	ClientSequence int64      `json:"clientSequence" jsonschema:"minimum=0" jsonschema_description:"Strictly increasing per replica; (replicaId, clientSequence) identifies the envelope for ever."`
	ServerSequence int64      `json:"serverSequence,omitempty" jsonschema:"minimum=1" jsonschema_description:"Assigned by the service: one gap-free order per workspace."`
	CreatedAt      time.Time  `json:"createdAt"`
	Payload        Payload    `json:"payload"`
	Signature      string     `json:"signature,omitempty"`
	IngestedAt     *time.Time `json:"ingestedAt,omitempty" jsonschema_description:"Assigned by the service at ingest."`
}

// rawPayload stands in for Payload while the envelope's own fields are
// decoded, so the payload can be decoded once its type is known.
type rawPayload struct{ data json.RawMessage }

func (r *rawPayload) UnmarshalJSON(b []byte) error {
	r.data = append(r.data[:0], b...)
	return nil
}
func (*rawPayload) EntityID() string             { return "" }
func (*rawPayload) EntityWorkspace() string      { return "" }
func (*rawPayload) validate(*checker, EventType) {}

// plainEnvelope is Envelope without its methods, so encoding/json decodes
// it field by field; its Payload holds a *rawPayload while decoding.
type plainEnvelope Envelope

func newPlainEnvelope() (*plainEnvelope, *rawPayload) {
	raw := &rawPayload{}
	return &plainEnvelope{Payload: raw}, raw
}

// UnmarshalJSON decodes and validates an envelope strictly.
func (e *Envelope) UnmarshalJSON(data []byte) error {
	p, raw := newPlainEnvelope()
	if err := decodeStrict(data, p, ""); err != nil {
		return err
	}
	return e.finish(p, raw)
}

// finish completes decoding once the envelope's own fields are in p and
// its payload's bytes in raw: it decodes the payload by type and validates.
func (e *Envelope) finish(p *plainEnvelope, raw *rawPayload) error {
	if p.Payload == nil || raw.data == nil || bytes.Equal(raw.data, []byte("null")) {
		if p.Type.Valid() {
			return fieldErr("payload", "required")
		}
	}
	if !p.Type.Valid() {
		if p.Type == "" {
			return fieldErr("type", "required")
		}
		return fieldErr("type", "unknown event type %q", p.Type)
	}
	payload := events[p.Type].newPayload()
	if err := decodeStrict(raw.data, payload, "payload"); err != nil {
		return err
	}
	p.Payload = payload
	*e = Envelope(*p)
	return e.Validate()
}

// Validate checks every rule of the envelope and its payload, and
// normalizes its times to UTC. UnmarshalJSON calls it; call it on
// envelopes built in Go before sending them.
func (e *Envelope) Validate() error {
	c := &checker{}
	c.id("id", e.ID, true)
	if e.SchemaVersion != SchemaVersion {
		c.fail("schemaVersion", "must be 1, got %d (unknown schema versions are rejected, not partially parsed)", e.SchemaVersion)
	}
	c.id("workspaceId", e.WorkspaceID, true)
	c.id("replicaId", e.ReplicaID, true)
	c.id("actorId", e.ActorID, true)
	c.id("sessionId", e.SessionID, false)
	if e.Agent != nil {
		if !e.Agent.Provider.Valid() {
			c.fail("agent.provider", "must be one of %v; got %q", Providers, e.Agent.Provider)
		}
		c.id("agent.adapterId", e.Agent.AdapterID, false)
		c.id("agent.sessionReference", e.Agent.SessionReference, false)
	}
	if !e.Type.Valid() {
		c.fail("type", "unknown event type %q", e.Type)
	}
	if e.ClientSequence < 0 {
		c.fail("clientSequence", "must not be negative")
	}
	if e.ServerSequence < 0 {
		c.fail("serverSequence", "must be positive")
	}
	c.when("createdAt", &e.CreatedAt)
	c.maybeWhen("ingestedAt", e.IngestedAt)
	c.text("signature", e.Signature, 4096, false)
	if c.err != nil {
		return c.err
	}
	if e.Payload == nil {
		return fieldErr("payload", "required")
	}
	if !payloadFits(e.Type, e.Payload) {
		return fieldErr("payload", "does not fit type %q", e.Type)
	}
	e.Payload.validate(c, e.Type)
	if c.err != nil {
		return c.err
	}
	if id := e.Payload.EntityID(); id != e.ID {
		return fieldErr("payload.id", "must equal the envelope id %q, got %q", e.ID, id)
	}
	if ws := e.Payload.EntityWorkspace(); ws != e.WorkspaceID {
		return fieldErr("payload.workspaceId", "must equal the envelope workspaceId %q, got %q", e.WorkspaceID, ws)
	}
	return nil
}

func payloadFits(t EventType, p Payload) bool {
	switch p.(type) {
	case *ChangeTransaction:
		return t.Kind() == KindTransaction
	case *Task:
		return t.Kind() == KindTask
	case *Claim:
		return t.Kind() == KindClaim
	case *Handoff:
		return t.Kind() == KindHandoff
	case *Intent:
		return t.Kind() == KindIntent
	case *Validation:
		return t.Kind() == KindValidation
	}
	return false
}

// DecodeEnvelope strictly decodes one envelope.
func DecodeEnvelope(data []byte) (*Envelope, error) {
	e := new(Envelope)
	if err := json.Unmarshal(data, e); err != nil {
		return nil, jsonFieldError(err, "")
	}
	return e, nil
}

// Canonical is the envelope's canonical JSON encoding without the
// service-assigned serverSequence and ingestedAt: the same content always
// encodes to the same bytes, so it identifies the content for deduplication.
func (e *Envelope) Canonical() ([]byte, error) {
	c := *e
	c.ServerSequence = 0
	c.IngestedAt = nil
	return marshalCompact(&c)
}

// marshalCompact encodes v as compact JSON without HTML escaping.
func marshalCompact(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// Payload accessors: each returns the typed payload, or nil when the
// envelope carries another kind.

func (e *Envelope) Claim() *Claim                   { p, _ := e.Payload.(*Claim); return p }
func (e *Envelope) Task() *Task                     { p, _ := e.Payload.(*Task); return p }
func (e *Envelope) Handoff() *Handoff               { p, _ := e.Payload.(*Handoff); return p }
func (e *Envelope) Intent() *Intent                 { p, _ := e.Payload.(*Intent); return p }
func (e *Envelope) Validation() *Validation         { p, _ := e.Payload.(*Validation); return p }
func (e *Envelope) Transaction() *ChangeTransaction { p, _ := e.Payload.(*ChangeTransaction); return p }
