package demogame

import (
	"image"
	"image/color"
	"sync"

	"golang.org/x/image/font/basicfont"
)

// Drawing primitives on an *image.RGBA, in integer pixels, clipped to the
// image. They write Pix directly: a frame is a few hundred of them.

// fill paints r with c (opaque).
func fill(dst *image.RGBA, r image.Rectangle, c color.RGBA) {
	r = r.Intersect(dst.Rect)
	if r.Empty() {
		return
	}
	w := r.Dx() * 4
	first := dst.PixOffset(r.Min.X, r.Min.Y)
	row := dst.Pix[first : first+w]
	for i := 0; i < w; i += 4 {
		row[i], row[i+1], row[i+2], row[i+3] = c.R, c.G, c.B, 255
	}
	for y := r.Min.Y + 1; y < r.Max.Y; y++ {
		o := dst.PixOffset(r.Min.X, y)
		copy(dst.Pix[o:o+w], row)
	}
}

// shade blends c over r with c's alpha (c is not premultiplied).
func shade(dst *image.RGBA, r image.Rectangle, c color.RGBA) {
	r = r.Intersect(dst.Rect)
	a := uint32(c.A)
	for y := r.Min.Y; y < r.Max.Y; y++ {
		o := dst.PixOffset(r.Min.X, y)
		px := dst.Pix[o : o+r.Dx()*4]
		for i := 0; i < len(px); i += 4 {
			px[i] = uint8((uint32(px[i])*(255-a) + uint32(c.R)*a) / 255)
			px[i+1] = uint8((uint32(px[i+1])*(255-a) + uint32(c.G)*a) / 255)
			px[i+2] = uint8((uint32(px[i+2])*(255-a) + uint32(c.B)*a) / 255)
		}
	}
}

// span paints row y from x0 to x1 inclusive.
func span(dst *image.RGBA, y, x0, x1 int, c color.RGBA) {
	fill(dst, image.Rect(x0, y, x1+1, y+1), c)
}

// disc paints a filled circle.
func disc(dst *image.RGBA, cx, cy, r int, c color.RGBA) {
	for dy := -r; dy <= r; dy++ {
		hw := isqrt(r*r - dy*dy)
		span(dst, cy+dy, cx-hw, cx+hw, c)
	}
}

// ring paints a circle's outline th pixels thick.
func ring(dst *image.RGBA, cx, cy, r, th int, c color.RGBA) {
	in := r - th
	for dy := -r; dy <= r; dy++ {
		hw := isqrt(r*r - dy*dy)
		if in <= 0 || dy <= -in || dy >= in {
			span(dst, cy+dy, cx-hw, cx+hw, c)
			continue
		}
		hi := isqrt(in*in - dy*dy)
		span(dst, cy+dy, cx-hw, cx-hi, c)
		span(dst, cy+dy, cx+hi, cx+hw, c)
	}
}

// line paints a segment th pixels thick.
func line(dst *image.RGBA, x0, y0, x1, y1, th int, c color.RGBA) {
	dx, dy := abs(x1-x0), -abs(y1-y0)
	sx, sy := sign(x1-x0), sign(y1-y0)
	e := dx + dy
	for n := 0; n < 4096; n++ {
		fill(dst, image.Rect(x0-th/2, y0-th/2, x0-th/2+th, y0-th/2+th), c)
		if x0 == x1 && y0 == y1 {
			return
		}
		if e2 := 2 * e; e2 >= dy {
			e += dy
			x0 += sx
		}
		if e2 := 2 * e; e2 <= dx {
			e += dx
			y0 += sy
		}
	}
}

// frameRect paints a rectangle's outline th pixels thick.
func frameRect(dst *image.RGBA, r image.Rectangle, th int, c color.RGBA) {
	fill(dst, image.Rect(r.Min.X, r.Min.Y, r.Max.X, r.Min.Y+th), c)
	fill(dst, image.Rect(r.Min.X, r.Max.Y-th, r.Max.X, r.Max.Y), c)
	fill(dst, image.Rect(r.Min.X, r.Min.Y, r.Min.X+th, r.Max.Y), c)
	fill(dst, image.Rect(r.Max.X-th, r.Min.Y, r.Max.X, r.Max.Y), c)
}

// bar paints a horizontal gauge: back, then the share v/maxV in c.
func bar(dst *image.RGBA, r image.Rectangle, v, maxV int, back, c color.RGBA) {
	fill(dst, r, back)
	if maxV <= 0 || v <= 0 {
		return
	}
	w := r.Dx() * min(v, maxV) / maxV
	fill(dst, image.Rect(r.Min.X, r.Min.Y, r.Min.X+max(w, 1), r.Max.Y), c)
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

func sign(v int) int {
	switch {
	case v < 0:
		return -1
	case v > 0:
		return 1
	}
	return 0
}

// Text: the 7x13 X11 fixed font of golang.org/x/image/font/basicfont,
// printable ASCII, at integer scales.
const (
	glyphW, glyphH, glyphAdvance = 6, 13, 7
)

var (
	glyphsOnce sync.Once
	glyphs     [95][glyphH]uint8 // rows of 6 bits, high bit left
)

func loadGlyphs() {
	m := basicfont.Face7x13.Mask.(*image.Alpha)
	for c := range glyphs {
		for y := range glyphH {
			var bits uint8
			for x := range glyphW {
				if m.AlphaAt(x, c*glyphH+y).A >= 128 {
					bits |= 1 << (glyphW - 1 - x)
				}
			}
			glyphs[c][y] = bits
		}
	}
}

// textWidth is the width of s at scale k.
func textWidth(s string, k int) int { return len(s) * glyphAdvance * k }

// text paints s with its top left at (x, y), each font pixel k x k.
func text(dst *image.RGBA, x, y int, s string, k int, c color.RGBA) {
	glyphsOnce.Do(loadGlyphs)
	for i := 0; i < len(s); i++ {
		ch := int(s[i]) - 32
		if ch < 0 || ch >= len(glyphs) {
			ch = '?' - 32
		}
		gx := x + i*glyphAdvance*k
		for row, bits := range glyphs[ch] {
			for col := 0; col < glyphW; col++ {
				if bits&(1<<(glyphW-1-col)) != 0 {
					fill(dst, image.Rect(gx+col*k, y+row*k, gx+col*k+k, y+row*k+k), c)
				}
			}
		}
	}
}

// textShadow paints s with a one-pixel dark shadow, for legibility.
func textShadow(dst *image.RGBA, x, y int, s string, k int, c, sh color.RGBA) {
	text(dst, x+max(1, k/2), y+max(1, k/2), s, k, sh)
	text(dst, x, y, s, k, c)
}
