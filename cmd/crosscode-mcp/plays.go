package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/crosscode/crosscode-mcp/bridge/cappy"
	"github.com/crosscode/crosscode-mcp/bridge/cappy/playreport"
	"github.com/crosscode/crosscode-mcp/internal/sanitize"
	"github.com/crosscode/crosscode-mcp/mcp"
	"github.com/crosscode/crosscode-mcp/protocol"
	"github.com/crosscode/crosscode-mcp/store"
)

const testUsage = `Usage: crosscode-mcp test [NAME|GLOB ...] [--junit FILE] [--report DIR] [--update] [--json] [--publish] [server flags]

Runs the saved plays (all of them, or those named: a name, or a glob such
as 'boss-*'): launches the game as the capture config says, replays each
play, and compares its events and pictures with the play's saved
expectation. One line per play as it finishes, then "N passed, M failed".
Exit status: 0 all passed, 1 a play failed, 2 something could not run.

`

// runTest is `crosscode-mcp test`: the saved plays as regression tests.
func runTest(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("crosscode-mcp test", stderr)
	cfg, _, verbose := serverFlags(fs)
	junit := fs.String("junit", "", "write the results as JUnit XML to this file")
	reportDir := fs.String("report", "", "write a page a person opens (DIR/index.html): each failed play's differing pictures, side by side, and events")
	update := fs.Bool("update", false, "rewrite the expectation of the plays run from this run (events and pictures), and print what changed")
	asJSON := fs.Bool("json", false, "print the results as one JSON document on stdout (the lines go to stderr)")
	publish := fs.Bool("publish", false, "record the outcome as a validation of kind plays at the current commit, for every agent's news")
	fs.Usage = func() { fmt.Fprint(stderr, testUsage); fs.PrintDefaults() }
	// Names and flags in any order: `test boss --junit out.xml`.
	var names []string
	for rest := args; ; {
		if err := parseFlags(fs, rest); err != nil {
			return err
		}
		if fs.NArg() == 0 {
			break
		}
		names, rest = append(names, fs.Arg(0)), fs.Args()[1:]
	}
	// Its lines are the output: the controller's log only when it warns
	// (or with -v).
	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelDebug
	}
	cfg.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	cfg.Version = thisBuild().Version
	if cfg.CappyListen == "" {
		// Never the capture config's fixed port: the agents' servers of
		// this repository may hold it.
		cfg.CappyListen = "127.0.0.1:0"
	}
	lines := stdout
	if *asJSON {
		lines = stderr
	}
	var svc *cappy.Service
	var recordValidation func(context.Context, protocol.Validation) error
	if *publish {
		cfg.Toolsets = []string{"coord", "capture"}
		srv, err := mcp.New(ctx, *cfg)
		if err != nil {
			return exitErr(stderr, 2, "could not start: %v", err)
		}
		defer srv.Close()
		svc = srv.Capture
		recordValidation = func(ctx context.Context, v protocol.Validation) error {
			_, _, err := srv.Coord.RecordValidation(ctx, v)
			return err
		}
	} else {
		var err error
		if svc, err = mcp.OpenCapture(ctx, *cfg); err != nil {
			return exitErr(stderr, 2, "could not start: %v", err)
		}
		defer svc.Close()
	}
	t := &playTest{svc: svc, lines: lines, update: *update}
	run, err := t.run(ctx, names)
	if err != nil {
		return exitErr(stderr, 2, "%v", err)
	}
	fmt.Fprintln(lines, run.Summary())
	var werr []error
	if *junit != "" {
		werr = append(werr, writeFile(*junit, func(w io.Writer) error { return playreport.WriteJUnit(w, run) }))
	}
	if *reportDir != "" {
		if err := playreport.WriteHTML(*reportDir, run); err != nil {
			werr = append(werr, err)
		} else {
			fmt.Fprintf(lines, "report: %s\n", filepath.Join(*reportDir, "index.html"))
		}
	}
	if *asJSON {
		werr = append(werr, playreport.WriteJSON(stdout, run))
	}
	if recordValidation != nil {
		if err := recordValidation(context.WithoutCancel(ctx), t.validation(run)); err != nil {
			werr = append(werr, fmt.Errorf("publish: %w", err))
		} else {
			fmt.Fprintln(lines, "published as a validation of kind plays")
		}
	}
	if err := errors.Join(werr...); err != nil {
		return exitErr(stderr, 2, "%v", err)
	}
	switch passed, failed, errored := run.Counts(); {
	case errored > 0 || passed+failed == 0:
		return exitError{code: 2}
	case failed > 0:
		return exitError{code: 1}
	}
	return nil
}

