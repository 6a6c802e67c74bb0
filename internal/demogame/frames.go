package demogame

import (
	"errors"
	"image"

	"github.com/crosscode/crosscode-mcp/adapters/go/cappy"
)

// Frames. Demo Arena advertises protocol.CapFrames and, when the
// controller asks, draws its arena (render.go) at the asked rate on the
// operation's presented clock: simT / timeScale, like its events. A frame
// shows the world after the tick of its simulation time, so a replay at
// timeScale 0.5 (twice the frames per simulated second) draws the very
// same pixels as its recording at every simulation time both have. It also
// sends a frame, with the event's name as reason, at notable events
// (BOSS_PHASE, BOSS_DEFEATED, PLAYER_DOWN, CHECKPOINT, ...), within the
// adapter's allowance for extras.
//
// Scenarios and replays run faster than real time, so they wait for the
// encoder and every due frame exists; a recording runs in real time and
// stress is a benchmark, so those drop the frames the encoder has no time
// for. Pictures are drawn on the adapter's worker, from a copy of the
// state taken on the loop.

// SetPalette sets the palette of the pictures of the operations that
// start from now on (Palettes; "" is the default): a test knob that
// changes every picture and nothing else (events, replays and summaries
// stay the same), for tests of visual divergence.
func (g *Game) SetPalette(name string) error {
	p, err := paletteNamed(name)
	if err != nil {
		return err
	}
	g.palette.Store(p)
	return nil
}

// SetFlashes sets stretches of simulation time ([from, to] ms, inclusive)
// whose pictures are drawn with the night palette, in the operations that
// start from now on: a test knob that plants differences in some pictures
// only, for tests that a replay's every differing span is reported.
func (g *Game) SetFlashes(spans [][2]int64) {
	g.flashes.Store(&spans)
}

func (g *Game) flashSpans() [][2]int64 {
	if f := g.flashes.Load(); f != nil {
		return *f
	}
	return nil
}

func (g *Game) pal() *palette {
	if p := g.palette.Load(); p != nil {
		return p
	}
	return classic
}

// pictures hands one operation's frames; nil when none were asked.
type pictures struct {
	op     *cappy.Op
	ts     float64
	camera string
	pal    *palette
	flash  [][2]int64 // simulation times drawn with the night palette
	wait   bool
	buf    *image.RGBA // reused: the adapter calls one renderer at a time
}

func (g *Game) pictures(op *cappy.Op, pr presentation, wait bool) *pictures {
	if op.Frames() == nil {
		return nil
	}
	return &pictures{op: op, ts: pr.timeScale, camera: pr.camera, pal: g.pal(), flash: g.flashSpans(), wait: wait}
}

// at hands the scene at simT when a frame is due then, or when reason
// names a notable event; snap is called only then.
func (p *pictures) at(simT int64, reason string, snap func() *scene) error {
	if p == nil {
		return nil
	}
	t := float64(simT) / p.ts
	if !p.op.FrameDue(t) && reason == "" {
		return nil
	}
	return p.send(t, reason, snap())
}

// send hands sc as the frame at presented time t.
func (p *pictures) send(t float64, reason string, sc *scene) error {
	err := p.op.SendFrameFunc(t, func() image.Image { return p.draw(sc) }, &cappy.FrameOptions{Reason: reason, Wait: p.wait})
	if errors.Is(err, cappy.ErrFrameDropped) {
		return nil // counted in the frame stats
	}
	return err
}

func (p *pictures) draw(sc *scene) image.Image {
	if p.buf == nil {
		p.buf = image.NewRGBA(image.Rect(0, 0, FrameW, FrameH))
	}
	pal := p.pal
	for _, f := range p.flash {
		if sc.simT >= f[0] && sc.simT <= f[1] {
			pal = night
		}
	}
	render(p.buf, sc, pal)
	return p.buf
}

// show hands the frame of the tick just stepped, if one is due or the
// tick had a notable event. A frame error ends the run like an event's.
func (w *world) show(p *pictures, camera string) {
	reason := w.takeNotable()
	if p == nil || w.err != nil || w.ticks == 0 {
		return
	}
	if err := p.at(w.simT-TickMs, reason, func() *scene { return w.scene(camera) }); err != nil {
		w.err = err
	}
}
