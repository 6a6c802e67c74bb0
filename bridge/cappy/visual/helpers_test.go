package visual

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/jpeg"
	"image/png"
	"os"
	"path/filepath"
	"testing"
)

// scene is a synthetic game frame: a floor with a tiled pattern and a
// vignette, a hero and a boss sprite, and HP bars, in the style of the demo
// game's arena.
type scene struct {
	w, h         int
	floor        color.RGBA // the floor's colour (a large area)
	heroX, heroY int        // the hero's top-left corner, in 1280x720 units
	seed         int        // other content entirely
	noise        bool       // a textured floor (harder to compress, like real games)
}

// arena is the default scene.
func arena(w, h int) scene {
	return scene{w: w, h: h, floor: color.RGBA{40, 70, 50, 255}, heroX: 300, heroY: 400}
}

func (s scene) render() *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, s.w, s.h))
	sx := func(v int) int { return v * s.w / 1280 }
	sy := func(v int) int { return v * s.h / 720 }
	fill := func(x0, y0, x1, y1 int, c color.RGBA) {
		draw.Draw(img, image.Rect(sx(x0), sy(y0), sx(x1), sy(y1)), image.NewUniform(c), image.Point{}, draw.Src)
	}
	if s.seed != 0 {
		// Another picture: diagonal stripes of bright colours.
		for y := 0; y < s.h; y++ {
			for x := 0; x < s.w; x++ {
				v := uint8(((x + y + s.seed*37) / 24 % 2) * 200)
				i := y*img.Stride + 4*x
				img.Pix[i], img.Pix[i+1], img.Pix[i+2], img.Pix[i+3] = v, 255-v, uint8(x*255/s.w), 255
			}
		}
		return img
	}
	// The floor, row by row (pixels written directly: tests render many).
	row := make([]uint8, 4*s.w)
	for y := 0; y < s.h; y++ {
		for x := 0; x < s.w; x++ {
			c := s.floor
			if (x*1280/s.w/64+y*720/s.h/64)%2 == 0 { // floor tiles
				c.R, c.G, c.B = c.R+12, c.G+12, c.B+12
			}
			if s.noise {
				n := uint8((uint32(x)*2654435761 ^ uint32(y)*40503) >> 28) // 0..15
				c.R, c.G, c.B = c.R+n, c.G+n/2, c.B+n
			}
			row[4*x], row[4*x+1], row[4*x+2], row[4*x+3] = c.R, c.G, c.B, 255
		}
		copy(img.Pix[y*img.Stride:], row)
	}
	fill(0, 0, 1280, 60, color.RGBA{20, 20, 30, 255})                              // HUD bar
	fill(20, 20, 420, 40, color.RGBA{200, 40, 40, 255})                            // hero HP
	fill(860, 20, 1260, 40, color.RGBA{150, 40, 200, 255})                         // boss HP
	fill(800, 200, 1000, 420, color.RGBA{120, 30, 140, 255})                       // boss
	fill(840, 240, 880, 270, color.RGBA{255, 230, 0, 255})                         // boss eye
	fill(s.heroX, s.heroY, s.heroX+40, s.heroY+56, color.RGBA{230, 200, 150, 255}) // hero
	return img
}

// writeJPEG writes img as a JPEG of quality q in dir and returns its path.
func writeJPEG(t testing.TB, dir, name string, img image.Image, q int) string {
	t.Helper()
	var b bytes.Buffer
	if err := jpeg.Encode(&b, img, &jpeg.Options{Quality: q}); err != nil {
		t.Fatal(err)
	}
	return writeFile(t, dir, name, b.Bytes())
}

// writePNG writes img as a PNG in dir and returns its path.
func writePNG(t testing.TB, dir, name string, img image.Image) string {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return writeFile(t, dir, name, b.Bytes())
}

func writeFile(t testing.TB, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// decodeJPEGBytes decodes a JPEG made by the package.
func decodeJPEGBytes(t testing.TB, b []byte) image.Image {
	t.Helper()
	img, err := jpeg.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("output is not a JPEG: %v", err)
	}
	return img
}

// meanRGB returns the mean colour of r in img.
func meanRGB(img image.Image, r image.Rectangle) (float64, float64, float64) {
	var sr, sg, sb, n float64
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			cr, cg, cb, _ := img.At(x, y).RGBA()
			sr, sg, sb, n = sr+float64(cr>>8), sg+float64(cg>>8), sb+float64(cb>>8), n+1
		}
	}
	return sr / n, sg / n, sb / n
}

// near reports whether a colour is within tol of want on each channel.
func near(r, g, b float64, want color.RGBA, tol float64) bool {
	d := func(a float64, w uint8) bool { return a-float64(w) <= tol && float64(w)-a <= tol }
	return d(r, want.R) && d(g, want.G) && d(b, want.B)
}

// brightPixels counts the pixels of r in img brighter than v on every
// channel (label text is near white on a dark band).
func brightPixels(img image.Image, r image.Rectangle, v uint32) int {
	n := 0
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			cr, cg, cb, _ := img.At(x, y).RGBA()
			if cr>>8 > v && cg>>8 > v && cb>>8 > v {
				n++
			}
		}
	}
	return n
}

// floorNear reports whether r of img shows the arena floor of colour c: its
// colour or that of its lighter tiles.
func floorNear(img image.Image, r image.Rectangle, c color.RGBA) (bool, string) {
	mr, mg, mb := meanRGB(img, r)
	lighter := c
	lighter.R, lighter.G, lighter.B = c.R+12, c.G+12, c.B+12
	return near(mr, mg, mb, c, 20) || near(mr, mg, mb, lighter, 20), fmt.Sprintf("%.0f,%.0f,%.0f", mr, mg, mb)
}
