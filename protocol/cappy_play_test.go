package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// playGolden are the agent-play messages of testdata/cappy, each with its
// schema and its side: adapter messages decode with DecodeAdapterMessage,
// controller messages with DecodeControllerMessage.
var playGolden = map[string]struct {
	schema  string
	adapter bool
}{
	"actions.json":              {"cappy-actions.json", true},
	"record-start-agent.json":   {"cappy-record-start.json", false},
	"record-start-seed.json":    {"cappy-record-start.json", false},
	"prepare-replay-seed.json":  {"cappy-prepare-replay.json", false},
	"step.json":                 {"cappy-step.json", false},
	"stepped.json":              {"cappy-stepped.json", true},
	"step-refused.json":         {"cappy-step-refused.json", true},
	"inspect.json":              {"cappy-inspect.json", false},
	"inspect-result.json":       {"cappy-inspect-result.json", true},
	"inspect-result-error.json": {"cappy-inspect-result.json", true},
}

func readPlay(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "cappy", name))
	if err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSpace(b)
}

// TestPlayGolden: every golden message validates against its schema,
// decodes, and encodes back to the same JSON (the Go types are the wire).
func TestPlayGolden(t *testing.T) {
	s := compiled(t)
	files, _ := filepath.Glob(filepath.Join("testdata", "cappy", "*.json"))
	if len(files) != len(playGolden) {
		t.Fatalf("testdata/cappy has %d files, the test knows %d", len(files), len(playGolden))
	}
	for name, g := range playGolden {
		doc := readPlay(t, name)
		if err := validate(t, s[g.schema], doc); err != nil {
			t.Errorf("%s against %s: %v", name, g.schema, err)
		}
		var v any
		if g.adapter {
			m, err := DecodeAdapterMessage(doc)
			if err != nil {
				t.Errorf("%s: %v", name, err)
				continue
			}
			v = map[string]any{"actions": m.Actions, "stepped": m.Stepped, "step_refused": m.StepRefused, "inspect_result": m.InspectResult}[m.Type]
		} else {
			typ, dv, err := DecodeControllerMessage(doc)
			if err != nil {
				t.Errorf("%s: %v", name, err)
				continue
			}
			if typ == "step" {
				if err := CheckStep(dv.(*Step), nil); err != nil {
					t.Errorf("%s: CheckStep: %v", name, err)
				}
			}
			v = dv
		}
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b, doc) {
			t.Errorf("%s does not round-trip:\n got %s\nwant %s", name, b, doc)
		}
	}
}

func TestDecodePlayRefusals(t *testing.T) {
	big := `{"type":"inspect_result","id":"i1","value":"` + strings.Repeat("x", MaxInspectBytes) + `"}`
	bad := map[string]struct{ in, field string }{
		"actions unknown kind":  {`{"type":"actions","actions":[{"name":"a","kind":"wheel"}]}`, "actions[0].kind"},
		"actions duplicate":     {`{"type":"actions","actions":[{"name":"a","kind":"button"},{"name":"a","kind":"axis"}]}`, "actions[1].name"},
		"actions missing":       {`{"type":"actions"}`, "actions"},
		"actions extra field":   {`{"type":"actions","actions":[],"x":1}`, "x"},
		"action without name":   {`{"type":"actions","actions":[{"kind":"button"}]}`, "actions[0].name"},
		"stepped without id":    {`{"type":"stepped","op":"o","t":1,"simT":1}`, "id"},
		"stepped negative t":    {`{"type":"stepped","op":"o","id":"s1","t":-1,"simT":1}`, "t"},
		"stepped negative simT": {`{"type":"stepped","op":"o","id":"s1","t":1,"simT":-5}`, "simT"},
		"refused without code":  {`{"type":"step_refused","op":"o","id":"s1","message":"m"}`, "code"},
		"inspect both":          {`{"type":"inspect_result","id":"i1","value":1,"error":{"code":"X","message":"m"}}`, "error"},
		"inspect neither":       {`{"type":"inspect_result","id":"i1"}`, "value"},
		"inspect over 256 KiB":  {big, "value"},
		"inspect error no code": {`{"type":"inspect_result","id":"i1","error":{"message":"m"}}`, "error.code"},
		"inspect id too long":   {`{"type":"inspect_result","id":"` + strings.Repeat("i", 65) + `","value":1}`, "id"},
	}
	for name, c := range bad {
		_, err := DecodeAdapterMessage([]byte(c.in))
		var fe *FieldError
		if !errors.As(err, &fe) {
			t.Errorf("%s: want a field error, got %v", name, err)
			continue
		}
		if fe.Field != c.field {
			t.Errorf("%s: error names %q, want %q (%v)", name, fe.Field, c.field, err)
		}
	}
	// A value of exactly the limit is accepted; null is a value.
	exact := `{"type":"inspect_result","id":"i1","value":"` + strings.Repeat("x", MaxInspectBytes-2) + `"}`
	for _, in := range []string{exact, `{"type":"inspect_result","id":"i1","value":null}`} {
		if _, err := DecodeAdapterMessage([]byte(in)); err != nil && !strings.Contains(in, "null") {
			t.Errorf("%.60s: %v", in, err)
		}
	}
}

