// Package sanitize makes untrusted text — written by other agents or by a
// game — safe to show to an LLM agent or a terminal.
//
// It removes what can hide instructions from a human reviewer or reorder
// what they see, and what can corrupt a display: invalid UTF-8, control
// characters, bidirectional overrides (Trojan Source), zero-width and other
// invisible characters, Unicode tag characters (which can smuggle invisible
// ASCII), variation selectors and private-use characters. It does not
// normalise, translate or judge the visible text: a prompt injection in plain
// words stays plain words; it is just no longer invisible.
//
// Both functions return their argument unchanged, without allocating, when
// it is already clean and short enough.
package sanitize

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Ellipsis is appended to text cut by a byte cap.
const Ellipsis = "…"

// Text returns s made safe to show:
//
//   - invalid UTF-8 is replaced with U+FFFD (one per run of invalid bytes);
//   - C0 control characters, DEL and C1 control characters (U+0080–U+009F)
//     are removed, except \n and \t; \r\n becomes \n and a lone \r becomes
//     \n, as do U+2028 LINE SEPARATOR and U+2029 PARAGRAPH SEPARATOR;
//   - bidirectional controls are removed: U+061C, U+200E, U+200F,
//     U+202A–U+202E, U+2066–U+2069;
//   - zero-width and invisible characters are removed: U+200B–U+200D,
//     U+2060–U+2065, U+FEFF, U+180E, U+00AD (soft hyphen), and also U+034F
//     (combining grapheme joiner), the Mongolian variation selectors
//     U+180B–U+180F, the Hangul fillers U+115F, U+1160, U+3164 and U+FFA0,
//     U+FFF0–U+FFFB (interlinear annotation and reserved) and the musical
//     formatting controls U+1D173–U+1D17A;
//   - the whole of plane 14 is removed: Unicode tag characters
//     (U+E0000–U+E007F), variation selectors U+E0100–U+E01EF and the
//     reserved rest;
//   - variation selectors U+FE00–U+FE0F are removed;
//   - private-use characters are removed: U+E000–U+F8FF and planes 15 and 16
//     (U+F0000–U+10FFFF).
//
// Removing U+200D ZERO WIDTH JOINER breaks emoji ZWJ sequences ("👩‍💻"
// shows as "👩💻"), removing U+FE0F turns some emoji into their text form,
// and removing tags turns subdivision flags into a plain black flag. That
// is accepted: the same characters are the ones used to hide text.
//
// The cleaned text is then capped at max bytes, never splitting a rune:
// when it is longer, it is cut and [Ellipsis] appended, the result
// including the ellipsis being at most max bytes (when max is smaller than
// the ellipsis, the text is cut without one). max <= 0 means no cap.
//
// Text is idempotent: Text(Text(s, max), max) == Text(s, max).
func Text(s string, max int) string {
	if isClean(s, false) {
		return capText(s, max, false)
	}
	return capText(clean(s, max, false), max, false)
}

// Line is [Text] for one-line fields (names, titles, summaries): after
// cleaning, newlines, tabs and all other Unicode white space (U+00A0,
// U+2000–U+200A, U+3000, …) become spaces, runs of spaces collapse into
// one, and the result is trimmed. Capping works as in Text, except that
// spaces left before the ellipsis are trimmed too.
//
// Line is idempotent: Line(Line(s, max), max) == Line(s, max).
func Line(s string, max int) string {
	if isClean(s, true) {
		return capText(s, max, true)
	}
	return capText(clean(s, max, true), max, true)
}

// isClean reports whether clean would return s unchanged: every rune is
// kept as it is (for a line: no white space but single inner ASCII spaces).
func isClean(s string, line bool) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == ' ':
				if line && (i == 0 || i == len(s)-1 || s[i+1] == ' ') {
					return false
				}
			case c == '\n' || c == '\t':
				if line {
					return false
				}
			case c < 0x20 || c == 0x7f:
				return false
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 || dropped(r) || r == '\u2028' || r == '\u2029' ||
			line && unicode.IsSpace(r) {
			return false
		}
		i += n
	}
	return true
}

