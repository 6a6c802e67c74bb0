package demogame

import (
	"bytes"
	"image"

	"github.com/crosscode/crosscode-mcp/internal/jpegfork"
)

// Floors of the agent-play benchmarks (play_bench_test.go), exported to
// the external tests.

// SimulateAlone runs ms of the agent's fight (the knight holding attack,
// no frames, events to a sink that drops them) from a world already
// stepped warm ticks, and returns the events it made.
func SimulateAlone(warm, ms int) int {
	w := newWorld(7, modeBoss, AgentHero, AgentDifficulty, func(int64, string, int64, map[string]any) error { return nil })
	w.agent = true
	for range warm {
		w.step(inAttack)
	}
	before := w.events
	for t := 0; t < ms && !w.over; t += TickMs {
		w.step(inAttack)
	}
	return w.events - before
}

// EncodeFrame draws the fight's picture and encodes it as the Go adapter
// library does (640x360 JPEG, quality 80, its JPEG encoder): one frame's
// encode.
// The picture is the agent's fight after warm ticks (0: as it starts).
func EncodeFrame(warm int) func() int {
	w := quietWorld(7, AgentHero)
	w.agent = true
	for range warm {
		w.step(inAttack)
	}
	sc := w.pausedScene("follow")
	m := image.NewRGBA(image.Rect(0, 0, FrameW, FrameH))
	var buf bytes.Buffer
	return func() int {
		render(m, sc, classic)
		buf.Reset()
		jpegfork.Encode(&buf, m, &jpegfork.Options{Quality: 80})
		return buf.Len()
	}
}
