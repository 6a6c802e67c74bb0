package visual

import (
	"image"
	"image/color"
	"math"
	"testing"
)

// diffCase is a pair of frames and the Diff expected of them.
type diffCase struct {
	name string
	a, b string
}

// diffCases writes the real cases of visual comparison at w×h.
func diffCases(t testing.TB, w, h int) []diffCase {
	dir := t.TempDir()
	base := arena(w, h)
	moved := base
	moved.heroX += 4
	far := base
	far.heroX += 120 // the hero elsewhere
	recolour := base
	recolour.floor = color.RGBA{70, 40, 50, 255} // a darker, redder floor
	hue := base
	hue.floor = color.RGBA{71, 57, 47, 255} // the floor's brightness, another hue
	other := base
	other.seed = 1
	a := writeJPEG(t, dir, "a.jpg", base.render(), 90)
	return []diffCase{
		{"identical", a, a},
		{"re-encoded at quality 50", a, writeJPEG(t, dir, "a50.jpg", base.render(), 50)},
		{"as PNG", a, writePNG(t, dir, "a.png", base.render())},
		{"sprite moved 4 px", a, writeJPEG(t, dir, "moved.jpg", moved.render(), 90)},
		{"sprite moved 120 px", a, writeJPEG(t, dir, "far.jpg", far.render(), 90)},
		{"floor colour changed", a, writeJPEG(t, dir, "recolour.jpg", recolour.render(), 90)},
		{"floor hue changed, same brightness", a, writeJPEG(t, dir, "hue.jpg", hue.render(), 90)},
		{"another picture", a, writeJPEG(t, dir, "other.jpg", other.render(), 90)},
	}
}

// TestDiffCases checks Diff's ordering on the real cases and logs, beside
// it, the grayscale mean absolute difference and SSIM dissimilarity on the
// same grids (the measurements behind the choice of metric).
func TestDiffCases(t *testing.T) {
	t.Parallel()
	for _, size := range [][2]int{{1280, 720}, {640, 360}} {
		d, dmax := map[string]float64{}, map[string]float64{}
		for _, c := range diffCases(t, size[0], size[1]) {
			sa, err := SignatureOf(c.a)
			if err != nil {
				t.Fatal(err)
			}
			sb, err := SignatureOf(c.b)
			if err != nil {
				t.Fatal(err)
			}
			if sa.W != SignatureWidth || sa.H != 36 {
				t.Fatalf("signature %dx%d", sa.W, sa.H)
			}
			d[c.name], dmax[c.name] = Diff(sa, sb), DiffMax(sa, sb)
			t.Logf("%dx%d %-36s Diff %.4f  DiffMax %.3f  gray MAD %.4f  gray SSIM dissimilarity %.4f",
				size[0], size[1], c.name, d[c.name], dmax[c.name], grayMAD(sa, sb), 1-ssim(sa, sb))
		}
		if d["identical"] != 0 {
			t.Errorf("identical frames differ: %v", d["identical"])
		}
		for _, noise := range []string{"re-encoded at quality 50", "as PNG", "sprite moved 4 px"} {
			if d[noise] <= 0 || d[noise] >= DefaultDiffThreshold/2 {
				t.Errorf("%s: Diff %.4f, want in (0, %.3f)", noise, d[noise], DefaultDiffThreshold/2)
			}
		}
		for _, change := range []string{"floor colour changed", "floor hue changed, same brightness"} {
			if d[change] <= 2*DefaultDiffThreshold {
				t.Errorf("%s: Diff %.4f, want over %.3f", change, d[change], 2*DefaultDiffThreshold)
			}
		}
		// DiffMax: noise low, a sprite elsewhere high.
		for _, noise := range []string{"re-encoded at quality 50", "as PNG", "sprite moved 4 px"} {
			if dmax[noise] >= DefaultDiffMaxThreshold*2/3 {
				t.Errorf("%s: DiffMax %.3f, want under %.2f", noise, dmax[noise], DefaultDiffMaxThreshold*2/3)
			}
		}
		if dmax["sprite moved 120 px"] < DefaultDiffMaxThreshold*4/3 || d["sprite moved 120 px"] >= DefaultDiffThreshold {
			t.Errorf("sprite moved 120 px: DiffMax %.3f (want over 0.4), Diff %.4f (want under the threshold)",
				dmax["sprite moved 120 px"], d["sprite moved 120 px"])
		}
		if d["another picture"] <= d["floor colour changed"] || d["another picture"] <= 0.15 {
			t.Errorf("another picture: Diff %.4f", d["another picture"])
		}
	}
}

