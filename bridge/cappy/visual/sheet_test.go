package visual

import (
	"fmt"
	"image"
	"image/color"
	"path/filepath"
	"testing"
)

func TestLayoutSheet(t *testing.T) {
	band := bandHeight(2, labelPad)
	for _, c := range []struct {
		n, aw, ah, width, maxTW int
		cols                    int
	}{
		{24, 16, 9, 640, 1280, 4},
		{8, 16, 9, 640, 1280, 2},
		{1, 16, 9, 640, 1280, 1},
		{2, 16, 9, 640, 1280, 1},
		{24, 9, 16, 640, 720, 6}, // 7 columns would be under minCellWidth
		{24, 16, 9, 640, 100, 5}, // small frames: never upscaled
	} {
		l := layoutSheet(c.n, c.aw, c.ah, c.width, c.maxTW, band)
		if l.cols != c.cols {
			t.Errorf("%+v: %d columns, want %d", c, l.cols, c.cols)
		}
		if l.w > c.width || l.tw > c.maxTW {
			t.Errorf("%+v: sheet %d wide, thumbs %d", c, l.w, l.tw)
		}
		if l.rows*l.cols < c.n || (l.rows-1)*l.cols >= c.n {
			t.Errorf("%+v: %d rows of %d for %d", c, l.rows, l.cols, c.n)
		}
		if want := l.cols*l.tw + (l.cols+1)*sheetGap; l.w != want {
			t.Errorf("%+v: width %d, want %d", c, l.w, want)
		}
		if want := l.rows*(l.th+band) + (l.rows+1)*sheetGap; l.h != want {
			t.Errorf("%+v: height %d, want %d", c, l.h, want)
		}
		// Aspect of the thumbnail area is the frames'.
		if d := float64(l.tw)/float64(l.th) - float64(c.aw)/float64(c.ah); d > 0.05 || d < -0.05 {
			t.Errorf("%+v: thumbnail %dx%d", c, l.tw, l.th)
		}
	}
}

func TestPick(t *testing.T) {
	if got := fmt.Sprint(pick(5, 24)); got != "[0 1 2 3 4]" {
		t.Errorf("pick(5, 24) = %s", got)
	}
	if got := fmt.Sprint(pick(100, 5)); got != "[0 24 49 74 99]" {
		t.Errorf("pick(100, 5) = %s", got)
	}
	if got := fmt.Sprint(pick(100, 1)); got != "[0]" {
		t.Errorf("pick(100, 1) = %s", got)
	}
}

// cellColour is the floor colour of frame i of a sheet test.
func cellColour(i int) color.RGBA {
	return color.RGBA{uint8(30 + i*9), uint8(200 - i*7), uint8(60 + (i*53)%180), 255}
}

func TestContactSheet(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var items []SheetItem
	for i := range 24 {
		s := arena(640, 360)
		s.floor = cellColour(i)
		var p string
		if i%3 == 0 {
			p = writePNG(t, dir, fmt.Sprintf("f%02d.png", i), s.render())
		} else {
			p = writeJPEG(t, dir, fmt.Sprintf("f%02d.jpg", i), s.render(), 85)
		}
		items = append(items, SheetItem{Path: p, Label: []string{fmt.Sprintf("%.1f s", float64(i)*2.5), "BOSS_PHASE"}})
	}
	items[5].Label = nil // a cell without a label
	b, w, h, err := ContactSheet(items, nil)
	if err != nil {
		t.Fatal(err)
	}
	img := decodeJPEGBytes(t, b)
	if img.Bounds() != image.Rect(0, 0, w, h) || w > DefaultSheetWidth {
		t.Fatalf("sheet %v, reported %dx%d", img.Bounds(), w, h)
	}
	l := layoutSheet(24, 640, 360, DefaultSheetWidth, 640, bandHeight(2, labelPad))
	if w != l.w || h != l.h || l.cols != 4 || l.rows != 6 {
		t.Fatalf("sheet %dx%d, layout %+v", w, h, l)
	}
	for i := range items {
		thumb, band := l.cell(i)
		// The tile of the floor at the thumbnail's bottom-left corner.
		tile := image.Rect(thumb.Min.X+2, thumb.Max.Y-12, thumb.Min.X+8, thumb.Max.Y-3)
		if ok, got := floorNear(img, tile, cellColour(i)); !ok {
			t.Errorf("cell %d floor %s, want %v", i, got, cellColour(i))
		}
		text := brightPixels(img, band, 150)
		if i == 5 {
			if text != 0 {
				t.Errorf("cell %d has no label but %d text pixels", i, text)
			}
			continue
		}
		if text < 40 {
			t.Errorf("cell %d label band has %d text pixels", i, text)
		}
		// Two lines: text in the band's upper and lower halves.
		up := image.Rect(band.Min.X, band.Min.Y, band.Max.X, band.Min.Y+band.Dy()/2)
		down := image.Rect(band.Min.X, up.Max.Y, band.Max.X, band.Max.Y)
		if brightPixels(img, up, 150) == 0 || brightPixels(img, down, 150) == 0 {
			t.Errorf("cell %d: not two label lines", i)
		}
	}
}

