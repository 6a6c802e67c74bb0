package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"

	"github.com/invopop/jsonschema"
)

// The Cappy adapter protocol: the messages between the Cappy controller
// (crosscode-mcp) and a game adapter, over one loopback WebSocket of JSON
// text frames. Decoding is strict (unknown fields are errors) except for
// hello, whose unknown fields and capability names are accepted so newer
// adapters work with older controllers.

// CappyProtocolVersion is the adapter protocol version the controller speaks.
const CappyProtocolVersion = 1

// CappyMaxMessageBytes is the largest message either side may send (4 MiB).
const CappyMaxMessageBytes = 4 << 20

// Cappy capabilities with a meaning to the controller; adapters may
// advertise others.
const (
	CapScenarios         = "scenarios"
	CapFreeformRecording = "freeform_recording"
	CapReplay            = "replay"
	CapTimeScale         = "time_scale"
	CapAlternateCameras  = "alternate_cameras"
	// CapSeed: the adapter seeds the game's randomness with the integer
	// seed that record_start and prepare_replay then carry (only to an
	// adapter that advertises it).
	CapSeed = "seed"
	// CapFrames: see cappy_frames.go.
)

// The seeds a recording may have: an integer from 0 to MaxSeed (2^53-1,
// so that every adapter's language holds it exactly, JavaScript's
// numbers too). DefaultSeed is a recording's when none is asked.
const (
	MaxSeed     int64 = 1<<53 - 1
	DefaultSeed int64 = 1
)

// CheckSeed checks a seed's range; it returns nil or a *FieldError.
func CheckSeed(seed int64) error {
	if seed < 0 || seed > MaxSeed {
		return fieldErr("seed", "must be an integer from 0 to %d, got %d", MaxSeed, seed)
	}
	return nil
}

// Cappy error and reject codes.
const (
	CappyUnauthenticated      = "PROTOCOL_UNAUTHENTICATED"
	CappyVersionIncompatible  = "PROTOCOL_VERSION_INCOMPATIBLE"
	CappyInvalidMessage       = "PROTOCOL_INVALID_MESSAGE"
	CappyOutOfState           = "PROTOCOL_OUT_OF_STATE"
	CappyCapabilityMissing    = "CAPABILITY_MISSING"
	CappyOperationBusy        = "OPERATION_BUSY"
	CappyAdapterUnresponsive  = "ADAPTER_UNRESPONSIVE"
	CappyAdapterDisconnected  = "ADAPTER_DISCONNECTED"
	CappyOperationTimeout     = "OPERATION_TIMEOUT"
	CappyOperationCancelled   = "OPERATION_CANCELLED"
	CappyScenarioNotFound     = "SCENARIO_NOT_FOUND"
	CappyInvalidParameters    = "INVALID_PARAMETERS"
	CappyReplayUnsupported    = "REPLAY_UNSUPPORTED"
	CappyReplayInvalid        = "REPLAY_INVALID"
	CappyUnknownCamera        = "UNKNOWN_CAMERA"
	CappyPresentationRejected = "PRESENTATION_UNSUPPORTED"
)

// VersionRange is hello.protocol: the versions an adapter speaks.
type VersionRange struct {
	Min int `json:"min" jsonschema:"minimum=1"`
	Max int `json:"max" jsonschema:"minimum=1"`
}

// NameVersion names a program.
type NameVersion struct {
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
}

// GameInfo names a game.
type GameInfo struct {
	ID   string `json:"id"`
	Name string `json:"name,omitempty"`
}

// Hello is the adapter's first message.
type Hello struct {
	Type         string       `json:"type" jsonschema:"enum=hello"`
	Protocol     VersionRange `json:"protocol"`
	Token        string       `json:"token"`
	Adapter      NameVersion  `json:"adapter"`
	Game         GameInfo     `json:"game"`
	Build        string       `json:"build,omitempty"`
	Capabilities []string     `json:"capabilities"`
}

