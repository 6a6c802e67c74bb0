package jpegfork

import (
	"bytes"
	"image"
	"image/color"
	"image/jpeg"
	"math/rand/v2"
	"testing"
)

// testImages are RGBA pictures of awkward sizes (edges that are not whole
// blocks), flat, noisy and smooth.
func testImages() []*image.RGBA {
	r := rand.New(rand.NewPCG(1, 2))
	var out []*image.RGBA
	for _, sz := range []image.Point{{640, 360}, {1, 1}, {7, 9}, {16, 16}, {17, 33}, {100, 75}, {333, 201}} {
		for kind := range 3 {
			m := image.NewRGBA(image.Rect(0, 0, sz.X, sz.Y))
			for y := range sz.Y {
				for x := range sz.X {
					var c color.RGBA
					switch kind {
					case 0: // flat with a few shapes
						c = color.RGBA{40, 60, 80, 255}
						if (x/20+y/15)%5 == 0 {
							c = color.RGBA{220, 30, 90, 255}
						}
					case 1: // noise
						c = color.RGBA{uint8(r.IntN(256)), uint8(r.IntN(256)), uint8(r.IntN(256)), 255}
					default: // gradients
						c = color.RGBA{uint8(x * 255 / max(1, sz.X-1)), uint8(y * 255 / max(1, sz.Y-1)), uint8((x + y) % 256), 255}
					}
					m.SetRGBA(x, y, c)
				}
			}
			out = append(out, m)
		}
	}
	// A sub-image: its Pix starts before its bounds.
	big := out[0]
	out = append(out, big.SubImage(image.Rect(13, 7, 300, 200)).(*image.RGBA))
	return out
}

// The encoder writes exactly what image/jpeg writes, byte for byte, for
// RGBA (its fast path), YCbCr, Gray and any other image, at every quality.
func TestSameBytesAsImageJPEG(t *testing.T) {
	for i, m := range testImages() {
		ycc := image.NewYCbCr(m.Bounds(), image.YCbCrSubsampleRatio420)
		gray := image.NewGray(m.Bounds())
		nrgba := image.NewNRGBA(m.Bounds())
		for y := m.Rect.Min.Y; y < m.Rect.Max.Y; y++ {
			for x := m.Rect.Min.X; x < m.Rect.Max.X; x++ {
				c := m.RGBAAt(x, y)
				yy, cb, cr := color.RGBToYCbCr(c.R, c.G, c.B)
				ycc.Y[ycc.YOffset(x, y)], ycc.Cb[ycc.COffset(x, y)], ycc.Cr[ycc.COffset(x, y)] = yy, cb, cr
				gray.SetGray(x, y, color.GrayModel.Convert(c).(color.Gray))
				nrgba.Set(x, y, c)
			}
		}
		for _, src := range []image.Image{m, ycc, gray, nrgba} {
			for _, q := range []int{1, 20, 50, 75, 80, 90, 100} {
				var want, got bytes.Buffer
				if err := jpeg.Encode(&want, src, &jpeg.Options{Quality: q}); err != nil {
					t.Fatal(err)
				}
				if err := Encode(&got, src, &Options{Quality: q}); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(want.Bytes(), got.Bytes()) {
					t.Fatalf("image %d (%T %v) at quality %d: %d bytes differ from image/jpeg's %d", i, src, src.Bounds(), q, got.Len(), want.Len())
				}
			}
		}
	}
}

func BenchmarkEncode(b *testing.B) {
	m := testImages()[0]
	for _, c := range []struct {
		name string
		enc  func(*bytes.Buffer) error
	}{
		{"image-jpeg", func(w *bytes.Buffer) error { return jpeg.Encode(w, m, &jpeg.Options{Quality: 80}) }},
		{"jpegfork", func(w *bytes.Buffer) error { return Encode(w, m, &Options{Quality: 80}) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			var w bytes.Buffer
			for b.Loop() {
				w.Reset()
				if err := c.enc(&w); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// divRecip is div for every divisor the encoder uses and every dividend a
// forward DCT coefficient can be, and more.
func TestDivRecipIsDiv(t *testing.T) {
	for q := int32(1); q <= 255; q++ {
		d := newDivisor(8 * q)
		for a := int32(-1 << 17); a < 1<<17; a++ {
			if got, want := divRecip(a, d), div(a, 8*q); got != want {
				t.Fatalf("divRecip(%d, %d) = %d, div = %d", a, 8*q, got, want)
			}
		}
	}
}
