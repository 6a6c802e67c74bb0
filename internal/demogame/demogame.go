// Package demogame is Demo Arena, a small deterministic simulated game that
// implements cappy.Game: for tests, the README quickstart and
// `crosscode-mcp demo`.
//
// The simulation advances in fixed 50 ms ticks, driven by a PCG generator
// seeded from the scenario and its parameters (or, for a freeform
// recording, from the recording's seed and the player's inputs). Scenarios
// and replays run in simulated time as fast as the connection takes their
// events; every event's payload carries simT, its simulation time in ms,
// and its presented t is simT / presentation.timeScale (durationMs is
// presented time too: simulated duration / timeScale). Payloads never
// depend on the presentation.
package demogame

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/crosscode/crosscode-mcp/adapters/go/cappy"
	"github.com/crosscode/crosscode-mcp/protocol"
)

// Identity.
const (
	GameID   = "demo-arena"
	GameName = "Demo Arena"
	Version  = "0.1.0"
	// Format is the replay format of Demo Arena recordings.
	Format = "demo-arena/v1"
)

// Cameras are the presentation cameras; the first is the default.
var Cameras = []string{"follow", "overview"}

// Game is Demo Arena. The zero value is ready to use.
type Game struct {
	// RecordTick is the wall-clock time of one simulation tick during a
	// freeform recording (default 10 ms: a recording runs 5x faster than
	// its simulated time).
	RecordTick time.Duration
	// Seed seeds freeform recordings when non-zero; by default each
	// recording's seed derives from its operation id.
	Seed uint64
	// ReplayDir receives recordings too large to send inline (default
	// os.TempDir()).
	ReplayDir string
	// Pace, when positive, runs scenarios at that multiple of real time
	// (1: a simulated second takes a second of wall time); by default they
	// run as fast as they can. A test knob: it changes when events come,
	// not what they are.
	Pace float64

	validated atomic.Pointer[validatedReplay]
	palette   atomic.Pointer[palette]
	flashes   atomic.Pointer[[][2]int64]
	live      atomic.Pointer[live] // the fight an agent plays, for Inspect
}

// New returns a Demo Arena game with default settings.
func New() *Game { return &Game{} }

var _ cappy.Game = (*Game)(nil)
var _ cappy.Validator = (*Game)(nil)
var _ cappy.Player = (*Game)(nil)
var _ cappy.Inspector = (*Game)(nil)

// Info implements cappy.Game.
func (g *Game) Info() cappy.Info {
	return cappy.Info{
		Adapter: protocol.NameVersion{Name: "crosscode-demogame", Version: Version},
		Game:    protocol.GameInfo{ID: GameID, Name: GameName},
		Build:   "demo-arena " + Version,
		Capabilities: []string{
			protocol.CapScenarios, protocol.CapFreeformRecording, protocol.CapReplay,
			protocol.CapTimeScale, protocol.CapAlternateCameras, protocol.CapFrames,
			protocol.CapInput, protocol.CapInspect,
			protocol.CapResetsItself, // Record and Replay build a new world: no new process needed
		},
	}
}

func num(v float64) *float64 { return &v }

var scenarios = []protocol.Scenario{
	{
		ID:          "boss_intro",
		Name:        "Boss intro",
		Description: "The Golem King's entrance and the fight against it, with its three phases.",
		Parameters: map[string]protocol.Parameter{
			"difficulty": {Type: "integer", Description: "1 (easy) to 3 (hard)", Minimum: num(1), Maximum: num(3), Default: 2.0},
			"hero":       {Type: "string", Description: "the hero's class", Enum: []any{"mage", "rogue", "knight"}, Default: "knight"},
		},
		RequiredCapabilities: []string{protocol.CapScenarios},
	},
	{
		ID:          "speedrun",
		Name:        "Speedrun",
		Description: "A timed run through the arena's checkpoints.",
		Parameters: map[string]protocol.Parameter{
			"route": {Type: "string", Description: "short (5 checkpoints) or long (12)", Required: true, Enum: []any{"short", "long"}},
			"hero":  {Type: "string", Description: "the hero's class", Enum: []any{"mage", "rogue", "knight"}, Default: "rogue"},
		},
		RequiredCapabilities: []string{protocol.CapScenarios},
	},
	{
		ID:          "stress",
		Name:        "Stress",
		Description: "Emits many tiny events as fast as possible (benchmarks).",
		Parameters: map[string]protocol.Parameter{
			"events": {Type: "integer", Description: "how many events", Minimum: num(1), Maximum: num(1_000_000), Default: 1000.0},
		},
		RequiredCapabilities: []string{protocol.CapScenarios},
	},
}

