package visual

import (
	"image"
	"image/color"
	"image/draw"
)

// plane is one 8-bit channel of an image.
type plane struct {
	w, h, stride int
	pix          []uint8
}

// newPlane returns a w×h plane filled with v.
func newPlane(w, h int, v uint8) plane {
	p := plane{w: w, h: h, stride: w, pix: make([]uint8, w*h)}
	if v != 0 {
		for i := range p.pix {
			p.pix[i] = v
		}
	}
	return p
}

// raster is a decoded image as YCbCr planes (BT.601 full range, as in JPEG).
// The chroma planes may be smaller than the luma plane (subsampled); they
// cover the same picture. For a grayscale image cb and cr are nil planes.
type raster struct {
	w, h      int
	y, cb, cr plane
}

// gray reports whether the raster has no chroma.
func (r *raster) gray() bool { return r.cb.pix == nil }

// rasterOf converts a decoded image to a raster. YCbCr and Gray images
// (what JPEG decodes to) share their pixels; others are converted, with
// transparency composited over black.
func rasterOf(img image.Image) *raster {
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	switch m := img.(type) {
	case *image.YCbCr:
		cw, ch := chromaSize(m.SubsampleRatio, b)
		yo, co := m.YOffset(b.Min.X, b.Min.Y), m.COffset(b.Min.X, b.Min.Y)
		return &raster{w: w, h: h,
			y:  plane{w, h, m.YStride, m.Y[yo:]},
			cb: plane{cw, ch, m.CStride, m.Cb[co:]},
			cr: plane{cw, ch, m.CStride, m.Cr[co:]},
		}
	case *image.Gray:
		return &raster{w: w, h: h, y: plane{w, h, m.Stride, m.Pix[m.PixOffset(b.Min.X, b.Min.Y):]}}
	}
	rgba, ok := img.(*image.RGBA)
	if !ok {
		rgba = image.NewRGBA(image.Rect(0, 0, w, h))
		draw.Draw(rgba, rgba.Rect, img, b.Min, draw.Src)
	}
	return rasterOfRGBA(rgba)
}

// rasterOfRGBA converts premultiplied RGBA (so: over black) to full
// resolution YCbCr planes.
func rasterOfRGBA(m *image.RGBA) *raster {
	b := m.Bounds()
	w, h := b.Dx(), b.Dy()
	r := &raster{w: w, h: h, y: newPlane(w, h, 0), cb: newPlane(w, h, 0), cr: newPlane(w, h, 0)}
	for y := 0; y < h; y++ {
		row := m.Pix[m.PixOffset(b.Min.X, b.Min.Y+y):]
		o := y * w
		for x := 0; x < w; x++ {
			p := row[4*x : 4*x+3 : 4*x+3]
			r.y.pix[o+x], r.cb.pix[o+x], r.cr.pix[o+x] = color.RGBToYCbCr(p[0], p[1], p[2])
		}
	}
	return r
}

// chromaSize returns the chroma plane size of a YCbCr image of bounds b.
func chromaSize(s image.YCbCrSubsampleRatio, b image.Rectangle) (int, int) {
	w, h := b.Dx(), b.Dy()
	switch s {
	case image.YCbCrSubsampleRatio422:
		return (b.Max.X+1)/2 - b.Min.X/2, h
	case image.YCbCrSubsampleRatio420:
		return (b.Max.X+1)/2 - b.Min.X/2, (b.Max.Y+1)/2 - b.Min.Y/2
	case image.YCbCrSubsampleRatio440:
		return w, (b.Max.Y+1)/2 - b.Min.Y/2
	case image.YCbCrSubsampleRatio411:
		return (b.Max.X+3)/4 - b.Min.X/4, h
	case image.YCbCrSubsampleRatio410:
		return (b.Max.X+3)/4 - b.Min.X/4, (b.Max.Y+1)/2 - b.Min.Y/2
	}
	return w, h
}

// fit returns the size of a w×h image scaled to at most maxW wide, aspect
// kept, never upscaled (maxW <= 0: no limit).
func fit(w, h, maxW int) (int, int) {
	if maxW <= 0 || w <= maxW {
		return w, h
	}
	nh := (h*maxW + w/2) / w
	return maxW, max(nh, 1)
}

