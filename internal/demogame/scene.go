package demogame

import "slices"

// A scene is what one picture shows: a copy of the drawable state at one
// simulation time, so that it can be drawn off the game loop. Nothing in
// it depends on the presentation's time scale.
type scene struct {
	kind   sceneKind
	simT   int64
	camera string

	hero                    sprite
	dodging, guarding, down bool
	potions                 int
	foes                    []sprite
	casts                   []castLine
	marks                   []hitMark

	phase    int   // boss phase, 0 before the boss
	phaseAge int64 // ms since the phase began
	bossHP   int
	bossMax  int
	intro    bool
	wave     int
	outcome  string

	run    runState
	stress stressState
}

type sceneKind int

const (
	sceneFight  sceneKind = iota // boss_intro, recordings and replays
	sceneRun                     // speedrun
	sceneStress                  // stress
)

type sprite struct {
	kind      string
	x, y      int
	hp, maxHP int
	flash     bool
}

// castLine is a spell on its way: from its caster to its target, done
// permille of its cast.
type castLine struct {
	spell                  string
	x0, y0, x1, y1, permil int
}

type runState struct {
	route               string
	checkpoints, passed int
	loopPermil          int // the hero's way around the track, 0 to 1000 per lap
	jumpPermil          int // -1 unless jumping
	stumbling, finished bool
	splitMs             int64
}

type stressState struct{ done, total int }

func spriteOf(u *unit, simT int64) sprite {
	return sprite{kind: u.kind, x: u.x, y: u.y, hp: u.hp, maxHP: u.maxHP, flash: u.flashAt >= 0 && simT-u.flashAt < flashMs}
}

// scene is the world after its last tick (at simT - TickMs).
func (w *world) scene(camera string) *scene {
	t := w.simT - TickMs
	sc := &scene{
		kind: sceneFight, simT: t, camera: camera,
		hero:    spriteOf(&w.hero, t),
		dodging: t < w.dodgeUntil, guarding: t < w.guardUntil, down: w.downUntil > 0,
		potions: w.potions, phase: w.phase, phaseAge: t - w.phaseAt,
		intro: w.mode == modeBoss && t >= bossIntroAt && t < bossSpawnAt,
		wave:  w.wave, outcome: w.outcome,
		marks: slices.Clone(w.marks),
	}
	for _, f := range w.foes {
		sc.foes = append(sc.foes, spriteOf(f, t))
		if f.id == "boss" {
			sc.bossHP, sc.bossMax = f.hp, f.maxHP
		}
	}
	for _, p := range w.pending {
		from, to := w.where(p.actor), w.where(p.target)
		if from == nil || to == nil || p.at <= p.castAt {
			continue
		}
		sc.casts = append(sc.casts, castLine{spell: p.spell, x0: from.x, y0: from.y, x1: to.x, y1: to.y,
			permil: int(min(1000, max(0, (t-p.castAt)*1000/(p.at-p.castAt))))})
	}
	return sc
}

func (w *world) where(id string) *unit {
	if id == "hero" {
		return &w.hero
	}
	return w.foe(id)
}

// takeNotable returns the tick's notable event name and clears it.
func (w *world) takeNotable() string {
	n := w.notable
	w.notable = ""
	return n
}

// The speedrun's track: a loop of four straights around the arena.
var trackCorners = [][2]int{{260, 720}, {260, 190}, {1340, 190}, {1340, 720}}

// trackPoint is the point permil of a lap around the track.
func trackPoint(permil int) (int, int) {
	lens := make([]int, len(trackCorners))
	total := 0
	for i := range trackCorners {
		a, b := trackCorners[i], trackCorners[(i+1)%len(trackCorners)]
		lens[i] = abs(b[0]-a[0]) + abs(b[1]-a[1])
		total += lens[i]
	}
	d := ((permil%1000 + 1000) % 1000) * total / 1000
	for i, l := range lens {
		if d <= l {
			a, b := trackCorners[i], trackCorners[(i+1)%len(trackCorners)]
			return a[0] + (b[0]-a[0])*d/max(l, 1), a[1] + (b[1]-a[1])*d/max(l, 1)
		}
		d -= l
	}
	return trackCorners[0][0], trackCorners[0][1]
}

// segment is one leg of a speedrun, between two checkpoints.
type segment struct {
	start, run, jumpAt, stumbleAt, lost int64 // jumpAt, stumbleAt: -1 for none
}

func (s segment) end() int64 { return s.start + s.run + s.lost }

// runScene is the speedrun at simT.
func runScene(simT int64, route, hero, camera string, segs []segment) *scene {
	n := len(segs)
	st := runState{route: route, checkpoints: n, jumpPermil: -1}
	progress := 1000 * n // permille of a checkpoint, summed
	for i, s := range segs {
		if simT >= s.end() {
			st.passed = i + 1
			st.splitMs = s.end()
			continue
		}
		el := simT - s.start
		moving := el
		if s.stumbleAt >= 0 && el > s.stumbleAt {
			moving = s.stumbleAt + max(0, el-s.stumbleAt-s.lost)
			st.stumbling = el < s.stumbleAt+s.lost
		}
		if s.jumpAt >= 0 && el >= s.jumpAt && el < s.jumpAt+600 {
			st.jumpPermil = int((el - s.jumpAt) * 1000 / 600)
		}
		progress = 1000*i + int(min(moving, s.run)*1000/s.run)
		break
	}
	st.finished = st.passed == n
	st.loopPermil = progress / max(n, 1)
	x, y := trackPoint(st.loopPermil)
	return &scene{kind: sceneRun, simT: simT, camera: camera, run: st,
		hero: sprite{kind: hero, x: x, y: y, hp: 1, maxHP: 1, flash: st.stumbling}}
}
