package visual

import (
	"image"
	"image/color"
	"image/draw"
)

// canvas is an image composed in 4:4:4 YCbCr, the form the JPEG encoder
// reads without colour conversion: thumbnails (YCbCr already) are copied
// plane by plane and text is drawn into the luma plane over neutral chroma.
type canvas struct {
	m *image.YCbCr
}

// newCanvas returns a w×h canvas filled with c.
func newCanvas(w, h int, c color.RGBA) canvas {
	k := canvas{image.NewYCbCr(image.Rect(0, 0, w, h), image.YCbCrSubsampleRatio444)}
	k.fill(k.m.Rect, c)
	return k
}

// fill paints r with c.
func (k canvas) fill(r image.Rectangle, c color.RGBA) {
	r = r.Intersect(k.m.Rect)
	y, cb, cr := color.RGBToYCbCr(c.R, c.G, c.B)
	for row := r.Min.Y; row < r.Max.Y; row++ {
		o := k.m.YOffset(r.Min.X, row)
		n := r.Dx()
		fillBytes(k.m.Y[o:o+n], y)
		fillBytes(k.m.Cb[o:o+n], cb)
		fillBytes(k.m.Cr[o:o+n], cr)
	}
}

func fillBytes(b []byte, v byte) {
	for i := range b {
		b[i] = v
	}
}

// put copies img (YCbCr of any subsampling, or Gray) with its top-left
// corner at at.
func (k canvas) put(img image.Image, at image.Point) {
	b := img.Bounds()
	dst := image.Rectangle{Min: at, Max: at.Add(b.Size())}.Intersect(k.m.Rect)
	switch m := img.(type) {
	case *image.YCbCr:
		for y := dst.Min.Y; y < dst.Max.Y; y++ {
			sy := b.Min.Y + y - at.Y
			o := k.m.YOffset(dst.Min.X, y)
			for x := dst.Min.X; x < dst.Max.X; x++ {
				sx := b.Min.X + x - at.X
				c := m.COffset(sx, sy)
				k.m.Y[o], k.m.Cb[o], k.m.Cr[o] = m.Y[m.YOffset(sx, sy)], m.Cb[c], m.Cr[c]
				o++
			}
		}
	case *image.Gray:
		for y := dst.Min.Y; y < dst.Max.Y; y++ {
			sy := b.Min.Y + y - at.Y
			o := k.m.YOffset(dst.Min.X, y)
			n := dst.Dx()
			copy(k.m.Y[o:o+n], m.Pix[m.PixOffset(b.Min.X+dst.Min.X-at.X, sy):])
			fillBytes(k.m.Cb[o:o+n], 128)
			fillBytes(k.m.Cr[o:o+n], 128)
		}
	default:
		rgba := image.NewRGBA(b)
		draw.Draw(rgba, b, img, b.Min, draw.Src)
		k.put(rasterOfRGBA(rgba).scaled(b.Dx(), b.Dy()), at)
	}
}

// luma returns the canvas's luma plane as a Gray image, to draw text on.
func (k canvas) luma() *image.Gray {
	return &image.Gray{Pix: k.m.Y, Stride: k.m.YStride, Rect: k.m.Rect}
}
