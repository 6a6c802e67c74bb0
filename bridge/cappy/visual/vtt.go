package visual

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/crosscode/crosscode-mcp/internal/sanitize"
)

// Cue is one WebVTT cue: text shown from StartMs to EndMs (video time, ms).
type Cue struct {
	StartMs, EndMs float64
	Text           string
}

// maxCueText caps the bytes of one cue's text.
const maxCueText = 1000

// WriteVTT writes cues as a WebVTT file, in order of start (stable sort):
// see WriteVTTSeq.
func WriteVTT(w io.Writer, cues []Cue) error {
	sorted := slices.Clone(cues)
	slices.SortStableFunc(sorted, func(a, b Cue) int { return cmp.Compare(a.StartMs, b.StartMs) })
	return WriteVTTSeq(w, slices.Values(sorted))
}

// WriteVTTSeq writes cues, given in order of start, as a WebVTT file: cues
// numbered from 1, times as hh:mm:ss.mmm. Cue text is written by a game, so
// it is made safe: sanitize.Text (no control, bidirectional or invisible
// characters), blank lines removed (they would end the cue), &, < and >
// escaped (which also makes "-->" impossible), at most 1000 bytes. A cue
// with a non-finite time or empty text is left out; a start before 0 or
// before the previous cue's start counts as that, and an end not after the
// start is moved to 1 ms after it. Cues are written as they come: a long
// timeline is never held in memory.
func WriteVTTSeq(w io.Writer, cues iter.Seq[Cue]) error {
	bw := bufio.NewWriter(w)
	bw.WriteString("WEBVTT\n")
	n := 0
	last := 0.0
	for c := range cues {
		if math.IsNaN(c.StartMs) || math.IsInf(c.StartMs, 0) || math.IsNaN(c.EndMs) || math.IsInf(c.EndMs, 0) {
			continue
		}
		text := cueText(c.Text)
		if text == "" {
			continue
		}
		start := math.Max(c.StartMs, last)
		end := math.Max(c.EndMs, start+1)
		last = start
		n++
		fmt.Fprintf(bw, "\n%d\n%s --> %s\n%s\n", n, vttTime(start), vttTime(end), text)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write vtt: %w", err)
	}
	return nil
}

// WriteVTTFile writes cues (see WriteVTTSeq) to the file at path, through
// a temporary file beside it renamed when complete: the file is never seen
// half written.
func WriteVTTFile(path string, cues iter.Seq[Cue]) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".vtt-*")
	if err != nil {
		return fmt.Errorf("write vtt: %w", err)
	}
	defer os.Remove(f.Name())
	if err := WriteVTTSeq(f, cues); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write vtt: %w", err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("write vtt: %w", err)
	}
	return nil
}

// cueText makes untrusted text safe as a cue payload.
func cueText(s string) string {
	s = sanitize.Text(s, maxCueText)
	var lines []string
	for l := range strings.SplitSeq(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	s = strings.Join(lines, "\n")
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// vttTime formats ms as a WebVTT timestamp.
func vttTime(ms float64) string {
	t := int64(math.Round(ms))
	return fmt.Sprintf("%02d:%02d:%02d.%03d", t/3600000, t/60000%60, t/1000%60, t%1000)
}

// Event is a game event to show as a cue: its t (ms), its name and its
// payload (JSON, or nil).
type Event struct {
	T       float64
	Name    string
	Payload []byte
}

// CueOptions tunes EventCues. The zero value (or nil) means the defaults.
type CueOptions struct {
	// MinMs is the shortest a cue lasts (0: 500 ms). Events within MinMs
	// of a cue's first event join that cue.
	MinMs float64
	// MaxMs is the longest a cue lasts (0: 2000 ms); a cue ends earlier at
	// the next cue's start.
	MaxMs float64
	// PayloadChars caps the payload shown after an event's name (0: 60).
	PayloadChars int
	// MaxLines is the most events one cue lists (0: 3); more are counted
	// on a last line ("+5 more").
	MaxLines int
}

func (o *CueOptions) defaults() CueOptions {
	var c CueOptions
	if o != nil {
		c = *o
	}
	if c.MinMs <= 0 {
		c.MinMs = 500
	}
	if c.MaxMs <= 0 {
		c.MaxMs = 2000
	}
	c.MaxMs = math.Max(c.MaxMs, c.MinMs)
	if c.PayloadChars <= 0 {
		c.PayloadChars = 60
	}
	if c.MaxLines <= 0 {
		c.MaxLines = 3
	}
	return c
}

// EventCues turns events (in order of t) into cues: each cue starts at an
// event's t and lists it ("NAME payload", the payload compacted and cut to
// PayloadChars) with the events that follow within MinMs (at most MaxLines,
// then "+N more"); it lasts until the next cue's start, at most MaxMs and
// at least MinMs. Events with a non-finite t are left out; an event
// earlier than the one before it counts at that one's t. Events are read
// once, one at a time: a long timeline is never held in memory.
func EventCues(events iter.Seq[Event], o *CueOptions) iter.Seq[Cue] {
	opt := o.defaults()
	return func(yield func(Cue) bool) {
		var cur *Cue
		var lines []string
		more := 0
		lastT := math.Inf(-1)
		flush := func(next float64) bool {
			if cur == nil {
				return true
			}
			cur.EndMs = math.Min(next, cur.StartMs+opt.MaxMs)
			if more > 0 {
				lines = append(lines, fmt.Sprintf("+%d more", more))
			}
			cur.Text = strings.Join(lines, "\n")
			return yield(*cur)
		}
		for e := range events {
			if math.IsNaN(e.T) || math.IsInf(e.T, 0) {
				continue
			}
			t := math.Max(e.T, lastT)
			lastT = t
			if cur != nil && t < cur.StartMs+opt.MinMs {
				if len(lines) < opt.MaxLines {
					lines = append(lines, eventLine(e, opt.PayloadChars))
				} else {
					more++
				}
				continue
			}
			if !flush(t) {
				return
			}
			cur = &Cue{StartMs: t}
			lines, more = []string{eventLine(e, opt.PayloadChars)}, 0
		}
		flush(math.Inf(1))
	}
}

// eventLine is the cue line of one event: its name and its payload,
// compacted and cut to n characters, each sanitised to one line.
func eventLine(e Event, n int) string {
	name := sanitize.Line(e.Name, 80)
	if len(e.Payload) == 0 || string(e.Payload) == "null" {
		return name
	}
	p := e.Payload
	if len(p) <= 64<<10 {
		var b bytes.Buffer
		if json.Compact(&b, p) == nil {
			p = b.Bytes()
		}
	} else {
		p = p[:4*n]
	}
	payload := sanitize.Line(string(p), 0)
	if r := []rune(payload); len(r) > n {
		payload = strings.TrimRight(string(r[:max(n-1, 0)]), " ") + sanitize.Ellipsis
	}
	return strings.TrimSpace(name + " " + payload)
}
