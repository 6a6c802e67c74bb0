package demogame

import (
	"math/rand/v2"
	"strconv"
)

// TickMs is the fixed simulation step.
const TickMs = 50

// Inputs, one per tick: what the hero is told to do.
const (
	inIdle   = '.'
	inAttack = 'a' // melee hit, or the mage's frostbolt
	inSkill  = 's' // class skill: shield, backstab, fireball
	inDodge  = 'd'
	inPotion = 'p'
)

func validInput(b byte) bool {
	switch b {
	case inIdle, inAttack, inSkill, inDodge, inPotion:
		return true
	}
	return false
}

// Heroes and their stats.
var heroes = []string{"knight", "rogue", "mage"}

type heroStats struct {
	hp             int
	minDmg, maxDmg int
	cooldown       int64 // ms after a basic attack
	crit           float64
}

var heroTable = map[string]heroStats{
	"knight": {hp: 160, minDmg: 9, maxDmg: 14, cooldown: 900, crit: 0.10},
	"rogue":  {hp: 100, minDmg: 5, maxDmg: 9, cooldown: 500, crit: 0.30},
	"mage":   {hp: 85, minDmg: 12, maxDmg: 18, cooldown: 1000, crit: 0.15}, // frostbolt
}

type foeStats struct {
	hp             int
	minDmg, maxDmg int
	cooldown       int64
}

var foeTable = map[string]foeStats{
	"golem_king": {hp: 0 /* by difficulty */, minDmg: 6, maxDmg: 11, cooldown: 1700},
	"skeleton":   {hp: 30, minDmg: 2, maxDmg: 4, cooldown: 1300},
	"slime":      {hp: 20, minDmg: 1, maxDmg: 3, cooldown: 1000},
	"ogre":       {hp: 120, minDmg: 5, maxDmg: 9, cooldown: 1800},
}

type unit struct {
	id, kind  string
	hp, maxHP int
	cd        int64 // ms until the next action

	// What the picture shows; never read by the rules (see move.go).
	x, y    int   // arena units
	flashAt int64 // simT of the last hit it took; -1: none
}

// pending is an action that lands later: a spell finishing its cast.
type pending struct {
	castAt, at     int64
	actor, target  string
	spell          string
	minDmg, maxDmg int
}

type mode int

const (
	modeBoss  mode = iota // boss_intro: ends when the boss or the hero falls
	modeArena             // freeform: endless waves until the input ends
)

// emitFunc receives one event at simulation time simT (ms). durMs is 0 for
// an event without duration. payload always holds simT.
type emitFunc func(simT int64, name string, durMs int64, payload map[string]any) error

// world is the deterministic simulation: the same seed and the same
// inputs give the same events, whatever the presentation.
type world struct {
	rng  *rand.Rand
	mode mode
	out  emitFunc
	err  error // first emit error; the world stops emitting after it

	simT  int64
	ticks int
	hero  unit
	class string
	stats heroStats

	potions      int
	heroCD       int64
	dodgeReadyAt int64
	dodgeUntil   int64
	guardUntil   int64
	downUntil    int64 // arena: the hero respawns then; 0 = up
	pending      []pending

	foes   []*unit
	nextID int

	// boss mode
	difficulty int
	phase      int

	// arena mode
	wave       int
	nextWaveAt int64

	over    bool
	outcome string
	events  int

	// agent play (play.go): the agent walks the hero and must be in reach
	agent  bool
	mx, my int

	// What the picture shows (see move.go); never read by the rules.
	phaseAt int64     // simT of the last phase change
	orbitA  int       // the hero's angle around the fight (see move)
	marks   []hitMark // recent damage numbers
	notable string    // the first notable event of the current tick
}

const (
	bossIntroAt  = 500
	bossIntroMs  = 2000
	bossSpawnAt  = bossIntroAt + bossIntroMs
	bossTimeout  = 240_000
	firstWaveAt  = 1000
	waveInterval = 1500
	respawnMs    = 2000
)

