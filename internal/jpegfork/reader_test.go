package jpegfork

import (
	"bytes"
	"image"
	"image/jpeg"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crosscode/crosscode-mcp/internal/testing/sysdeps"
)

// goroot returns the Go tree's root, whose image tests have the JPEG files.
func goroot(t testing.TB) string {
	t.Helper()
	if d := os.Getenv("GOROOT"); d != "" {
		if _, err := os.Stat(filepath.Join(d, "src", "image", "testdata")); err == nil {
			return d
		}
	}
	sysdeps.SkipUnderWine(t, "Go's image testdata come from the go command, a Linux program, which Wine cannot start")
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		t.Fatalf("go env GOROOT: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// testdata returns the JPEG files of Go's own image tests: every sampling,
// baseline and progressive, gray, RGB, CMYK, restart intervals.
func testdata(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(goroot(t), "src", "image", "testdata", "*.jpeg"))
	if err != nil || len(files) < 20 {
		t.Fatalf("Go's image testdata: %v, %d files", err, len(files))
	}
	return files
}

// At scale 1 the fork decodes exactly as image/jpeg.
func TestDecodeFullScaleIsImageJPEG(t *testing.T) {
	for _, f := range testdata(t) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		want, werr := jpeg.Decode(bytes.NewReader(data))
		got, gerr := Decode(bytes.NewReader(data), 0)
		if (werr == nil) != (gerr == nil) {
			t.Errorf("%s: error %v, image/jpeg %v", filepath.Base(f), gerr, werr)
			continue
		}
		if werr != nil {
			continue
		}
		samePixels(t, got, want)
	}
}

// textured returns JPEGs of a detailed picture (noise over gradients: long
// Huffman codes) at several qualities and sizes.
func textured(t *testing.T) [][]byte {
	var out [][]byte
	for _, q := range []int{30, 75, 95, 100} {
		for _, sz := range [][2]int{{333, 217}, {64, 8}} {
			img := image.NewRGBA(image.Rect(0, 0, sz[0], sz[1]))
			for i := range img.Pix {
				img.Pix[i] = uint8(i*7/3) ^ uint8(uint32(i)*2654435761>>25)
			}
			var b bytes.Buffer
			if err := jpeg.Encode(&b, img, &jpeg.Options{Quality: q}); err != nil {
				t.Fatal(err)
			}
			out = append(out, b.Bytes())
		}
	}
	return out
}

func TestDecodeTexturedIsImageJPEG(t *testing.T) {
	for _, data := range textured(t) {
		want, err := jpeg.Decode(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		got, err := Decode(bytes.NewReader(data), 0)
		if err != nil {
			t.Fatal(err)
		}
		samePixels(t, got, want)
	}
}

// samePixels fails t unless got and want are the same picture.
func samePixels(t *testing.T, got, want image.Image) {
	t.Helper()
	if got.Bounds() != want.Bounds() {
		t.Fatalf("bounds %v, want %v", got.Bounds(), want.Bounds())
	}
	b := want.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			if got.At(x, y) != want.At(x, y) {
				t.Fatalf("pixel %d,%d is %v, want %v", x, y, got.At(x, y), want.At(x, y))
			}
		}
	}
}

// planes returns the channels of a decoded image (nil for CMYK and RGB).
func planes(img image.Image) [][]uint8 {
	switch m := img.(type) {
	case *image.Gray:
		return [][]uint8{m.Pix}
	case *image.YCbCr:
		return [][]uint8{m.Y, m.Cb, m.Cr}
	}
	return nil
}

// strides returns the row length of each plane.
func strides(img image.Image) []int {
	switch m := img.(type) {
	case *image.Gray:
		return []int{m.Stride}
	case *image.YCbCr:
		return []int{m.YStride, m.CStride, m.CStride}
	}
	return nil
}

// At 1/2, 1/4 and 1/8 each sample of each plane is close to the average of
// the samples it stands for in the full decode: exactly so at 1/8 (the DC
// of a block is its mean), within JPEG's own rounding at 1/2 and 1/4 (the
// band-limited picture at the middle of each group).
func TestDecodeReducedIsTheAverage(t *testing.T) {
	for _, f := range testdata(t) {
		if strings.Contains(f, "truncated") {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		full, err := Decode(bytes.NewReader(data), 0)
		if err != nil {
			t.Fatal(err)
		}
		fb := full.Bounds()
		for shift := uint(1); shift <= 3; shift++ {
			img, err := Decode(bytes.NewReader(data), shift)
			if err != nil {
				t.Fatalf("%s at 1/%d: %v", filepath.Base(f), 1<<shift, err)
			}
			k := 1 << shift
			b := img.Bounds()
			if b.Dx() != (fb.Dx()+k-1)/k || b.Dy() != (fb.Dy()+k-1)/k {
				t.Fatalf("%s at 1/%d: %v from %v", filepath.Base(f), k, b, fb)
			}
			fp, fs := planes(full), strides(full)
			rp, rs := planes(img), strides(img)
			for c := range fp {
				var sum, n float64
				// Whole groups of k×k samples inside the plane.
				rows, cols := len(fp[c])/fs[c]/k, fs[c]/k
				for y := 0; y < rows && y < len(rp[c])/rs[c]; y++ {
					for x := 0; x < cols && x < rs[c]; x++ {
						var avg float64
						for j := range k {
							for i := range k {
								avg += float64(fp[c][(y*k+j)*fs[c]+x*k+i])
							}
						}
						d := float64(rp[c][y*rs[c]+x]) - avg/float64(k*k)
						sum += max(d, -d)
						n++
					}
				}
				limit := 3.5
				if k == 8 {
					limit = 0.6
				}
				if mean := sum / n; mean > limit {
					t.Errorf("%s plane %d at 1/%d: mean error %.2f against the average", filepath.Base(f), c, k, mean)
				}
			}
		}
	}
}

func TestDecodeRejects(t *testing.T) {
	if _, err := Decode(bytes.NewReader(nil), 0); err == nil {
		t.Error("empty input decoded")
	}
	if _, err := Decode(bytes.NewReader([]byte{0xff, 0xd8}), 4); err == nil {
		t.Error("scale 1/16 accepted")
	}
	var _ image.Image // the package returns image.Image values
}

// FuzzDecode: arbitrary bytes at every scale never panic.
func FuzzDecode(f *testing.F) {
	root := goroot(f)
	for _, name := range []string{"video-001.q50.420.jpeg", "video-001.progressive.jpeg", "video-005.gray.q50.2x2.jpeg"} {
		data, err := os.ReadFile(filepath.Join(root, "src", "image", "testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, uint8(3))
	}
	f.Fuzz(func(t *testing.T, data []byte, shift uint8) {
		img, err := Decode(bytes.NewReader(data), uint(shift%4))
		if err == nil && img.Bounds().Empty() {
			t.Fatal("empty image without an error")
		}
		if shift%4 == 0 { // at full scale, exactly image/jpeg
			want, werr := jpeg.Decode(bytes.NewReader(data))
			if (err == nil) != (werr == nil) {
				t.Fatalf("error %v, image/jpeg %v", err, werr)
			}
			if err == nil && werr == nil {
				samePixels(t, img, want)
			}
		}
	})
}
