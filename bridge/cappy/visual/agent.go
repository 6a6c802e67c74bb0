package visual

import (
	"bytes"
	"fmt"
	"image"
	"image/jpeg"
)

// Defaults of the images made for an agent.
const (
	// DefaultMaxWidth is the widest image given to an agent.
	DefaultMaxWidth = 640
	// DefaultQuality is the JPEG quality of the images made here.
	DefaultQuality = 80
)

// AgentJPEG decodes the frame file at path (JPEG or PNG; its header is
// checked before any pixel is decoded) and returns it as a JPEG at most
// maxWidth pixels wide (0: DefaultMaxWidth), downscaled by area averaging
// with its aspect kept and never upscaled, at the given JPEG quality (0:
// DefaultQuality), with its dimensions. The image is always re-encoded, so
// nothing of the file but its pixels (no metadata, no trailing bytes)
// reaches the agent.
func AgentJPEG(path string, maxWidth, quality int) (jpg []byte, w, h int, err error) {
	if maxWidth <= 0 {
		maxWidth = DefaultMaxWidth
	}
	s, err := readSource(path)
	if err != nil {
		return nil, 0, 0, err
	}
	w, h = fit(s.w, s.h, maxWidth)
	r, err := s.decode(w)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("%s: %w", path, err)
	}
	jpg, err = encodeJPEG(r.scaled(w, h), quality)
	if err != nil {
		return nil, 0, 0, err
	}
	return jpg, w, h, nil
}

// encodeJPEG encodes m at quality q (0: DefaultQuality; clamped to 1..100).
func encodeJPEG(m image.Image, q int) ([]byte, error) {
	if q <= 0 {
		q = DefaultQuality
	}
	var b bytes.Buffer
	if err := jpeg.Encode(&b, m, &jpeg.Options{Quality: min(q, 100)}); err != nil {
		return nil, fmt.Errorf("encode jpeg: %w", err)
	}
	return b.Bytes(), nil
}
