// Package playreport writes the reports of a run of saved plays
// (crosscode-mcp test): JUnit XML, which every CI shows, and a page a
// person opens (index.html with its pictures: no script, no network).
package playreport

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"html/template"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	_ "embed"

	"github.com/crosscode/crosscode-mcp/bridge/cappy"
	"github.com/crosscode/crosscode-mcp/bridge/cappy/visual"
	"github.com/crosscode/crosscode-mcp/internal/sanitize"
)

// Entry is one play's run, with what the reports show of it.
type Entry struct {
	*cappy.PlayOutcome
	// Spans are the divergent spans of its pictures, with the files of
	// each span's most different pair.
	Spans []Span `json:"-"`
	// Events are the events around the first divergence, side by side.
	Events []EventRow `json:"-"`
	// Changes are what --update changed in its expectation.
	Changes []string `json:"changes,omitempty"`
	// Updated is set when --update rewrote it.
	Updated bool `json:"updated,omitempty"`
}

// Span is a divergent span of a play's pictures.
type Span struct {
	cappy.VisualSpan
	Expected, Got string // frame files
}

// EventRow is one row of the events around a divergence: the expected
// event and the one the run had at the same index.
type EventRow struct {
	Index         int64
	Expected, Got string // "NAME t=1.2 s {payload}", or "" when none
	Differs       bool
}

// Run is a whole run of plays.
type Run struct {
	Entries []*Entry
	Started time.Time
	Elapsed time.Duration
}

// Counts are the run's passed, failed and could-not-run plays.
func (r *Run) Counts() (passed, failed, errored int) {
	for _, e := range r.Entries {
		switch e.Status {
		case cappy.PlayPassed:
			passed++
		case cappy.PlayFailed:
			failed++
		default:
			errored++
		}
	}
	return
}

