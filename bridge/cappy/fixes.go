package cappy

import (
	"fmt"
	"strings"

	"github.com/crosscode/crosscode-mcp/protocol"
)

// What a developer meets first is named with its fix: a capability the
// game's adapter does not advertise is refused with what gives it, in the
// terms of that adapter (the Godot addon, the JavaScript library, the Go
// package), as the adapter names itself in hello.

// Adapter names as the repository's adapters say them in hello.
const (
	godotAdapter = "cappy-godot"
	jsAdapter    = "crosscode-js-adapter"
	unityAdapter = "cappy-unity"
)

// godotFixes are what gives each capability in a Godot game.
var godotFixes = map[string]string{
	protocol.CapAlternateCameras: `name a camera in the game's code: Cappy.register_camera("overview", $Overview)`,
	protocol.CapFrames:           `run Godot where it renders, not --headless: on a machine without a display, under a virtual one (xvfb-run -a godot --rendering-driver opengl3 --path .)`,
	protocol.CapResetsItself:     `give the addon the game's own reset: Cappy.set_freeform(func(op): reset(op.rng_seed))`,
	protocol.CapInspect:          `the addon inspects with no game code unless the game turned it off (Cappy.inspect_enabled = false)`,
}

// unityFixes are what gives each capability in a Unity game with the
// package (adapters/unity), which offers the rest with no game code.
var unityFixes = map[string]string{
	protocol.CapScenarios:        "register one in the game's code: Cappy.RegisterScenario(id, info, run) (in Awake, so it is in the registry)",
	protocol.CapInput:            "install the Input System (com.unity.inputsystem) and set Project Settings > Player > Active Input Handling to Input System Package (or Both): the package presses the project's input actions; a project on the old Input Manager only cannot be driven",
	protocol.CapFrames:           "run the player with graphics (not -nographics); on a machine without a display, under a virtual one (xvfb-run -a ./Game.x86_64)",
	protocol.CapAlternateCameras: `name a camera in the game's code: Cappy.RegisterCamera("overview", show => overviewCamera.enabled = show)`,
	protocol.CapInspect:          "turn inspect back on in the package's settings (the CappySettings asset's inspect)",
	protocol.CapResetsItself:     "the package starts recordings afresh itself in the Editor's Play mode; a player is started anew by crosscode-mcp for each recording",
}

// jsFixes are what gives each capability with the JavaScript adapter.
var jsFixes = map[string]string{
	protocol.CapScenarios:         "register one: cappy.scenario(id, {parameters}, run)",
	protocol.CapFreeformRecording: "give the Cappy constructor hooks.record(op), which returns the recording's replay data",
	protocol.CapReplay:            "give the Cappy constructor hooks.replay(op, data, info)",
	protocol.CapTimeScale:         "give the Cappy constructor hooks.timeScale(scale, op)",
	protocol.CapAlternateCameras:  "give the Cappy constructor cameras: [...] and hooks.camera(name, op)",
	protocol.CapFrames:            "hand the library the game's canvas: cappy.frames(canvas)",
	protocol.CapInput:             "declare the game's actions before connect(): cappy.actions([...])",
	protocol.CapInspect:           "say what inspect reads before connect(): cappy.state(() => ({...}))",
}

// capabilityFix says what gives the game capability c, for the adapter
// that said hello h (nil: none connected).
func capabilityFix(h *protocol.Hello, c string) string {
	name, version := "", ""
	if h != nil {
		name, version = h.Adapter.Name, h.Adapter.Version
	}
	switch name {
	case PageAdapterName:
		return fmt.Sprintf("crosscode-mcp's page driver, which drives a web game with no adapter code, offers %s and not %q: take %q out of requiredCapabilities, or wire the game with the JavaScript adapter (docs/js-adapter.md) under game.adapter \"auto\"", strings.Join(pageCapabilities, ", "), c, c)
	case godotAdapter:
		if fix, ok := godotFixes[c]; ok {
			return fix
		}
		return fmt.Sprintf("the Godot addon offers %q with no game code since version 0.2.0; this game's addon is %s: write a newer one into the project with crosscode-mcp godot install-addon DIR", c, orUnknown(version))
	case jsAdapter:
		if fix, ok := jsFixes[c]; ok {
			return fix
		}
	case unityAdapter:
		if fix, ok := unityFixes[c]; ok {
			return fix
		}
		return fmt.Sprintf("the Unity package offers %q with no game code; this game's package is %s: update com.crosscode.cappy in the Package Manager", c, orUnknown(version))
	case "":
		return "no game is connected"
	}
	if c == protocol.CapResetsItself {
		return "with the Go adapter, list protocol.CapResetsItself in Info().Capabilities when Record and Replay start the game afresh"
	}
	return fmt.Sprintf("the game's adapter (%s) must advertise it in its hello; with the Go adapter, list it in Info().Capabilities and implement what it needs (see adapters/go/cappy)", name)
}

func orUnknown(v string) string {
	if v == "" {
		return "of an unknown version"
	}
	return v
}

// missingCapability is CAPABILITY_MISSING for capability c, what needed it
// (e.g. "it cannot be played in steps") and what gives it.
func missingCapability(h *protocol.Hello, c, what string) *Error {
	return errorf(protocol.CappyCapabilityMissing, "the game's adapter does not advertise %q: %s. To add it: %s", c, what, capabilityFix(h, c))
}
