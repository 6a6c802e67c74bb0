package visual

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// vttCue is a cue parsed back from a WebVTT file.
type vttCue struct {
	id, start, end string
	text           []string
}

// parseVTT parses the WebVTT that WriteVTT writes, strictly: the header,
// then blocks after a blank line, each an id, a timing line and text lines.
func parseVTT(t *testing.T, s string) []vttCue {
	t.Helper()
	if !strings.HasSuffix(s, "\n") {
		t.Fatalf("no final newline: %q", s)
	}
	blocks := strings.Split(strings.TrimSuffix(s, "\n"), "\n\n")
	if blocks[0] != "WEBVTT" {
		t.Fatalf("no WEBVTT header in %q", s)
	}
	var cues []vttCue
	for _, b := range blocks[1:] {
		lines := strings.Split(b, "\n")
		if len(lines) < 3 {
			t.Fatalf("cue without text: %q", b)
		}
		c := vttCue{id: lines[0], text: lines[2:]}
		if _, err := fmt.Sscanf(lines[1], "%s --> %s", &c.start, &c.end); err != nil || strings.Count(b, "-->") != 1 {
			t.Fatalf("bad timing line %q", lines[1])
		}
		for _, l := range c.text {
			if l == "" {
				t.Fatalf("blank cue line in %q", b)
			}
		}
		cues = append(cues, c)
	}
	return cues
}

func TestWriteVTT(t *testing.T) {
	var b strings.Builder
	err := WriteVTT(&b, []Cue{
		{StartMs: 61500, EndMs: 63000, Text: "later"},
		{StartMs: 0, EndMs: 1500.4, Text: "BOSS_PHASE {\"phase\":2}"},
		{StartMs: 3723004, EndMs: 3723500, Text: "a --> b & <c>"},
		{StartMs: 2000, EndMs: 1000, Text: "end before start"},
		{StartMs: 5000, EndMs: 6000, Text: "ctl\x00\x1b[31m\u202eevil\u200b\r\n\n\nsecond line"},
		{StartMs: math.NaN(), EndMs: 1, Text: "not a time"},
		{StartMs: 7000, EndMs: 8000, Text: "\x00\u200b"},
		{StartMs: -50, EndMs: 100, Text: "negative"},
	})
	if err != nil {
		t.Fatal(err)
	}
	out := b.String()
	cues := parseVTT(t, out)
	got := make([]string, len(cues))
	for i, c := range cues {
		got[i] = fmt.Sprintf("%s|%s|%s|%s", c.id, c.start, c.end, strings.Join(c.text, "/"))
	}
	want := []string{
		"1|00:00:00.000|00:00:00.100|negative",
		"2|00:00:00.000|00:00:01.500|BOSS_PHASE {\"phase\":2}",
		"3|00:00:02.000|00:00:02.001|end before start",
		"4|00:00:05.000|00:00:06.000|ctl[31mevil/second line",
		"5|00:01:01.500|00:01:03.000|later",
		"6|01:02:03.004|01:02:03.500|a --&gt; b &amp; &lt;c&gt;",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("cues:\n%s\nwant:\n%s\nfile:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"), out)
	}
	if strings.ContainsAny(out, "\x00\x1b\u202e\u200b\r") {
		t.Fatalf("control characters written: %q", out)
	}
}

func TestEventCues(t *testing.T) {
	events := []Event{
		{T: 0, Name: "START", Payload: []byte("null")},
		{T: 100, Name: "HIT", Payload: []byte(`{ "target": "boss",  "damage": 12 }`)},
		{T: 1200, Name: "BOSS_PHASE", Payload: []byte(`{"phase":2,"note":"` + strings.Repeat("x", 100) + `"}`)},
		{T: 1300, Name: "HIT"}, {T: 1350, Name: "HIT"}, {T: 1400, Name: "HIT"}, {T: 1450, Name: "HIT"},
		{T: 1000, Name: "LATE"}, // out of order: counts at 1450
		{T: math.Inf(1), Name: "BAD"},
		{T: 9000, Name: "END\u202e<b>"},
	}
	cues := slices.Collect(EventCues(slices.Values(events), nil))
	got := make([]string, len(cues))
	for i, c := range cues {
		got[i] = fmt.Sprintf("%g-%g %s", c.StartMs, c.EndMs, strings.ReplaceAll(c.Text, "\n", " / "))
	}
	want := []string{
		`0-1200 START / HIT {"target":"boss","damage":12}`,
		`1200-3200 BOSS_PHASE {"phase":2,"note":"` + strings.Repeat("x", 59-len(`{"phase":2,"note":"`)) + `… / HIT / HIT / +3 more`,
		`9000-11000 END<b>`,
	}
	if !slices.Equal(got, want) {
		t.Fatalf("cues:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if n := len([]rune(strings.SplitN(strings.SplitN(cues[1].Text, "\n", 2)[0], " ", 2)[1])); n != 60 {
		t.Errorf("payload cut to %d characters, want 60", n)
	}
	// Through WriteVTT the text is escaped.
	var b strings.Builder
	if err := WriteVTTSeq(&b, EventCues(slices.Values(events), &CueOptions{MinMs: 50, MaxMs: 400})); err != nil {
		t.Fatal(err)
	}
	parsed := parseVTT(t, b.String())
	if len(parsed) != 8 || parsed[7].text[0] != "END&lt;b&gt;" || parsed[0].end != "00:00:00.100" || parsed[2].end != "00:00:01.300" {
		t.Fatalf("short cues: %q", b.String())
	}
}

func TestWriteVTTFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "capture.vtt")
	events := slices.Values([]Event{{T: 0, Name: "START"}, {T: 700, Name: "END"}})
	if err := WriteVTTFile(path, EventCues(events, nil)); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if cues := parseVTT(t, string(data)); len(cues) != 2 || cues[1].text[0] != "END" {
		t.Fatalf("%q", data)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("%d files left, want the one", len(entries))
	}
	if err := WriteVTTFile(filepath.Join(dir, "no", "dir.vtt"), EventCues(events, nil)); err == nil {
		t.Error("written into a missing directory")
	}
}