func TestCheckStep(t *testing.T) {
	actions := []Action{{Name: "jump", Kind: ActionButton}, {Name: "steer", Kind: ActionAxis}, {Name: "move", Kind: ActionAxis2D},
		{Name: "aim", Kind: ActionPointer}, {Name: "say", Kind: ActionText}}
	tr, one, half, two, px := true, 1.0, 0.5, 2.0, 320.0
	neg := -1.0
	step := func(ms float64, in ...ActionInput) *Step {
		return &Step{Type: "step", Op: "op_1", ID: "s1", Actions: in, Ms: ms}
	}
	good := []*Step{
		step(0),
		step(10000, ActionInput{Name: "jump", Pressed: &tr}),
		step(500, ActionInput{Name: "steer", Value: &neg}, ActionInput{Name: "move", X: &one, Y: &half}),
		step(16.6, ActionInput{Name: "aim", X: &px, Y: &px, Button: "right", Pressed: &tr}, ActionInput{Name: "aim", X: &px, Y: &px}),
		step(1, ActionInput{Name: "say", Text: "hello"}),
	}
	for i, s := range good {
		if err := CheckStep(s, actions); err != nil {
			t.Errorf("good %d: %v", i, err)
		}
	}
	many := make([]ActionInput, MaxStepActions+1)
	for i := range many {
		many[i] = ActionInput{Name: "jump", Pressed: &tr}
	}
	bad := map[string]struct {
		s     *Step
		field string
	}{
		"ms over":           {step(10001), "ms"},
		"ms negative":       {step(-1), "ms"},
		"too many":          {step(1, many...), "actions"},
		"unknown action":    {step(1, ActionInput{Name: "fly", Pressed: &tr}), "actions[0].name"},
		"button no pressed": {step(1, ActionInput{Name: "jump"}), "actions[0].pressed"},
		"button with value": {step(1, ActionInput{Name: "jump", Pressed: &tr, Value: &one}), "actions[0].value"},
		"axis out of range": {step(1, ActionInput{Name: "steer", Value: &two}), "actions[0].value"},
		"axis missing":      {step(1, ActionInput{Name: "steer"}), "actions[0].value"},
		"axis2d missing y":  {step(1, ActionInput{Name: "move", X: &one}), "actions[0].y"},
		"axis2d y over":     {step(1, ActionInput{Name: "move", X: &one, Y: &two}), "actions[0].y"},
		"pointer negative":  {step(1, ActionInput{Name: "aim", X: &neg, Y: &px}), "actions[0].x"},
		"text with pressed": {step(1, ActionInput{Name: "say", Text: "x", Pressed: &tr}), "actions[0].pressed"},
		"no id":             {&Step{Type: "step", Op: "op_1", Ms: 1}, "id"},
	}
	for name, c := range bad {
		err := CheckStep(c.s, actions)
		var fe *FieldError
		if !errors.As(err, &fe) {
			t.Errorf("%s: want a field error, got %v", name, err)
			continue
		}
		if fe.Field != c.field {
			t.Errorf("%s: error names %q, want %q (%v)", name, fe.Field, c.field, err)
		}
	}
	// Without the declared actions, shapes are still checked.
	if err := CheckStep(step(1, ActionInput{Name: "anything", Pressed: &tr}), nil); err != nil {
		t.Errorf("shape only: %v", err)
	}
}

