package cappy

import (
	"bytes"
	"encoding/base64"
	"image"
	"image/png"
	"strconv"

	xdraw "golang.org/x/image/draw"

	"github.com/crosscode/crosscode-mcp/internal/jpegfork"
	"github.com/crosscode/crosscode-mcp/protocol"
)

// frameEncoder scales and encodes frames, reusing its buffers; one per
// operation, used by its worker only.
type frameEncoder struct {
	quality int
	scaled  *image.RGBA
	img     bytes.Buffer
	msg     []byte
	png     png.Encoder
	pngBuf  pngPool
}

// frameSize is the size a w x h picture is sent at: at most maxWidth wide
// and protocol.MaxFrameSide high, keeping its aspect ratio.
func frameSize(w, h, maxWidth int) (int, int) {
	tw, th := w, h
	if tw > maxWidth {
		tw, th = maxWidth, max(1, (h*maxWidth+w/2)/w)
	}
	if th > protocol.MaxFrameSide {
		tw, th = max(1, (tw*protocol.MaxFrameSide+th/2)/th), protocol.MaxFrameSide
	}
	return tw, th
}

// encode returns img as mime, scaled to fit maxWidth, with its size; ok
// is false when it stays over protocol.MaxFrameBytes. The data is valid
// until the next call.
func (e *frameEncoder) encode(img image.Image, mime string, maxWidth int) (data []byte, w, h int, ok bool) {
	b := img.Bounds()
	w, h = frameSize(b.Dx(), b.Dy(), maxWidth)
	src := img
	if w != b.Dx() || h != b.Dy() {
		if e.scaled == nil || e.scaled.Rect.Dx() != w || e.scaled.Rect.Dy() != h {
			e.scaled = image.NewRGBA(image.Rect(0, 0, w, h))
		}
		// Up to half size, the approximate bilinear filter is close to an
		// average of the source pixels and much cheaper; beyond that it
		// would skip pixels, so take the proper one.
		scaler := xdraw.Interpolator(xdraw.ApproxBiLinear)
		if b.Dx() > 2*w || b.Dy() > 2*h {
			scaler = xdraw.BiLinear
		}
		scaler.Scale(e.scaled, e.scaled.Rect, img, b, xdraw.Src, nil)
		src = e.scaled
	}
	if mime == protocol.MimePNG {
		e.img.Reset()
		e.png.CompressionLevel = png.BestSpeed
		e.png.BufferPool = &e.pngBuf
		if err := e.png.Encode(&e.img, src); err != nil || e.img.Len() > protocol.MaxFrameBytes {
			return nil, w, h, false
		}
		return e.img.Bytes(), w, h, true
	}
	for _, q := range []int{e.quality, min(e.quality, 50), minFrameQuality} {
		e.img.Reset()
		if err := jpegfork.Encode(&e.img, src, &jpegfork.Options{Quality: q}); err != nil {
			return nil, w, h, false
		}
		if e.img.Len() <= protocol.MaxFrameBytes {
			return e.img.Bytes(), w, h, true
		}
	}
	return nil, w, h, false
}

// message encodes a frame message as encoding/json would, into a reused
// buffer: {"type":"frame","op":…,"t":…,"mime":…,"width":…,"height":…,"data":"<base64>","reason":…}.
func (e *frameEncoder) message(op string, t float64, mime string, w, h int, data []byte, reason string) []byte {
	b := append(e.msg[:0], `{"type":"frame","op":`...)
	b = appendQuoted(b, op)
	b = append(b, `,"t":`...)
	b = appendFloat(b, t)
	b = append(b, `,"mime":`...)
	b = appendQuoted(b, mime)
	b = append(b, `,"width":`...)
	b = strconv.AppendInt(b, int64(w), 10)
	b = append(b, `,"height":`...)
	b = strconv.AppendInt(b, int64(h), 10)
	b = append(b, `,"data":"`...)
	b = base64.StdEncoding.AppendEncode(b, data)
	b = append(b, '"')
	if reason != "" {
		b = append(b, `,"reason":`...)
		b = appendQuoted(b, reason)
	}
	b = append(b, '}')
	e.msg = b
	return b
}

// pngPool keeps one png.EncoderBuffer between frames.
type pngPool struct{ b *png.EncoderBuffer }

func (p *pngPool) Get() *png.EncoderBuffer  { return p.b }
func (p *pngPool) Put(b *png.EncoderBuffer) { p.b = b }