// pace waits, when Pace is set, until simMs of simulated time at Pace
// times real time have passed since start.
func (g *Game) pace(ctx context.Context, start time.Time, simMs int64) {
	if g.Pace <= 0 {
		return
	}
	d := time.Until(start.Add(time.Duration(float64(simMs) / g.Pace * float64(time.Millisecond))))
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// Scenarios implements cappy.Game.
func (g *Game) Scenarios() []protocol.Scenario { return slices.Clone(scenarios) }

func findScenario(id string) *protocol.Scenario {
	for i := range scenarios {
		if scenarios[i].ID == id {
			return &scenarios[i]
		}
	}
	return nil
}

// presentation is a checked protocol.Presentation.
type presentation struct {
	timeScale float64
	camera    string
}

// parsePresentation checks p as the adapter and the controller do
// (protocol's Presentation.Check, an *cappy.Failure), for calls that did
// not come through them, then the camera name.
func parsePresentation(p protocol.Presentation) (presentation, error) {
	out := presentation{timeScale: p.TimeScale(), camera: Cameras[0]}
	if err := p.Check(nil); err != nil {
		return out, err
	}
	if v, ok := p["camera"]; ok {
		c := v.(string) // Check made sure
		if !slices.Contains(Cameras, c) {
			return out, cappy.Failf(protocol.CappyUnknownCamera, "no camera %q in Demo Arena (cameras: %v)", c, Cameras)
		}
		out.camera = c
	}
	return out, nil
}

func resolve(scenario string, params map[string]any) (map[string]any, error) {
	sc := findScenario(scenario)
	if sc == nil {
		return nil, cappy.Failf(protocol.CappyScenarioNotFound, "Demo Arena has no scenario %q", scenario)
	}
	norm := make(map[string]any, len(params))
	for k, v := range params {
		norm[k] = normalize(v)
	}
	out, err := protocol.ResolveParameters(sc, norm)
	if err != nil {
		return nil, cappy.Failf(protocol.CappyInvalidParameters, "%v", err)
	}
	return out, nil
}

// normalize turns Go integers into the float64 JSON numbers decode to, for
// callers that pass parameters directly.
func normalize(v any) any {
	switch n := v.(type) {
	case int:
		return float64(n)
	case int64:
		return float64(n)
	case uint64:
		return float64(n)
	}
	return v
}

// ValidateScenario implements cappy.Validator: the scenario, its
// parameters and the presentation (camera names), before ready.
func (g *Game) ValidateScenario(scenario string, params map[string]any, p protocol.Presentation) error {
	if _, err := resolve(scenario, params); err != nil {
		return err
	}
	_, err := parsePresentation(p)
	return err
}

// ValidateReplay implements cappy.Validator: the replay's format and
// content and the presentation, before ready. The decoded replay is kept
// for the Replay of the same payload that follows.
func (g *Game) ValidateReplay(r *protocol.ReplayPayload, p protocol.Presentation) error {
	rec, err := decodeReplay(r)
	if err != nil {
		return err
	}
	if _, err := parsePresentation(p); err != nil {
		return err
	}
	g.validated.Store(&validatedReplay{payload: r, rec: rec})
	return nil
}

// validatedReplay is the replay ValidateReplay decoded last.
type validatedReplay struct {
	payload *protocol.ReplayPayload
	rec     *recording
}

// replayOf decodes a replay payload, or takes what ValidateReplay decoded
// from this very payload.
func (g *Game) replayOf(r *protocol.ReplayPayload) (*recording, error) {
	if v := g.validated.Swap(nil); v != nil && v.payload == r {
		return v.rec, nil
	}
	return decodeReplay(r)
}

// seedOf derives a scenario's seed from its id and resolved parameters.
func seedOf(scenario string, params map[string]any) uint64 {
	h := fnv.New64a()
	h.Write([]byte(scenario))
	keys := make([]string, 0, len(params))
	for k := range params {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(h, "|%s=%v", k, params[k])
	}
	return h.Sum64()
}

// emitter turns simulation events into op events at presented time.
func emitter(op *cappy.Op, pr presentation) emitFunc {
	return func(simT int64, name string, durMs int64, payload map[string]any) error {
		var dur *float64
		if durMs > 0 {
			d := float64(durMs) / pr.timeScale
			dur = &d
		}
		return op.Emit(float64(simT)/pr.timeScale, name, dur, payload)
	}
}

// finish reports a run's result as the op's summary (with its frame
// counts when frames were asked), or its error.
func finish(ctx context.Context, op *cappy.Op, err error, summary map[string]any) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil {
		return err
	}
	if op.Frames() != nil {
		st, err := op.FlushFrames(ctx)
		if err != nil {
			return err
		}
		summary["frames"] = st
	}
	return op.SetSummary(summary)
}