// FuzzDecodePlay: the agent-play decoders never panic, and what they
// accept keeps the protocol's limits.
func FuzzDecodePlay(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "cappy", "*.json"))
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := DecodeAdapterMessage(data)
		if err == nil {
			switch {
			case m.InspectResult != nil:
				r := m.InspectResult
				if len(r.Value) > MaxInspectBytes || (len(r.Value) == 0) == (r.Error == nil) {
					t.Fatalf("accepted a bad inspect_result: %s", data)
				}
			case m.Stepped != nil:
				if m.Stepped.T < 0 || m.Stepped.SimT < 0 || m.Stepped.ID == "" {
					t.Fatalf("accepted a bad stepped: %s", data)
				}
			case m.Actions != nil:
				if len(m.Actions.Actions) > MaxActions {
					t.Fatalf("accepted %d actions", len(m.Actions.Actions))
				}
			}
		}
		if typ, v, err := DecodeControllerMessage(data); err == nil {
			switch m := v.(type) {
			case *Step:
				if CheckStep(m, nil) == nil && (m.Ms < 0 || m.Ms > MaxStepMs || len(m.Actions) > MaxStepActions) {
					t.Fatalf("CheckStep accepted %+v", m)
				}
			case *RecordStart:
				if m.Seed != nil && (*m.Seed < 0 || *m.Seed > MaxSeed) {
					t.Fatalf("%s: accepted seed %d", typ, *m.Seed)
				}
			case *PrepareReplay:
				if m.Seed != nil && (*m.Seed < 0 || *m.Seed > MaxSeed) {
					t.Fatalf("%s: accepted seed %d", typ, *m.Seed)
				}
			}
		}
	})
}

// TestSeedRefusals: a seed is an integer from 0 to MaxSeed; record_start
// and prepare_replay with another are refused, naming the field, and a
// message without one decodes as before (older controllers send none).
func TestSeedRefusals(t *testing.T) {
	for _, in := range []string{
		`{"type":"record_start","op":"op_1","seed":-1}`,
		`{"type":"record_start","op":"op_1","seed":9007199254740992}`,
		`{"type":"prepare_replay","op":"op_1","replay":{"kind":"inline","encoding":"base64","data":"","sha256":"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},"seed":-5}`,
	} {
		_, _, err := DecodeControllerMessage([]byte(in))
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != "seed" {
			t.Errorf("%s: want a seed field error, got %v", in, err)
		}
	}
	for _, in := range []string{`{"type":"record_start","op":"op_1","seed":1.5}`, `{"type":"record_start","op":"op_1","seed":"1"}`} {
		if _, _, err := DecodeControllerMessage([]byte(in)); err == nil {
			t.Errorf("%s: accepted", in)
		}
	}
	_, v, err := DecodeControllerMessage([]byte(`{"type":"record_start","op":"op_1"}`))
	if err != nil || v.(*RecordStart).Seed != nil {
		t.Fatalf("no seed: %v %+v", err, v)
	}
	_, v, err = DecodeControllerMessage([]byte(`{"type":"record_start","op":"op_1","seed":9007199254740991}`))
	if err != nil || *v.(*RecordStart).Seed != MaxSeed {
		t.Fatalf("the largest seed: %v %+v", err, v)
	}
	if b, _ := json.Marshal(RecordStart{Type: "record_start", Op: "op_1"}); strings.Contains(string(b), "seed") {
		t.Fatalf("a record_start without a seed carries one: %s", b)
	}
}
