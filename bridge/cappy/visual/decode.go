package visual

import (
	"bufio"
	"bytes"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"io"
	"os"
)

// format is an image file format known by its magic bytes.
type format int

const (
	formatUnknown format = iota
	formatJPEG
	formatPNG
)

// mime returns the format's mime type.
func (f format) mime() string {
	if f == formatPNG {
		return MimePNG
	}
	return MimeJPEG
}

var pngMagic = []byte("\x89PNG\r\n\x1a\n")

// sniff returns the format of data from its magic bytes.
func sniff(data []byte) format {
	switch {
	case len(data) >= 3 && data[0] == 0xff && data[1] == 0xd8 && data[2] == 0xff:
		return formatJPEG
	case bytes.HasPrefix(data, pngMagic):
		return formatPNG
	}
	return formatUnknown
}

// source is a frame file read into memory whose header has been checked.
type source struct {
	data   []byte
	format format
	w, h   int
}

// readSource reads the image file at path, at most MaxFileBytes, and checks
// its format and header dimensions without decoding pixels.
func readSource(path string) (*source, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(data) > MaxFileBytes {
		return nil, fmt.Errorf("%s: file over %d bytes: %w", path, MaxFileBytes, ErrTooLarge)
	}
	s, err := checkSource(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// probeFile checks the header of the image file at path, reading only as
// much of it as its header takes.
func probeFile(path string) (format, int, int, error) {
	f, err := os.Open(path)
	if err != nil {
		return formatUnknown, 0, 0, err
	}
	defer f.Close()
	br := bufio.NewReader(io.LimitReader(f, MaxFileBytes))
	magic, _ := br.Peek(len(pngMagic))
	s, err := checkHeader(sniff(magic), br)
	if err != nil {
		return formatUnknown, 0, 0, fmt.Errorf("%s: %w", path, err)
	}
	return s.format, s.w, s.h, nil
}

// checkSource identifies data by its magic bytes and checks its header.
func checkSource(data []byte) (*source, error) {
	s, err := checkHeader(sniff(data), bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	s.data = data
	return s, nil
}

// checkHeader reads the header of an image of format f from r and checks
// its dimensions.
func checkHeader(f format, r io.Reader) (*source, error) {
	s := &source{format: f}
	var cfg image.Config
	var err error
	switch f {
	case formatJPEG:
		cfg, err = jpeg.DecodeConfig(r)
	case formatPNG:
		cfg, err = png.DecodeConfig(r)
	default:
		return nil, ErrFormat
	}
	if err != nil {
		return nil, fmt.Errorf("%s header: %w", s.format.mime(), err)
	}
	if cfg.Width <= 0 || cfg.Height <= 0 {
		return nil, fmt.Errorf("%s header: empty image %dx%d: %w", s.format.mime(), cfg.Width, cfg.Height, ErrFormat)
	}
	if cfg.Width > MaxDim || cfg.Height > MaxDim {
		return nil, fmt.Errorf("%dx%d over %dx%d: %w", cfg.Width, cfg.Height, MaxDim, MaxDim, ErrTooLarge)
	}
	s.w, s.h = cfg.Width, cfg.Height
	return s, nil
}

// decode decodes the source into a raster at least minW pixels wide (or the
// source's full width when smaller). JPEG sources may be decoded at 1/2, 1/4
// or 1/8 scale when that is still at least minW wide.
func (s *source) decode(minW int) (*raster, error) {
	var img image.Image
	var err error
	switch s.format {
	case formatJPEG:
		img, err = decodeJPEG(s.data, s.w, minW)
	case formatPNG:
		img, err = png.Decode(bytes.NewReader(s.data))
	default:
		err = ErrFormat
	}
	if err != nil {
		return nil, fmt.Errorf("decode %s: %w", s.format.mime(), err)
	}
	return rasterOf(img), nil
}

// decodeFile reads, checks and decodes the image file at path, at least minW
// wide (see source.decode).
func decodeFile(path string, minW int) (*raster, error) {
	s, err := readSource(path)
	if err != nil {
		return nil, err
	}
	r, err := s.decode(minW)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}