// HasCapability reports whether the adapter advertised c.
func (h *Hello) HasCapability(c string) bool { return slices.Contains(h.Capabilities, c) }

// Welcome accepts an adapter, at the negotiated protocol version.
type Welcome struct {
	Type       string      `json:"type" jsonschema:"enum=welcome"`
	Protocol   int         `json:"protocol"`
	Controller NameVersion `json:"controller"`
	// Events is the capture config's "events": the game's own signals
	// (NODE_PATH:signal) and the event names they are sent as. Only for an
	// adapter that advertised CapConfigEvents, and only when there are some.
	Events map[string]string `json:"events,omitempty"`
	// Accepts lists the optional adapter messages this controller takes
	// (MsgWarnings), to an adapter that advertised the capability that
	// sends them (CapWarnings); it sends one only when it is listed.
	Accepts []string `json:"accepts,omitempty"`
}

// Reject refuses an adapter; the controller closes the socket after it.
type Reject struct {
	Type    string `json:"type" jsonschema:"enum=reject"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Parameter describes one scenario parameter.
type Parameter struct {
	Type        string   `json:"type" jsonschema:"enum=string,enum=number,enum=integer,enum=boolean"`
	Description string   `json:"description,omitempty"`
	Required    bool     `json:"required,omitempty"`
	Default     any      `json:"default,omitempty"`
	Enum        []any    `json:"enum,omitempty"`
	Minimum     *float64 `json:"minimum,omitempty"`
	Maximum     *float64 `json:"maximum,omitempty"`
}

// Scenario is one authored scenario of the registry.
type Scenario struct {
	ID                   string               `json:"id"`
	Name                 string               `json:"name,omitempty"`
	Description          string               `json:"description,omitempty"`
	Parameters           map[string]Parameter `json:"parameters,omitempty"`
	RequiredCapabilities []string             `json:"requiredCapabilities,omitempty"`
}

// Scenarios is the adapter's scenario registry.
type Scenarios struct {
	Type      string     `json:"type" jsonschema:"enum=scenarios"`
	Scenarios []Scenario `json:"scenarios"`
}

// Presentation is how a scenario or replay is shown: timeScale and camera
// have a meaning to Cappy; other keys are the adapter's own.
type Presentation map[string]any

// TimeScale returns presentation.timeScale (1 when absent).
func (p Presentation) TimeScale() float64 {
	if v, ok := p["timeScale"].(float64); ok {
		return v
	}
	return 1
}

// The range of presentation.timeScale.
const (
	MinTimeScale float64 = 0.1
	MaxTimeScale float64 = 4
)

// CappyFailure is a refusal with its Cappy error code (Cappy* constants).
type CappyFailure struct {
	Code, Message string
}

func (f *CappyFailure) Error() string {
	if f.Message == "" {
		return f.Code
	}
	return f.Code + ": " + f.Message
}

// Check checks the keys Cappy defines: timeScale must be a number from
// MinTimeScale to MaxTimeScale and camera a camera name (a non-empty
// string); other keys are the adapter's own. When has is not nil, each key
// also needs its capability (CapTimeScale, CapAlternateCameras) advertised.
// It returns nil or a *CappyFailure: CappyPresentationRejected for a value
// out of range, CappyCapabilityMissing for a key the adapter did not
// advertise it takes.
func (p Presentation) Check(has func(capability string) bool) error {
	if v, ok := p["timeScale"]; ok {
		f, isNum := v.(float64)
		switch {
		case !isNum:
			return &CappyFailure{Code: CappyPresentationRejected, Message: fmt.Sprintf("presentation.timeScale must be a number from %g to %g, got a %s", MinTimeScale, MaxTimeScale, valueKind(v))}
		case !(f >= MinTimeScale && f <= MaxTimeScale):
			return &CappyFailure{Code: CappyPresentationRejected, Message: fmt.Sprintf("presentation.timeScale must be a number from %g to %g, got %g", MinTimeScale, MaxTimeScale, f)}
		case has != nil && !has(CapTimeScale):
			return &CappyFailure{Code: CappyCapabilityMissing, Message: fmt.Sprintf("presentation.timeScale needs capability %q, which the adapter does not advertise", CapTimeScale)}
		}
	}
	if v, ok := p["camera"]; ok {
		s, isStr := v.(string)
		switch {
		case !isStr:
			return &CappyFailure{Code: CappyPresentationRejected, Message: fmt.Sprintf("presentation.camera must be a camera name, got a %s", valueKind(v))}
		case s == "":
			return &CappyFailure{Code: CappyPresentationRejected, Message: "presentation.camera must be a camera name, got an empty string"}
		case has != nil && !has(CapAlternateCameras):
			return &CappyFailure{Code: CappyCapabilityMissing, Message: fmt.Sprintf("presentation.camera needs capability %q, which the adapter does not advertise", CapAlternateCameras)}
		}
	}
	return nil
}

// valueKind names the JSON type of a decoded value.
func valueKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case float64:
		return "number"
	default:
		return fmt.Sprintf("Go %T", v)
	}
}

// ReplayPayload is a replay: inline (base64, at most 1 MiB decoded) or a
// file the adapter wrote. Cappy stores and returns it without
// interpreting it.
type ReplayPayload struct {
	Kind     string `json:"kind" jsonschema:"enum=inline,enum=file"`
	Encoding string `json:"encoding,omitempty" jsonschema:"enum=base64"`
	Data     string `json:"data,omitempty"`
	Path     string `json:"path,omitempty"`
	SHA256   string `json:"sha256"`
	Bytes    int64  `json:"bytes,omitempty"`
	Format   string `json:"format,omitempty"`
}

// MaxInlineReplayBytes is the largest decoded inline replay.
const MaxInlineReplayBytes = 1 << 20

// Controller -> adapter operation messages.

// PrepareScenario asks the adapter to get a scenario ready.
type PrepareScenario struct {
	Type         string         `json:"type" jsonschema:"enum=prepare_scenario"`
	Op           string         `json:"op"`
	Scenario     string         `json:"scenario"`
	Parameters   map[string]any `json:"parameters"`
	Presentation Presentation   `json:"presentation,omitempty"`
	// Frames asks for frames (only of an adapter that advertised CapFrames).
	Frames *FramesRequest `json:"frames,omitempty"`
}

// RecordStart starts a freeform recording. Control ControlAgent (sent
// only to adapters with CapInput) makes it agent-controlled: the adapter
// answers started with the simulation paused, ignores its own player's
// input, and runs in Steps.
type RecordStart struct {
	Type    string         `json:"type" jsonschema:"enum=record_start"`
	Op      string         `json:"op"`
	Frames  *FramesRequest `json:"frames,omitempty"`
	Control string         `json:"control,omitempty" jsonschema:"enum=agent"`
	// Seed seeds the game's randomness (only to an adapter that advertised
	// CapSeed, and then always: DefaultSeed when none was asked).
	Seed *int64 `json:"seed,omitempty" jsonschema:"minimum=0,maximum=9007199254740991"`
}

// PrepareReplay asks the adapter to get a replay ready.
type PrepareReplay struct {
	Type         string         `json:"type" jsonschema:"enum=prepare_replay"`
	Op           string         `json:"op"`
	Replay       *ReplayPayload `json:"replay"`
	Presentation Presentation   `json:"presentation,omitempty"`
	Frames       *FramesRequest `json:"frames,omitempty"`
	// Seed is the recording's seed (only to an adapter that advertised
	// CapSeed, and then always: DefaultSeed for a recording made without).
	Seed *int64 `json:"seed,omitempty" jsonschema:"minimum=0,maximum=9007199254740991"`
}

// OpMessage is start, stop or cancel: {type, op}.
type OpMessage struct {
	Type string `json:"type" jsonschema:"enum=start,enum=stop,enum=cancel"`
	Op   string `json:"op"`
}

// ListScenarios asks for the registry again.
type ListScenarios struct {
	Type string `json:"type" jsonschema:"enum=list_scenarios"`
}

// Ping checks liveness; the adapter answers Pong with the same nonce.
type Ping struct {
	Type  string `json:"type" jsonschema:"enum=ping,enum=pong"`
	Nonce string `json:"nonce"`
}

// CappyError tells the adapter what it did wrong.
type CappyError struct {
	Type    string `json:"type" jsonschema:"enum=error"`
	Code    string `json:"code"`
	Message string `json:"message"`
	Op      string `json:"op,omitempty"`
}

// Adapter -> controller operation messages.

// Ready, Started: {type, op}.
type OpState struct {
	Type string `json:"type" jsonschema:"enum=ready,enum=started"`
	Op   string `json:"op"`
}

// Event is one moment of an operation. T is presented milliseconds since
// the operation started, monotonic.
type Event struct {
	Type       string          `json:"type" jsonschema:"enum=event"`
	Op         string          `json:"op"`
	T          float64         `json:"t" jsonschema:"minimum=0"`
	Event      string          `json:"event"`
	DurationMs *float64        `json:"durationMs,omitempty" jsonschema:"minimum=0"`
	Payload    json.RawMessage `json:"payload,omitempty"`
}

// MaxSummaryBytes bounds the summary the controller keeps from completed:
// a longer one is dropped.
const MaxSummaryBytes = MaxTextBytes

// Completed ends an operation successfully; recordings carry their replay.
// Summary is the adapter's JSON description of the run (a JSON object from
// the Go adapter library), kept with the capture.
type Completed struct {
	Type    string          `json:"type" jsonschema:"enum=completed"`
	Op      string          `json:"op"`
	Replay  *ReplayPayload  `json:"replay,omitempty"`
	Summary json.RawMessage `json:"summary,omitempty"`
}

// Failed ends an operation with the adapter's error.
type Failed struct {
	Type    string `json:"type" jsonschema:"enum=failed"`
	Op      string `json:"op"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

// AdapterMessage is one decoded message from an adapter: exactly one
// field is set, by Type.
type AdapterMessage struct {
	Type      string
	Hello     *Hello
	Scenarios *Scenarios
	OpState   *OpState // ready, started
	Event     *Event
	Completed *Completed
	Failed    *Failed
	Pong      *Ping
	Frame     *Frame
	// Agent play (cappy_play.go).
	Actions       *Actions
	Stepped       *Stepped
	StepRefused   *StepRefused
	InspectResult *InspectResult
	Warnings      *Warnings // cappy_fresh.go
}

// Op is the operation the message is about ("" for hello, scenarios,
// pong, actions, inspect_result and warnings).
func (m *AdapterMessage) Op() string {
	switch {
	case m.OpState != nil:
		return m.OpState.Op
	case m.Event != nil:
		return m.Event.Op
	case m.Completed != nil:
		return m.Completed.Op
	case m.Failed != nil:
		return m.Failed.Op
	case m.Frame != nil:
		return m.Frame.Op
	case m.Stepped != nil:
		return m.Stepped.Op
	case m.StepRefused != nil:
		return m.StepRefused.Op
	}
	return ""
}

// DecodeAdapterMessage decodes one message from an adapter: strictly,
// except hello, which tolerates unknown fields.
func DecodeAdapterMessage(data []byte) (*AdapterMessage, error) {
	// Fast path for the hot message, as the Go adapter library writes it:
	// one strict pass instead of a peek at the type and then another.
	if bytes.HasPrefix(data, eventPrefix) {
		return decodeEvent(data)
	}
	var head struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, jsonFieldError(err, "")
	}
	m := &AdapterMessage{Type: head.Type}
	c := &checker{}
	switch head.Type {
	case "hello":
		m.Hello = new(Hello)
		if err := json.Unmarshal(data, m.Hello); err != nil { // tolerant: unknown fields accepted
			return nil, jsonFieldError(err, "")
		}
		h := m.Hello
		if h.Protocol.Min < 1 || h.Protocol.Max < h.Protocol.Min {
			c.fail("protocol", "must be {min, max} with 1 <= min <= max")
		}
		c.text("token", h.Token, 1024, true)
		c.text("adapter.name", h.Adapter.Name, 256, true)
		c.text("adapter.version", h.Adapter.Version, 256, false)
		c.text("game.id", h.Game.ID, 256, true)
		c.text("game.name", h.Game.Name, 1024, false)
		c.text("build", h.Build, 1024, false)
		list(c, "capabilities", h.Capabilities, false, false, func(f, v string) { c.text(f, v, 128, true) })
		return m, c.result()
	case "scenarios":
		m.Scenarios = new(Scenarios)
		if err := decodeStrict(data, m.Scenarios, ""); err != nil {
			return nil, err
		}
		return m, validateScenarios(m.Scenarios)
	case "ready", "started":
		m.OpState = new(OpState)
		if err := decodeStrict(data, m.OpState, ""); err != nil {
			return nil, err
		}
		c.id("op", m.OpState.Op, true)
	case "event":
		return decodeEvent(data)
	case "completed":
		m.Completed = new(Completed)
		if err := decodeStrict(data, m.Completed, ""); err != nil {
			return nil, err
		}
		c.id("op", m.Completed.Op, true)
		if m.Completed.Replay != nil {
			if err := m.Completed.Replay.Validate(); err != nil {
				return nil, err
			}
		}
	case "failed":
		m.Failed = new(Failed)
		if err := decodeStrict(data, m.Failed, ""); err != nil {
			return nil, err
		}
		c.id("op", m.Failed.Op, true)
		c.text("code", m.Failed.Code, 128, true)
		c.text("message", m.Failed.Message, MaxTextBytes, false)
	case "frame":
		m.Frame = new(Frame)
		if err := decodeStrict(data, m.Frame, ""); err != nil {
			return nil, err
		}
		return m, checkFrame(m.Frame)
	case "actions", "stepped", "step_refused", "inspect_result":
		return m, decodePlay(head.Type, data, m)
	case MsgWarnings:
		return m, decodeWarnings(data, m)
	case "pong":
		m.Pong = new(Ping)
		if err := decodeStrict(data, m.Pong, ""); err != nil {
			return nil, err
		}
		c.text("nonce", m.Pong.Nonce, 256, true)
	case "":
		return nil, fieldErr("type", "required")
	default:
		return nil, fieldErr("type", "unknown adapter message type %q", head.Type)
	}
	return m, c.result()
}

