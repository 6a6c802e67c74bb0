package demogame

import (
	"image"
	"image/color"
	"strconv"
	"strings"
)

// The picture: FrameW x FrameH pixels, drawn with the standard library's
// image types and integer arithmetic only, so the same scene gives the
// same bytes on every run and every machine (no GPU, display or font
// files). The camera decides the view: "follow" shows 800 x 450 arena
// units around the hero, "overview" the whole arena.
const (
	FrameW = 640
	FrameH = 360
)

// view maps arena units to pixels.
type view struct{ x0, y0, w, h int }

func (v view) px(x, y int) (int, int) { return (x - v.x0) * FrameW / v.w, (y - v.y0) * FrameH / v.h }
func (v view) len(d int) int          { return max(1, d*FrameW/v.w) }

func cameraView(camera string, x, y int) view {
	if camera == "overview" {
		return view{0, 0, ArenaW, ArenaH}
	}
	const w, h = ArenaW / 2, ArenaH / 2
	return view{min(max(x-w/2, 0), ArenaW-w), min(max(y-h/2, 0), ArenaH-h), w, h}
}

// render draws sc into dst, which must be FrameW x FrameH at (0, 0).
func render(dst *image.RGBA, sc *scene, p *palette) {
	if sc.kind == sceneStress {
		renderStress(dst, sc, p)
		return
	}
	v := cameraView(sc.camera, sc.hero.x, sc.hero.y)
	floor(dst, v, sc, p)
	if sc.kind == sceneRun {
		track(dst, v, sc, p)
	}
	for _, c := range sc.casts {
		if c.spell == "meteor" { // the telegraph: a closing ring where it falls
			x, y := v.px(c.x1, c.y1)
			ring(dst, x, y, v.len(40+120*(1000-c.permil)/1000), max(2, v.len(6)), p.meteor)
		}
	}
	for _, f := range sc.foes {
		body(dst, v, f, p)
	}
	hero(dst, v, sc, p)
	for _, c := range sc.casts {
		if c.spell == "meteor" {
			continue
		}
		x0, y0 := v.px(c.x0, c.y0)
		x1, y1 := v.px(c.x1, c.y1)
		x, y := x0+(x1-x0)*c.permil/1000, y0+(y1-y0)*c.permil/1000
		col := p.bolt
		if c.spell == "fireball" {
			col = p.fire
		}
		line(dst, x0, y0, x, y, 1, col)
		disc(dst, x, y, v.len(10), col)
	}
	for _, f := range sc.foes {
		hpBar(dst, v, f, p)
	}
	if sc.kind == sceneFight && !sc.down {
		hpBar(dst, v, sc.hero, p)
	}
	for _, m := range sc.marks {
		age := sc.simT - m.at
		x, y := v.px(m.x, m.y)
		s := strconv.Itoa(m.dmg)
		k, col := 1, p.text
		if m.crit {
			s, k, col = s+"!", 2, p.crit
		}
		textShadow(dst, x-textWidth(s, k)/2, y-v.len(60)-int(age)/25-glyphH*k, s, k, col, p.shadow)
	}
	hud(dst, sc, p)
}

// floor paints the arena's tiles and its rim (coloured by boss phase).
func floor(dst *image.RGBA, v view, sc *scene, p *palette) {
	fill(dst, dst.Rect, p.void)
	const tile = 100
	for ty := 0; ty < ArenaH; ty += tile {
		for tx := 0; tx < ArenaW; tx += tile {
			c := p.floorA
			if (tx/tile+ty/tile)%2 == 1 {
				c = p.floorB
			}
			x0, y0 := v.px(tx, ty)
			x1, y1 := v.px(tx+tile, ty+tile)
			fill(dst, image.Rect(x0, y0, x1, y1), c)
		}
	}
	x0, y0 := v.px(0, 0)
	x1, y1 := v.px(ArenaW, ArenaH)
	frameRect(dst, image.Rect(x0, y0, x1, y1), v.len(24), p.wall)
	rim := p.phase[min(max(sc.phase, 0), 3)]
	frameRect(dst, image.Rect(x0, y0, x1, y1).Inset(v.len(24)), max(2, v.len(8)), rim)
}

