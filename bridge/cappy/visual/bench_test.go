//go:build unix

package visual

import (
	"bytes"
	"context"
	"fmt"
	"image/jpeg"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/crosscode/crosscode-mcp/internal/cputime"
	"github.com/crosscode/crosscode-mcp/internal/testing/sysdeps"
)

// benchFrames writes n textured arena frames of w×h as JPEGs (quality 85)
// and returns their paths.
func benchFrames(b *testing.B, n, w, h int) []string {
	return benchFramesOf(b, n, w, h, true)
}

// benchFramesOf writes n arena frames, textured (a noisy floor, like real
// games: heavy for entropy decoding) or flat (like the demo game).
func benchFramesOf(b *testing.B, n, w, h int, textured bool) []string {
	b.Helper()
	dir := b.TempDir()
	paths := make([]string, n)
	for i := range paths {
		s := arena(w, h)
		s.noise = textured
		s.heroX = 100 + i*37%1000
		paths[i] = writeJPEG(b, dir, fmt.Sprintf("f%04d.jpg", i), s.render(), 85)
	}
	return paths
}

// cpuTime returns the CPU time used by this process and its waited-for
// children (ffmpeg).
func cpuTime() time.Duration { return cputime.WithChildren() }

// loop runs f b.N times and reports, beside the wall time, the CPU time
// per operation: on a shared machine wall time depends on the load, CPU
// time much less.
func loop(b *testing.B, f func()) {
	start := cpuTime()
	for b.Loop() {
		f()
	}
	b.ReportMetric(float64(cpuTime()-start)/float64(b.N)/1e6, "cpu-ms/op")
}

// decodeAll is a floor: the bare image/jpeg decode of each file.
func decodeAll(b *testing.B, paths []string) {
	for _, p := range paths {
		data, _ := os.ReadFile(p)
		if _, err := jpeg.Decode(bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
	}
}

var benchSizes = [][2]int{{1280, 720}, {640, 360}}

// BenchmarkAgentJPEG: one image for the agent (at most 640 wide); floor: a
// bare image/jpeg decode and encode of the same frame.
func BenchmarkAgentJPEG(b *testing.B) {
	for _, sz := range benchSizes {
		p := benchFrames(b, 1, sz[0], sz[1])[0]
		b.Run(fmt.Sprintf("%dx%d", sz[0], sz[1]), func(b *testing.B) {
			loop(b, func() {
				if _, _, _, err := AgentJPEG(p, 0, 0); err != nil {
					b.Fatal(err)
				}
			})
		})
		b.Run(fmt.Sprintf("floor-decode-encode-%dx%d", sz[0], sz[1]), func(b *testing.B) {
			loop(b, func() {
				data, _ := os.ReadFile(p)
				img, err := jpeg.Decode(bytes.NewReader(data))
				if err != nil {
					b.Fatal(err)
				}
				jpeg.Encode(&bytes.Buffer{}, img, &jpeg.Options{Quality: DefaultQuality})
			})
		})
	}
}

// BenchmarkGetCaptureImages: what get_capture asks of this package, a
// contact sheet of 24 frames and 8 agent images, and each part; floor: the
// bare image/jpeg decode of the same 32 frames.
func BenchmarkGetCaptureImages(b *testing.B) {
	for _, kind := range []string{"textured", "flat"} {
		for _, sz := range benchSizes {
			benchGetCapture(b, kind, sz[0], sz[1])
		}
	}
}

func benchGetCapture(b *testing.B, kind string, w, h int) {
	{
		paths := benchFramesOf(b, 32, w, h, kind == "textured")
		items := make([]SheetItem, 24)
		for i := range items {
			items[i] = SheetItem{Path: paths[i], Label: []string{fmt.Sprintf("%.1f s", float64(i)*25), "BOSS_PHASE"}}
		}
		name := fmt.Sprintf("%s-%dx%d", kind, w, h)
		b.Run("sheet24+agent8-"+name, func(b *testing.B) {
			loop(b, func() {
				if _, _, _, err := ContactSheet(items, nil); err != nil {
					b.Fatal(err)
				}
				for _, img := range AgentJPEGs(paths[24:], 0, 0) {
					if img.Err != nil {
						b.Fatal(img.Err)
					}
				}
			})
		})
		b.Run("sheet24-"+name, func(b *testing.B) {
			loop(b, func() {
				if _, _, _, err := ContactSheet(items, nil); err != nil {
					b.Fatal(err)
				}
			})
		})
		b.Run("floor-decode32-"+name, func(b *testing.B) {
			loop(b, func() { decodeAll(b, paths) })
		})
	}
}

// BenchmarkSignatureDiff: the signatures of two frames and their Diff;
// floor: the bare image/jpeg decode of the two frames.
func BenchmarkSignatureDiff(b *testing.B) {
	for _, sz := range benchSizes {
		paths := benchFrames(b, 2, sz[0], sz[1])
		b.Run(fmt.Sprintf("%dx%d", sz[0], sz[1]), func(b *testing.B) {
			loop(b, func() {
				sa, err := SignatureOf(paths[0])
				if err != nil {
					b.Fatal(err)
				}
				sb, err := SignatureOf(paths[1])
				if err != nil {
					b.Fatal(err)
				}
				Diff(sa, sb)
			})
		})
		b.Run(fmt.Sprintf("floor-decode2-%dx%d", sz[0], sz[1]), func(b *testing.B) {
			loop(b, func() { decodeAll(b, paths) })
		})
	}
}

// BenchmarkMakeMP4: a 30 s capture, 300 frames of 640x360 at 10 fps, to an
// MP4; floor: ffmpeg encoding the same frames from a plain image2 sequence
// with the same codec settings.
func BenchmarkMakeMP4(b *testing.B) {
	ffmpeg := sysdeps.Need(b, "ffmpeg")
	paths := benchFrames(b, 300, 640, 360)
	frames := make([]Frame, len(paths))
	for i, p := range paths {
		frames[i] = Frame{T: float64(i * 100), Path: p, Mime: MimeJPEG, Width: 640, Height: 360}
	}
	out := filepath.Join(b.TempDir(), "v.mp4")
	b.Run("300x640x360", func(b *testing.B) {
		loop(b, func() {
			if _, err := MakeMP4(context.Background(), frames, 30000, out, &VideoOptions{FFmpeg: ffmpeg}); err != nil {
				b.Fatal(err)
			}
		})
	})
	b.Run("floor-ffmpeg-image2", func(b *testing.B) {
		loop(b, func() {
			cmd := exec.Command(ffmpeg, "-nostdin", "-loglevel", "error", "-y", "-framerate", "10",
				"-i", filepath.Join(filepath.Dir(paths[0]), "f%04d.jpg"),
				"-vf", "format=yuv420p", "-c:v", "libx264", "-preset", DefaultPreset, "-crf", "23", out)
			if o, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("%v: %s", err, o)
			}
		})
	})
}