var eventPrefix = []byte(`{"type":"event",`)

// decodeEvent decodes and checks an event: through the fast parser when it
// has the Go adapter library's exact shape, else strictly.
func decodeEvent(data []byte) (*AdapterMessage, error) {
	e, ok := parseEventFast(data)
	if !ok {
		e = new(Event)
		if err := decodeStrict(data, e, ""); err != nil {
			return nil, err
		}
	}
	return &AdapterMessage{Type: "event", Event: e}, checkEvent(e)
}

func checkEvent(e *Event) error {
	c := &checker{}
	if e.Type != "event" {
		c.fail("type", "must be \"event\"")
	}
	c.id("op", e.Op, true)
	if c.err == nil {
		if err := CheckEventFields(e.T, e.Event, e.DurationMs); err != nil {
			return err
		}
	}
	if len(e.Payload) > 0 && !bytes.HasPrefix(bytes.TrimSpace(e.Payload), []byte("{")) && string(bytes.TrimSpace(e.Payload)) != "null" {
		c.fail("payload", "must be an object")
	}
	return c.result()
}

// MaxEventNameBytes bounds an event's name.
const MaxEventNameBytes = 256

// CheckEventFields checks an event's t, name and durationMs as the
// controller does: t a finite, non-negative number of milliseconds; the
// name 1 to MaxEventNameBytes bytes of UTF-8 without control characters
// (other than newline, tab and carriage return); durationMs, when given,
// finite and non-negative. It returns nil or a *FieldError.
func CheckEventFields(t float64, name string, durationMs *float64) error {
	c := checker{}
	c.text("event", name, MaxEventNameBytes, true)
	if !(t >= 0) || math.IsInf(t, 1) {
		c.fail("t", "must be a finite, non-negative number of milliseconds, got %v", t)
	}
	if durationMs != nil && (!(*durationMs >= 0) || math.IsInf(*durationMs, 1)) {
		c.fail("durationMs", "must be a finite, non-negative number, got %v", *durationMs)
	}
	return c.result()
}