// track paints the speedrun's loop and its checkpoint flags.
func track(dst *image.RGBA, v view, sc *scene, p *palette) {
	th := v.len(44)
	for i := range trackCorners {
		a, b := trackCorners[i], trackCorners[(i+1)%len(trackCorners)]
		ax, ay := v.px(a[0], a[1])
		bx, by := v.px(b[0], b[1])
		fill(dst, image.Rect(min(ax, bx)-th/2, min(ay, by)-th/2, max(ax, bx)+th/2, max(ay, by)+th/2), p.track)
	}
	n := sc.run.checkpoints
	for i := 1; i <= n; i++ {
		x, y := v.px(trackPoint(i * 1000 / n))
		c := p.flagTodo
		switch {
		case i <= sc.run.passed:
			c = p.flagDone
		case i == sc.run.passed+1:
			c = p.flagNext
		}
		fill(dst, image.Rect(x-1, y-v.len(70), x+2, y), p.shadow)
		fill(dst, image.Rect(x+2, y-v.len(70), x+2+v.len(34), y-v.len(46)), c)
		s := strconv.Itoa(i)
		text(dst, x+3, y-v.len(70)+1, s, 1, p.shadow)
	}
}

func radius(kind string) int { return bodies[kind].radius }

// body paints a unit: white while it flashes from a hit.
func body(dst *image.RGBA, v view, s sprite, p *palette) {
	x, y := v.px(s.x, s.y)
	r := v.len(radius(s.kind))
	c := p.units[s.kind]
	if s.flash {
		c = p.flash
	}
	disc(dst, x, y+r/4, r, p.ground)
	disc(dst, x, y, r, c)
	ring(dst, x, y, r, max(1, r/8), p.shadow)
	if s.kind == "golem_king" { // eyes
		e := max(2, r/6)
		disc(dst, x-r/3, y-r/5, e, p.crit)
		disc(dst, x+r/3, y-r/5, e, p.crit)
	}
}

func hero(dst *image.RGBA, v view, sc *scene, p *palette) {
	h := sc.hero
	x, y := v.px(h.x, h.y)
	r := v.len(radius(h.kind))
	switch {
	case sc.down:
		line(dst, x-r, y-r, x+r, y+r, max(2, r/4), p.hpLow)
		line(dst, x-r, y+r, x+r, y-r, max(2, r/4), p.hpLow)
		return
	case sc.run.jumpPermil >= 0:
		j := sc.run.jumpPermil
		lift := v.len(60) * 4 * j * (1000 - j) / 1000000
		disc(dst, x, y+r/3, r*3/4, p.ground)
		h.y -= lift * v.h / FrameH
	}
	if sc.dodging {
		hx, hy := v.px(h.x, h.y)
		ring(dst, hx, hy, r, max(2, r/4), p.units[h.kind]) // a blur: only its outline
	} else {
		body(dst, v, h, p)
	}
	if sc.guarding {
		ring(dst, x, y, r+v.len(14), max(2, v.len(6)), p.shield)
	}
	if sc.run.stumbling {
		textShadow(dst, x-textWidth("!", 2)/2, y-r-28, "!", 2, p.hpLow, p.shadow)
	}
}

// hpBar paints a unit's health over it.
func hpBar(dst *image.RGBA, v view, s sprite, p *palette) {
	if s.maxHP <= 0 {
		return
	}
	x, y := v.px(s.x, s.y)
	r := v.len(radius(s.kind))
	w := max(24, 2*r)
	bar(dst, image.Rect(x-w/2, y-r-10, x+w/2, y-r-6), s.hp, s.maxHP, p.hpBack, hpColor(s.hp, s.maxHP, p))
}

func hpColor(hp, maxHP int, p *palette) color.RGBA {
	switch {
	case hp*2 > maxHP:
		return p.hpGood
	case hp*5 > maxHP:
		return p.hpMid
	}
	return p.hpLow
}

// seconds formats ms of simulation time as "12.35 s".
func seconds(ms int64) string {
	cs := ms / 10
	return strconv.FormatInt(cs/100, 10) + "." + strconv.FormatInt(cs%100/10, 10) + strconv.FormatInt(cs%10, 10) + " s"
}

var heroNames = map[string]string{"knight": "KNIGHT", "rogue": "ROGUE", "mage": "MAGE"}