// RunScenario implements cappy.Game.
func (g *Game) RunScenario(ctx context.Context, op *cappy.Op, scenario string, params map[string]any, p protocol.Presentation) error {
	params, err := resolve(scenario, params)
	if err != nil {
		return err
	}
	pr, err := parsePresentation(p)
	if err != nil {
		return err
	}
	seed := seedOf(scenario, params)
	out := emitter(op, pr)
	switch scenario {
	case "boss_intro":
		w := newWorld(seed, modeBoss, params["hero"].(string), int(params["difficulty"].(float64)), out)
		ai := rand.New(rand.NewPCG(seed+1, seed^0x5851f42d4c957f2d))
		pics := g.pictures(op, pr, true)
		start := time.Now()
		for !w.over && w.err == nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			w.step(w.aiInput(ai))
			w.show(pics, pr.camera)
			g.pace(ctx, start, w.simT)
		}
		return finish(ctx, op, w.err, map[string]any{"outcome": w.outcome, "simMs": w.simT, "events": w.events})
	case "speedrun":
		simT, n, err := speedrun(seed, params["route"].(string), params["hero"].(string), out, g.pictures(op, pr, true))
		return finish(ctx, op, err, map[string]any{"outcome": "finished", "simMs": simT, "events": n})
	case "stress":
		n := int(params["events"].(float64))
		err := stress(ctx, op, n, pr.timeScale, g.pictures(op, pr, false))
		return finish(ctx, op, err, map[string]any{"events": n, "simMs": n})
	}
	return cappy.Failf(protocol.CappyScenarioNotFound, "Demo Arena has no scenario %q", scenario)
}

// speedrun runs the checkpoints of a route; it returns the run's time.
// With pics, it hands the frames of every tick of the run.
func speedrun(seed uint64, route, hero string, out emitFunc, pics *pictures) (int64, int, error) {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	legs := 5
	if route == "long" {
		legs = 12
	}
	ticks := func(lo, hi int) int64 { return int64(lo+rng.IntN(hi-lo+1)) * TickMs }
	segs := make([]segment, 0, legs)
	var simT int64
	for range legs {
		s := segment{start: simT, run: ticks(50, 90), jumpAt: -1, stumbleAt: -1} // 2.5 to 4.5 s
		if rng.Float64() < 0.5 {
			s.jumpAt = ticks(2, int(s.run/TickMs)-14)
		}
		if rng.Float64() < 0.25 {
			s.stumbleAt = ticks(2, int(s.run/TickMs)-2)
			s.lost = ticks(5, 15)
		}
		segs = append(segs, s)
		simT = s.end()
	}

	n := 0
	shown := int64(-TickMs) // the last tick whose frame was considered
	frames := func(upTo int64, reason string) error {
		for t := shown + TickMs; t <= upTo; t += TickMs {
			r := ""
			if t == upTo {
				r = reason
			}
			if err := pics.at(t, r, func() *scene { return runScene(t, route, hero, pics.camera, segs) }); err != nil {
				return err
			}
		}
		switch {
		case upTo > shown:
			shown = upTo
		case reason != "": // a second notable event in one tick
			return pics.at(upTo, reason, func() *scene { return runScene(upTo, route, hero, pics.camera, segs) })
		}
		return nil
	}
	emit := func(simT int64, name string, durMs int64, kv ...any) error {
		if pics != nil {
			if err := frames(simT-TickMs, ""); err != nil {
				return err
			}
		}
		p := map[string]any{"simT": simT}
		for i := 0; i+1 < len(kv); i += 2 {
			p[kv[i].(string)] = kv[i+1]
		}
		n++
		if err := out(simT, name, durMs, p); err != nil {
			return err
		}
		if pics == nil {
			return nil
		}
		reason := ""
		switch {
		case name == "CHECKPOINT" && simT == segs[len(segs)-1].end():
			// FINISH follows in the same tick and has the frame.
		case name == "CHECKPOINT" || name == "STUMBLE" || name == "FINISH":
			reason = name
		}
		return frames(simT, reason)
	}
	if err := emit(0, "SPAWN", 0, "actor", "hero", "kind", hero); err != nil {
		return 0, n, err
	}
	if err := emit(0, "RUN_START", 0, "route", route, "checkpoints", legs); err != nil {
		return 0, n, err
	}
	for i, s := range segs {
		type beat struct {
			at   int64
			name string
			dur  int64
			kv   []any
		}
		var beats []beat
		if s.jumpAt >= 0 {
			beats = append(beats, beat{s.jumpAt, "JUMP", 600, []any{"segment", i + 1}})
		}
		if s.stumbleAt >= 0 {
			beats = append(beats, beat{s.stumbleAt, "STUMBLE", s.lost, []any{"segment", i + 1, "lostMs", s.lost}})
		}
		slices.SortStableFunc(beats, func(a, b beat) int { return int(a.at - b.at) })
		for _, b := range beats {
			if err := emit(s.start+b.at, b.name, b.dur, b.kv...); err != nil {
				return s.start, n, err
			}
		}
		if err := emit(s.end(), "CHECKPOINT", 0, "index", i+1, "splitMs", s.end()); err != nil {
			return s.end(), n, err
		}
	}
	err := emit(simT, "FINISH", 0, "route", route, "timeMs", simT)
	return simT, n, err
}