// Validate checks a replay payload's shape (not its content).
func (r *ReplayPayload) Validate() error {
	c := &checker{}
	switch r.Kind {
	case "inline":
		if r.Encoding != "base64" {
			c.fail("replay.encoding", "must be \"base64\"")
		}
		if r.Path != "" {
			c.fail("replay.path", "must be absent on an inline replay")
		}
	case "file":
		c.text("replay.path", r.Path, 4096, true)
		if r.Bytes <= 0 {
			c.fail("replay.bytes", "required: the file's size")
		}
		if r.Data != "" {
			c.fail("replay.data", "must be absent on a file replay")
		}
	default:
		c.fail("replay.kind", "must be \"inline\" or \"file\", got %q", r.Kind)
	}
	if len(r.SHA256) != 64 || !isHex(r.SHA256) {
		c.fail("replay.sha256", "must be 64 hex digits")
	}
	c.text("replay.format", r.Format, 256, false)
	return c.result()
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		b := s[i]
		if !(b >= '0' && b <= '9' || b >= 'a' && b <= 'f' || b >= 'A' && b <= 'F') {
			return false
		}
	}
	return true
}

func validateScenarios(s *Scenarios) error {
	c := &checker{}
	if s.Scenarios == nil {
		c.fail("scenarios", "required")
	}
	seen := map[string]bool{}
	list(c, "scenarios", s.Scenarios, false, false, func(f string, sc Scenario) {
		c.id(f+".id", sc.ID, true)
		if seen[sc.ID] {
			c.fail(f+".id", "duplicate scenario %q", sc.ID)
		}
		seen[sc.ID] = true
		c.text(f+".name", sc.Name, 1024, false)
		c.text(f+".description", sc.Description, MaxTextBytes, false)
		for name, p := range sc.Parameters {
			pf := f + ".parameters." + name
			c.id(pf, name, true)
			switch p.Type {
			case "string", "number", "integer", "boolean":
			default:
				c.fail(pf+".type", "must be string, number, integer or boolean, got %q", p.Type)
			}
			if p.Minimum != nil && p.Maximum != nil && *p.Minimum > *p.Maximum {
				c.fail(pf, "minimum is above maximum")
			}
			if p.Default != nil {
				if err := CheckParameter(name, p, p.Default); err != nil {
					c.fail(pf+".default", "%s", err.Message)
				}
			}
		}
	})
	return c.result()
}