// hud paints the panels: the hero, the boss or the run, the time, the
// camera, and a banner for the moment (the boss's entrance, a new phase,
// the outcome).
func hud(dst *image.RGBA, sc *scene, p *palette) {
	shade(dst, image.Rect(8, 8, 214, 46), p.panel)
	text(dst, 14, 12, heroNames[sc.hero.kind], 1, p.text)
	if sc.kind == sceneRun {
		split := "SPLIT " + seconds(sc.run.splitMs)
		text(dst, 14, 28, split, 1, p.dim)
	}
	if sc.kind == sceneFight {
		bar(dst, image.Rect(14, 30, 164, 38), sc.hero.hp, sc.hero.maxHP, p.hpBack, hpColor(sc.hero.hp, sc.hero.maxHP, p))
		hp := strconv.Itoa(sc.hero.hp) + "/" + strconv.Itoa(sc.hero.maxHP)
		text(dst, 208-textWidth(hp, 1), 12, hp, 1, p.dim)
		for i := range sc.potions {
			disc(dst, 176+i*12, 34, 4, p.hpLow)
		}
	}
	clock := seconds(sc.simT)
	shade(dst, image.Rect(FrameW-18-textWidth(clock, 1), 8, FrameW-8, 28), p.panel)
	text(dst, FrameW-13-textWidth(clock, 1), 12, clock, 1, p.text)
	cam := "camera " + sc.camera
	text(dst, 10, FrameH-20, cam, 1, p.dim)
	text(dst, FrameW-10-textWidth("DEMO ARENA", 1), FrameH-20, "DEMO ARENA", 1, p.dim)

	var banner string
	switch sc.kind {
	case sceneFight:
		switch {
		case sc.bossMax > 0:
			shade(dst, image.Rect(224, 8, 416, 46), p.panel)
			label := "GOLEM KING  PHASE " + strconv.Itoa(sc.phase)
			text(dst, 320-textWidth(label, 1)/2, 12, label, 1, p.text)
			bar(dst, image.Rect(232, 30, 408, 38), sc.bossHP, sc.bossMax, p.hpBack, p.phase[min(max(sc.phase, 0), 3)])
		case sc.wave > 0:
			label := "WAVE " + strconv.Itoa(sc.wave) + "  FOES " + strconv.Itoa(len(sc.foes))
			shade(dst, image.Rect(224, 8, 416, 28), p.panel)
			text(dst, 320-textWidth(label, 1)/2, 12, label, 1, p.text)
		}
		switch {
		case sc.outcome != "":
			banner = map[string]string{"victory": "VICTORY", "defeat": "DEFEAT", "timeout": "TIME UP"}[sc.outcome]
		case sc.intro:
			banner = "THE GOLEM KING"
		case sc.phase >= 2 && sc.phaseAge < 1500:
			banner = "PHASE " + strconv.Itoa(sc.phase)
			if sc.phase == 3 {
				banner += " - ENRAGED"
			}
		case sc.down:
			banner = "DOWN"
		}
	case sceneRun:
		r := sc.run
		label := "CHECKPOINT " + strconv.Itoa(r.passed) + "/" + strconv.Itoa(r.checkpoints) + "  " + strings.ToUpper(r.route)
		shade(dst, image.Rect(224, 8, 416, 28), p.panel)
		text(dst, 320-textWidth(label, 1)/2, 12, label, 1, p.text)
		if r.finished {
			banner = "FINISH " + seconds(r.splitMs)
		}
	}
	if banner != "" {
		shade(dst, image.Rect(0, 150, FrameW, 206), p.band)
		textShadow(dst, FrameW/2-textWidth(banner, 3)/2, 159, banner, 3, p.crit, p.shadow)
	}
}

// renderStress is the stress scenario's picture: cheap on purpose (a
// flat floor, a progress bar, a counter), for its benchmark.
func renderStress(dst *image.RGBA, sc *scene, p *palette) {
	fill(dst, dst.Rect, p.floorA)
	s := sc.stress
	bar(dst, image.Rect(40, 200, FrameW-40, 224), s.done, s.total, p.hpBack, p.stress)
	label := "STRESS " + strconv.Itoa(s.done) + " / " + strconv.Itoa(s.total)
	textShadow(dst, FrameW/2-textWidth(label, 2)/2, 150, label, 2, p.text, p.shadow)
	text(dst, 10, FrameH-20, "camera "+sc.camera, 1, p.dim)
}