// stress emits n tiny events through the cheap path: a reused buffer as
// json.RawMessage, no map or reflection per event. With pics, it hands a
// cheap frame whenever one is due, dropping those the encoder has no time
// for: the events never wait for pictures.
func stress(ctx context.Context, op *cappy.Op, n int, timeScale float64, pics *pictures) error {
	buf := make([]byte, 0, 48)
	for i := range n {
		if i&1023 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		buf = append(buf[:0], `{"i":`...)
		buf = strconv.AppendInt(buf, int64(i), 10)
		buf = append(buf, `,"simT":`...)
		buf = strconv.AppendInt(buf, int64(i), 10)
		buf = append(buf, '}')
		t := float64(i) / timeScale
		if err := op.Emit(t, "STRESS", nil, json.RawMessage(buf)); err != nil {
			return err
		}
		if pics != nil && op.FrameDue(t) {
			if err := pics.send(t, "", &scene{kind: sceneStress, simT: int64(i), camera: pics.camera, stress: stressState{done: i + 1, total: n}}); err != nil {
				return err
			}
		}
	}
	return nil
}

// recording is a Demo Arena replay: the seed and one input per tick; an
// agent's play (Agent) is the boss fight at Difficulty, with the hero's
// walk per tick in Moves (two letters a tick, x then y).
type recording struct {
	Format     string `json:"format"`
	Seed       uint64 `json:"seed"`
	Hero       string `json:"hero"`
	TickMs     int    `json:"tickMs"`
	Ticks      int    `json:"ticks"`
	Inputs     string `json:"inputs"`
	Agent      bool   `json:"agent,omitempty"`
	Difficulty int    `json:"difficulty,omitempty"`
	Moves      string `json:"moves,omitempty"`
}

