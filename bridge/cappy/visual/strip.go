package visual

import (
	"bytes"
	"errors"
)

// JPEG markers that stripJPEG keeps or walks.
const (
	markerSOI   = 0xd8
	markerEOI   = 0xd9
	markerSOS   = 0xda
	markerAPP0  = 0xe0
	markerAPP14 = 0xee
	markerAPP15 = 0xef
	markerCOM   = 0xfe
	markerRST0  = 0xd0
	markerRST7  = 0xd7
	markerTEM   = 0x01
	app14Length = 14 // Adobe's segment: fixed fields only, no text
)

var errJPEGStructure = errors.New("bad JPEG structure")

// stripJPEG returns the JPEG data without what is not picture: APPn
// segments but a well-formed Adobe APP14 (it says how colours were
// transformed), comments, and anything after the end-of-image marker. The
// entropy-coded data is copied as it is. It checks the segment structure
// only: decoding is what checks the picture.
func stripJPEG(data []byte) ([]byte, error) {
	if len(data) < 4 || data[0] != 0xff || data[1] != markerSOI {
		return nil, errJPEGStructure
	}
	out := bytes.NewBuffer(make([]byte, 0, len(data)))
	out.Write(data[:2])
	i := 2
	for {
		// Fill bytes (0xff runs) may precede a marker.
		for i+1 < len(data) && data[i] == 0xff && data[i+1] == 0xff {
			i++
		}
		if i+1 >= len(data) || data[i] != 0xff {
			return nil, errJPEGStructure
		}
		m := data[i+1]
		switch {
		case m == markerEOI:
			out.Write(data[i : i+2])
			return out.Bytes(), nil
		case m == markerTEM || (m >= markerRST0 && m <= markerRST7):
			out.Write(data[i : i+2]) // no length
			i += 2
			continue
		}
		if i+4 > len(data) {
			return nil, errJPEGStructure
		}
		n := int(data[i+2])<<8 | int(data[i+3])
		end := i + 2 + n
		if n < 2 || end > len(data) {
			return nil, errJPEGStructure
		}
		keep := !(m >= markerAPP0 && m <= markerAPP15 || m == markerCOM) ||
			(m == markerAPP14 && n == app14Length && bytes.HasPrefix(data[i+4:end], []byte("Adobe")))
		if keep {
			out.Write(data[i:end])
		}
		i = end
		if m == markerSOS {
			// Entropy-coded data up to the next marker that is not a
			// stuffed 0xff00 or a restart marker.
			j := i
			for ; j+1 < len(data); j++ {
				if data[j] == 0xff {
					if next := data[j+1]; next != 0 && !(next >= markerRST0 && next <= markerRST7) && next != 0xff {
						break
					}
				}
			}
			if j+1 >= len(data) {
				return nil, errJPEGStructure
			}
			out.Write(data[i:j])
			i = j
		}
	}
}