// fitBox returns the size of a w×h image scaled to fit in bw×bh, aspect
// kept, never upscaled.
func fitBox(w, h, bw, bh int) (int, int) {
	if w <= bw && h <= bh {
		return w, h
	}
	if w*bh > h*bw { // wider than the box: width decides
		return bw, max((h*bw+w/2)/w, 1)
	}
	return max((w*bh+h/2)/h, 1), bh
}

// taps are the source indices and weights of one output sample of an area
// average: the output covers [o*n, (o+1)*n) in units where source pixel i
// covers [i*m, (i+1)*m) (n source pixels to m outputs); weights sum to n.
type taps struct {
	first int
	w     []uint32
}

// areaTaps returns the taps of each of m outputs over n inputs.
func areaTaps(n, m int) []taps {
	t := make([]taps, m)
	for o := range m {
		lo, hi := o*n, (o+1)*n
		i0, i1 := lo/m, (hi+m-1)/m
		ws := make([]uint32, i1-i0)
		for i := i0; i < i1; i++ {
			ws[i-i0] = uint32(min(hi, (i+1)*m) - max(lo, i*m))
		}
		t[o] = taps{first: i0, w: ws}
	}
	return t
}

// resample returns p area-averaged to w×h. It works both ways, but is
// meant for downscaling (upscaling blends at most two source pixels).
func (p plane) resample(w, h int) plane {
	if w == p.w && h == p.h {
		return p
	}
	// Horizontal pass: each row to w samples, kept in 1/256 units.
	tx := areaTaps(p.w, w)
	nx := uint32(p.w)
	mid := make([]uint32, w*p.h)
	for y := 0; y < p.h; y++ {
		row := p.pix[y*p.stride : y*p.stride+p.w]
		out := mid[y*w : (y+1)*w]
		for x, t := range tx {
			var s uint32
			src := row[t.first : t.first+len(t.w)]
			for i, wt := range t.w {
				s += uint32(src[i]) * wt
			}
			out[x] = (s*256 + nx/2) / nx
		}
	}
	// Vertical pass.
	ty := areaTaps(p.h, h)
	ny := uint32(p.h) * 256
	q := newPlane(w, h, 0)
	acc := make([]uint32, w)
	for y, t := range ty {
		clear(acc)
		for i, wt := range t.w {
			src := mid[(t.first+i)*w : (t.first+i+1)*w]
			for x, v := range src {
				acc[x] += v * wt
			}
		}
		out := q.pix[y*w : (y+1)*w]
		for x, s := range acc {
			out[x] = uint8((s + ny/2) / ny)
		}
	}
	return q
}

// scaled420 returns the raster area-averaged to w×h as a 4:2:0 YCbCr image
// (or Gray), what a JPEG encoder keeps anyway: a JPEG source's planes are
// used as they are when the size does not change.
func (r *raster) scaled420(w, h int) image.Image {
	y := r.y.resample(w, h)
	if r.gray() {
		return &image.Gray{Pix: y.pix, Stride: y.stride, Rect: image.Rect(0, 0, w, h)}
	}
	cw, ch := (w+1)/2, (h+1)/2
	cb, cr := r.cb.resample(cw, ch), r.cr.resample(cw, ch)
	return &image.YCbCr{Y: y.pix, Cb: cb.pix, Cr: cr.pix, YStride: y.stride, CStride: cb.stride,
		SubsampleRatio: image.YCbCrSubsampleRatio420, Rect: image.Rect(0, 0, w, h)}
}

// scaled returns the raster area-averaged to w×h as a 4:4:4 YCbCr image (or
// Gray for a grayscale raster).
func (r *raster) scaled(w, h int) image.Image {
	y := r.y.resample(w, h)
	if r.gray() {
		return &image.Gray{Pix: y.pix, Stride: y.stride, Rect: image.Rect(0, 0, w, h)}
	}
	cb, cr := r.cb.resample(w, h), r.cr.resample(w, h)
	return &image.YCbCr{Y: y.pix, Cb: cb.pix, Cr: cr.pix, YStride: w, CStride: w,
		SubsampleRatio: image.YCbCrSubsampleRatio444, Rect: image.Rect(0, 0, w, h)}
}
