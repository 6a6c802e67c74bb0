package demogame

import (
	"context"
	"fmt"
	"hash/fnv"
	"image"
	"math"
	"slices"
	"sync"

	"github.com/crosscode/crosscode-mcp/adapters/go/cappy"
	"github.com/crosscode/crosscode-mcp/protocol"
)

// Agent play: a recording the agent controls (record_start control
// "agent") is the boss fight with the agent as the knight. It starts
// paused at simulation time 0; each step applies the agent's actions and
// runs the 50 ms ticks that start before the step's end, then pauses and
// shows the state after the last tick. The replay holds one input per
// tick (the button held, the direction walked), so it runs the very same
// ticks: the same events and pictures at any timeScale.

// AgentHero is the hero the agent plays; AgentDifficulty the boss's.
const (
	AgentHero       = "knight"
	AgentDifficulty = 2
)

// Actions implements cappy.Player.
func (g *Game) Actions() []protocol.Action {
	return []protocol.Action{
		{Name: "move", Kind: protocol.ActionAxis2D, Description: "Walk: x to the right, y down, each -1..1 (1 is full speed, 280 arena units a second). Held until changed."},
		{Name: "attack", Kind: protocol.ActionButton, Description: "Strike the nearest foe (adds first, then the boss) when it is in reach; while held, again at every cooldown (0.9 s)."},
		{Name: "cast", Kind: protocol.ActionButton, Description: "The knight's shield: blocks every hit for 1 s (cooldown 1.5 s)."},
		{Name: "dodge", Kind: protocol.ActionButton, Description: "Roll along your walk: hits in the next 400 ms miss (ready every 1 s). The boss's meteor lands 1.5 s after its cast."},
		{Name: "potion", Kind: protocol.ActionButton, Description: "Drink a potion: up to 40 hp back (3 potions)."},
	}
}

// moveSteps is the resolution of a walk direction: -moveSteps..moveSteps
// per axis, one letter each in a replay.
const moveSteps = 10

// agentInput is what a tick applies: the hero's input (a button held,
// most urgent first) and its walk.
type agentInput struct {
	in     byte
	mx, my int // -moveSteps..moveSteps
}

func inputOf(st cappy.Input) agentInput {
	a := agentInput{in: inIdle}
	switch {
	case st.Pressed("dodge"):
		a.in = inDodge
	case st.Pressed("cast"):
		a.in = inSkill
	case st.Pressed("attack"):
		a.in = inAttack
	case st.Pressed("potion"):
		a.in = inPotion
	}
	x, y := st.XY("move")
	a.mx, a.my = int(math.Round(x*moveSteps)), int(math.Round(y*moveSteps))
	return a
}

func moveChar(v int) byte   { return byte('A' + v + moveSteps) }
func moveOf(c byte) int     { return int(c) - 'A' - moveSteps }
func validMove(c byte) bool { return c >= 'A' && c <= 'A'+2*moveSteps }

// live is the world an agent plays, for Inspect.
type live struct {
	mu sync.Mutex
	w  *world
}

