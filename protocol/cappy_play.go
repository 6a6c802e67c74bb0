package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
)

// Agent play: the agent holds the controller, an extension of the adapter
// protocol v1 (crosscode-mcp spec, section 11). An adapter with CapInput
// sends the actions it accepts (Actions) after welcome and whenever they
// change; a record_start with Control "agent" starts a recording whose
// simulation waits, paused, for the controller's Step messages, each
// answered by Stepped (or StepRefused). An adapter with CapInspect answers
// Inspect with InspectResult at any time after welcome.
//
// The messages, as they are on the wire:
//
//	adapter:    {"type":"actions","actions":[{"name":"move","kind":"axis2d","description":"..."}]}
//	controller: {"type":"record_start","op":"op_1","control":"agent","frames":{...}}
//	controller: {"type":"step","op":"op_1","id":"s1","actions":[{"name":"attack","pressed":true},{"name":"move","x":1,"y":0}],"ms":500}
//	adapter:    events and frames of the step, then {"type":"frame",...,"reason":"step"} (when frames were asked)
//	adapter:    {"type":"stepped","op":"op_1","id":"s1","t":500,"simT":500}
//	adapter:    {"type":"step_refused","op":"op_1","id":"s1","code":"INVALID_INPUT","message":"..."}
//	controller: {"type":"inspect","id":"i1","query":"boss"}
//	adapter:    {"type":"inspect_result","id":"i1","value":{...}}
//	adapter:    {"type":"inspect_result","id":"i1","error":{"code":"UNKNOWN_QUERY","message":"..."}}

// Capabilities of agent play.
const (
	// CapInput: the adapter sends its actions and plays agent-controlled
	// recordings in steps.
	CapInput = "input"
	// CapInspect: the adapter answers inspect.
	CapInspect = "inspect"
)

// ControlAgent is record_start's control value for a recording the agent
// plays in steps.
const ControlAgent = "agent"

// CappyInvalidInput is step_refused's code: an unknown action or a value
// out of range. It does not fail the operation.
const CappyInvalidInput = "INVALID_INPUT"

// Action kinds.
const (
	ActionButton  = "button"  // pressed: true/false
	ActionAxis    = "axis"    // value: -1..1
	ActionAxis2D  = "axis2d"  // x, y: -1..1
	ActionPointer = "pointer" // x, y: pixels of the game's frames; button?, pressed?
	ActionText    = "text"    // text
)

// ActionKinds are the kinds of actions.
var ActionKinds = []string{ActionButton, ActionAxis, ActionAxis2D, ActionPointer, ActionText}

// Limits of agent play.
const (
	MaxActions          = 256       // actions an adapter declares
	maxNamesListed      = 24        // actions an unknown action's error lists
	MaxActionNameBytes  = 128       // an action's name
	MaxActionDescBytes  = 1024      // an action's description
	MaxStepActions      = 64        // action inputs in one step
	MaxStepMs           = 10_000    // the longest step, ms of simulation time
	MaxActionTextBytes  = 4096      // a text action's text
	MaxPointerButton    = 32        // a pointer button's name
	MaxStepIDBytes      = 64        // step and inspect ids
	MaxInspectQuery     = 4096      // an inspect query
	MaxInspectBytes     = 256 << 10 // an inspect_result's value (or error)
	MaxInspectCodeBytes = 128       // an inspect error's code
)

// Action is one action an adapter accepts.
type Action struct {
	Name        string `json:"name"`
	Kind        string `json:"kind" jsonschema:"enum=button,enum=axis,enum=axis2d,enum=pointer,enum=text"`
	Description string `json:"description,omitempty"`
}

// Actions is the adapter's list of actions (replacing any sent before).
type Actions struct {
	Type    string   `json:"type" jsonschema:"enum=actions"`
	Actions []Action `json:"actions"`
}

// ActionInput sets one action in a step. Which fields it has depends on
// the action's kind: button: Pressed; axis: Value; axis2d: X and Y;
// pointer: X and Y (pixels of the game's frames), Button and Pressed
// optional; text: Text.
type ActionInput struct {
	Name    string   `json:"name"`
	Pressed *bool    `json:"pressed,omitempty"`
	Value   *float64 `json:"value,omitempty" jsonschema:"minimum=-1,maximum=1"`
	X       *float64 `json:"x,omitempty"`
	Y       *float64 `json:"y,omitempty"`
	Button  string   `json:"button,omitempty"` // a pointer's: left (default), middle or right
	Text    string   `json:"text,omitempty"`
}

// Step asks the adapter of an agent-controlled recording to apply the
// actions at the start of its next simulation step and run the
// simulation for Ms milliseconds of simulation time (0: apply and look),
// then pause and answer Stepped.
type Step struct {
	Type    string        `json:"type" jsonschema:"enum=step"`
	Op      string        `json:"op"`
	ID      string        `json:"id"`
	Actions []ActionInput `json:"actions"`
	Ms      float64       `json:"ms" jsonschema:"minimum=0,maximum=10000"`
}

