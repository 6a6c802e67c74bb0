package demogame

import (
	"bytes"
	"image"
	"image/color"
	"math/rand/v2"
	"testing"
)

func quietWorld(seed uint64, hero string) *world {
	return newWorld(seed, modeBoss, hero, 2, func(int64, string, int64, map[string]any) error { return nil })
}

// fight steps a boss fight with the scenario's AI and returns the scenes
// after the given ticks.
func fight(seed uint64, hero, camera string, at ...int) map[int]*scene {
	w := quietWorld(seed, hero)
	ai := rand.New(rand.NewPCG(seed+1, seed^0x5851f42d4c957f2d))
	out := map[int]*scene{}
	for !w.over && len(out) < len(at) {
		w.step(w.aiInput(ai))
		for _, a := range at {
			if w.ticks == a {
				out[a] = w.scene(camera)
			}
		}
	}
	return out
}

func draw(sc *scene, p *palette) *image.RGBA {
	m := image.NewRGBA(image.Rect(0, 0, FrameW, FrameH))
	for i := range m.Pix { // what was there before must not show
		m.Pix[i] = byte(i * 7)
	}
	render(m, sc, p)
	return m
}

func TestRenderIsDeterministic(t *testing.T) {
	ticks := []int{1, 20, 60, 200, 400}
	a := fight(7, "mage", "follow", ticks...)
	b := fight(7, "mage", "follow", ticks...)
	if len(a) != len(ticks) {
		t.Fatalf("the fight ended before tick %d", ticks[len(ticks)-1])
	}
	for _, k := range ticks {
		if !bytes.Equal(draw(a[k], classic).Pix, draw(b[k], classic).Pix) {
			t.Fatalf("tick %d: two runs of the same fight draw different pixels", k)
		}
		if !bytes.Equal(draw(a[k], classic).Pix, draw(a[k], classic).Pix) {
			t.Fatalf("tick %d: the same scene drawn twice differs", k)
		}
	}
}

// count counts the pixels of colour c in r.
func count(m *image.RGBA, r image.Rectangle, c color.RGBA) int {
	n := 0
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			if m.RGBAAt(x, y) == c {
				n++
			}
		}
	}
	return n
}

func TestThePictureFollowsTheFight(t *testing.T) {
	const early, late = 80, 400 // the boss is in at tick 50
	f := fight(3, "knight", "follow", early, late)
	o := fight(3, "knight", "overview", early, late)
	if len(f) != 2 {
		t.Fatal("the fight ended too soon")
	}
	fe, fl, oe := draw(f[early], classic), draw(f[late], classic), draw(o[early], classic)
	if bytes.Equal(fe.Pix, oe.Pix) {
		t.Fatal("the follow and overview cameras draw the same picture")
	}
	if bytes.Equal(fe.Pix, fl.Pix) {
		t.Fatal("the picture does not change as the fight goes on")
	}
	if f[early].hero.x == f[late].hero.x && f[early].hero.y == f[late].hero.y {
		t.Fatal("the hero did not move")
	}
	// The boss's bar (top centre) shrinks with its HP.
	bossBar := image.Rect(232, 30, 408, 38)
	col := classic.phase[f[late].phase]
	if f[late].bossHP >= f[early].bossHP {
		t.Fatalf("boss HP %d then %d", f[early].bossHP, f[late].bossHP)
	}
	ce := count(fe, bossBar, classic.phase[f[early].phase])
	cl := count(fl, bossBar, col)
	if cl >= ce || cl == 0 {
		t.Fatalf("boss bar %d px at HP %d, %d px at HP %d", ce, f[early].bossHP, cl, f[late].bossHP)
	}
	// The overview shows the whole arena: its four corners are wall.
	for _, p := range []image.Point{{2, 2}, {FrameW - 3, FrameH - 3}} {
		if oe.RGBAAt(p.X, p.Y) != classic.wall {
			t.Fatalf("overview pixel %v is %v, not the arena's wall", p, oe.RGBAAt(p.X, p.Y))
		}
	}
	// The palette changes the picture (the test knob).
	if bytes.Equal(fe.Pix, draw(f[early], night).Pix) {
		t.Fatal("the night palette draws the same picture")
	}
}

func TestRunAndStressPictures(t *testing.T) {
	segs := []segment{{0, 3000, 1000, 2000, 500}, {3500, 3000, -1, -1, 0}}
	start, jump, end := runScene(0, "short", "rogue", "follow", segs), runScene(1200, "short", "rogue", "follow", segs), runScene(6500, "short", "rogue", "follow", segs)
	if jump.run.jumpPermil < 0 || end.run.passed != 2 || !end.run.finished || start.run.passed != 0 {
		t.Fatalf("run states %+v %+v %+v", start.run, jump.run, end.run)
	}
	if stumble := runScene(2200, "short", "rogue", "follow", segs); !stumble.run.stumbling || stumble.hero.x != runScene(2400, "short", "rogue", "follow", segs).hero.x {
		t.Fatal("the hero runs on while stumbling")
	}
	if bytes.Equal(draw(start, classic).Pix, draw(jump, classic).Pix) {
		t.Fatal("the run's picture does not change")
	}
	a := draw(&scene{kind: sceneStress, stress: stressState{1, 100}}, classic)
	b := draw(&scene{kind: sceneStress, stress: stressState{90, 100}}, classic)
	if bytes.Equal(a.Pix, b.Pix) {
		t.Fatal("the stress picture does not show progress")
	}
}