func TestContactSheetSmallFramesAndBadCells(t *testing.T) {
	dir := t.TempDir()
	items := []SheetItem{
		{Path: writeJPEG(t, dir, "a.jpg", arena(100, 56).render(), 90), Label: []string{"0.0 s"}},
		{Path: filepath.Join(dir, "missing.jpg"), Label: []string{"0.5 s"}},
		{Path: writeFile(t, dir, "bad.png", []byte("\x89PNG\r\n\x1a\nnot really")), Label: []string{"1.0 s"}},
		{Path: writePNG(t, dir, "b.png", arena(100, 56).render()), Label: []string{"1.5 s", "\u202eevil\x1b[31m\u200b", "third line not shown"}},
	}
	b, w, h, err := ContactSheet(items, &SheetOptions{MaxCells: 10})
	if err != nil {
		t.Fatal(err)
	}
	img := decodeJPEGBytes(t, b)
	l := layoutSheet(4, 100, 56, DefaultSheetWidth, 100, bandHeight(2, labelPad))
	if l.tw != 100 || w != l.w || h != l.h {
		t.Fatalf("thumbnails upscaled or layout off: %dx%d, %+v", w, h, l)
	}
	if img.Bounds().Dx() != w {
		t.Fatal("reported size is not the image's")
	}
	for i := 1; i <= 2; i++ {
		thumb, band := l.cell(i)
		if brightPixels(img, thumb, 150) == 0 {
			t.Errorf("bad cell %d does not say so", i)
		}
		if brightPixels(img, band, 150) == 0 {
			t.Errorf("bad cell %d lost its label", i)
		}
	}
	if _, _, _, err := ContactSheet(nil, nil); err == nil {
		t.Error("an empty sheet was made")
	}
}

func TestContactSheetMaxCells(t *testing.T) {
	dir := t.TempDir()
	p := writeJPEG(t, dir, "a.jpg", arena(320, 180).render(), 80)
	var items []SheetItem
	for range 100 {
		items = append(items, SheetItem{Path: p})
	}
	_, w, h, err := ContactSheet(items, &SheetOptions{MaxCells: 6, Width: 400})
	if err != nil {
		t.Fatal(err)
	}
	l := layoutSheet(6, 320, 180, 400, 320, 0)
	if w != l.w || h != l.h || w > 400 {
		t.Fatalf("%dx%d, want %+v", w, h, l)
	}
}

func TestLabelText(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"12.5 s", 20, "12.5 s"},
		{"BOSS_PHASE {\"phase\":2}", 10, "BOSS_PHA.."},
		{"exactly10!", 10, "exactly10!"},
		{"a\u202eb\u2066c\x00d\x1b[0m", 20, "abcd[0m"},
		{"line\nbreak\ttab", 20, "line break tab"},
		{"héllo 世界", 20, "h?llo ??"},
		{"abc", 2, "ab"},
		{"abc", 0, ""},
		{string([]byte{0xff, 0xfe, 'x'}), 5, "?x"},
	} {
		if got := labelText(c.in, c.n); got != c.want {
			t.Errorf("labelText(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
		if got := labelText(c.in, c.n); len(got) > max(c.n, 0) {
			t.Errorf("labelText(%q, %d) = %q is too long", c.in, c.n, got)
		}
	}
}