// CheckParameter checks one value against its parameter description:
// type, enum, minimum and maximum.
func CheckParameter(name string, p Parameter, v any) *FieldError {
	switch p.Type {
	case "string":
		if _, ok := v.(string); !ok {
			return fieldErr(name, "must be a string")
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			return fieldErr(name, "must be a boolean")
		}
	case "number", "integer":
		f, ok := v.(float64)
		if !ok {
			return fieldErr(name, "must be a number")
		}
		if p.Type == "integer" && f != math.Trunc(f) {
			return fieldErr(name, "must be an integer")
		}
		if p.Minimum != nil && f < *p.Minimum {
			return fieldErr(name, "must be at least %g", *p.Minimum)
		}
		if p.Maximum != nil && f > *p.Maximum {
			return fieldErr(name, "must be at most %g", *p.Maximum)
		}
	}
	if len(p.Enum) > 0 && !slices.ContainsFunc(p.Enum, func(e any) bool { return e == v }) {
		return fieldErr(name, "must be one of %v", p.Enum)
	}
	return nil
}

// ResolveParameters checks args against a scenario's parameters, fills in
// defaults, and refuses unknown or missing required ones.
func ResolveParameters(s *Scenario, args map[string]any) (map[string]any, error) {
	out := map[string]any{}
	for name, v := range args {
		p, ok := s.Parameters[name]
		if !ok {
			return nil, fieldErr(name, "scenario %q has no parameter %q", s.ID, name)
		}
		if err := CheckParameter(name, p, v); err != nil {
			return nil, err
		}
		out[name] = v
	}
	for name, p := range s.Parameters {
		if _, ok := out[name]; ok {
			continue
		}
		switch {
		case p.Default != nil:
			out[name] = p.Default
		case p.Required:
			return nil, fieldErr(name, "required by scenario %q", s.ID)
		}
	}
	return out, nil
}