// Record implements cappy.Game: the freeform arena, with a random,
// seeded player making one input per tick (paced by RecordTick), until
// stop. The replay holds the seed and the inputs.
func (g *Game) Record(ctx context.Context, op *cappy.Op) (*protocol.ReplayPayload, error) {
	if op.AgentControlled() {
		return g.play(ctx, op)
	}
	seed := g.Seed
	if seed == 0 {
		h := fnv.New64a()
		h.Write([]byte(op.ID()))
		seed = h.Sum64()
	}
	player := rand.New(rand.NewPCG(seed, seed^0xda3e39cb94b95bdb))
	hero := heroes[player.IntN(len(heroes))]
	w := newWorld(seed, modeArena, hero, 1, emitter(op, presentation{timeScale: 1}))
	pics := g.pictures(op, presentation{timeScale: 1, camera: Cameras[0]}, false) // in real time: never wait
	tickDur := g.RecordTick
	if tickDur <= 0 {
		tickDur = 10 * time.Millisecond
	}
	tick := time.NewTicker(tickDur)
	defer tick.Stop()
	inputs := make([]byte, 0, 1024)
	step := func() {
		in := playerInput(player)
		inputs = append(inputs, in)
		w.step(in)
		w.show(pics, Cameras[0])
	}
	step() // tick 0 at once
	for w.err == nil {
		select {
		case <-op.Stopped():
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if err := op.SetSummary(map[string]any{"ticks": w.ticks, "simMs": w.simT, "events": w.events, "hero": hero}); err != nil {
				return nil, err
			}
			return g.replayPayload(op.ID(), recording{Format: Format, Seed: seed, Hero: hero, TickMs: TickMs, Ticks: len(inputs), Inputs: string(inputs)})
		case <-tick.C:
			step()
		}
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return nil, w.err
}

func (g *Game) replayPayload(op string, rec recording) (*protocol.ReplayPayload, error) {
	data, err := json.Marshal(rec)
	if err != nil {
		return nil, err
	}
	if len(data) <= protocol.MaxInlineReplayBytes {
		return cappy.InlineReplay(data, Format), nil
	}
	dir := g.ReplayDir
	if dir == "" {
		dir = os.TempDir()
	}
	f, err := os.CreateTemp(dir, "demo-arena-*.json")
	if err != nil {
		return nil, err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	path, err := filepath.Abs(f.Name())
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(data) // of the bytes in hand, not read back
	return &protocol.ReplayPayload{Kind: "file", Path: path, SHA256: hex.EncodeToString(sum[:]), Bytes: int64(len(data)), Format: Format}, nil
}

// maxReplayFile bounds a file replay Demo Arena reads.
const maxReplayFile = 64 << 20

// decodeReplay checks and decodes a replay payload.
func decodeReplay(r *protocol.ReplayPayload) (*recording, error) {
	if r == nil {
		return nil, cappy.Failf(protocol.CappyReplayInvalid, "no replay")
	}
	if r.Format != "" && r.Format != Format {
		return nil, cappy.Failf(protocol.CappyReplayUnsupported, "replay format %q is not %s", r.Format, Format)
	}
	data, err := cappy.ReadReplay(r, maxReplayFile)
	if err != nil {
		return nil, err
	}
	var rec recording
	if err := json.Unmarshal(data, &rec); err != nil {
		return nil, cappy.Failf(protocol.CappyReplayUnsupported, "not a %s replay: %v", Format, err)
	}
	if rec.Format != Format {
		return nil, cappy.Failf(protocol.CappyReplayUnsupported, "replay format %q is not %s", rec.Format, Format)
	}
	switch {
	case rec.TickMs != TickMs:
		return nil, cappy.Failf(protocol.CappyReplayInvalid, "replay tick is %d ms, not %d", rec.TickMs, TickMs)
	case heroTable[rec.Hero].hp == 0:
		return nil, cappy.Failf(protocol.CappyReplayInvalid, "replay hero %q is unknown", rec.Hero)
	case rec.Ticks != len(rec.Inputs):
		return nil, cappy.Failf(protocol.CappyReplayInvalid, "replay has %d inputs for %d ticks", len(rec.Inputs), rec.Ticks)
	}
	for i := 0; i < len(rec.Inputs); i++ {
		if !validInput(rec.Inputs[i]) {
			return nil, cappy.Failf(protocol.CappyReplayInvalid, "replay input %d is %q", i, rec.Inputs[i])
		}
	}
	if err := rec.agentCheck(); err != nil {
		return nil, cappy.Failf(protocol.CappyReplayInvalid, "%v", err)
	}
	return &rec, nil
}

// Replay implements cappy.Game: the recording's simulation again, tick by
// tick, as fast as the events are taken; stop ends it early.
func (g *Game) Replay(ctx context.Context, op *cappy.Op, r *protocol.ReplayPayload, p protocol.Presentation) error {
	rec, err := g.replayOf(r)
	if err != nil {
		return err
	}
	pr, err := parsePresentation(p)
	if err != nil {
		return err
	}
	w := newWorld(rec.Seed, modeArena, rec.Hero, 1, emitter(op, pr))
	if rec.Agent {
		w = newWorld(rec.Seed, modeBoss, rec.Hero, rec.Difficulty, emitter(op, pr))
		w.agent = true
	}
	pics := g.pictures(op, pr, true)
	for i := 0; i < len(rec.Inputs) && w.err == nil; i++ {
		if i&63 == 0 {
			select {
			case <-op.Stopped():
				return finish(ctx, op, nil, map[string]any{"ticks": w.ticks, "simMs": w.simT, "events": w.events, "stopped": true})
			default:
			}
		}
		if rec.Agent {
			w.mx, w.my = moveOf(rec.Moves[2*i]), moveOf(rec.Moves[2*i+1])
		}
		w.step(rec.Inputs[i])
		w.show(pics, pr.camera)
	}
	return finish(ctx, op, w.err, map[string]any{"ticks": w.ticks, "simMs": w.simT, "events": w.events})
}
