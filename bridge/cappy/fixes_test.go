package cappy

import (
	"context"
	"strings"
	"testing"

	"github.com/crosscode/crosscode-mcp/protocol"
	"github.com/crosscode/crosscode-mcp/store"
)

// A capability the game's adapter lacks is refused with what gives it, in
// that adapter's terms: the Godot addon (update it; a camera to register;
// rendering for frames), the JavaScript library (its hooks and calls),
// the Go package; in refusals of operations, presentations, inspect and
// the handshake alike.
func TestMissingCapabilityNamesItsFix(t *testing.T) {
	godot := func(caps ...string) map[string]any {
		h := hello("", caps...)
		h["adapter"] = map[string]any{"name": "cappy-godot", "version": "0.1.0"}
		return h
	}
	cases := []struct {
		name  string
		hello map[string]any
		req   *Request // nil: inspect
		code  string
		says  []string
	}{
		{"godot without input (an old addon)", godot("scenarios", "freeform_recording"), &Request{Kind: KindRecording, Control: ControlAgent},
			protocol.CappyCapabilityMissing, []string{`"input"`, "played in steps", "0.1.0", "crosscode-mcp godot install-addon"}},
		{"godot without freeform recording", godot("scenarios"), &Request{Kind: KindRecording},
			protocol.CappyCapabilityMissing, []string{`"freeform_recording"`, "crosscode-mcp godot install-addon"}},
		{"godot without replay", godot("scenarios"), &Request{Kind: KindReplay},
			protocol.CappyReplayUnsupported, []string{`"replay"`, "crosscode-mcp godot install-addon"}},
		{"godot without cameras", godot("scenarios", "time_scale"), &Request{Kind: KindScenario, Scenario: "menu", Presentation: protocol.Presentation{"camera": "drone"}},
			protocol.CappyCapabilityMissing, []string{"alternate_cameras", "Cappy.register_camera"}},
		{"godot scenario needing cameras", godot("scenarios"), &Request{Kind: KindScenario, Scenario: "flyby"},
			protocol.CappyCapabilityMissing, []string{`scenario "flyby"`, "Cappy.register_camera"}},
		{"godot without inspect", godot("scenarios"), nil,
			protocol.CappyCapabilityMissing, []string{`"inspect"`, "Cappy.inspect_enabled"}},
		{"js without recording", func() map[string]any {
			h := hello("", "scenarios")
			h["adapter"] = map[string]any{"name": "crosscode-js-adapter", "version": "1.0.0"}
			return h
		}(), &Request{Kind: KindRecording}, protocol.CappyCapabilityMissing, []string{"hooks.record(op)"}},
		{"unity on the old Input Manager", func() map[string]any {
			h := hello("", "scenarios", "freeform_recording", "frames")
			h["adapter"] = map[string]any{"name": "cappy-unity", "version": "0.1.0"}
			return h
		}(), &Request{Kind: KindRecording, Control: ControlAgent}, protocol.CappyCapabilityMissing, []string{`"input"`, "com.unity.inputsystem", "Active Input Handling"}},
		{"go without time_scale", hello("", "scenarios"), &Request{Kind: KindScenario, Scenario: "menu", Presentation: protocol.Presentation{"timeScale": 0.5}},
			protocol.CappyCapabilityMissing, []string{"time_scale", "Info().Capabilities"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, nil)
			a := mustDial(t, e)
			tc.hello["token"] = e.ctrl.Token()
			a.send(t, tc.hello)
			a.expect(t, "welcome")
			a.send(t, registry())
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			if _, err := e.ctrl.WaitAdapter(ctx); err != nil {
				t.Fatal(err)
			}
			var err *Error
			if tc.req != nil {
				r := *tc.req
				if r.Kind == KindReplay {
					r.Replay = &store.Replay{SHA256: strings.Repeat("a", 64), Bytes: 1}
				}
				err = startErr(t, e, r, tc.code)
			} else {
				_, ierr := e.ctrl.Inspect(t.Context(), "")
				err = wantCode(t, ierr, tc.code)
			}
			for _, s := range tc.says {
				if !strings.Contains(err.Message, s) {
					t.Fatalf("%s: %q does not say %q", tc.name, err.Message, s)
				}
			}
		})
	}
	// The handshake refused for a required capability says it too.
	e := newEnv(t, func(c *Config) { c.RequiredCapabilities = []string{"frames"} })
	a := mustDial(t, e)
	h := godot("scenarios")
	h["token"] = e.ctrl.Token()
	a.send(t, h)
	m := a.expect(t, "reject")
	if msg := m.str("message"); !strings.Contains(msg, "requiredCapabilities") || !strings.Contains(msg, "not --headless") {
		t.Fatalf("reject: %q", msg)
	}
}
