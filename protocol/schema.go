package protocol

import (
	"reflect"

	"github.com/invopop/jsonschema"
)

// SchemaBaseURL prefixes the $id of every generated schema.
const SchemaBaseURL = "https://crosscode.dev/schema/coordination/"

var payloadTypes = map[Kind]any{
	KindTransaction: ChangeTransaction{},
	KindTask:        Task{},
	KindClaim:       Claim{},
	KindHandoff:     Handoff{},
	KindIntent:      Intent{},
	KindValidation:  Validation{},
}

func reflector() *jsonschema.Reflector {
	return &jsonschema.Reflector{ExpandedStruct: true}
}

// envelopeSchema is the Envelope schema with the payload tied to the type:
// for every event type, if type is X then payload is X's payload.
func envelopeSchema(r *jsonschema.Reflector) *jsonschema.Schema {
	s := r.Reflect(&Envelope{})
	// Envelope.Payload is an interface; the allOf below ties it to type.
	s.Properties.Set("payload", &jsonschema.Schema{
		Type:        "object",
		Description: "The typed payload; its shape follows type.",
	})
	for _, t := range EventTypes {
		name := reflect.TypeOf(payloadTypes[t.Kind()]).Name()
		addDefinition(s, name, r.Reflect(payloadTypes[t.Kind()]))
		props := jsonschema.NewProperties()
		props.Set("type", &jsonschema.Schema{Const: string(t)})
		thenProps := jsonschema.NewProperties()
		thenProps.Set("payload", &jsonschema.Schema{Ref: "#/$defs/" + name})
		s.AllOf = append(s.AllOf, &jsonschema.Schema{
			If:   &jsonschema.Schema{Properties: props, Required: []string{"type"}},
			Then: &jsonschema.Schema{Properties: thenProps},
		})
	}
	return s
}

// Schemas returns the JSON Schema of every protocol message, keyed by file
// name. They are committed under protocol/schema and checked by a test.
func Schemas() map[string]*jsonschema.Schema {
	r := reflector()
	out := map[string]*jsonschema.Schema{
		"envelope.json":        envelopeSchema(r),
		"ingest-receipt.json":  r.Reflect(&IngestReceipt{}),
		"page.json":            r.Reflect(&Page{}),
		"cursor-too-old.json":  r.Reflect(&CursorTooOld{}),
		"presence-update.json": r.Reflect(&PresenceUpdate{}),
		"ws-subscribe.json":    r.Reflect(&WSSubscribe{}),
		"ws-subscribed.json":   r.Reflect(&WSSubscribed{}),
		"ws-error.json":        r.Reflect(&WSError{}),
		"error.json":           r.Reflect(&ErrorBody{}),
	}
	for name, s := range cappySchemas(r) {
		out[name] = s
	}
	for name, s := range out {
		s.ID = jsonschema.ID(SchemaBaseURL + name)
	}

	// The ingest request and pages embed the envelope by reference.
	env := out["envelope.json"]
	page := out["page.json"]
	page.Properties.Set("items", &jsonschema.Schema{Type: "array", Items: &jsonschema.Schema{Ref: string(env.ID)}})
	page.Definitions = nil
	ingest := r.Reflect(&IngestRequest{})
	ingest.ID = jsonschema.ID(SchemaBaseURL + "ingest-request.json")
	props := jsonschema.NewProperties()
	props.Set("envelope", &jsonschema.Schema{Ref: string(env.ID)})
	ingest.Properties = props
	ingest.Definitions = nil
	ingest.Ref = ""
	ingest.Type = "object"
	ingest.Required = []string{"envelope"}
	out["ingest-request.json"] = ingest

	// Fan-out frames: a union over the seven types.
	fan := &jsonschema.Schema{
		Version:     jsonschema.Version,
		ID:          jsonschema.ID(SchemaBaseURL + "fanout.json"),
		Description: "A WebSocket fan-out frame: {type, data}.",
		Definitions: jsonschema.Definitions{},
	}
	frames := map[string]any{
		"operation": RemoteOperation{}, "presence": RemotePresence{}, "task": RemoteTask{},
		"claim": RemoteClaim{}, "handoff": RemoteHandoff{}, "intent": RemoteIntent{}, "validation": RemoteValidation{},
	}
	for _, typ := range FanOutTypes {
		name := reflect.TypeOf(frames[typ]).Name()
		addDefinition(fan, name, r.Reflect(frames[typ]))
		p := jsonschema.NewProperties()
		p.Set("type", &jsonschema.Schema{Const: typ})
		p.Set("data", &jsonschema.Schema{Ref: "#/$defs/" + name})
		fan.OneOf = append(fan.OneOf, &jsonschema.Schema{
			Type: "object", Properties: p, Required: []string{"type", "data"},
			AdditionalProperties: jsonschema.FalseSchema,
		})
	}
	out["fanout.json"] = fan
	return out
}

// addDefinition moves sub (a root schema) and its definitions into
// root's $defs under name.
func addDefinition(root *jsonschema.Schema, name string, sub *jsonschema.Schema) {
	for k, d := range sub.Definitions {
		root.Definitions[k] = d
	}
	sub.Definitions = nil
	sub.Version = ""
	sub.ID = ""
	root.Definitions[name] = sub
}