// Summary is the run's last line: "N passed, M failed" (", K could not
// run" when any could not).
func (r *Run) Summary() string {
	p, f, e := r.Counts()
	s := fmt.Sprintf("%d passed, %d failed", p, f)
	if e > 0 {
		s += fmt.Sprintf(", %d could not run", e)
	}
	return s
}

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name      string      `xml:"name,attr"`
	Tests     int         `xml:"tests,attr"`
	Failures  int         `xml:"failures,attr"`
	Errors    int         `xml:"errors,attr"`
	Time      string      `xml:"time,attr"`
	Timestamp string      `xml:"timestamp,attr"`
	Cases     []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	File      string        `xml:"file,attr,omitempty"`
	Time      string        `xml:"time,attr"`
	Failure   *junitProblem `xml:"failure"`
	Error     *junitProblem `xml:"error"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

func seconds(ms int64) string { return strconv.FormatFloat(float64(ms)/1000, 'f', 3, 64) }

// WriteJUnit writes the run as JUnit XML: one testcase per play, a failed
// play's failure message its first divergence, a play that could not run
// an error.
func WriteJUnit(w io.Writer, r *Run) error {
	_, f, e := r.Counts()
	suite := junitSuite{Name: "plays", Tests: len(r.Entries), Failures: f, Errors: e, Time: seconds(r.Elapsed.Milliseconds()),
		Timestamp: r.Started.UTC().Format("2006-01-02T15:04:05")}
	for _, en := range r.Entries {
		c := junitCase{Name: en.Name, Classname: "plays", File: en.File, Time: seconds(en.WallMs)}
		var out []string
		if en.Op != "" {
			out = append(out, "replay: "+en.Op+" (get_capture op="+en.Op+")", "expected: "+en.Expected)
		}
		out = append(out, fmt.Sprintf("the play is %s long, run in %s", cappy.FormatSeconds(en.LengthMs), cappy.FormatSeconds(float64(en.WallMs))))
		out = append(out, en.Changes...)
		for _, w := range en.Warnings {
			out = append(out, "warning: "+w)
		}
		c.SystemOut = strings.Join(out, "\n")
		switch en.Status {
		case cappy.PlayFailed:
			c.Failure = &junitProblem{Message: en.Message, Type: "diverged", Text: details(en)}
		case cappy.PlayErrored:
			c.Error = &junitProblem{Message: en.Message, Type: "could not run", Text: en.Message}
		}
		suite.Cases = append(suite.Cases, c)
	}
	doc := junitSuites{Name: "crosscode-mcp plays", Tests: len(r.Entries), Failures: f, Errors: e, Time: suite.Time, Suites: []junitSuite{suite}}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// details is a failed play's divergences as text.
func details(en *Entry) string {
	var b strings.Builder
	b.WriteString(en.Message + "\n")
	for _, row := range en.Events {
		mark := "  "
		if row.Differs {
			mark = "! "
		}
		fmt.Fprintf(&b, "%s%4d expected %-50s got %s\n", mark, row.Index, orNone(row.Expected), orNone(row.Got))
	}
	for i, sp := range en.Spans {
		fmt.Fprintf(&b, "pictures differ, span %d: t=%s-%s, %d frames, up to %.0f%% changed\n", i+1, cappy.FormatMs(sp.RecordingT), cappy.FormatMs(sp.RecordingT+sp.EndSimT-sp.SimT), sp.Frames, 100*sp.MaxDiff)
	}
	return b.String()
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// WriteJSON writes the run as one JSON document.
func WriteJSON(w io.Writer, r *Run) error {
	p, f, e := r.Counts()
	doc := struct {
		Summary string   `json:"summary"`
		Passed  int      `json:"passed"`
		Failed  int      `json:"failed"`
		Errored int      `json:"couldNotRun"`
		Elapsed int64    `json:"elapsedMs"`
		Plays   []*Entry `json:"plays"`
	}{r.Summary(), p, f, e, r.Elapsed.Milliseconds(), r.Entries}
	if doc.Plays == nil {
		doc.Plays = []*Entry{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

//go:embed report.html
var pageSource string

var page = template.Must(template.New("report").Funcs(template.FuncMap{
	"ms":      func(t float64) string { return cappy.FormatMs(t) },
	"s":       func(t float64) string { return cappy.FormatSeconds(t) },
	"pct":     func(f float64) string { return fmt.Sprintf("%.0f%%", 100*f) },
	"spanEnd": func(sp Span) string { return cappy.FormatMs(sp.RecordingT + sp.EndSimT - sp.SimT) },
	"sec":     func(ms int64) string { return cappy.FormatSeconds(float64(ms)) },
}).Parse(pageSource))

type pageSpan struct {
	Span
	N                      int
	Expected, Got, Diff    string // image files, relative to the page
	ExpectedW, GotW, DiffW int
}

type pageEntry struct {
	*Entry
	Anchor string
	Spans  []pageSpan
}

// WriteHTML writes the run's page into dir: index.html and, for each
// failed play, its divergent spans' pictures (expected, got, and their
// difference) beside it. Text from games is escaped, never markup.
func WriteHTML(dir string, r *Run) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	var entries []pageEntry
	for i, en := range r.Entries {
		pe := pageEntry{Entry: en, Anchor: fmt.Sprintf("play-%d", i+1)}
		for j, sp := range en.Spans {
			ps := pageSpan{Span: sp, N: j + 1}
			base := fmt.Sprintf("%s-%d", safeName(en.Name), j+1)
			var err error
			if ps.Expected, ps.ExpectedW, err = copyPicture(dir, base+"-expected", sp.Expected); err != nil {
				return err
			}
			if ps.Got, ps.GotW, err = copyPicture(dir, base+"-got", sp.Got); err != nil {
				return err
			}
			if png, w, _, err := visual.Difference(sp.Expected, sp.Got, ps.GotW); err == nil {
				ps.Diff, ps.DiffW = base+"-difference.png", w
				if err := os.WriteFile(filepath.Join(dir, ps.Diff), png, 0o644); err != nil {
					return fmt.Errorf("report: %w", err)
				}
			}
			pe.Spans = append(pe.Spans, ps)
		}
		entries = append(entries, pe)
	}
	p, f, e := r.Counts()
	data := struct {
		Summary                 string
		Passed, Failed, Errored int
		Started                 string
		Elapsed                 string
		Entries                 []pageEntry
		Width                   int // of each picture: the three of a span side by side
	}{r.Summary(), p, f, e, r.Started.UTC().Format(time.RFC3339), cappy.FormatSeconds(float64(r.Elapsed.Milliseconds())), entries, pictureWidth}
	tmp := filepath.Join(dir, ".index.html.tmp")
	out, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	err = page.Execute(out, data)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("report: %w", err)
	}
	return os.Rename(tmp, filepath.Join(dir, "index.html"))
}

// pictureWidth is how wide the page shows each of a span's pictures.
const pictureWidth = 400

// copyPicture writes a frame into the report as a JPEG a person can see
// at a glance (at most 480 wide), and returns its name and width.
func copyPicture(dir, base, src string) (string, int, error) {
	jpg, w, _, err := visual.AgentJPEG(src, 480, 85)
	if err != nil {
		return "", 0, nil // a frame that cannot be read is left out of the page
	}
	name := base + ".jpg"
	if err := os.WriteFile(filepath.Join(dir, name), jpg, 0o644); err != nil {
		return "", 0, fmt.Errorf("report: %w", err)
	}
	return name, w, nil
}

// safeName is a play name as a file name (play names are safe already;
// this keeps the report so whatever it is given).
func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '-' || r == '_' || r == '.' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, sanitize.Line(s, 64))
}
