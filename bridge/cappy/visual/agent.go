package visual

import (
	"bytes"
	"fmt"
	"image"

	"github.com/crosscode/crosscode-mcp/internal/jpegfork"
)

// Defaults of the images made for an agent.
const (
	// DefaultMaxWidth is the widest image given to an agent.
	DefaultMaxWidth = 640
	// DefaultQuality is the JPEG quality of the images made here.
	DefaultQuality = 80
)

// passBitsPerPixel is the most a JPEG may weigh, in bits per pixel, to be
// passed to an agent without re-encoding (quality 85 takes 1 to 3).
const passBitsPerPixel = 4

// AgentJPEG returns the frame file at path (JPEG or PNG; its header is
// checked before any pixel is decoded) as a JPEG for an agent, at most
// maxWidth pixels wide (0: DefaultMaxWidth), with its dimensions. Nothing
// of the file but its picture reaches the agent: no metadata, no comment,
// no trailing bytes.
//
// A larger frame is downscaled by area averaging (aspect kept, JPEGs
// decoded at a reduced scale first) and encoded at the given quality (0:
// DefaultQuality), as is a PNG. A JPEG already within maxWidth and at most
// 4 bits per pixel is not re-encoded: its segments that are not picture are
// dropped and the rest is checked by decoding it (at 1/8 scale, which
// parses all of its entropy-coded data), so the agent gets the game's own
// pixels, at a fraction of the cost.
func AgentJPEG(path string, maxWidth, quality int) (jpg []byte, w, h int, err error) {
	s, err := readSource(path)
	if err != nil {
		return nil, 0, 0, err
	}
	return agentJPEG(s, path, maxWidth, quality)
}

// AgentJPEGData is AgentJPEG of an image in memory (name labels errors):
// a frame that just arrived, before its file is written.
func AgentJPEGData(data []byte, name string, maxWidth, quality int) (jpg []byte, w, h int, err error) {
	if len(data) > MaxFileBytes {
		return nil, 0, 0, fmt.Errorf("%s: over %d bytes: %w", name, MaxFileBytes, ErrTooLarge)
	}
	s, err := checkSource(data)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("%s: %w", name, err)
	}
	return agentJPEG(s, name, maxWidth, quality)
}

func agentJPEG(s *source, path string, maxWidth, quality int) (jpg []byte, w, h int, err error) {
	if maxWidth <= 0 {
		maxWidth = DefaultMaxWidth
	}
	w, h = fit(s.w, s.h, maxWidth)
	if s.format == formatJPEG && w == s.w && len(s.data)*8 <= passBitsPerPixel*w*h {
		if b, err := stripJPEG(s.data); err == nil {
			if _, err := decodeJPEG(b, s.w, 1); err != nil {
				return nil, 0, 0, fmt.Errorf("%s: decode %s: %w", path, MimeJPEG, err)
			}
			return b, w, h, nil
		}
		// A structure that image/jpeg tolerates but stripJPEG does not:
		// decoded and re-encoded below.
	}
	r, err := s.decode(w)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("%s: %w", path, err)
	}
	jpg, err = encodeJPEG(r.scaled420(w, h), quality)
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
	if err := jpegfork.Encode(&b, m, &jpegfork.Options{Quality: min(q, 100)}); err != nil {
		return nil, fmt.Errorf("encode jpeg: %w", err)
	}
	return b.Bytes(), nil
}

// AgentImage is one image made by AgentJPEGs.
type AgentImage struct {
	JPEG          []byte
	Width, Height int
	Err           error
}

// AgentJPEGs makes AgentJPEG(path, maxWidth, quality) of each path, in
// parallel on up to GOMAXPROCS goroutines, and returns the results in the
// order of paths. A frame that fails has its Err set; the others are made.
func AgentJPEGs(paths []string, maxWidth, quality int) []AgentImage {
	out := make([]AgentImage, len(paths))
	parallel(len(paths), func(i int) {
		b, w, h, err := AgentJPEG(paths[i], maxWidth, quality)
		out[i] = AgentImage{JPEG: b, Width: w, Height: h, Err: err}
	})
	return out
}
