// Command testsummary reads the events of `go test -json` on its standard
// input and prints, per package, a readable line (and the output of what
// failed), then the skip reasons with their counts and a closing line
//
//	LABEL: N passed, N failed, N skipped
//
// It counts every test and subtest. A package that failed with no failing
// test (a build error, a crash, a timeout) counts as one failure. Skips whose
// reason starts with -wine-prefix (internal/testing/sysdeps.WineSkipPrefix) are
// counted apart. It exits 1 when anything failed, so that a pipeline fails
// too. scripts/wine-test runs it over the Windows pass under Wine.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/crosscode/crosscode-mcp/internal/testing/sysdeps"
)

// event is one line of `go test -json` (cmd/test2json), build events
// (ImportPath, FailedBuild) included.
type event struct {
	Action      string
	Package     string
	Test        string
	Elapsed     float64
	Output      string
	ImportPath  string
	FailedBuild string
}

type test struct {
	output []string
	result string // pass, fail, skip; empty while running
}

type pkg struct {
	name   string
	tests  map[string]*test
	order  []string
	output []string // the package's own lines (no test)
}

// summary gathers the events and writes the report to out as packages end.
type summary struct {
	out        io.Writer
	label      string
	winePrefix string

	pkgs        map[string]*pkg
	buildOutput map[string][]string // by ImportPath, e.g. "p [p.test]"

	start                                time.Time
	passed, failed, skipped, wineSkipped int
	noTests                              int
	failedPkgs                           []string
	reasons                              map[string]int
}

func newSummary(out io.Writer, label, winePrefix string) *summary {
	return &summary{out: out, label: label, winePrefix: winePrefix, start: time.Now(),
		pkgs: map[string]*pkg{}, buildOutput: map[string][]string{}, reasons: map[string]int{}}
}

func (s *summary) pkg(name string) *pkg {
	p := s.pkgs[name]
	if p == nil {
		p = &pkg{name: name, tests: map[string]*test{}}
		s.pkgs[name] = p
	}
	return p
}

// line takes one line of input: an event, or anything else (printed as is).
func (s *summary) line(l string) {
	var e event
	if !strings.HasPrefix(l, "{") || json.Unmarshal([]byte(l), &e) != nil {
		fmt.Fprintln(s.out, l)
		return
	}
	switch e.Action {
	case "build-output":
		s.buildOutput[e.ImportPath] = append(s.buildOutput[e.ImportPath], e.Output)
		return
	case "build-fail":
		return
	}
	if e.Package == "" {
		return
	}
	p := s.pkg(e.Package)
	if e.Test == "" {
		switch e.Action {
		case "output":
			p.output = append(p.output, e.Output)
		case "pass", "fail", "skip":
			s.endPackage(p, e)
		}
		return
	}
	t := p.tests[e.Test]
	if t == nil {
		t = &test{}
		p.tests[e.Test] = t
		p.order = append(p.order, e.Test)
	}
	switch e.Action {
	case "output":
		t.output = append(t.output, e.Output)
	case "pass", "fail", "skip":
		t.result = e.Action
	}
}

// fileLine is the "name_test.go:12: " that starts a t.Log or t.Skip line.
var fileLine = regexp.MustCompile(`^\s*[^\s:]+\.go:\d+: `)

// skipReason is the message a skipped test logged last (t.Skip's, after any
// t.Log), its first line without its file:line; else its first line.
func skipReason(output []string) string {
	reason := ""
	for _, o := range output {
		l := strings.TrimRight(o, "\n")
		if fileLine.MatchString(l) {
			reason = fileLine.ReplaceAllString(l, "")
			continue
		}
		t := strings.TrimSpace(l)
		if reason == "" && t != "" && !strings.HasPrefix(t, "=== ") && !strings.HasPrefix(t, "--- ") {
			reason = t
		}
	}
	if reason == "" {
		return "(no reason given)"
	}
	return reason
}