func TestDiffShapes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	wide, err := SignatureOf(writePNG(t, dir, "w.png", arena(1280, 720).render()))
	if err != nil {
		t.Fatal(err)
	}
	square, err := SignatureOf(writePNG(t, dir, "s.png", arena(500, 500).render()))
	if err != nil {
		t.Fatal(err)
	}
	small, err := SignatureOf(writePNG(t, dir, "t.png", arena(32, 18).render()))
	if err != nil {
		t.Fatal(err)
	}
	if square.W != 64 || square.H != 64 || small.W != 64 || small.H != 36 {
		t.Fatalf("signatures %dx%d, %dx%d", square.W, square.H, small.W, small.H)
	}
	if d := Diff(wide, square); d != 1 {
		t.Errorf("other aspect: %v", d)
	}
	if d := Diff(wide, Signature{}); d != 1 {
		t.Errorf("empty: %v", d)
	}
	if d := Diff(Signature{W: 64, H: 36, Pix: []uint8{1}}, wide); d != 1 {
		t.Errorf("invalid: %v", d)
	}
	// A tiny frame (upsampled grid) still matches its large self.
	if d := Diff(wide, small); d > 0.05 {
		t.Errorf("32x18 against 1280x720: %v", d)
	}
	black, white := image.NewGray(image.Rect(0, 0, 64, 36)), image.NewGray(image.Rect(0, 0, 64, 36))
	for i := range white.Pix {
		white.Pix[i] = 255
	}
	sb, _ := SignatureOf(writePNG(t, dir, "b.png", black))
	sw, _ := SignatureOf(writePNG(t, dir, "wh.png", white))
	if d := Diff(sb, sw); d != 1 {
		t.Errorf("black against white: %v", d)
	}
}

func TestSideBySide(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a := writeJPEG(t, dir, "a.jpg", arena(1280, 720).render(), 90)
	other := arena(320, 180)
	other.seed = 2
	b := writePNG(t, dir, "b.png", other.render())
	jpg, w, h, err := SideBySide(a, b, "recording t=1500", "replay t=1500", 0)
	if err != nil {
		t.Fatal(err)
	}
	img := decodeJPEGBytes(t, jpg)
	if img.Bounds() != image.Rect(0, 0, w, h) {
		t.Fatalf("image %v, reported %dx%d", img.Bounds(), w, h)
	}
	pw := (DefaultMaxWidth - 3*sheetGap) / 2 // 314: the 1280 frame is scaled, the 320 one is not
	band := bandHeight(1, labelPad)
	if w != 2*pw+3*sheetGap || h != band+(pw*720+640)/1280+2*sheetGap {
		t.Fatalf("size %dx%d", w, h)
	}
	for _, x := range []int{sheetGap, 2*sheetGap + pw} {
		label := image.Rect(x, sheetGap, x+pw, sheetGap+band)
		if brightPixels(img, label, 150) < 40 {
			t.Errorf("no label at x=%d", x)
		}
	}
	if _, _, _, err := SideBySide(a, dir+"/missing.jpg", "a", "b", 0); err == nil {
		t.Error("a missing frame was compared")
	}
	if _, w, _, _ := SideBySide(a, a, "a", "b", 300); w > 300 {
		t.Errorf("%d wide, asked 300", w)
	}
}

// grayMAD is the grayscale-only mean absolute difference of two signatures.
func grayMAD(a, b Signature) float64 {
	n := a.W * a.H
	var s float64
	for i := range n {
		s += math.Abs(float64(a.Pix[i]) - float64(b.Pix[i]))
	}
	return s / (255 * float64(n))
}

// ssim is the mean SSIM of the luma grids of two signatures over 7x7
// windows (the usual constants for 8-bit values).
func ssim(a, b Signature) float64 {
	const k = 7
	c1, c2 := math.Pow(0.01*255, 2), math.Pow(0.03*255, 2)
	var sum float64
	n := 0
	for y := 0; y+k <= a.H; y++ {
		for x := 0; x+k <= a.W; x++ {
			var ma, mb float64
			for j := range k {
				for i := range k {
					ma += float64(a.Pix[(y+j)*a.W+x+i])
					mb += float64(b.Pix[(y+j)*a.W+x+i])
				}
			}
			ma, mb = ma/(k*k), mb/(k*k)
			var va, vb, cov float64
			for j := range k {
				for i := range k {
					da := float64(a.Pix[(y+j)*a.W+x+i]) - ma
					db := float64(b.Pix[(y+j)*a.W+x+i]) - mb
					va, vb, cov = va+da*da, vb+db*db, cov+da*db
				}
			}
			va, vb, cov = va/(k*k-1), vb/(k*k-1), cov/(k*k-1)
			sum += ((2*ma*mb + c1) * (2*cov + c2)) / ((ma*ma + mb*mb + c1) * (va + vb + c2))
			n++
		}
	}
	return sum / float64(n)
}
