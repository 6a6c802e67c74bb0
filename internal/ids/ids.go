// Package ids makes entity ids: a short kind prefix, then a ULID-style
// body (48 bits of milliseconds, 80 random bits, Crockford base32), so ids
// sort by creation time and index well.
package ids

import (
	"crypto/rand"
	"encoding/binary"
	"time"
)

const alphabet = "0123456789abcdefghjkmnpqrstvwxyz"

// New returns prefix + "_" + a 26-character time-ordered random id.
func New(prefix string) string {
	return newAt(prefix, time.Now())
}

func newAt(prefix string, t time.Time) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(t.UnixMilli())<<16)
	if _, err := rand.Read(b[6:]); err != nil {
		panic("crypto/rand: " + err.Error())
	}
	// 128 bits -> 26 base32 characters (the first carries 3 bits).
	out := make([]byte, 0, len(prefix)+27)
	out = append(out, prefix...)
	out = append(out, '_')
	hi := binary.BigEndian.Uint64(b[:8])
	lo := binary.BigEndian.Uint64(b[8:])
	var chars [26]byte
	for i := 25; i >= 0; i-- {
		chars[i] = alphabet[lo&31]
		lo = lo>>5 | hi<<59
		hi >>= 5
	}
	return string(append(out, chars[:]...))
}
