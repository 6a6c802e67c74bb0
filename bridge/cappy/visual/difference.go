package visual

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
)

// Difference returns a PNG, width pixels wide (0: the narrower frame's
// width, at most DefaultMaxWidth), that shows where the frames a and b
// differ: b in dim gray, with every pixel whose colour changed painted
// over in red, the stronger the more it changed, so that a person sees at
// a glance what moved or changed colour. The two frames are scaled to the
// same size first (a's aspect ratio).
func Difference(a, b string, width int) ([]byte, int, int, error) {
	var srcs [2]*source
	for i, p := range []string{a, b} {
		s, err := readSource(p)
		if err != nil {
			return nil, 0, 0, err
		}
		srcs[i] = s
	}
	if width <= 0 {
		width = min(srcs[0].w, srcs[1].w, DefaultMaxWidth)
	}
	w, h := fit(srcs[0].w, srcs[0].h, width)
	var rgb [2]*image.RGBA
	for i, s := range srcs {
		r, err := s.decode(w)
		if err != nil {
			return nil, 0, 0, fmt.Errorf("%s: %w", []string{a, b}[i], err)
		}
		m := r.scaled(w, h)
		dst := image.NewRGBA(image.Rect(0, 0, w, h))
		for y := range h {
			for x := range w {
				dst.Set(x, y, m.At(x, y))
			}
		}
		rgb[i] = dst
	}
	out := image.NewRGBA(image.Rect(0, 0, w, h))
	for i := 0; i < len(out.Pix); i += 4 {
		pa, pb := rgb[0].Pix[i:i+3:i+3], rgb[1].Pix[i:i+3:i+3]
		d := max(absDiff(pa[0], pb[0]), absDiff(pa[1], pb[1]), absDiff(pa[2], pb[2]))
		gray := uint8((299*int(pb[0]) + 587*int(pb[1]) + 114*int(pb[2])) / 1000 / 3)
		c := color.RGBA{gray, gray, gray, 255}
		if d > differenceNoise {
			// From dark red (just over the noise) to full red.
			v := 96 + int(d-differenceNoise)*159/(255-differenceNoise)
			c = color.RGBA{uint8(v), gray / 2, gray / 2, 255}
		}
		out.Pix[i], out.Pix[i+1], out.Pix[i+2], out.Pix[i+3] = c.R, c.G, c.B, c.A
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, out); err != nil {
		return nil, 0, 0, err
	}
	return buf.Bytes(), w, h, nil
}

// differenceNoise is the largest change of a channel Difference does not
// paint: what JPEG re-encoding at different sizes gives.
const differenceNoise = 24