func (s *summary) endPackage(p *pkg, e event) {
	delete(s.pkgs, p.name)
	if e.Action == "skip" && len(p.tests) == 0 {
		s.noTests++
		return
	}
	var passed, failed, skipped, wine int
	var failures []string
	for _, name := range p.order {
		t := p.tests[name]
		switch t.result {
		case "pass":
			passed++
		case "fail":
			failed++
			failures = append(failures, name)
		case "skip":
			skipped++
			r := skipReason(t.output)
			s.reasons[r]++
			if strings.HasPrefix(r, s.winePrefix) {
				wine++
			}
		default: // still running when the package ended: it crashed or timed out
			failed++
			failures = append(failures, name)
		}
	}
	if e.Action == "fail" && failed == 0 {
		failed = 1 // a build error, a crash, a timeout: one failure
	}
	s.passed += passed
	s.failed += failed
	s.skipped += skipped
	s.wineSkipped += wine

	status := "ok  "
	if e.Action == "fail" {
		status = "FAIL"
		s.failedPkgs = append(s.failedPkgs, p.name)
	}
	counts := fmt.Sprintf("%d passed, %d failed, %d skipped", passed, failed, skipped)
	if wine > 0 {
		counts += fmt.Sprintf(" (%d under Wine)", wine)
	}
	elapsed := fmt.Sprintf("%.1fs", e.Elapsed)
	if e.FailedBuild != "" {
		elapsed, counts = "-", "build failed"
	}
	fmt.Fprintf(s.out, "%s %-60s %7s  %s\n", status, p.name, elapsed, counts)
	if e.Action != "fail" {
		return
	}
	if e.FailedBuild != "" {
		writeIndented(s.out, s.buildOutput[e.FailedBuild])
		return
	}
	for _, name := range failures {
		writeIndented(s.out, p.tests[name].output)
	}
	if len(failures) == 0 || p.tests[failures[0]].result == "" {
		// Why the package failed is in its own output (a panic, a timeout).
		writeIndented(s.out, tail(p.output, 40))
	}
}

func tail(lines []string, n int) []string {
	if len(lines) > n {
		return lines[len(lines)-n:]
	}
	return lines
}

func writeIndented(w io.Writer, lines []string) {
	for _, l := range lines {
		fmt.Fprint(w, "      ", strings.TrimSuffix(l, "\n"), "\n")
	}
}

// finish ends packages that never ended (go test was killed) and writes the
// totals; it reports whether everything passed.
func (s *summary) finish() bool {
	names := make([]string, 0, len(s.pkgs))
	for name := range s.pkgs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		s.endPackage(s.pkgs[name], event{Action: "fail", Package: name})
	}
	if s.noTests > 0 {
		fmt.Fprintf(s.out, "%d packages have no test files\n", s.noTests)
	}
	if len(s.reasons) > 0 {
		fmt.Fprintf(s.out, "skip reasons (%d of %d skips under Wine):\n", s.wineSkipped, s.skipped)
		reasons := make([]string, 0, len(s.reasons))
		for r := range s.reasons {
			reasons = append(reasons, r)
		}
		sort.Slice(reasons, func(i, j int) bool {
			a, b := reasons[i], reasons[j]
			if s.reasons[a] != s.reasons[b] {
				return s.reasons[a] > s.reasons[b]
			}
			return a < b
		})
		for _, r := range reasons {
			fmt.Fprintf(s.out, "  %4d  %s\n", s.reasons[r], r)
		}
	}
	if len(s.failedPkgs) > 0 {
		fmt.Fprintf(s.out, "failed packages: %s\n", strings.Join(s.failedPkgs, " "))
	}
	fmt.Fprintf(s.out, "the pass took %s\n", time.Since(s.start).Round(time.Second))
	fmt.Fprintf(s.out, "%d of the %d skips are Wine skips (reason starting %q)\n", s.wineSkipped, s.skipped, s.winePrefix)
	fmt.Fprintf(s.out, "%s: %d passed, %d failed, %d skipped\n", s.label, s.passed, s.failed, s.skipped)
	return s.failed == 0
}

func run(in io.Reader, out io.Writer, label, winePrefix string) bool {
	s := newSummary(out, label, winePrefix)
	r := bufio.NewReader(in)
	for {
		l, err := r.ReadString('\n')
		if l != "" {
			s.line(strings.TrimSuffix(l, "\n"))
		}
		if err != nil {
			break
		}
	}
	return s.finish()
}

func main() {
	label := flag.String("label", "tests", "what the closing line names (before the colon)")
	winePrefix := flag.String("wine-prefix", sysdeps.WineSkipPrefix, "the start of the reason of a test skipped under Wine")
	flag.Parse()
	if !run(os.Stdin, os.Stdout, *label, *winePrefix) {
		os.Exit(1)
	}
}