func exitErr(stderr io.Writer, code int, format string, a ...any) error {
	fmt.Fprintf(stderr, "crosscode-mcp test: "+format+"\n", a...)
	return exitError{code: code}
}

func writeFile(name string, fill func(io.Writer) error) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	err = fill(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// playTest runs saved plays one after the other.
type playTest struct {
	svc    *cappy.Service
	lines  io.Writer
	update bool
}

// selectPlays resolves the names and globs given (none: every play) to
// plays, in order and once each; what matches nothing could not run.
func selectPlays(all, args []string) (names []string, missing []string) {
	if len(args) == 0 {
		return all, nil
	}
	seen := map[string]bool{}
	for _, a := range args {
		a = strings.TrimSuffix(a, cappy.PlayExt)
		var hit []string
		if strings.ContainsAny(a, "*?[") {
			for _, n := range all {
				if ok, _ := path.Match(a, n); ok {
					hit = append(hit, n)
				}
			}
		} else if slices.Contains(all, a) {
			hit = []string{a}
		}
		if len(hit) == 0 {
			missing = append(missing, a)
		}
		for _, n := range hit {
			if !seen[n] {
				seen[n] = true
				names = append(names, n)
			}
		}
	}
	return names, missing
}

func (t *playTest) run(ctx context.Context, args []string) (*playreport.Run, error) {
	dir := t.svc.PlayDir()
	all, err := cappy.ListPlays(dir)
	if err != nil {
		return nil, err
	}
	if len(all) == 0 {
		return nil, fmt.Errorf("no saved plays in %s: an agent saves one with stop_recording saveAs=NAME (or set \"plays\" in the capture config)", dir)
	}
	names, missing := selectPlays(all, args)
	run := &playreport.Run{Started: time.Now()}
	for _, m := range missing {
		e := &playreport.Entry{PlayOutcome: &cappy.PlayOutcome{Name: m, Status: cappy.PlayErrored,
			Message: fmt.Sprintf("no saved play matches %q in %s (it has: %s)", m, dir, strings.Join(all, ", "))}}
		t.print(e)
		run.Entries = append(run.Entries, e)
	}
	for _, name := range names {
		if ctx.Err() != nil {
			break
		}
		e := t.one(ctx, name)
		t.print(e)
		run.Entries = append(run.Entries, e)
	}
	run.Elapsed = time.Since(run.Started)
	return run, ctx.Err()
}

// one runs the play name and judges it (and updates it with --update).
func (t *playTest) one(ctx context.Context, name string) *playreport.Entry {
	begun := time.Now()
	svc := t.svc
	bg := context.WithoutCancel(ctx)
	ps, err := svc.StartPlay(ctx, name, nil, 0)
	if err != nil {
		o := svc.FailedPlay(name, err, begun)
		svc.RecordPlayResult(bg, o)
		return &playreport.Entry{PlayOutcome: o}
	}
	select {
	case <-ps.Op.Done():
	case <-ctx.Done():
		svc.Controller.Cancel(ps.Op)
		<-ps.Op.Done()
	}
	o, err := svc.JudgePlay(bg, ps)
	if err != nil {
		o = svc.FailedPlay(name, err, begun)
		return &playreport.Entry{PlayOutcome: o}
	}
	svc.RecordPlayResult(bg, o)
	e := &playreport.Entry{PlayOutcome: o}
	if o.Pictures != nil {
		for _, sp := range o.Pictures.Spans {
			exp, got := svc.SpanFrames(&sp)
			e.Spans = append(e.Spans, playreport.Span{VisualSpan: sp, Expected: exp, Got: got})
		}
	}
	if d := o.Events; d != nil && !d.Identical {
		e.Events = eventRows(bg, svc.Store, o.Expected, o.Op, d)
	}
	if t.update && o.Status == cappy.PlayFailed {
		changes, err := svc.UpdatePlay(bg, ps, o)
		if err != nil {
			o.Status, o.Message = cappy.PlayErrored, err.Error()
		} else {
			e.Changes, e.Updated = changes, true
			o.Status = cappy.PlayPassed
			if len(changes) == 0 {
				e.Changes = []string{"within the tolerances: the pictures and events saved again"}
			}
		}
	}
	return e
}

// print writes a play's line: its result, its time beside its own length,
// and the first difference or why it could not run.
func (t *playTest) print(e *playreport.Entry) {
	word := map[string]string{cappy.PlayPassed: "PASS", cappy.PlayFailed: "FAIL", cappy.PlayErrored: "ERROR"}[e.Status]
	if e.Updated {
		word = "UPDATED"
	}
	line := fmt.Sprintf("%-7s %s", word, e.Name)
	if e.LengthMs > 0 || e.WallMs > 0 {
		line += fmt.Sprintf(" (%s; the play is %s long)", cappy.FormatSeconds(float64(e.WallMs)), cappy.FormatSeconds(e.LengthMs))
	}
	if e.Message != "" && !e.Updated {
		line += ": " + e.Message
	}
	fmt.Fprintln(t.lines, line)
	for _, c := range e.Changes {
		fmt.Fprintln(t.lines, "        "+c)
	}
	for _, w := range e.Warnings {
		fmt.Fprintln(t.lines, "        warning: "+sanitize.Line(w, 400))
	}
}

// validation is the run as a validation of kind plays at this commit.
func (t *playTest) validation(run *playreport.Run) protocol.Validation {
	_, failed, errored := run.Counts()
	status := protocol.ValidationPassed
	switch {
	case errored > 0 && failed == 0:
		status = protocol.ValidationErrored
	case failed > 0 || errored > 0:
		status = protocol.ValidationFailed
	}
	summary := run.Summary()
	var bad []string
	for _, e := range run.Entries {
		if e.Status != cappy.PlayPassed {
			bad = append(bad, e.Name)
		}
	}
	if len(bad) > 0 {
		summary += ": " + strings.Join(bad, ", ")
	}
	ms := run.Elapsed.Milliseconds()
	return protocol.Validation{Kind: protocol.ValidationPlays, Name: "crosscode-mcp test", Status: status, Summary: sanitize.Line(summary, 500),
		Commit: t.svc.HeadCommit(context.Background()), DurationMs: &ms}
}

// eventRows are the events around a divergence, expected beside got.
func eventRows(ctx context.Context, st *store.Store, expected, got string, d *cappy.Divergence) []playreport.EventRow {
	const before, after = 3, 8
	from := max(0, d.Index-before)
	exp, gotEvs := eventsFrom(ctx, st, expected, from, before+after+1), eventsFrom(ctx, st, got, from, before+after+1)
	var rows []playreport.EventRow
	for i := range max(len(exp), len(gotEvs)) {
		r := playreport.EventRow{Index: from + int64(i)}
		if i < len(exp) {
			r.Expected = eventText(exp[i])
		}
		if i < len(gotEvs) {
			r.Got = eventText(gotEvs[i])
		}
		r.Differs = r.Index >= d.Index && r.Expected != r.Got
		rows = append(rows, r)
	}
	return rows
}

// eventsFrom reads n events of op from the index-th on.
func eventsFrom(ctx context.Context, st *store.Store, op string, index int64, n int) []store.CaptureEvent {
	var out []store.CaptureEvent
	var seen int64
	for after := int64(0); len(out) < n; {
		page, err := st.Events(ctx, store.EventQuery{Op: op, AfterSeq: after, Limit: 1000})
		if err != nil || len(page) == 0 {
			break
		}
		for _, e := range page {
			if seen >= index && len(out) < n {
				out = append(out, e)
			}
			seen++
		}
		after = page[len(page)-1].Seq
	}
	return out
}

func eventText(e store.CaptureEvent) string {
	s := sanitize.Line(e.Event, 80) + " t=" + cappy.FormatMs(e.T)
	if len(e.Payload) > 0 && string(e.Payload) != "null" && string(e.Payload) != "{}" {
		s += " " + sanitize.Line(string(e.Payload), 160)
	}
	return s
}
