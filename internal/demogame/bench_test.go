package demogame

import (
	"bytes"
	"image"
	"image/jpeg"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/crosscode/crosscode-mcp/internal/cputime"
)

// ProcessCPU is the user and system CPU time this process has used, for
// benchmarks on a shared machine (exported to the external tests).
var ProcessCPU = processCPU

func processCPU() time.Duration { return cputime.Self() }

// cpuPerOp reports the process's CPU time per iteration of a b.Loop.
func cpuPerOp(b *testing.B, since time.Duration) {
	b.ReportMetric(float64((processCPU()-since).Microseconds())/1000/float64(b.N), "cpu-ms/op")
}

// BenchmarkFrame: drawing one 640x360 picture of a boss fight and
// encoding it as the adapter does (JPEG, quality 80), beside the floor of
// encoding a flat picture of the same size.
func BenchmarkFrame(b *testing.B) {
	w := quietWorld(3, "knight")
	ai := rand.New(rand.NewPCG(4, 5))
	for range 400 {
		w.step(w.aiInput(ai))
	}
	sc := w.scene("follow")
	m := image.NewRGBA(image.Rect(0, 0, FrameW, FrameH))
	var buf bytes.Buffer
	b.Run("render", func(b *testing.B) {
		cpu := processCPU()
		for b.Loop() {
			render(m, sc, classic)
		}
		cpuPerOp(b, cpu)
	})
	b.Run("render+jpeg", func(b *testing.B) {
		cpu := processCPU()
		for b.Loop() {
			render(m, sc, classic)
			buf.Reset()
			jpeg.Encode(&buf, m, &jpeg.Options{Quality: 80})
		}
		cpuPerOp(b, cpu)
		b.ReportMetric(float64(buf.Len()), "bytes/frame")
	})
	b.Run("floor-flat-jpeg", func(b *testing.B) {
		flat := image.NewRGBA(image.Rect(0, 0, FrameW, FrameH))
		fill(flat, flat.Rect, classic.floorA)
		cpu := processCPU()
		for b.Loop() {
			buf.Reset()
			jpeg.Encode(&buf, flat, &jpeg.Options{Quality: 80})
		}
		cpuPerOp(b, cpu)
		b.ReportMetric(float64(buf.Len()), "bytes/frame")
	})
}