// Stepped answers a step: the operation's presented time T and its
// simulation time SimT when it paused.
type Stepped struct {
	Type string  `json:"type" jsonschema:"enum=stepped"`
	Op   string  `json:"op"`
	ID   string  `json:"id"`
	T    float64 `json:"t" jsonschema:"minimum=0"`
	SimT float64 `json:"simT" jsonschema:"minimum=0"`
}

// StepRefused answers a step the adapter did not apply (Code
// CappyInvalidInput: an unknown action or a bad value); the play goes on.
type StepRefused struct {
	Type    string `json:"type" jsonschema:"enum=step_refused"`
	Op      string `json:"op"`
	ID      string `json:"id"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Inspect asks an adapter with CapInspect for a value of the game's state.
// The query language is the adapter's; the empty query answers what can
// be asked.
type Inspect struct {
	Type  string `json:"type" jsonschema:"enum=inspect"`
	ID    string `json:"id"`
	Query string `json:"query"`
}

// InspectError is an inspect_result's error.
type InspectError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// InspectResult answers an inspect with Value (any JSON, at most
// MaxInspectBytes) or Error.
type InspectResult struct {
	Type  string          `json:"type" jsonschema:"enum=inspect_result"`
	ID    string          `json:"id"`
	Value json.RawMessage `json:"value,omitempty"`
	Error *InspectError   `json:"error,omitempty"`
}

// decodePlay decodes the adapter's agent-play messages (typ is one of
// actions, stepped, step_refused, inspect_result).
func decodePlay(typ string, data []byte, m *AdapterMessage) error {
	c := &checker{}
	switch typ {
	case "actions":
		m.Actions = new(Actions)
		if err := decodeStrict(data, m.Actions, ""); err != nil {
			return err
		}
		return checkActions(m.Actions)
	case "stepped":
		m.Stepped = new(Stepped)
		if err := decodeStrict(data, m.Stepped, ""); err != nil {
			return err
		}
		s := m.Stepped
		c.id("op", s.Op, true)
		c.stepID("id", s.ID)
		if !(s.T >= 0) || math.IsInf(s.T, 1) {
			c.fail("t", "must be a finite, non-negative number of milliseconds, got %v", s.T)
		}
		if !(s.SimT >= 0) || math.IsInf(s.SimT, 1) {
			c.fail("simT", "must be a finite, non-negative number of milliseconds, got %v", s.SimT)
		}
	case "step_refused":
		m.StepRefused = new(StepRefused)
		if err := decodeStrict(data, m.StepRefused, ""); err != nil {
			return err
		}
		s := m.StepRefused
		c.id("op", s.Op, true)
		c.stepID("id", s.ID)
		c.text("code", s.Code, 128, true)
		c.text("message", s.Message, MaxTextBytes, false)
	case "inspect_result":
		m.InspectResult = new(InspectResult)
		if err := decodeStrict(data, m.InspectResult, ""); err != nil {
			return err
		}
		r := m.InspectResult
		c.stepID("id", r.ID)
		hasValue := len(bytes.TrimSpace(r.Value)) > 0
		switch {
		case hasValue && r.Error != nil:
			c.fail("error", "an inspect_result has value or error, not both")
		case !hasValue && r.Error == nil:
			c.fail("value", "required (or error)")
		case len(r.Value) > MaxInspectBytes:
			c.fail("value", "too long: %d bytes, at most %d", len(r.Value), MaxInspectBytes)
		case r.Error != nil:
			c.text("error.code", r.Error.Code, MaxInspectCodeBytes, true)
			c.text("error.message", r.Error.Message, MaxTextBytes, false)
		}
	}
	return c.result()
}

// stepID checks a step's or inspect's id.
func (c *checker) stepID(field, v string) {
	c.id(field, v, true)
	if len(v) > MaxStepIDBytes {
		c.fail(field, "too long: %d bytes, at most %d", len(v), MaxStepIDBytes)
	}
}

func checkActions(a *Actions) error {
	c := &checker{}
	if a.Actions == nil {
		c.fail("actions", "required")
	}
	if len(a.Actions) > MaxActions {
		c.fail("actions", "too many: %d, at most %d", len(a.Actions), MaxActions)
		return c.result()
	}
	seen := map[string]bool{}
	for i, ac := range a.Actions {
		f := fmt.Sprintf("actions[%d]", i)
		c.id(f+".name", ac.Name, true)
		if len(ac.Name) > MaxActionNameBytes {
			c.fail(f+".name", "too long: %d bytes, at most %d", len(ac.Name), MaxActionNameBytes)
		}
		if seen[ac.Name] {
			c.fail(f+".name", "duplicate action %q", ac.Name)
		}
		seen[ac.Name] = true
		if !slices.Contains(ActionKinds, ac.Kind) {
			c.fail(f+".kind", "must be one of %v, got %q", ActionKinds, ac.Kind)
		}
		c.text(f+".description", ac.Description, MaxActionDescBytes, false)
	}
	return c.result()
}

// CheckStep checks a step's values: its id, ms from 0 to MaxStepMs, and
// each input against actions (nil: shapes only, the action's kind
// unknown). It returns nil or a *FieldError; an adapter refuses such a
// step with CappyInvalidInput.
func CheckStep(s *Step, actions []Action) error {
	c := &checker{}
	c.id("op", s.Op, true)
	c.stepID("id", s.ID)
	if !(s.Ms >= 0 && s.Ms <= MaxStepMs) {
		c.fail("ms", "must be from 0 to %d milliseconds, got %v", MaxStepMs, s.Ms)
	}
	if len(s.Actions) > MaxStepActions {
		c.fail("actions", "too many: %d, at most %d in one step", len(s.Actions), MaxStepActions)
	}
	if err := c.result(); err != nil {
		return err
	}
	for i, in := range s.Actions {
		if err := CheckActionInput(fmt.Sprintf("actions[%d]", i), in, actions); err != nil {
			return err
		}
	}
	return nil
}

// CheckActionInput checks one input (field names it in the error)
// against the declared actions (nil: its shape only).
func CheckActionInput(field string, in ActionInput, actions []Action) error {
	c := &checker{}
	c.text(field+".name", in.Name, MaxActionNameBytes, true)
	if err := c.result(); err != nil {
		return err
	}
	kind := ""
	if actions != nil {
		i := slices.IndexFunc(actions, func(a Action) bool { return a.Name == in.Name })
		if i < 0 {
			names := make([]string, 0, len(actions))
			for _, a := range actions {
				names = append(names, a.Name)
			}
			hint := ""
			if near := NearNames(in.Name, names, 3); len(near) > 0 {
				hint = " (did you mean " + strings.Join(near, ", ") + "?)"
			}
			if len(names) > maxNamesListed {
				return fieldErr(field+".name", "unknown action %q%s; the game has %d actions (start_recording lists them)", in.Name, hint, len(names))
			}
			return fieldErr(field+".name", "unknown action %q%s; the game's actions are %v", in.Name, hint, names)
		}
		kind = actions[i].Kind
	}
	unit := func(name string, v *float64) {
		switch {
		case v == nil:
			c.fail(field+"."+name, "required for a %s action", kind)
		case !(*v >= -1 && *v <= 1):
			c.fail(field+"."+name, "must be from -1 to 1, got %v", *v)
		}
	}
	none := func(name string, set bool) {
		if set {
			c.fail(field+"."+name, "a %s action has no %s", kind, name)
		}
	}
	finite := func(name string, v *float64) {
		if v != nil && (math.IsNaN(*v) || math.IsInf(*v, 0)) {
			c.fail(field+"."+name, "must be a finite number")
		}
	}
	finite("value", in.Value)
	finite("x", in.X)
	finite("y", in.Y)
	c.text(field+".text", in.Text, MaxActionTextBytes, false)
	c.text(field+".button", in.Button, MaxPointerButton, false)
	switch kind {
	case ActionButton:
		if in.Pressed == nil {
			c.fail(field+".pressed", "required for a button action (true or false)")
		}
		none("value", in.Value != nil)
		none("x", in.X != nil)
		none("y", in.Y != nil)
		none("button", in.Button != "")
		none("text", in.Text != "")
	case ActionAxis:
		unit("value", in.Value)
		none("pressed", in.Pressed != nil)
		none("x", in.X != nil)
		none("y", in.Y != nil)
		none("button", in.Button != "")
		none("text", in.Text != "")
	case ActionAxis2D:
		unit("x", in.X)
		unit("y", in.Y)
		none("pressed", in.Pressed != nil)
		none("value", in.Value != nil)
		none("button", in.Button != "")
		none("text", in.Text != "")
	case ActionPointer:
		for _, p := range []struct {
			n string
			v *float64
		}{{"x", in.X}, {"y", in.Y}} {
			switch {
			case p.v == nil:
				c.fail(field+"."+p.n, "required for a pointer action (pixels of the game's frames)")
			case !(*p.v >= 0) || *p.v > MaxFrameSide:
				c.fail(field+"."+p.n, "must be from 0 to %d pixels, got %v", MaxFrameSide, *p.v)
			}
		}
		none("value", in.Value != nil)
		none("text", in.Text != "")
	case ActionText:
		none("pressed", in.Pressed != nil)
		none("value", in.Value != nil)
		none("x", in.X != nil)
		none("y", in.Y != nil)
		none("button", in.Button != "")
	}
	return c.result()
}
