package protocol

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// parseEventFast parses an event in the exact shape the Go adapter
// library writes, {"type":"event","op":"…","t":N,"event":"…"[,"durationMs":N][,"payload":{…}]},
// without reflection. Anything else (other field order, escapes, spaces)
// returns ok false and goes through the strict decoder, so the fast path
// never accepts what the strict one would refuse.
func parseEventFast(data []byte) (e *Event, ok bool) {
	rest, ok := cutPrefix(data, `{"type":"event","op":"`)
	if !ok {
		return nil, false
	}
	op, rest, ok := plainString(rest)
	if !ok {
		return nil, false
	}
	if rest, ok = cutPrefix(rest, `,"t":`); !ok {
		return nil, false
	}
	t, rest, ok := number(rest)
	if !ok {
		return nil, false
	}
	if rest, ok = cutPrefix(rest, `,"event":"`); !ok {
		return nil, false
	}
	name, rest, ok := plainString(rest)
	if !ok {
		return nil, false
	}
	e = &Event{Type: "event", Op: op, T: t, Event: name}
	if r, found := cutPrefix(rest, `,"durationMs":`); found {
		d, r2, ok := number(r)
		if !ok {
			return nil, false
		}
		e.DurationMs, rest = &d, r2
	}
	if r, found := cutPrefix(rest, `,"payload":`); found {
		if len(r) < 2 || r[len(r)-1] != '}' {
			return nil, false
		}
		p := r[:len(r)-1]
		// Exactly one object, no white space around it: json.Valid allows
		// trailing space, which the strict decoder would not keep.
		if len(p) < 2 || p[0] != '{' || p[len(p)-1] != '}' || !json.Valid(p) {
			return nil, false
		}
		e.Payload = append(json.RawMessage(nil), p...)
		return e, true
	}
	if len(rest) != 1 || rest[0] != '}' {
		return nil, false
	}
	return e, true
}

func cutPrefix(b []byte, p string) ([]byte, bool) {
	if len(b) < len(p) || string(b[:len(p)]) != p {
		return b, false
	}
	return b[len(p):], true
}

// plainString reads a JSON string's body up to its closing quote; strings
// with escapes or control characters are left to the strict decoder.
func plainString(b []byte) (string, []byte, bool) {
	i := bytes.IndexByte(b, '"')
	if i < 0 {
		return "", nil, false
	}
	s := b[:i]
	for _, c := range s {
		if c == '\\' || c < 0x20 {
			return "", nil, false
		}
	}
	if !utf8.Valid(s) {
		return "", nil, false // the strict decoder replaces invalid bytes
	}
	return string(s), b[i+1:], true
}

// number reads a JSON number up to the next ',' or '}'.
func number(b []byte) (float64, []byte, bool) {
	i := bytes.IndexAny(b, ",}")
	if i <= 0 {
		return 0, nil, false
	}
	s := b[:i]
	// JSON numbers only: strconv also takes "inf", "0x1p3", "1_000"…
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E') {
			return 0, nil, false
		}
	}
	if !json.Valid(s) {
		return 0, nil, false
	}
	f, err := strconv.ParseFloat(string(s), 64)
	if err != nil {
		return 0, nil, false
	}
	return f, b[i:], true
}
