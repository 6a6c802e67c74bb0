package demogame

import "math"

// Where things are: the arena is ArenaW x ArenaH units. Positions, hit
// flashes and damage numbers are for the picture only: the rules never
// read them, so events are the same with or without frames. They move by
// integer steps, without the generator, so the same state has the same
// picture on every machine.
const (
	ArenaW = 1600
	ArenaH = 900

	heroHomeX, heroHomeY   = 420, 450
	bossSpawnX, bossSpawnY = 1180, 450
	arenaMargin            = 50

	flashMs  = 150 // a unit shows white this long after a hit
	markMs   = 700 // a damage number floats this long
	maxMarks = 12
)

// spawnPoints are where adds enter, by spawn number.
var spawnPoints = [][2]int{{1500, 150}, {1500, 750}, {820, 90}, {820, 810}, {120, 160}, {120, 740}}

// approach are unit vectors (x1000) around the hero: foe i closes in from
// approach[i%8], so foes do not stack.
var approach = [][2]int{{1000, 0}, {707, -707}, {707, 707}, {0, -1000}, {0, 1000}, {-707, -707}, {-707, 707}, {-1000, 0}}

// Unit sizes and speeds (units, units per tick).
var bodies = map[string]struct{ radius, speed, reach int }{
	"knight":     {24, 14, 70},
	"rogue":      {22, 16, 60},
	"mage":       {22, 12, 380},
	"golem_king": {64, 6, 110},
	"skeleton":   {20, 10, 60},
	"slime":      {18, 8, 55},
	"ogre":       {38, 6, 80},
}

// notableEvents get a frame of their own (a frame with that reason).
var notableEvents = map[string]bool{
	"BOSS_INTRO": true, "BOSS_PHASE": true, "BOSS_DEFEATED": true, "PLAYER_DOWN": true,
	"ENCOUNTER_TIMEOUT": true, "WAVE_START": true, "WAVE_CLEARED": true, "RESPAWN": true,
}

// hitMark is a damage number shown where a hit landed.
type hitMark struct {
	x, y, dmg int
	crit      bool
	at        int64
}

// hit records a hit for the picture.
func (w *world) hit(u *unit, dmg int, crit bool) {
	u.flashAt = w.simT
	if len(w.marks) == maxMarks {
		w.marks = append(w.marks[:0], w.marks[1:]...)
	}
	w.marks = append(w.marks, hitMark{x: u.x, y: u.y, dmg: dmg, crit: crit, at: w.simT})
}

// ringDirs are 8 directions (x1000) around a circle; orbit interpolates
// them for an angle of 0 to 7999.
var ringDirs = [][2]int{{1000, 0}, {707, 707}, {0, 1000}, {-707, 707}, {-1000, 0}, {-707, -707}, {0, -1000}, {707, -707}}

func orbit(angle int) (int, int) {
	angle = (angle%8000 + 8000) % 8000
	a, b := ringDirs[angle/1000], ringDirs[(angle/1000+1)%8]
	f := angle % 1000
	return (a[0]*(1000-f) + b[0]*f) / 1000, (a[1]*(1000-f) + b[1]*f) / 1000
}

const (
	orbitStep  = 30  // angle per tick: a lap in 13 s
	mageOrbit  = 340 // the mage circles the fight this far out
	arenaMidX  = ArenaW / 2
	arenaMidY  = ArenaH / 2
	bossHomeX  = 900
	heroStartA = 4000 // the hero starts left of the fight
)

// move advances positions by one tick. The boss holds the middle of the
// arena; adds close in on the hero from their own sides; the knight and
// the rogue walk to their target and circle the boss within reach; the
// mage circles the fight from afar; a dodge rolls the hero aside.
func (w *world) move() {
	keep := w.marks[:0]
	for _, m := range w.marks {
		if w.simT-m.at < markMs {
			keep = append(keep, m)
		}
	}
	w.marks = keep

	h := &w.hero
	w.orbitA += orbitStep
	if w.agent {
		if w.downUntil == 0 {
			w.agentStep(h)
		}
	} else if w.downUntil == 0 {
		b := bodies[h.kind]
		tx, ty := heroHomeX, heroHomeY
		t := w.target()
		boss := w.foe("boss")
		switch {
		case t == nil:
		case h.kind == "mage":
			ax, ay := arenaMidX, arenaMidY
			if boss != nil {
				ax, ay = boss.x, boss.y
			}
			ox, oy := orbit(w.orbitA)
			tx, ty = ax+ox*mageOrbit/1000, ay+oy*mageOrbit/1000
		case t == boss:
			ox, oy := orbit(w.orbitA)
			d := b.reach + bodies[t.kind].radius
			tx, ty = t.x+ox*d/1000, t.y+oy*d/1000
		default:
			tx, ty = h.x, h.y
			if d := b.reach + bodies[t.kind].radius; isqrt(sq(t.x-h.x)+sq(t.y-h.y)) > d {
				tx, ty = along(t.x, t.y, h.x, h.y, d)
			}
		}
		if w.simT < w.dodgeUntil {
			// Roll sideways, to the left or right by the dodge's number.
			dx, dy := tx-h.x, ty-h.y
			if dx == 0 && dy == 0 {
				dx = 1
			}
			if (w.dodgeUntil/400)%2 == 0 {
				dx, dy = -dy, dx
			} else {
				dx, dy = dy, -dx
			}
			n := max(isqrt(dx*dx+dy*dy), 1)
			stepToward(h, h.x+dx*100/n, h.y+dy*100/n, 2*b.speed)
		} else {
			stepToward(h, tx, ty, b.speed)
		}
	}
	for i, f := range w.foes {
		b := bodies[f.kind]
		if f.id == "boss" {
			stepToward(f, bossHomeX, arenaMidY, b.speed)
			continue
		}
		a := approach[i%len(approach)]
		d := b.reach + bodies[h.kind].radius
		stepToward(f, h.x+a[0]*d/1000, h.y+a[1]*d/1000, b.speed)
	}
}

func sq(v int) int { return v * v }

// along returns the point at distance d from (x0, y0) toward (x1, y1).
func along(x0, y0, x1, y1, d int) (int, int) {
	dx, dy := x1-x0, y1-y0
	n := isqrt(dx*dx + dy*dy)
	if n == 0 {
		return x0 + d, y0
	}
	return x0 + dx*d/n, y0 + dy*d/n
}

// stepToward moves u at most speed units toward (x, y), inside the arena.
func stepToward(u *unit, x, y, speed int) {
	x = min(max(x, arenaMargin), ArenaW-arenaMargin)
	y = min(max(y, arenaMargin), ArenaH-arenaMargin)
	dx, dy := x-u.x, y-u.y
	n := isqrt(dx*dx + dy*dy)
	if n <= speed {
		u.x, u.y = x, y
		return
	}
	u.x += dx * speed / n
	u.y += dy * speed / n
}

// isqrt is the integer square root (math.Sqrt is exact for these sizes).
func isqrt(v int) int {
	if v <= 0 {
		return 0
	}
	r := int(math.Sqrt(float64(v)))
	for r*r > v {
		r--
	}
	for (r+1)*(r+1) <= v {
		r++
	}
	return r
}
