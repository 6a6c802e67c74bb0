// Package visual does the image and video work of the capture tools, as pure
// functions over frame files on disk: images for an agent (JPEG, bounded
// width), contact sheets of labelled thumbnails, visual signatures and their
// difference, side-by-side comparisons, WebVTT cues of a game's events and
// MP4 videos made by ffmpeg.
//
// Frame files come from a game and are trusted as little as possible: a file
// is read only up to [MaxFileBytes], its format is taken from its own magic
// bytes (JPEG or PNG, nothing else), and its header's dimensions are checked
// against [MaxDim] before any pixel is decoded, so a decompression bomb costs
// a header read. Text written by a game (labels, cue text) is sanitised before
// it is drawn or written.
//
// Image work is deterministic and pure Go. Downscaling is an area average
// (every source pixel weighs by the area it covers), which keeps thin lines
// and small sprites visible and JPEG noise out; JPEG sources are decoded at a
// reduced scale in the DCT domain when the output is at least two times
// smaller, which is what makes a contact sheet of large frames cheap.
package visual

import (
	"errors"
)

// Limits on frame files.
const (
	// MaxDim is the largest width or height of a frame that is decoded.
	MaxDim = 4096
	// MaxFileBytes is the largest frame file that is read.
	MaxFileBytes = 32 << 20
)

// Mime types of frames.
const (
	MimeJPEG = "image/jpeg"
	MimePNG  = "image/png"
)

// Errors that callers may test with errors.Is.
var (
	// ErrFormat is returned for a file that is neither JPEG nor PNG.
	ErrFormat = errors.New("not a JPEG or PNG image")
	// ErrTooLarge is returned for a file over MaxFileBytes or an image over
	// MaxDim in either dimension.
	ErrTooLarge = errors.New("image too large")
	// ErrNoFrames is returned by MakeMP4 when no frame could be used.
	ErrNoFrames = errors.New("no usable frames")
)

// Frame is one stored frame: a JPEG or PNG file with its presented t.
type Frame struct {
	// T is the presented time in ms on the operation's clock.
	T float64
	// Path is the image file (JPEG or PNG).
	Path string
	// Mime is "image/jpeg" or "image/png". It is informative: the file's own
	// magic bytes decide how it is read.
	Mime string
	// Width and Height are the frame's dimensions as stored (informative).
	Width, Height int
}
