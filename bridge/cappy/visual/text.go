package visual

import (
	"image"
	"image/color"
	"strings"

	"github.com/crosscode/crosscode-mcp/internal/sanitize"
	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

// Label drawing: the X11 7x13 bitmap font, printable ASCII only.
var (
	face       = basicfont.Face7x13
	lineHeight = face.Height  // 13 px
	charWidth  = face.Advance // 7 px
	textLuma   = image.NewUniform(color.Gray{0xee})
	bandColor  = color.RGBA{0x20, 0x20, 0x20, 0xff} // gray: text is drawn in luma only
	sheetColor = color.RGBA{0x10, 0x10, 0x12, 0xff}
	emptyColor = color.RGBA{0x38, 0x38, 0x38, 0xff}
)

// maxLabelInput is how much of a label is looked at: a label is one short
// line, however long the game made it.
const maxLabelInput = 1024

// cutMark ends a label cut to fit.
const cutMark = ".."

// labelText returns s as it will be drawn in at most n characters: made
// safe with sanitize.Line (no control, bidirectional or invisible
// characters; one line), each character the font lacks (all but printable
// ASCII) shown as '?', and cut with ".." when too long.
func labelText(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if len(s) > maxLabelInput {
		s = s[:maxLabelInput]
	}
	s = sanitize.Line(s, 0)
	var b strings.Builder
	count := 0
	for _, r := range s {
		if count > n {
			break
		}
		if r < 0x20 || r > 0x7e {
			r = '?'
		}
		b.WriteRune(r)
		count++
	}
	out := b.String()
	if len(out) > n {
		if n <= len(cutMark) {
			return out[:n]
		}
		out = strings.TrimRight(out[:n-len(cutMark)], " ") + cutMark
	}
	return out
}

// drawLabel draws the lines of a label in the band rectangle, one line per
// lineHeight from its top, each cut to the band's width (with pad pixels on
// each side).
func drawLabel(k canvas, band image.Rectangle, lines []string, pad int) {
	k.fill(band, bandColor)
	drawText(k, band, lines, pad)
}

// drawText draws lines as drawLabel does, on a gray background already
// there (text is drawn in luma only).
func drawText(k canvas, band image.Rectangle, lines []string, pad int) {
	n := (band.Dx() - 2*pad) / charWidth
	d := font.Drawer{Dst: k.luma(), Src: textLuma, Face: face}
	for i, l := range lines {
		top := band.Min.Y + pad + i*lineHeight
		if top+lineHeight > band.Max.Y {
			break
		}
		d.Dot = fixed.P(band.Min.X+pad, top+face.Ascent)
		d.DrawString(labelText(l, n))
	}
}

// bandHeight is the height of a band with room for n lines.
func bandHeight(n, pad int) int {
	if n <= 0 {
		return 0
	}
	return n*lineHeight + 2*pad
}
