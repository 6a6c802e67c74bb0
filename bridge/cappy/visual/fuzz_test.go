package visual

import (
	"bytes"
	"image/jpeg"
	"image/png"
	"path/filepath"
	"testing"
)

// FuzzDecode feeds arbitrary bytes, as a frame file, to the entries that
// decode frames (ContactSheet and SideBySide share their decoding): they must return an error or a valid result, never panic,
// and never decode an image over MaxDim.
func FuzzDecode(f *testing.F) {
	var j, p bytes.Buffer
	jpeg.Encode(&j, arena(64, 36).render(), nil)
	png.Encode(&p, arena(48, 30).render())
	f.Add(j.Bytes())
	f.Add(p.Bytes())
	f.Add(j.Bytes()[:j.Len()/2])
	f.Add(p.Bytes()[:p.Len()-20])
	f.Add(jpegWithSize(f, 60000, 60000))
	f.Add([]byte("\x89PNG\r\n\x1a\n"))
	f.Add([]byte{0xff, 0xd8, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "frame")
		writeFile(t, filepath.Dir(path), "frame", data)
		if b, w, h, err := AgentJPEG(path, 100, 0); err == nil {
			if w <= 0 || h <= 0 || w > 100 || len(b) == 0 {
				t.Fatalf("AgentJPEG: %dx%d, %d bytes", w, h, len(b))
			}
		}
		if s, err := SignatureOf(path); err == nil {
			if s.W != SignatureWidth || len(s.Pix) != 3*s.W*s.H {
				t.Fatalf("signature %dx%d of %d", s.W, s.H, len(s.Pix))
			}
		}
	})
}