// DecodeControllerMessage decodes a message from the controller (for
// adapters): its type and the message itself.
func DecodeControllerMessage(data []byte) (string, any, error) {
	var head struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return "", nil, jsonFieldError(err, "")
	}
	var v any
	switch head.Type {
	case "welcome":
		v = new(Welcome)
	case "reject":
		v = new(Reject)
	case "prepare_scenario":
		v = new(PrepareScenario)
	case "record_start":
		v = new(RecordStart)
	case "prepare_replay":
		v = new(PrepareReplay)
	case "start", "stop", "cancel":
		v = new(OpMessage)
	case "list_scenarios":
		v = new(ListScenarios)
	case "ping":
		v = new(Ping)
	case "error":
		v = new(CappyError)
	case "step":
		v = new(Step)
	case "inspect":
		v = new(Inspect)
	default:
		return head.Type, nil, fieldErr("type", "unknown controller message type %q", head.Type)
	}
	// Adapters should tolerate fields a newer controller adds.
	if err := json.Unmarshal(data, v); err != nil {
		return head.Type, nil, jsonFieldError(err, "")
	}
	var seed *int64
	switch m := v.(type) {
	case *RecordStart:
		seed = m.Seed
	case *PrepareReplay:
		seed = m.Seed
	}
	if seed != nil {
		if err := CheckSeed(*seed); err != nil {
			return head.Type, nil, err
		}
	}
	return head.Type, v, nil
}

