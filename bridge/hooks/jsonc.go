package hooks

import (
	"encoding/json"
	"fmt"
)

// A small reader of JSON with comments (Gemini CLI's settings allow // and
// /* */ comments; Claude Code's are plain JSON) that keeps where each
// value starts and ends, so install can add its entries as text and leave
// every other byte of a settings file as it was.

// jnode is a JSON value and where it is in the text: [start, end).
type jnode struct {
	kind       byte // '{', '[', '"' (string), 'v' (number, true, false, null)
	start, end int
	members    []jmember // objects
	elems      []*jnode  // arrays
	str        string    // strings
}

// jmember is one member of an object.
type jmember struct {
	key   string
	start int // where the key starts
	value *jnode
}

// member returns the value of key in an object, or nil.
func (n *jnode) member(key string) *jnode {
	if n == nil || n.kind != '{' {
		return nil
	}
	for _, m := range n.members {
		if m.key == key {
			return m.value
		}
	}
	return nil
}

type jparser struct {
	s     []byte
	i     int
	depth int
}

// parseJSONC parses s, a JSON value with comments allowed.
func parseJSONC(s []byte) (*jnode, error) {
	p := &jparser{s: s}
	n, err := p.value()
	if err != nil {
		return nil, err
	}
	if err := p.space(); err != nil {
		return nil, err
	}
	if p.i != len(s) {
		return nil, p.errorf("text after the value")
	}
	return n, nil
}

func (p *jparser) errorf(format string, args ...any) error {
	line := 1
	for _, c := range p.s[:min(p.i, len(p.s))] {
		if c == '\n' {
			line++
		}
	}
	return fmt.Errorf("line %d: %s", line, fmt.Sprintf(format, args...))
}

// space skips white space and comments.
func (p *jparser) space() error {
	for p.i < len(p.s) {
		switch c := p.s[p.i]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			p.i++
		case c == '/' && p.i+1 < len(p.s) && p.s[p.i+1] == '/':
			for p.i < len(p.s) && p.s[p.i] != '\n' {
				p.i++
			}
		case c == '/' && p.i+1 < len(p.s) && p.s[p.i+1] == '*':
			end := p.i + 2
			for end+1 < len(p.s) && !(p.s[end] == '*' && p.s[end+1] == '/') {
				end++
			}
			if end+1 >= len(p.s) {
				return p.errorf("unterminated comment")
			}
			p.i = end + 2
		default:
			return nil
		}
	}
	return nil
}

func (p *jparser) value() (*jnode, error) {
	if err := p.space(); err != nil {
		return nil, err
	}
	if p.i >= len(p.s) {
		return nil, p.errorf("unexpected end")
	}
	if p.depth > 200 {
		return nil, p.errorf("nested too deeply")
	}
	start := p.i
	switch c := p.s[p.i]; c {
	case '{':
		p.depth++
		defer func() { p.depth-- }()
		n := &jnode{kind: '{', start: start}
		p.i++
		for first := true; ; first = false {
			if err := p.space(); err != nil {
				return nil, err
			}
			if p.i < len(p.s) && p.s[p.i] == '}' {
				p.i++
				n.end = p.i
				return n, nil
			}
			if !first {
				if p.i >= len(p.s) || p.s[p.i] != ',' {
					return nil, p.errorf("expected , or }")
				}
				p.i++
				if err := p.space(); err != nil {
					return nil, err
				}
			}
			ks := p.i
			k, err := p.value()
			if err != nil {
				return nil, err
			}
			if k.kind != '"' {
				return nil, p.errorf("expected a member name")
			}
			if err := p.space(); err != nil {
				return nil, err
			}
			if p.i >= len(p.s) || p.s[p.i] != ':' {
				return nil, p.errorf("expected :")
			}
			p.i++
			v, err := p.value()
			if err != nil {
				return nil, err
			}
			n.members = append(n.members, jmember{key: k.str, start: ks, value: v})
		}
	case '[':
		p.depth++
		defer func() { p.depth-- }()
		n := &jnode{kind: '[', start: start}
		p.i++
		for first := true; ; first = false {
			if err := p.space(); err != nil {
				return nil, err
			}
			if p.i < len(p.s) && p.s[p.i] == ']' {
				p.i++
				n.end = p.i
				return n, nil
			}
			if !first {
				if p.i >= len(p.s) || p.s[p.i] != ',' {
					return nil, p.errorf("expected , or ]")
				}
				p.i++
			}
			v, err := p.value()
			if err != nil {
				return nil, err
			}
			n.elems = append(n.elems, v)
		}
	case '"':
		p.i++
		for p.i < len(p.s) && p.s[p.i] != '"' {
			if p.s[p.i] == '\\' {
				p.i++
			}
			p.i++
		}
		if p.i >= len(p.s) {
			return nil, p.errorf("unterminated string")
		}
		p.i++
		n := &jnode{kind: '"', start: start, end: p.i}
		if err := json.Unmarshal(p.s[start:p.i], &n.str); err != nil {
			return nil, p.errorf("bad string: %v", err)
		}
		return n, nil
	default:
		for p.i < len(p.s) && !isDelim(p.s[p.i]) {
			p.i++
		}
		var v any
		if p.i == start || json.Unmarshal(p.s[start:p.i], &v) != nil {
			return nil, p.errorf("unexpected %q", string(p.s[start:max(p.i, start+1)]))
		}
		return &jnode{kind: 'v', start: start, end: p.i}, nil
	}
}

func isDelim(c byte) bool {
	switch c {
	case ',', '}', ']', ':', ' ', '\t', '\n', '\r', '/', '"', '{', '[':
		return true
	}
	return false
}
