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
