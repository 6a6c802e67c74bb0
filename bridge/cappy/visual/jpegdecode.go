package visual

import (
	"bytes"
	"image"
	"image/jpeg"
)

// decodeJPEG decodes a JPEG of width w, at least minW wide.
func decodeJPEG(data []byte, w, minW int) (image.Image, error) {
	_, _ = w, minW
	return jpeg.Decode(bytes.NewReader(data))
}
