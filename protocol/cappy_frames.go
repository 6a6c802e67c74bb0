package protocol

import (
	"bytes"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"math"
	"slices"
)

// Frames: what the agent sees, an extension of the adapter protocol v1
// (crosscode-mcp spec, section 7). A controller asks for frames only from
// an adapter that advertised CapFrames, with a FramesRequest on
// prepare_scenario, prepare_replay or record_start; the adapter then sends
// Frame messages between its started and its completed or failed.

// CapFrames is the capability of an adapter that sends frames when asked.
const CapFrames = "frames"

// The image formats of frames.
const (
	MimeJPEG = "image/jpeg"
	MimePNG  = "image/png"
)

// FrameMimes are the formats a frame may have, in the controller's order
// of preference.
var FrameMimes = []string{MimeJPEG, MimePNG}

// Limits of frames.
const (
	MinFrameFPS   = 0.1
	MaxFrameFPS   = 30
	MaxFrameBytes = 1 << 20 // decoded image bytes of one frame
	MaxFrameSide  = 4096    // pixels, either side
	MinFrameWidth = 16      // the smallest maxWidth a controller asks for
)

// FramesRequest asks the adapter for frames during one operation: FPS
// frames per second of the operation's presented clock, at most MaxWidth
// pixels wide, in one of Formats.
type FramesRequest struct {
	FPS      float64  `json:"fps" jsonschema:"minimum=0.1,maximum=30"`
	MaxWidth int      `json:"maxWidth" jsonschema:"minimum=16,maximum=4096"`
	Formats  []string `json:"formats" jsonschema:"minItems=1,enum=image/jpeg,enum=image/png"`
}

// Validate checks a request's values.
func (r *FramesRequest) Validate() error {
	c := &checker{}
	if !(r.FPS >= MinFrameFPS && r.FPS <= MaxFrameFPS) {
		c.fail("frames.fps", "must be from %g to %g, got %v", MinFrameFPS, float64(MaxFrameFPS), r.FPS)
	}
	if r.MaxWidth < MinFrameWidth || r.MaxWidth > MaxFrameSide {
		c.fail("frames.maxWidth", "must be from %d to %d, got %d", MinFrameWidth, MaxFrameSide, r.MaxWidth)
	}
	if len(r.Formats) == 0 {
		c.fail("frames.formats", "required: at least one of %v", FrameMimes)
	}
	for i, f := range r.Formats {
		if !slices.Contains(FrameMimes, f) {
			c.fail(fmt.Sprintf("frames.formats[%d]", i), "must be one of %v, got %q", FrameMimes, f)
		}
		if slices.Index(r.Formats, f) != i {
			c.fail(fmt.Sprintf("frames.formats[%d]", i), "duplicate %q", f)
		}
	}
	return c.result()
}

// Frame is one picture of an operation. T is on the operation's presented
// clock (the clock of its events), non-decreasing among its frames. Data
// is the image itself (base64 on the wire), at most MaxFrameBytes. Reason,
// when set, says why the adapter sent this frame outside the asked rate
// (an event name, for example).
type Frame struct {
	Type   string  `json:"type" jsonschema:"enum=frame"`
	Op     string  `json:"op"`
	T      float64 `json:"t" jsonschema:"minimum=0"`
	Mime   string  `json:"mime" jsonschema:"enum=image/jpeg,enum=image/png"`
	Width  int     `json:"width" jsonschema:"minimum=1,maximum=4096"`
	Height int     `json:"height" jsonschema:"minimum=1,maximum=4096"`
	Data   []byte  `json:"data"`
	Reason string  `json:"reason,omitempty"`
}

// MaxFrameReasonBytes bounds a frame's reason.
const MaxFrameReasonBytes = MaxEventNameBytes

// checkFrame checks a decoded frame's fields and its image (see
// CheckFrameImage).
func checkFrame(f *Frame) error {
	c := &checker{}
	c.id("op", f.Op, true)
	if !(f.T >= 0) || math.IsInf(f.T, 1) {
		c.fail("t", "must be a finite, non-negative number of milliseconds, got %v", f.T)
	}
	if !slices.Contains(FrameMimes, f.Mime) {
		c.fail("mime", "must be one of %v, got %q", FrameMimes, f.Mime)
	}
	if f.Width < 1 || f.Width > MaxFrameSide || f.Height < 1 || f.Height > MaxFrameSide {
		c.fail("width", "the image must be from 1x1 to %dx%d pixels, got %dx%d", MaxFrameSide, MaxFrameSide, f.Width, f.Height)
	}
	c.text("reason", f.Reason, MaxFrameReasonBytes, false)
	if err := c.result(); err != nil {
		return err
	}
	return CheckFrameImage(f.Mime, f.Width, f.Height, f.Data)
}

var (
	jpegMagic = []byte{0xFF, 0xD8, 0xFF}
	pngMagic  = []byte("\x89PNG\r\n\x1a\n")
)

// CheckFrameImage checks that data is an image of the given format and
// size, as far as its header tells: at most MaxFrameBytes, the format's
// magic bytes, and the dimensions its header states. It reads the header
// only, never the pixels. It returns nil or a *FieldError naming data.
func CheckFrameImage(mime string, width, height int, data []byte) error {
	switch {
	case len(data) == 0:
		return fieldErr("data", "required: the image, base64-encoded")
	case len(data) > MaxFrameBytes:
		return fieldErr("data", "the image is %d bytes, over the %d a frame may have", len(data), MaxFrameBytes)
	}
	var cfg image.Config
	var err error
	switch mime {
	case MimeJPEG:
		if !bytes.HasPrefix(data, jpegMagic) {
			return fieldErr("data", "is not a JPEG image (its first bytes are not FF D8 FF), but mime says %s", mime)
		}
		cfg, err = jpeg.DecodeConfig(bytes.NewReader(data))
	case MimePNG:
		if !bytes.HasPrefix(data, pngMagic) {
			return fieldErr("data", "is not a PNG image (no PNG signature), but mime says %s", mime)
		}
		cfg, err = png.DecodeConfig(bytes.NewReader(data))
	default:
		return fieldErr("mime", "must be one of %v, got %q", FrameMimes, mime)
	}
	if err != nil {
		return fieldErr("data", "the %s header does not decode: %v", mime, err)
	}
	if cfg.Width != width || cfg.Height != height {
		return fieldErr("data", "the image is %dx%d, but the frame says %dx%d", cfg.Width, cfg.Height, width, height)
	}
	return nil
}

// SniffFrameMime names the format of an image by its magic bytes ("" if
// neither JPEG nor PNG).
func SniffFrameMime(data []byte) string {
	switch {
	case bytes.HasPrefix(data, jpegMagic):
		return MimeJPEG
	case bytes.HasPrefix(data, pngMagic):
		return MimePNG
	}
	return ""
}