func newWorld(seed uint64, m mode, class string, difficulty int, out emitFunc) *world {
	w := &world{
		rng:        rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		mode:       m,
		out:        out,
		class:      class,
		stats:      heroTable[class],
		potions:    3,
		difficulty: difficulty,
		nextWaveAt: firstWaveAt,
		orbitA:     heroStartA,
	}
	w.hero = unit{id: "hero", kind: class, hp: w.stats.hp, maxHP: w.stats.hp, x: heroHomeX, y: heroHomeY, flashAt: -1}
	return w
}

func (w *world) emit(name string, durMs int64, kv ...any) {
	if w.err != nil {
		return
	}
	p := make(map[string]any, len(kv)/2+1)
	p["simT"] = w.simT
	for i := 0; i+1 < len(kv); i += 2 {
		p[kv[i].(string)] = kv[i+1]
	}
	w.events++
	if w.notable == "" && notableEvents[name] {
		w.notable = name
	}
	w.err = w.out(w.simT, name, durMs, p)
}

func (w *world) roll(lo, hi int) int { return lo + w.rng.IntN(hi-lo+1) }

// step advances the simulation by one tick with the hero's input.
func (w *world) step(in byte) {
	if w.over || w.err != nil {
		return
	}
	if w.ticks == 0 {
		w.emit("SPAWN", 0, "actor", "hero", "kind", w.class, "hp", w.hero.hp)
	}
	w.script()
	w.land()
	if !w.over {
		w.heroAct(in)
	}
	if !w.over {
		w.foesAct()
	}
	if w.mode == modeBoss && !w.over && w.simT >= bossTimeout {
		w.emit("ENCOUNTER_TIMEOUT", 0, "bossHp", w.bossHP())
		w.end("timeout")
	}
	w.move()
	w.ticks++
	w.simT += TickMs
	if w.heroCD > 0 {
		w.heroCD -= TickMs
	}
}

func (w *world) end(outcome string) { w.over, w.outcome = true, outcome }