// cappySchemaTypes are the adapter protocol's messages, for their schemas.
var cappySchemaTypes = map[string]any{
	"cappy-hello.json": Hello{}, "cappy-welcome.json": Welcome{}, "cappy-reject.json": Reject{},
	"cappy-scenarios.json": Scenarios{}, "cappy-prepare-scenario.json": PrepareScenario{}, "cappy-record-start.json": RecordStart{},
	"cappy-prepare-replay.json": PrepareReplay{}, "cappy-op.json": OpMessage{}, "cappy-list-scenarios.json": ListScenarios{},
	"cappy-ping.json": Ping{}, "cappy-error.json": CappyError{}, "cappy-op-state.json": OpState{}, "cappy-event.json": Event{},
	"cappy-completed.json": Completed{}, "cappy-failed.json": Failed{}, "cappy-frame.json": Frame{},
	"cappy-actions.json": Actions{}, "cappy-step.json": Step{}, "cappy-stepped.json": Stepped{}, "cappy-step-refused.json": StepRefused{},
	"cappy-inspect.json": Inspect{}, "cappy-inspect-result.json": InspectResult{}, "cappy-warnings.json": Warnings{},
}

// cappySchemas generates the adapter protocol's schemas. Hello allows
// additional properties (the protocol's tolerance); the rest are strict.
func cappySchemas(r *jsonschema.Reflector) map[string]*jsonschema.Schema {
	out := map[string]*jsonschema.Schema{}
	for name, v := range cappySchemaTypes {
		s := r.Reflect(v)
		if name == "cappy-hello.json" {
			s.AdditionalProperties = nil
		}
		out[name] = s
	}
	return out
}