// clean applies the rules of Text (and with line, of Line) except the cap.
// With max > 0 it stops once the output exceeds max bytes: the rest could
// not change what capText keeps.
func clean(s string, max int, line bool) string {
	var b strings.Builder
	if max > 0 && max < len(s) {
		b.Grow(max + utf8.UTFMax)
	} else {
		b.Grow(len(s))
	}
	space := false // line: a space is due before the next visible rune
	for i := 0; i < len(s) && (max <= 0 || b.Len() <= max); {
		// Decode one unit of input into r (ok=false: drop it) and advance.
		var r rune
		ok := true
		if c := s[i]; c < utf8.RuneSelf {
			i++
			switch {
			case c == '\r':
				r = '\n'
				if i < len(s) && s[i] == '\n' {
					i++
				}
			case c < 0x20 && c != '\n' && c != '\t' || c == 0x7f:
				ok = false
			default:
				r = rune(c)
			}
		} else {
			var n int
			r, n = utf8.DecodeRuneInString(s[i:])
			i += n
			switch {
			case r == utf8.RuneError && n == 1:
				// One replacement for the whole run of invalid bytes.
				for i < len(s) && s[i] >= utf8.RuneSelf {
					if r2, n2 := utf8.DecodeRuneInString(s[i:]); r2 != utf8.RuneError || n2 != 1 {
						break
					}
					i++
				}
			case r == '\u2028' || r == '\u2029':
				r = '\n'
			case dropped(r):
				ok = false
			}
		}
		if !ok {
			continue
		}
		if line {
			if r == ' ' || r == '\n' || r == '\t' || r >= utf8.RuneSelf && unicode.IsSpace(r) {
				space = b.Len() > 0
				continue
			}
			if space {
				b.WriteByte(' ')
				space = false
			}
		}
		b.WriteRune(r)
	}
	return b.String()
}

// capText cuts s, which is clean, to at most max bytes at a rune boundary,
// appending Ellipsis if it fits. For a line, spaces before the cut are
// trimmed.
func capText(s string, max int, line bool) string {
	if max <= 0 || len(s) <= max {
		return s
	}
	room := max
	if max >= len(Ellipsis) {
		room -= len(Ellipsis)
	}
	for room > 0 && !utf8.RuneStart(s[room]) {
		room--
	}
	head := s[:room]
	if line {
		head = strings.TrimRight(head, " ")
	}
	if max < len(Ellipsis) {
		return head
	}
	return head + Ellipsis
}

// dropped reports whether the non-ASCII rune r is removed by Text. (U+2028
// and U+2029 are not dropped but turned into newlines.)
func dropped(r rune) bool {
	switch {
	case r < 0x2000:
		return r < 0xa0 || // C1 controls
			r == 0xad || // soft hyphen
			r == 0x34f || // combining grapheme joiner
			r == 0x61c || // Arabic letter mark
			r == 0x115f || r == 0x1160 || // Hangul fillers
			r >= 0x180b && r <= 0x180f // Mongolian variation selectors, U+180E vowel separator
	case r < 0xe000:
		return r >= 0x200b && r <= 0x200f || // zero width space/non-joiner/joiner, LRM, RLM
			r >= 0x202a && r <= 0x202e || // bidi embeddings and overrides
			r >= 0x2060 && r <= 0x206f || // word joiner, invisible operators, bidi isolates, deprecated format controls
			r == 0x3164 // Hangul filler
	case r <= 0xf8ff:
		return true // private use area
	case r < 0x10000:
		return r >= 0xfe00 && r <= 0xfe0f || // variation selectors
			r == 0xfeff || // zero width no-break space, BOM
			r == 0xffa0 || // halfwidth Hangul filler
			r >= 0xfff0 && r <= 0xfffb // reserved, interlinear annotation
	default:
		return r >= 0xe0000 && r <= 0xe0fff || // tags, variation selectors supplement
			r >= 0xf0000 || // supplementary private use areas A and B
			// Every other invisible format character (Cf: musical symbol
			// formatting, shorthand and hieroglyph format controls, ...),
			// except the two visible number marks of Kaithi.
			unicode.Is(unicode.Cf, r) && r != 0x110bd && r != 0x110cd
	}
}

// Tree sanitizes every string of a decoded JSON value (from
// encoding/json: maps, slices, strings, numbers): object keys as one line
// of at most keyMax bytes, strings by str. Lists are sanitized in place.
func Tree(v any, keyMax int, str func(string) string) any {
	switch x := v.(type) {
	case string:
		return str(x)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[Line(k, keyMax)] = Tree(e, keyMax, str)
		}
		return out
	case []any:
		for i, e := range x {
			x[i] = Tree(e, keyMax, str)
		}
		return x
	}
	return v
}