// script runs the authored beats: the boss's entrance, the arena's waves,
// respawns.
func (w *world) script() {
	switch w.mode {
	case modeBoss:
		switch w.simT {
		case bossIntroAt:
			w.emit("BOSS_INTRO", bossIntroMs, "boss", "golem_king", "difficulty", w.difficulty)
		case bossSpawnAt:
			hp := 250 + 150*w.difficulty
			w.spawn("golem_king", hp)
			w.phase, w.phaseAt = 1, w.simT
			w.emit("BOSS_PHASE", 0, "phase", 1, "hp", hp)
		}
	case modeArena:
		if w.downUntil > 0 && w.simT >= w.downUntil {
			w.downUntil = 0
			w.hero.hp = w.hero.maxHP
			w.potions = 3
			w.emit("RESPAWN", 0, "actor", "hero", "hp", w.hero.hp)
		}
		if w.nextWaveAt > 0 && w.simT >= w.nextWaveAt {
			w.nextWaveAt = 0
			w.wave++
			n := min(1+w.wave, 6)
			w.emit("WAVE_START", 0, "wave", w.wave, "foes", n+boolInt(w.wave%5 == 0))
			for i := range n {
				if i%2 == 0 {
					w.spawn("slime", foeTable["slime"].hp+2*w.wave)
				} else {
					w.spawn("skeleton", foeTable["skeleton"].hp+2*w.wave)
				}
			}
			if w.wave%5 == 0 {
				w.spawn("ogre", foeTable["ogre"].hp+10*w.wave)
			}
		}
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (w *world) spawn(kind string, hp int) {
	w.nextID++
	u := &unit{kind: kind, hp: hp, maxHP: hp, cd: foeTable[kind].cooldown / 2, flashAt: -1}
	if kind == "golem_king" {
		u.id = "boss"
		u.x, u.y = bossSpawnX, bossSpawnY
	} else {
		u.id = kind + "_" + strconv.Itoa(w.nextID)
		p := spawnPoints[w.nextID%len(spawnPoints)]
		u.x, u.y = p[0], p[1]
	}
	w.foes = append(w.foes, u)
	w.emit("SPAWN", 0, "actor", u.id, "kind", kind, "hp", hp)
}

func (w *world) bossHP() int {
	for _, f := range w.foes {
		if f.id == "boss" {
			return f.hp
		}
	}
	return 0
}

func (w *world) foe(id string) *unit {
	for _, f := range w.foes {
		if f.id == id {
			return f
		}
	}
	return nil
}

// target is the hero's target: minions first, then the boss.
func (w *world) target() *unit {
	var boss *unit
	for _, f := range w.foes {
		if f.id == "boss" {
			boss = f
			continue
		}
		return f
	}
	return boss
}

// land resolves the spells whose cast ends now.
func (w *world) land() {
	keep := w.pending[:0]
	var due []pending
	for _, p := range w.pending {
		if p.at <= w.simT {
			due = append(due, p)
		} else {
			keep = append(keep, p)
		}
	}
	w.pending = keep
	for _, p := range due {
		if w.over {
			return
		}
		dmg := w.roll(p.minDmg, p.maxDmg)
		if p.actor == "hero" {
			if f := w.foe(p.target); f != nil {
				w.damageFoe(f, dmg, false, p.spell)
			}
			continue
		}
		if w.foe(p.actor) != nil {
			w.damageHero(p.actor, dmg, p.spell)
		}
	}
}

func (w *world) heroAct(in byte) {
	if w.downUntil > 0 {
		return
	}
	switch in {
	case inAttack, inSkill:
		t := w.target()
		if w.heroCD > 0 || t == nil {
			return
		}
		if w.agent && !(in == inSkill && w.class == "knight") && !w.inReach(t) {
			w.emit("OUT_OF_REACH", 0, "actor", "hero", "target", t.id, "distance", w.distance(t), "reach", bodies[w.hero.kind].reach+bodies[t.kind].radius+reachSlack)
			w.heroCD = 250
			return
		}
		switch {
		case w.class == "mage":
			spell, cast, lo, hi := "frostbolt", int64(800), w.stats.minDmg, w.stats.maxDmg
			if in == inSkill {
				spell, cast, lo, hi = "fireball", 1200, 24, 34
			}
			w.emit("SPELL_CAST", cast, "actor", "hero", "spell", spell, "target", t.id)
			w.pending = append(w.pending, pending{castAt: w.simT, at: w.simT + cast, actor: "hero", target: t.id, spell: spell, minDmg: lo, maxDmg: hi})
			w.heroCD = cast + 200
		case in == inSkill && w.class == "knight":
			w.emit("SHIELD_UP", 1000, "actor", "hero")
			w.guardUntil = w.simT + 1000
			w.heroCD = 1500
		case in == inSkill && w.class == "rogue":
			crit := w.rng.Float64() < 0.5
			dmg := w.roll(14, 22)
			if crit {
				dmg *= 2
			}
			w.damageFoe(t, dmg, crit, "backstab")
			w.heroCD = 1200
		default:
			crit := w.rng.Float64() < w.stats.crit
			dmg := w.roll(w.stats.minDmg, w.stats.maxDmg)
			if crit {
				dmg *= 2
			}
			w.damageFoe(t, dmg, crit, "")
			w.heroCD = w.stats.cooldown
		}
	case inDodge:
		if w.simT < w.dodgeReadyAt {
			return
		}
		w.emit("DODGE", 400, "actor", "hero")
		w.dodgeUntil = w.simT + 400
		w.dodgeReadyAt = w.simT + 1000
	case inPotion:
		if w.potions == 0 || w.hero.hp == w.hero.maxHP {
			return
		}
		w.potions--
		heal := min(40, w.hero.maxHP-w.hero.hp)
		w.hero.hp += heal
		w.emit("POTION", 0, "actor", "hero", "heal", heal, "hp", w.hero.hp, "left", w.potions)
	}
}

func (w *world) damageFoe(f *unit, dmg int, crit bool, skill string) {
	f.hp = max(0, f.hp-dmg)
	w.hit(f, dmg, crit)
	kv := []any{"actor", "hero", "target", f.id, "damage", dmg, "hp", f.hp}
	if crit {
		kv = append(kv, "crit", true)
	}
	if skill != "" {
		kv = append(kv, "skill", skill)
	}
	w.emit("HIT", 0, kv...)
	if f.id == "boss" {
		switch {
		case f.hp == 0:
		case w.phase == 1 && f.hp*3 <= f.maxHP*2:
			w.phase, w.phaseAt = 2, w.simT
			w.emit("BOSS_PHASE", 0, "phase", 2, "hp", f.hp)
			w.spawn("skeleton", foeTable["skeleton"].hp)
			w.spawn("skeleton", foeTable["skeleton"].hp)
		case w.phase == 2 && f.hp*3 <= f.maxHP:
			w.phase, w.phaseAt = 3, w.simT
			w.emit("BOSS_PHASE", 0, "phase", 3, "hp", f.hp, "enraged", true)
		}
	}
	if f.hp > 0 {
		return
	}
	w.remove(f)
	if f.id == "boss" {
		w.emit("BOSS_DEFEATED", 0, "heroHp", w.hero.hp, "fightMs", w.simT-bossSpawnAt)
		w.end("victory")
		return
	}
	w.emit("ENEMY_DEFEATED", 0, "target", f.id, "kind", f.kind)
	if w.mode == modeArena && len(w.foes) == 0 {
		w.emit("WAVE_CLEARED", 0, "wave", w.wave)
		w.nextWaveAt = w.simT + waveInterval
	}
}

func (w *world) remove(f *unit) {
	for i, g := range w.foes {
		if g == f {
			w.foes = append(w.foes[:i], w.foes[i+1:]...)
			return
		}
	}
}

func (w *world) damageHero(actor string, dmg int, skill string) {
	if w.downUntil > 0 {
		return
	}
	switch {
	case w.simT < w.dodgeUntil:
		w.emit("DODGED", 0, "actor", actor, "target", "hero")
		return
	case w.simT < w.guardUntil:
		w.emit("BLOCKED", 0, "actor", actor, "target", "hero", "damage", dmg)
		return
	}
	w.hero.hp = max(0, w.hero.hp-dmg)
	w.hit(&w.hero, dmg, false)
	kv := []any{"actor", actor, "target", "hero", "damage", dmg, "hp", w.hero.hp}
	if skill != "" {
		kv = append(kv, "skill", skill)
	}
	w.emit("HIT", 0, kv...)
	if w.hero.hp > 0 {
		return
	}
	w.emit("PLAYER_DOWN", 0, "actor", "hero", "by", actor)
	if w.mode == modeBoss {
		w.end("defeat")
		return
	}
	w.downUntil = w.simT + respawnMs
	w.pending = w.pending[:0]
}

func (w *world) foesAct() {
	for _, f := range w.foes {
		if w.over || w.downUntil > 0 {
			return
		}
		f.cd -= TickMs
		if f.cd > 0 {
			continue
		}
		st := foeTable[f.kind]
		f.cd = st.cooldown
		lo, hi := st.minDmg, st.maxDmg
		if f.id == "boss" {
			scale := []float64{0.8, 1, 1.3}[w.difficulty-1]
			lo, hi = int(float64(lo)*scale), int(float64(hi)*scale)
			f.cd = st.cooldown - 150*int64(w.difficulty) - 200*int64(w.phase-1)
			if w.phase >= 2 && w.rng.Float64() < 0.3 {
				w.emit("SPELL_CAST", 1500, "actor", "boss", "spell", "meteor", "target", "hero")
				w.pending = append(w.pending, pending{castAt: w.simT, at: w.simT + 1500, actor: "boss", target: "hero", spell: "meteor", minDmg: 2 * lo, maxDmg: 2 * hi})
				continue
			}
		}
		w.damageHero(f.id, w.roll(lo, hi), "")
	}
}

// aiInput is the scripted hero of the authored scenarios.
func (w *world) aiInput(r *rand.Rand) byte {
	x := r.Float64()
	incoming := false
	for _, p := range w.pending {
		if p.target == "hero" && p.at-w.simT <= 300 {
			incoming = true
		}
	}
	switch {
	case incoming && x < 0.6:
		return inDodge
	case w.hero.hp*100 < w.hero.maxHP*35 && w.potions > 0 && x < 0.3:
		return inPotion
	case x < 0.5:
		return inAttack
	case x < 0.62:
		return inSkill
	}
	return inIdle
}

// playerInput is the freeform "player": random, seeded inputs.
func playerInput(r *rand.Rand) byte {
	x := r.IntN(100)
	switch {
	case x < 58:
		return inIdle
	case x < 84:
		return inAttack
	case x < 92:
		return inSkill
	case x < 98:
		return inDodge
	}
	return inPotion
}
