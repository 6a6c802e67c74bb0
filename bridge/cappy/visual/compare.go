package visual

import (
	"fmt"
	"image"
)

// SignatureWidth is the width of a Signature's grid.
const SignatureWidth = 64

// DefaultDiffThreshold is a Diff above which two frames are told apart: it
// sits between what re-encoding and small sprite moves give and what a
// colour change of a large area gives (see TestDiffCases for the figures).
const DefaultDiffThreshold = 0.02

// Signature is a frame reduced for comparison: its luma and chroma
// area-averaged to a grid SignatureWidth wide (the height keeps the
// aspect), so that JPEG noise and one-pixel shifts matter little.
type Signature struct {
	W, H int
	// Pix holds three W*H grids, row by row: luma (the grayscale picture),
	// then the two chroma channels (128 for gray).
	Pix []uint8
}

// SignatureOf returns the signature of the frame file at path.
func SignatureOf(path string) (Signature, error) {
	s, err := readSource(path)
	if err != nil {
		return Signature{}, err
	}
	w, h := SignatureWidth, max((s.h*SignatureWidth+s.w/2)/s.w, 1)
	// Decoded at twice the grid at least: averaging DCT blocks that do not
	// line up with the grid's cells would blur edges between them.
	r, err := s.decode(2 * w)
	if err != nil {
		return Signature{}, fmt.Errorf("%s: %w", path, err)
	}
	n := w * h
	pix := make([]uint8, 3*n)
	copy(pix, r.y.resample(w, h).pix)
	if r.gray() {
		for i := n; i < 3*n; i++ {
			pix[i] = 128
		}
	} else {
		copy(pix[n:], r.cb.resample(w, h).pix)
		copy(pix[2*n:], r.cr.resample(w, h).pix)
	}
	return Signature{W: w, H: h, Pix: pix}, nil
}

// Diff returns how different two signatures are, in [0, 1]: for each cell
// of the grid the largest absolute difference of its luma and its two
// chroma values over their full range, averaged over the grid. 0 is the
// same picture; a picture against its negative is 1. Signatures of
// different grids (frames of other aspect ratios) or invalid ones are 1.
//
// It is a mean absolute difference, not SSIM: it grows with the share of
// the picture that changed and with how much it changed, so one threshold
// separates noise from change, and cheaply (see TestDiffCases, which logs
// both on the same cases). Chroma is in it because a colour change at the
// same brightness (a red boss turning green) is invisible in grayscale.
//
// Measured (TestDiffCases, frames of 1280x720 and 640x360): the same
// picture re-encoded at quality 50 gives 0.004, as PNG against JPEG 0.005,
// a small sprite moved 4 px 0.0003 and moved 120 px 0.003 (see DiffMax for
// those), the floor's colour changed 0.09, its hue changed at the same
// brightness 0.07 (grayscale alone: 0.003), another picture 0.29 to 0.32.
func Diff(a, b Signature) float64 {
	n := cells(a, b)
	if n == 0 {
		return 1
	}
	var sum uint64
	for i := range n {
		d := absDiff(a.Pix[i], b.Pix[i])
		d = max(d, absDiff(a.Pix[n+i], b.Pix[n+i]), absDiff(a.Pix[2*n+i], b.Pix[2*n+i]))
		sum += uint64(d)
	}
	return float64(sum) / (255 * float64(n))
}

// DefaultDiffMaxThreshold is a DiffMax above which two frames are told
// apart (see DiffMax).
const DefaultDiffMaxThreshold = 0.3

// DiffMax returns the largest difference of one cell of two signatures, in
// [0, 1] (the largest of its luma and chroma differences): where Diff
// measures how much of the picture changed, DiffMax tells whether any part
// changed much, such as a sprite in another place, which moves Diff little.
// A cell is 1/64 of the frame's width. Measured (TestDiffCases): the same
// picture re-encoded about 0.01, as JPEG against PNG about 0.15 (JPEG's
// halved chroma at coloured edges), a sprite moved 4 px about 0.06, moved
// 120 px about 0.5. Signatures of different grids, or invalid ones, are 1.
func DiffMax(a, b Signature) float64 {
	n := cells(a, b)
	if n == 0 {
		return 1
	}
	var m uint8
	for i := range 3 * n {
		m = max(m, absDiff(a.Pix[i], b.Pix[i]))
	}
	return float64(m) / 255
}

// cells returns the number of cells of two signatures of the same grid, or
// 0 when they cannot be compared.
func cells(a, b Signature) int {
	n := a.W * a.H
	if a.W != b.W || a.H != b.H || n <= 0 || len(a.Pix) != 3*n || len(b.Pix) != 3*n {
		return 0
	}
	return n
}

func absDiff(a, b uint8) uint8 {
	if a > b {
		return a - b
	}
	return b - a
}

// SideBySide returns one JPEG, at most maxWidth wide (0: DefaultMaxWidth),
// with the frames a and b side by side, each under a label line (labelA,
// labelB, e.g. "recording t=1500" and "replay t=1500"; sanitised and cut to
// fit), with its dimensions. Each frame is downscaled to half the width,
// never upscaled. A frame that cannot be read is an error.
func SideBySide(a, b string, labelA, labelB string, maxWidth int) ([]byte, int, int, error) {
	if maxWidth <= 0 {
		maxWidth = DefaultMaxWidth
	}
	pw := max((maxWidth-3*sheetGap)/2, 1)
	var imgs [2]image.Image
	for i, p := range []string{a, b} {
		s, err := readSource(p)
		if err != nil {
			return nil, 0, 0, err
		}
		w, h := fit(s.w, s.h, pw)
		r, err := s.decode(w)
		if err != nil {
			return nil, 0, 0, fmt.Errorf("%s: %w", p, err)
		}
		imgs[i] = r.scaled420(w, h)
	}
	// Panels as wide as the wider frame, as high as the higher one.
	panelW, panelH := 0, 0
	for _, m := range imgs {
		panelW, panelH = max(panelW, m.Bounds().Dx()), max(panelH, m.Bounds().Dy())
	}
	band := bandHeight(1, labelPad)
	w := 2*panelW + 3*sheetGap
	h := band + panelH + 2*sheetGap
	canvas := newCanvas(w, h, sheetColor)
	for i, m := range imgs {
		x := sheetGap + i*(panelW+sheetGap)
		label := []string{labelA, labelB}[i]
		drawLabel(canvas, image.Rect(x, sheetGap, x+panelW, sheetGap+band), []string{label}, labelPad)
		mb := m.Bounds()
		canvas.put(m, image.Pt(x+(panelW-mb.Dx())/2, sheetGap+band+(panelH-mb.Dy())/2))
	}
	jpg, err := encodeJPEG(canvas.m, DefaultQuality)
	if err != nil {
		return nil, 0, 0, err
	}
	return jpg, w, h, nil
}