// play runs an agent-controlled recording until stop.
func (g *Game) play(ctx context.Context, op *cappy.Op) (*protocol.ReplayPayload, error) {
	seed := g.Seed
	if seed == 0 {
		h := fnv.New64a()
		h.Write([]byte(op.ID()))
		seed = h.Sum64()
	}
	w := newWorld(seed, modeBoss, AgentHero, AgentDifficulty, emitter(op, presentation{timeScale: 1}))
	w.agent = true
	lv := &live{w: w}
	g.live.Store(lv)
	defer g.live.CompareAndSwap(lv, nil)
	pics := g.pictures(op, presentation{timeScale: 1, camera: Cameras[0]}, true) // paused between steps: every due frame
	var inputs, moves []byte
	var target float64 // simulation time the steps asked for
	steps := 0
	for {
		st, err := op.NextStep(ctx)
		if err != nil {
			return nil, err
		}
		if st == nil {
			break
		}
		steps++
		in := inputOf(st.Input)
		target += st.Ms
		lv.mu.Lock()
		for float64(w.simT) < target && !w.over && w.err == nil {
			inputs = append(inputs, in.in)
			moves = append(moves, moveChar(in.mx), moveChar(in.my))
			w.mx, w.my = in.mx, in.my
			w.step(in.in)
			w.show(pics, Cameras[0])
		}
		err = w.err
		sc := w.pausedScene(Cameras[0])
		lv.mu.Unlock()
		if err != nil {
			return nil, err
		}
		var frame *cappy.StepFrame
		if pics != nil {
			frame = &cappy.StepFrame{T: float64(sc.simT), Render: func() image.Image { return pics.draw(sc) }}
		}
		if err := st.Done(target, target, frame); err != nil {
			return nil, err
		}
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	lv.mu.Lock()
	summary := map[string]any{"ticks": w.ticks, "simMs": w.simT, "events": w.events, "hero": AgentHero, "steps": steps, "outcome": w.outcome}
	lv.mu.Unlock()
	if op.Frames() != nil {
		fs, err := op.FlushFrames(ctx)
		if err != nil {
			return nil, err
		}
		summary["frames"] = fs
	}
	if err := op.SetSummary(summary); err != nil {
		return nil, err
	}
	return g.replayPayload(op.ID(), recording{Format: Format, Seed: seed, Hero: AgentHero, TickMs: TickMs, Ticks: len(inputs), Inputs: string(inputs),
		Agent: true, Difficulty: AgentDifficulty, Moves: string(moves)})
}

// pausedScene is the picture of the paused world: after its last tick, or
// as it starts before the first.
func (w *world) pausedScene(camera string) *scene {
	if w.ticks > 0 {
		return w.scene(camera)
	}
	w.simT += TickMs // scene shows simT - TickMs: 0
	sc := w.scene(camera)
	w.simT -= TickMs
	return sc
}

// agentStep moves the agent's hero one tick: along its walk, rolling at
// twice the speed while it dodges.
func (w *world) agentStep(h *unit) {
	speed := bodies[h.kind].speed
	if w.simT < w.dodgeUntil {
		speed *= 2
	}
	if w.mx == 0 && w.my == 0 {
		return
	}
	stepToward(h, h.x+w.mx*speed*100/moveSteps, h.y+w.my*speed*100/moveSteps, min(speed, speed*isqrt(w.mx*w.mx+w.my*w.my)/moveSteps))
}

// inReach reports whether the agent's hero can strike t from where it is.
func (w *world) inReach(t *unit) bool {
	return w.distance(t) <= bodies[w.hero.kind].reach+bodies[t.kind].radius+reachSlack
}

// reachSlack forgives a step's rounding in reach.
const reachSlack = 10

func (w *world) distance(t *unit) int { return isqrt(sq(t.x-w.hero.x) + sq(t.y-w.hero.y)) }

// Inspect implements cappy.Inspector: the state of the fight an agent
// plays. Queries: hero, boss, projectiles, foes, world ("" lists them).
func (g *Game) Inspect(query string) (any, error) {
	if query == "" {
		return map[string]any{
			"queries": []string{"hero", "boss", "projectiles", "foes", "world"},
			"about":   "The fight an agent plays (start_recording control agent): the knight against the Golem King, which enters at 2.5 s. Positions are arena units (1600 x 900; x right, y down).",
		}, nil
	}
	lv := g.live.Load()
	if lv == nil {
		return nil, cappy.Failf("NOT_RUNNING", "no fight is being played: start_recording with control agent first")
	}
	lv.mu.Lock()
	defer lv.mu.Unlock()
	w := lv.w
	switch query {
	case "hero":
		h := w.hero
		return map[string]any{"id": h.id, "class": w.class, "hp": h.hp, "maxHp": h.maxHP, "x": h.x, "y": h.y, "potions": w.potions,
			"cooldownMs": max(0, w.heroCD), "dodgeReadyInMs": max(0, w.dodgeReadyAt-w.simT), "dodging": w.simT < w.dodgeUntil,
			"guarding": w.simT < w.guardUntil, "down": w.downUntil > 0, "reach": bodies[h.kind].reach}, nil
	case "boss":
		b := w.foe("boss")
		if b == nil {
			state := "not yet entered (it enters at 2.5 s)"
			if w.simT > bossSpawnAt {
				state = "defeated"
			}
			return map[string]any{"id": "boss", "present": false, "state": state, "simT": w.simT}, nil
		}
		return map[string]any{"id": b.id, "kind": b.kind, "present": true, "hp": b.hp, "maxHp": b.maxHP, "x": b.x, "y": b.y, "phase": w.phase,
			"nextActionInMs": max(0, b.cd), "distance": w.distance(b), "inReach": w.inReach(b)}, nil
	case "projectiles":
		out := []map[string]any{}
		for _, p := range w.pending {
			out = append(out, map[string]any{"spell": p.spell, "from": p.actor, "to": p.target, "castAt": p.castAt, "landsAt": p.at, "landsInMs": p.at - w.simT})
		}
		return out, nil
	case "foes":
		out := []map[string]any{}
		for _, f := range w.foes {
			out = append(out, map[string]any{"id": f.id, "kind": f.kind, "hp": f.hp, "maxHp": f.maxHP, "x": f.x, "y": f.y, "distance": w.distance(f), "inReach": w.inReach(f)})
		}
		slices.SortFunc(out, func(a, b map[string]any) int { return a["distance"].(int) - b["distance"].(int) })
		return out, nil
	case "world":
		return map[string]any{"simT": w.simT, "ticks": w.ticks, "phase": w.phase, "over": w.over, "outcome": w.outcome, "events": w.events, "foes": len(w.foes)}, nil
	}
	return nil, cappy.Failf("UNKNOWN_QUERY", "no query %q: ask hero, boss, projectiles, foes or world", query)
}

func (r *recording) agentCheck() error {
	if !r.Agent {
		if r.Moves != "" {
			return fmt.Errorf("moves without agent")
		}
		return nil
	}
	if len(r.Moves) != 2*r.Ticks {
		return fmt.Errorf("replay has %d move letters for %d ticks", len(r.Moves), r.Ticks)
	}
	for i := 0; i < len(r.Moves); i++ {
		if !validMove(r.Moves[i]) {
			return fmt.Errorf("replay move %d is %q", i, r.Moves[i])
		}
	}
	if r.Difficulty < 1 || r.Difficulty > 3 {
		return fmt.Errorf("replay difficulty is %d", r.Difficulty)
	}
	return nil
}
