package protocol

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestDecodeAdapterMessages(t *testing.T) {
	ok := map[string]string{
		"hello":       `{"type":"hello","protocol":{"min":1,"max":2},"token":"t","adapter":{"name":"cappy-godot","version":"0.1.0"},"game":{"id":"fp","name":"Fantasy Party"},"build":"b1","capabilities":["scenarios","teleport"],"futureField":{"x":1}}`,
		"scenarios":   `{"type":"scenarios","scenarios":[{"id":"boss_intro","name":"Boss intro","parameters":{"difficulty":{"type":"integer","minimum":1,"maximum":3,"default":2}},"requiredCapabilities":["scenarios"]}]}`,
		"ready":       `{"type":"ready","op":"op_1"}`,
		"started":     `{"type":"started","op":"op_1"}`,
		"event":       `{"type":"event","op":"op_1","t":350,"event":"SPELL_CAST","durationMs":120,"payload":{"spell":"fireball"}}`,
		"completed":   `{"type":"completed","op":"op_1","replay":{"kind":"inline","encoding":"base64","data":"aGk=","sha256":"8f434346648f6b96df89dda901c5176b10a6d83961dd3c1ac88b59b2dc327aa4","format":"demo/v1"}}`,
		"failed":      `{"type":"failed","op":"op_1","code":"SCENARIO_NOT_FOUND","message":"no such scenario"}`,
		"pong":        `{"type":"pong","nonce":"n1"}`,
		"file replay": `{"type":"completed","op":"op_1","replay":{"kind":"file","path":"/tmp/r.bin","bytes":10,"sha256":"8f434346648f6b96df89dda901c5176b10a6d83961dd3c1ac88b59b2dc327aa4"}}`,
		"warnings":    `{"type":"warnings","warnings":["events: no node Playr under the scene /root/Main (for PLAYER_HIT)"]}`,
		"no warnings": `{"type":"warnings","warnings":[]}`,
	}
	for name, in := range ok {
		m, err := DecodeAdapterMessage([]byte(in))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if name == "hello" && (!m.Hello.HasCapability("teleport") || m.Hello.Protocol.Max != 2) {
			t.Errorf("hello: %+v", m.Hello)
		}
	}
	bad := map[string]string{
		"malformed":            `{"type":`,
		"no type":              `{"op":"x"}`,
		"unknown type":         `{"type":"telemetry"}`,
		"unknown event field":  `{"type":"event","op":"o","t":1,"event":"E","extra":1}`,
		"negative t":           `{"type":"event","op":"o","t":-1,"event":"E"}`,
		"payload not object":   `{"type":"event","op":"o","t":1,"event":"E","payload":[1]}`,
		"event without op":     `{"type":"event","t":1,"event":"E"}`,
		"hello no token":       `{"type":"hello","protocol":{"min":1,"max":1},"adapter":{"name":"a"},"game":{"id":"g"},"capabilities":[]}`,
		"hello bad range":      `{"type":"hello","protocol":{"min":2,"max":1},"token":"t","adapter":{"name":"a"},"game":{"id":"g"},"capabilities":[]}`,
		"bad param type":       `{"type":"scenarios","scenarios":[{"id":"s","parameters":{"p":{"type":"float"}}}]}`,
		"default out of range": `{"type":"scenarios","scenarios":[{"id":"s","parameters":{"p":{"type":"integer","maximum":3,"default":9}}}]}`,
		"duplicate scenario":   `{"type":"scenarios","scenarios":[{"id":"s"},{"id":"s"}]}`,
		"bad sha":              `{"type":"completed","op":"o","replay":{"kind":"inline","encoding":"base64","data":"aGk=","sha256":"xyz"}}`,
		"file without bytes":   `{"type":"completed","op":"o","replay":{"kind":"file","path":"/tmp/r","sha256":"8f434346648f6b96df89dda901c5176b10a6d83961dd3c1ac88b59b2dc327aa4"}}`,
		"warnings missing":     `{"type":"warnings"}`,
		"warning empty":        `{"type":"warnings","warnings":[""]}`,
		"warning too long":     `{"type":"warnings","warnings":["` + strings.Repeat("w", MaxWarningBytes+1) + `"]}`,
		"too many warnings":    `{"type":"warnings","warnings":[` + strings.Repeat(`"w",`, MaxWarnings) + `"w"]}`,
		"warnings of an op":    `{"type":"warnings","op":"o","warnings":[]}`,
	}
	for name, in := range bad {
		if _, err := DecodeAdapterMessage([]byte(in)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestResolveParameters(t *testing.T) {
	one, three := 1.0, 3.0
	s := &Scenario{ID: "boss", Parameters: map[string]Parameter{
		"difficulty": {Type: "integer", Minimum: &one, Maximum: &three, Default: 2.0},
		"hero":       {Type: "string", Enum: []any{"mage", "rogue"}, Required: true},
		"hard":       {Type: "boolean"},
	}}
	got, err := ResolveParameters(s, map[string]any{"hero": "mage"})
	if err != nil || got["difficulty"] != 2.0 || got["hero"] != "mage" {
		t.Fatalf("defaults: %v %v", got, err)
	}
	for name, args := range map[string]map[string]any{
		"missing required": {},
		"unknown":          {"hero": "mage", "speed": 1.0},
		"not integer":      {"hero": "mage", "difficulty": 1.5},
		"above max":        {"hero": "mage", "difficulty": 4.0},
		"below min":        {"hero": "mage", "difficulty": 0.0},
		"not in enum":      {"hero": "bard"},
		"wrong type":       {"hero": "mage", "hard": "yes"},
	} {
		if _, err := ResolveParameters(s, args); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestControllerMessagesRoundTrip(t *testing.T) {
	msgs := []any{
		Welcome{Type: "welcome", Protocol: 1, Controller: NameVersion{Name: "cappy", Version: "1"}},
		PrepareScenario{Type: "prepare_scenario", Op: "op_1", Scenario: "boss", Parameters: map[string]any{"d": 2.0}, Presentation: Presentation{"timeScale": 0.5}},
		OpMessage{Type: "stop", Op: "op_1"},
		Ping{Type: "ping", Nonce: "n"},
	}
	for _, m := range msgs {
		b, _ := json.Marshal(m)
		typ, v, err := DecodeControllerMessage(b)
		if err != nil || v == nil || !strings.Contains(string(b), typ) {
			t.Errorf("%s: %v", b, err)
		}
	}
	if p := (Presentation{"timeScale": 0.5}); p.TimeScale() != 0.5 || (Presentation{}).TimeScale() != 1 {
		t.Fatal("TimeScale")
	}
}

func FuzzDecodeAdapterMessage(f *testing.F) {
	f.Add([]byte(`{"type":"event","op":"o","t":1,"event":"E","payload":{"a":1}}`))
	f.Add([]byte(`{"type":"hello","protocol":{"min":1,"max":1},"token":"t","adapter":{"name":"a"},"game":{"id":"g"},"capabilities":["x"]}`))
	f.Add([]byte(`{"type":"scenarios","scenarios":[{"id":"s","parameters":{"p":{"type":"integer","minimum":1,"default":2}}}]}`))
	f.Add([]byte(`{"type":"completed","op":"o","replay":{"kind":"file","path":"p","bytes":1,"sha256":"8f434346648f6b96df89dda901c5176b10a6d83961dd3c1ac88b59b2dc327aa4"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := DecodeAdapterMessage(data)
		if err != nil {
			return
		}
		if m.Type == "" {
			t.Fatal("decoded a message without type")
		}
		if m.Event != nil && m.Event.T < 0 {
			t.Fatal("negative t accepted")
		}
	})
}

// FuzzEventFastPath: the fast event parser agrees with the strict decoder
// on everything it accepts.
func FuzzEventFastPath(f *testing.F) {
	f.Add([]byte(`{"type":"event","op":"op_1","t":350,"event":"SPELL_CAST","durationMs":120,"payload":{"spell":"fireball"}}`))
	f.Add([]byte(`{"type":"event","op":"op_1","t":0,"event":"TICK"}`))
	f.Add([]byte(`{"type":"event","op":"op_1","t":1e3,"event":"X","payload":{"a":[1,2,{"b":null}]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		fast, ok := parseEventFast(data)
		if !ok {
			return
		}
		var strict Event
		if err := decodeStrict(data, &strict, ""); err != nil {
			t.Fatalf("fast path accepted what the strict decoder refuses: %v\n%s", err, data)
		}
		if fast.Op != strict.Op || fast.T != strict.T || fast.Event != strict.Event || string(fast.Payload) != string(strict.Payload) ||
			(fast.DurationMs == nil) != (strict.DurationMs == nil) || (fast.DurationMs != nil && *fast.DurationMs != *strict.DurationMs) {
			t.Fatalf("fast %+v strict %+v", fast, strict)
		}
	})
}
