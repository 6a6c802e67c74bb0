package protocol

// Capabilities of games that need no code of their own to be recorded
// and replayed faithfully (a Godot game with only the addon, spec section 18).
const (
	// CapResetsItself: the adapter puts the game where a recording starts
	// for each recording and replay itself (the Godot addon with
	// Cappy.set_freeform, a Go game whose Record and Replay start afresh).
	// Without it the controller starts a new game process for each
	// recording and replay of a game it launches, so that nothing of a
	// previous run leaks into the next.
	CapResetsItself = "resets_itself"
	// CapConfigEvents: the adapter sends events for the game's own
	// signals the capture config's "events" names; the controller hands
	// it the map in welcome (Welcome.Events).
	CapConfigEvents = "config_events"
)

// SeedEnv is the environment variable a controller sets, when it
// launches a game, to the seed of the recording or replay the launch is
// for (1 by default): the game's random numbers follow it from its first
// frame, so that every launch for that seed starts the same.
const SeedEnv = "CAPPY_SEED"

// Warnings: what an adapter knows that the agent should (a project not
// imported, a signal the config's events names that the game does not
// have, a frame step on the wall clock), so that a warning in the game's
// log also reaches the answer of the tool call it concerns.

// MsgWarnings is the adapter message that carries them. An adapter that
// sends them advertises CapWarnings, and sends one only when the
// controller's welcome lists MsgWarnings in accepts: an older controller
// would fail the operation at an unknown message, and an older adapter's
// strict decoder would refuse a welcome with accepts.
const (
	MsgWarnings = "warnings"
	CapWarnings = "warnings"
)

// The most warnings one message carries, and the longest one.
const (
	MaxWarnings     = 32
	MaxWarningBytes = 1000
)

// Warnings is the adapter's list of warnings as it stands: the whole list,
// each time it changes (an empty list clears it). The controller adds
// each to the operation running, if any, and shows the list in its status.
type Warnings struct {
	Type     string   `json:"type" jsonschema:"enum=warnings"`
	Warnings []string `json:"warnings" jsonschema:"maxItems=32"`
}

func decodeWarnings(data []byte, m *AdapterMessage) error {
	m.Warnings = new(Warnings)
	if err := decodeStrict(data, m.Warnings, ""); err != nil {
		return err
	}
	c := &checker{}
	if len(m.Warnings.Warnings) > MaxWarnings {
		c.fail("warnings", "%d warnings, at most %d", len(m.Warnings.Warnings), MaxWarnings)
	}
	list(c, "warnings", m.Warnings.Warnings, true, false, func(f, v string) { c.text(f, v, MaxWarningBytes, true) })
	return c.result()
}
