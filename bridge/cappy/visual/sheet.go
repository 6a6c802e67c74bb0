package visual

import (
	"errors"
	"image"
	"math"
	"runtime"
	"sync"
)

// Defaults and limits of contact sheets.
const (
	// DefaultSheetWidth is the widest contact sheet.
	DefaultSheetWidth = 640
	// DefaultMaxCells is the most thumbnails on a contact sheet.
	DefaultMaxCells = 24
	// DefaultLabelLines is how many label lines a cell shows.
	DefaultLabelLines = 2
	// MaxLabelLines is the most label lines a cell shows.
	MaxLabelLines = 4

	sheetGap     = 4  // pixels between and around cells
	labelPad     = 3  // pixels around label text in its band
	minCellWidth = 96 // a thumbnail narrower than this is not worth it (13 characters)
)

// SheetItem is one cell of a contact sheet: a frame file and the lines of
// its label (e.g. "12.5 s", "BOSS_PHASE"). Labels are text from a game:
// they are sanitised, shown in printable ASCII ('?' for other characters)
// and cut to the cell's width.
type SheetItem struct {
	Path  string
	Label []string
}

// SheetOptions tunes ContactSheet. The zero value (or nil) means the
// defaults.
type SheetOptions struct {
	// Width is the widest the sheet may be, in pixels (0: DefaultSheetWidth).
	// It is narrower when the frames are small: thumbnails are never
	// upscaled.
	Width int
	// MaxCells is the most thumbnails (0: DefaultMaxCells). With more items,
	// an evenly spaced subset is shown, always with the first and the last.
	MaxCells int
	// Quality is the JPEG quality (0: DefaultQuality).
	Quality int
	// LabelLines is how many lines of each label are shown (0:
	// DefaultLabelLines, at most MaxLabelLines).
	LabelLines int
}

// sheetLayout is the geometry of a contact sheet.
type sheetLayout struct {
	cols, rows int
	tw, th     int // thumbnail area of a cell
	band       int // label band under each thumbnail
	w, h       int // the whole sheet
}

// cell returns the thumbnail and band rectangles of cell i.
func (l sheetLayout) cell(i int) (thumb, band image.Rectangle) {
	c, r := i%l.cols, i/l.cols
	x := sheetGap + c*(l.tw+sheetGap)
	y := sheetGap + r*(l.th+l.band+sheetGap)
	thumb = image.Rect(x, y, x+l.tw, y+l.th)
	return thumb, image.Rect(x, thumb.Max.Y, x+l.tw, thumb.Max.Y+l.band)
}

// layoutSheet chooses the columns for n cells of frames of aspect aw:ah on
// a sheet at most width wide, thumbnails never wider than maxTW: the
// columns that make the sheet closest to square, with thumbnails at least
// minCellWidth wide when possible.
func layoutSheet(n, aw, ah, width, maxTW, band int) sheetLayout {
	best := sheetLayout{}
	bestScore := math.Inf(1)
	for cols := 1; cols <= n; cols++ {
		tw := min((width-(cols+1)*sheetGap)/cols, maxTW)
		if tw < 1 || (cols > 1 && tw < minCellWidth) {
			break
		}
		l := sheetLayout{cols: cols, rows: (n + cols - 1) / cols, tw: tw, th: max((tw*ah+aw/2)/aw, 1), band: band}
		l.w = cols*tw + (cols+1)*sheetGap
		l.h = l.rows*(l.th+band) + (l.rows+1)*sheetGap
		score := math.Abs(math.Log(float64(l.h) / float64(l.w)))
		if score < bestScore {
			best, bestScore = l, score
		}
	}
	return best
}

// pick returns the indices of at most m of n items, evenly spaced, with the
// first and the last.
func pick(n, m int) []int {
	if n <= m {
		idx := make([]int, n)
		for i := range idx {
			idx[i] = i
		}
		return idx
	}
	idx := make([]int, m)
	for i := range idx {
		if m == 1 {
			break
		}
		idx[i] = i * (n - 1) / (m - 1)
	}
	return idx
}

// ContactSheet returns one JPEG with a grid of labelled thumbnails of the
// items' frames, with its dimensions: each thumbnail the frame downscaled
// by area averaging, with the item's label on a band under it. A missing or
// unreadable frame gets an empty cell that says so, with its label; only
// when no item is given is it an error. Each frame is decoded once, JPEGs
// at a reduced scale when the thumbnail is much smaller, in parallel.
func ContactSheet(items []SheetItem, o *SheetOptions) (jpg []byte, w, h int, err error) {
	var opt SheetOptions
	if o != nil {
		opt = *o
	}
	if opt.Width <= 0 {
		opt.Width = DefaultSheetWidth
	}
	if opt.MaxCells <= 0 {
		opt.MaxCells = DefaultMaxCells
	}
	if opt.LabelLines <= 0 {
		opt.LabelLines = DefaultLabelLines
	}
	opt.LabelLines = min(opt.LabelLines, MaxLabelLines)
	if len(items) == 0 {
		return nil, 0, 0, errors.New("contact sheet: no items")
	}
	var cells []SheetItem
	for _, i := range pick(len(items), opt.MaxCells) {
		cells = append(cells, items[i])
	}

	// Headers first: the layout follows the first readable frame's aspect
	// and the widest frame (never upscaled).
	type header struct {
		w, h int
		err  error
	}
	heads := make([]header, len(cells))
	aw, ah, maxW, lines := 16, 9, 0, 0
	for i, c := range cells {
		_, fw, fh, err := probeFile(c.Path)
		heads[i] = header{fw, fh, err}
		if err == nil {
			if maxW == 0 {
				aw, ah = fw, fh
			}
			maxW = max(maxW, fw)
		}
		lines = max(lines, min(len(c.Label), opt.LabelLines))
	}
	if maxW == 0 {
		maxW = opt.Width
	}
	l := layoutSheet(len(cells), aw, ah, opt.Width, maxW, bandHeight(lines, labelPad))

	canvas := newCanvas(l.w, l.h, sheetColor)
	parallel(len(cells), func(i int) {
		thumb, band := l.cell(i)
		var img image.Image
		if heads[i].err == nil {
			tw, th := fitBox(heads[i].w, heads[i].h, l.tw, l.th)
			if r, err := decodeFile(cells[i].Path, tw); err == nil {
				img = r.scaled420(tw, th)
			}
		}
		// Cells do not overlap: drawing them concurrently is safe.
		if img == nil {
			canvas.fill(thumb, emptyColor)
			drawText(canvas, thumb, []string{"(no image)"}, labelPad)
		} else {
			b := img.Bounds()
			canvas.put(img, thumb.Min.Add(image.Pt((l.tw-b.Dx())/2, (l.th-b.Dy())/2)))
		}
		if l.band > 0 {
			label := cells[i].Label
			drawLabel(canvas, band, label[:min(len(label), lines)], labelPad)
		}
	})
	jpg, err = encodeJPEG(canvas.m, opt.Quality)
	if err != nil {
		return nil, 0, 0, err
	}
	return jpg, l.w, l.h, nil
}

// parallel runs f(0..n-1) on up to GOMAXPROCS goroutines.
func parallel(n int, f func(i int)) {
	workers := min(runtime.GOMAXPROCS(0), n)
	var wg sync.WaitGroup
	next := make(chan int)
	for range workers {
		wg.Go(func() {
			for i := range next {
				f(i)
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}
