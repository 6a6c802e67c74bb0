package playreport

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"image"
	"image/color"
	"image/jpeg"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crosscode/crosscode-mcp/bridge/cappy"
)

// picture writes a flat JPEG of colour c.
func picture(t *testing.T, path string, c color.RGBA) string {
	t.Helper()
	m := image.NewRGBA(image.Rect(0, 0, 160, 90))
	for i := 0; i < len(m.Pix); i += 4 {
		m.Pix[i], m.Pix[i+1], m.Pix[i+2], m.Pix[i+3] = c.R, c.G, c.B, 255
	}
	var b bytes.Buffer
	jpeg.Encode(&b, m, nil)
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func run(t *testing.T) *Run {
	dir := t.TempDir()
	exp, got := picture(t, filepath.Join(dir, "e.jpg"), color.RGBA{20, 30, 60, 255}), picture(t, filepath.Join(dir, "g.jpg"), color.RGBA{200, 180, 120, 255})
	hostile := `<script>alert(1)</script> & "quoted"`
	return &Run{Started: time.Unix(1_800_000_000, 0), Elapsed: 1500 * time.Millisecond, Entries: []*Entry{
		{PlayOutcome: &cappy.PlayOutcome{Name: "ok", Status: cappy.PlayPassed, LengthMs: 9950, WallMs: 420}},
		{PlayOutcome: &cappy.PlayOutcome{Name: "boss", Status: cappy.PlayFailed, Message: "event 3: expected " + hostile, LengthMs: 5000, WallMs: 300, Op: "op_1", Expected: "play-boss-1",
			Warnings: []string{"warned " + hostile}},
			Spans:  []Span{{VisualSpan: cappy.VisualSpan{T: 1000, EndT: 1500, SimT: 1000, EndSimT: 1500, RecordingT: 1000, Frames: 2, MaxDiff: 0.4, Event: hostile}, Expected: exp, Got: got}},
			Events: []EventRow{{Index: 3, Expected: "HIT " + hostile, Got: "MISS", Differs: true}}},
		{PlayOutcome: &cappy.PlayOutcome{Name: "broken", Status: cappy.PlayErrored, Message: ".crosscode/plays/broken.play.json: not a saved play"}},
	}}
}

func TestSummaryAndCounts(t *testing.T) {
	r := run(t)
	if p, f, e := r.Counts(); p != 1 || f != 1 || e != 1 || r.Summary() != "1 passed, 1 failed, 1 could not run" {
		t.Fatalf("%d %d %d %q", p, f, e, r.Summary())
	}
	r.Entries = r.Entries[:2]
	if r.Summary() != "1 passed, 1 failed" {
		t.Fatal(r.Summary())
	}
}

// JUnit: one testcase per play, a failure with the first divergence as its
// message, an error for a play that could not run; game text escaped.
func TestWriteJUnit(t *testing.T) {
	var b bytes.Buffer
	if err := WriteJUnit(&b, run(t)); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Errors   int `xml:"errors,attr"`
		Suite    struct {
			Cases []struct {
				Name    string `xml:"name,attr"`
				Failure *struct {
					Message string `xml:"message,attr"`
				} `xml:"failure"`
				Error *struct {
					Message string `xml:"message,attr"`
				} `xml:"error"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatalf("not XML: %v\n%s", err, b.String())
	}
	cs := doc.Suite.Cases
	if doc.Tests != 3 || doc.Failures != 1 || doc.Errors != 1 || len(cs) != 3 || cs[0].Failure != nil || cs[1].Failure == nil ||
		!strings.Contains(cs[1].Failure.Message, "<script>") || cs[2].Error == nil {
		t.Fatalf("%+v\n%s", doc, b.String())
	}
	if strings.Contains(b.String(), "<script>") {
		t.Fatal("game text not escaped in the XML")
	}
}

// The page: no script, nothing from the network, game text as text, and
// each span's three pictures (expected, got, difference) beside it.
func TestWriteHTML(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "report")
	if err := WriteHTML(dir, run(t)); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(dir, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(page)
	if strings.Contains(s, "<script") || strings.Contains(s, "http") || !strings.Contains(s, "&lt;script&gt;") {
		t.Fatalf("markup or network in the page:\n%s", s)
	}
	for _, name := range []string{"boss-1-expected.jpg", "boss-1-got.jpg", "boss-1-difference.png"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil || !strings.Contains(s, `src="`+name+`"`) {
			t.Fatalf("%s: %v", name, err)
		}
	}
	if !strings.Contains(s, "1 passed, 1 failed, 1 could not run") || !strings.Contains(s, "not a saved play") {
		t.Fatalf("the page:\n%s", s)
	}
}

func TestWriteJSON(t *testing.T) {
	var b bytes.Buffer
	if err := WriteJSON(&b, run(t)); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Summary string           `json:"summary"`
		Failed  int              `json:"failed"`
		Plays   []map[string]any `json:"plays"`
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil || doc.Failed != 1 || len(doc.Plays) != 3 || doc.Plays[1]["status"] != "failed" {
		t.Fatalf("%v %s", err, b.String())
	}
}
