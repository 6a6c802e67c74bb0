package visual

import (
	"bytes"
	"image"

	"github.com/crosscode/crosscode-mcp/internal/jpegfork"
)

// jpegShift returns the DCT-domain scale (as a shift: 1/2^shift, at most
// 1/8) at which a JPEG w pixels wide is still at least minW wide.
func jpegShift(w, minW int) uint {
	shift := uint(0)
	for shift < 3 && (w+(2<<shift)-1)>>(shift+1) >= max(minW, 1) {
		shift++
	}
	return shift
}

// decodeJPEG decodes a JPEG w pixels wide at the smallest DCT-domain scale
// that is still at least minW wide.
func decodeJPEG(data []byte, w, minW int) (image.Image, error) {
	return jpegfork.Decode(bytes.NewReader(data), jpegShift(w, minW))
}
