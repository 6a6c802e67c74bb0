package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/crosscode/crosscode-mcp/internal/testing/sysdeps"
	"github.com/crosscode/crosscode-mcp/internal/testing/webgames"
)

// demoConfig writes the repository's capture config: the demo game (this
// test binary as crosscode-mcp demo-game, with extra arguments).
func demoConfig(t *testing.T, repo string, extra ...string) {
	t.Helper()
	cfg := map[string]any{"game": map[string]any{"command": append([]string{os.Args[0], "demo-game"}, extra...)}}
	b, _ := json.MarshalIndent(cfg, "", "  ")
	if err := os.MkdirAll(filepath.Join(repo, ".crosscode"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, ".crosscode", "capture.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// runIn runs crosscode-mcp with args in dir and returns stdout, stderr and
// the exit status.
func runIn(t *testing.T, dir string, args ...string) (string, string, int) {
	t.Helper()
	cmd := command(t, args...)
	cmd.Dir = dir
	cmd.Env = append(cmd.Env, "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(3 * time.Minute):
		cmd.Process.Kill()
		<-done
		t.Fatalf("crosscode-mcp %s did not finish within 3 minutes:\n%s\n%s", strings.Join(args, " "), stdout.String(), stderr.String())
	}
	return stdout.String(), stderr.String(), cmd.ProcessState.ExitCode()
}

// playBoss plays the demo game's boss fight in steps and returns the
// recording's op, still running.
func playBoss(t *testing.T, a *agent) string {
	t.Helper()
	rec := a.call("start_recording", map[string]any{"control": "agent"})
	op, _ := rec["op"].(string)
	walk := func(x, y float64) any { return map[string]any{"name": "move", "x": x, "y": y} }
	press := func(name string, on bool) any { return map[string]any{"name": name, "pressed": on} }
	for _, s := range []struct {
		actions []any
		ms      float64
	}{
		{[]any{walk(1, 0)}, 500}, {nil, 500}, {[]any{walk(0, 0), press("attack", true)}, 1000}, {[]any{press("cast", true)}, 250},
		{[]any{press("cast", false)}, 750}, {[]any{press("dodge", true), walk(0, -1)}, 120}, {[]any{press("dodge", false), walk(0, 0)}, 1380},
	} {
		args := map[string]any{"ms": s.ms}
		if s.actions != nil {
			args["actions"] = s.actions
		}
		if out := a.call("step_game", args); out["status"] != "running" {
			t.Fatalf("step: %v", out)
		}
	}
	return op
}

// commitAll commits the repository's files.
func commitAll(t *testing.T, repo, msg string) {
	t.Helper()
	for _, args := range [][]string{{"add", "-A"}, {"-c", "user.email=ci@example.com", "-c", "user.name=ci", "commit", "-qm", msg}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
}

var summaryLine = regexp.MustCompile(`(?m)^(\d+) passed, (\d+) failed(, (\d+) could not run)?$`)

// TestSavedPlays: an agent saves its play of the demo game as a play
// (stop_recording saveAs), which `crosscode-mcp test` runs from a fresh
// clone and passes; replay play=NAME runs it for an agent; a planted
// change of the game's pictures fails it with a report a person reads
// (expected, got, difference) and JUnit; --update accepts the change.
func TestSavedPlays(t *testing.T) {
	t.Parallel() // mostly waiting on its processes: overlaps the package's other tests
	repo := gitRepo(t)
	demoConfig(t, repo)
	// One data folder for the agent and test --publish: without git (under
	// Wine) each process would keep its state in its own user cache dir.
	data := t.TempDir()
	a := startAgent(t, "ada", agentOpts{clientName: "claude-code", dir: repo, args: []string{"--actor", "ada@example.com", "--data", data}})
	op := playBoss(t, a)

	// Refused saves change nothing: the play goes on.
	for _, name := range []string{"../escape", ".hidden", "a/b", strings.Repeat("x", 65)} {
		out, isErr := a.callRaw("stop_recording", map[string]any{"op": op, "saveAs": name})
		if !isErr || !strings.Contains(out["error"].(string), "play name") {
			t.Fatalf("saveAs %q: %v", name, out)
		}
	}
	if out := a.call("step_game", map[string]any{"ms": 500}); out["status"] != "running" {
		t.Fatalf("the recording stopped after a refused save: %v", out)
	}
	stopped := a.call("stop_recording", map[string]any{"op": op, "saveAs": "boss-fight"})
	saved, _ := stopped["saved"].(map[string]any)
	if stopped["status"] != "completed" || saved == nil || saved["file"] != ".crosscode/plays/boss-fight.play.json" {
		t.Fatalf("stop_recording saveAs: %v", stopped)
	}
	playFile := filepath.Join(repo, ".crosscode", "plays", "boss-fight.play.json")
	var play map[string]any
	if b, err := os.ReadFile(playFile); err != nil || json.Unmarshal(b, &play) != nil {
		t.Fatalf("play file: %v", err)
	}
	events, pictures := play["events"].([]any), play["pictures"].([]any)
	if play["crosscodePlay"] != 1.0 || play["game"] != "demo-arena" || len(events) < 5 || len(pictures) < 5 || play["lengthMs"].(float64) < 4900 {
		t.Fatalf("play file: %d events, %d pictures, %v", len(events), len(pictures), play)
	}
	t.Logf("saved: %v", saved)

	// Another recording cannot take the name, unless it overwrites.
	op2 := playBoss(t, a)
	if out, isErr := a.callRaw("stop_recording", map[string]any{"op": op2, "saveAs": "boss-fight"}); !isErr || !strings.Contains(out["error"].(string), "overwrite") {
		t.Fatalf("an existing name: %v", out)
	}
	a.call("stop_recording", map[string]any{"op": op2})

	// --publish: a validation of kind plays at the commit, in the other
	// agents' news.
	if stdout, stderr, code := runIn(t, repo, "test", "--publish", "--data", data); code != 0 || !strings.Contains(stdout, "published") {
		t.Fatalf("--publish: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if news := a.call("workspace_status", nil); !strings.Contains(fmt.Sprint(news["news"]), "plays crosscode-mcp test passed: 1 passed, 0 failed") {
		t.Fatalf("no validation of kind plays in the news: %v", news["news"])
	}

	// From a fresh clone: nothing of the first repository's git directory.
	clone := repo
	if !sysdeps.UnderWine() { // Wine cannot start git
		commitAll(t, repo, "a saved play")
		clone = filepath.Join(t.TempDir(), "clone")
		if out, err := exec.Command("git", "clone", "-q", repo, clone).CombinedOutput(); err != nil {
			t.Fatalf("git clone: %v %s", err, out)
		}
	}
	stdout, stderr, code := runIn(t, clone, "test")
	if code != 0 || !strings.Contains(stdout, "PASS    boss-fight") || summaryLine.FindString(stdout) != "1 passed, 0 failed" {
		t.Fatalf("test in a fresh clone: exit %d\n%s\n%s", code, stdout, stderr)
	}
	t.Logf("test:\n%s", stdout)

	// For an agent: replay play=NAME, and list_captures' plays.
	r := a.call("replay", map[string]any{"play": "boss-fight"})
	if field(r, "play", "status") != "passed" || field(r, "divergence", "identical") != true {
		t.Fatalf("replay play: %v", r)
	}
	lc := a.call("list_captures", map[string]any{})
	plays := list(lc, "plays")
	if len(plays) != 1 || plays[0]["name"] != "boss-fight" || field(plays[0], "last", "status") != "passed" {
		t.Fatalf("list_captures plays: %v", lc["plays"])
	}

	// A planted change of the pictures: the play fails, with a report.
	demoConfig(t, clone, "-flash", "900-1600")
	report, junit := filepath.Join(t.TempDir(), "report"), filepath.Join(t.TempDir(), "junit.xml")
	if dir := os.Getenv("CROSSCODE_TEST_KEEP_REPORT"); dir != "" {
		report = dir // to look at it
	}
	stdout, stderr, code = runIn(t, clone, "test", "boss-*", "--report", report, "--junit", junit)
	if code != 1 || !strings.Contains(stdout, "FAIL    boss-fight") || !strings.Contains(stdout, "pictures differ at t=") || summaryLine.FindString(stdout) != "0 passed, 1 failed" {
		t.Fatalf("a planted change: exit %d\n%s\n%s", code, stdout, stderr)
	}
	t.Logf("a planted change:\n%s", stdout)
	page, err := os.ReadFile(filepath.Join(report, "index.html"))
	if err != nil || !strings.Contains(string(page), "boss-fight") || bytes.Contains(page, []byte("<script")) || bytes.Contains(page, []byte("http")) {
		t.Fatalf("report page: %v", err)
	}
	for _, suffix := range []string{"-1-expected.jpg", "-1-got.jpg", "-1-difference.png"} {
		if _, err := os.Stat(filepath.Join(report, "boss-fight"+suffix)); err != nil {
			t.Fatalf("report picture: %v", err)
		}
	}
	var ju struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Suites   []struct {
			Cases []struct {
				Name    string `xml:"name,attr"`
				Failure *struct {
					Message string `xml:"message,attr"`
				} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if b, err := os.ReadFile(junit); err != nil || xml.Unmarshal(b, &ju) != nil || ju.Tests != 1 || ju.Failures != 1 || ju.Suites[0].Cases[0].Failure == nil {
		t.Fatalf("junit: %v %+v", err, ju)
	}

	// --update accepts it: the play now passes with the change, and the
	// original game fails it.
	stdout, stderr, code = runIn(t, clone, "test", "--update")
	if code != 0 || !strings.Contains(stdout, "UPDATED boss-fight") || !strings.Contains(stdout, "pictures changed at t=") {
		t.Fatalf("--update: exit %d\n%s\n%s", code, stdout, stderr)
	}
	t.Logf("--update:\n%s", stdout)
	if stdout, stderr, code = runIn(t, clone, "test", "--json"); code != 0 {
		t.Fatalf("after --update: exit %d\n%s\n%s", code, stdout, stderr)
	}
	var doc struct {
		Passed int              `json:"passed"`
		Plays  []map[string]any `json:"plays"`
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil || doc.Passed != 1 || len(doc.Plays) != 1 {
		t.Fatalf("--json: %v %s", err, stdout)
	}
	demoConfig(t, clone)
	if stdout, stderr, code = runIn(t, clone, "test"); code != 1 {
		t.Fatalf("the original game against the updated play: exit %d\n%s\n%s", code, stdout, stderr)
	}
}

// TestSavedPlayBadInput: a play file broken by hand or on the way (cut
// short, not JSON, an unknown format version, a reference outside the
// plays folder, an altered, missing or huge file) is a clear error that
// names the file: `test` says it could not run it (exit 2) and still runs
// the others, replay play=NAME answers isError, and nothing is changed.
// An edited but valid expectation is a play that fails (exit 1).
func TestSavedPlayBadInput(t *testing.T) {
	t.Parallel() // mostly waiting on its processes: overlaps the package's other tests
	repo := gitRepo(t)
	demoConfig(t, repo)
	a := startAgent(t, "ada", agentOpts{clientName: "claude-code", dir: repo, args: []string{"--actor", "ada@example.com"}})
	for _, name := range []string{"good", "bad"} {
		op := playBoss(t, a)
		if name == "bad" { // another play than good's: pictures of its own
			a.call("step_game", map[string]any{"actions": []any{map[string]any{"name": "move", "x": -1, "y": 0.5}}, "ms": 1500})
		}
		if out := a.call("stop_recording", map[string]any{"op": op, "saveAs": name}); out["saved"] == nil {
			t.Fatalf("save %s: %v", name, out)
		}
	}
	dir := filepath.Join(repo, ".crosscode", "plays")
	badFile := filepath.Join(dir, "bad.play.json")
	original, err := os.ReadFile(badFile)
	if err != nil {
		t.Fatal(err)
	}
	var good, bad struct {
		Pictures []struct {
			File string `json:"file"`
		} `json:"pictures"`
	}
	goodBytes, _ := os.ReadFile(filepath.Join(dir, "good.play.json"))
	json.Unmarshal(goodBytes, &good)
	json.Unmarshal(original, &bad)
	shared := map[string]bool{}
	for _, p := range good.Pictures {
		shared[p.File] = true
	}
	var own string // a picture of bad's alone
	for _, p := range bad.Pictures {
		if !shared[p.File] {
			own = p.File
		}
	}
	if own == "" {
		t.Fatal("bad has no picture of its own")
	}
	ownPath := filepath.Join(dir, filepath.FromSlash(own))
	ownData, _ := os.ReadFile(ownPath)
	listing := func() string {
		var b strings.Builder
		filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				data, _ := os.ReadFile(p)
				b.WriteString(p + " " + sha256Hex(data) + "\n")
			}
			return nil
		})
		return b.String()
	}
	edit := func(f func(s string) string) func() {
		return func() { os.WriteFile(badFile, []byte(f(string(original))), 0o644) }
	}
	for _, c := range []struct {
		name   string
		break_ func()
		want   string
	}{
		{"truncated", edit(func(s string) string { return s[:len(s)/2] }), "truncated"},
		{"not JSON", edit(func(string) string { return "hello\n" }), "not a saved play"},
		{"unknown version", edit(func(s string) string { return strings.Replace(s, `"crosscodePlay": 1`, `"crosscodePlay": 99`, 1) }), "format version 99"},
		{"outside the folder", edit(func(s string) string { return strings.Replace(s, own, "../../capture.json", 1) }), "is not a file of the plays folder's data/"},
		{"altered picture", func() { os.Chmod(ownPath, 0o644); os.WriteFile(ownPath, append([]byte{0}, ownData...), 0o644) }, "was altered"},
		{"missing picture", func() { os.Remove(ownPath) }, "missing"},
		{"over 64 MiB", func() { os.Truncate(badFile, 65<<20) }, "over the 64 MiB"},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				os.WriteFile(badFile, original, 0o644)
				os.WriteFile(ownPath, ownData, 0o644)
			}()
			c.break_()
			before := listing()
			stdout, stderr, code := runIn(t, repo, "test")
			if code != 2 || !strings.Contains(stdout, "PASS    good") || !strings.Contains(stdout, "ERROR   bad") || !strings.Contains(stdout, c.want) || !strings.Contains(stdout, ".crosscode/plays/") ||
				!strings.Contains(stdout, "bad") || summaryLine.FindString(stdout) != "1 passed, 0 failed, 1 could not run" {
				t.Fatalf("exit %d, want 2 and %q\n%s\n%s", code, c.want, stdout, stderr)
			}
			out, isErr := a.callRaw("replay", map[string]any{"play": "bad"})
			if msg, _ := out["error"].(string); !isErr || !strings.Contains(msg, c.want) || !strings.Contains(msg, ".crosscode/plays/") {
				t.Fatalf("replay play=bad: %v", out)
			}
			if after := listing(); after != before {
				t.Fatalf("the files changed:\n%s\nwas\n%s", after, before)
			}
		})
	}
	// An edited but valid expectation: a play that fails.
	os.WriteFile(badFile, []byte(strings.Replace(string(original), `"event":"BOSS_INTRO"`, `"event":"BOSS_OUTRO"`, 1)), 0o644)
	stdout, stderr, code := runIn(t, repo, "test", "bad")
	if code != 1 || !strings.Contains(stdout, "FAIL    bad") || !strings.Contains(stdout, "expected BOSS_OUTRO") {
		t.Fatalf("an edited expectation: exit %d\n%s\n%s", code, stdout, stderr)
	}
	// A name that matches nothing could not run; the rest runs.
	os.WriteFile(badFile, original, 0o644)
	stdout, stderr, code = runIn(t, repo, "test", "good", "nosuch")
	if code != 2 || !strings.Contains(stdout, `no saved play matches "nosuch"`) || summaryLine.FindString(stdout) != "1 passed, 0 failed, 1 could not run" {
		t.Fatalf("an unknown name: exit %d\n%s\n%s", code, stdout, stderr)
	}
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// TestSavedPlayPageDriver: a web game with no adapter code, driven by the
// page driver on virtual time (the README's config, a relative serve),
// saves a play that `crosscode-mcp test` passes in a fresh browser.
func TestSavedPlayPageDriver(t *testing.T) {
	t.Parallel() // mostly waiting on its processes: overlaps the package's other tests
	sysdeps.Need(t, "chromium")
	repo := gitRepo(t)
	copyDir(t, webgames.Dir(t, "pickup"), filepath.Join(repo, "web"))
	os.MkdirAll(filepath.Join(repo, ".crosscode"), 0o755)
	os.WriteFile(filepath.Join(repo, ".crosscode", "capture.json"), []byte(`{"game": {"serve": "web", "adapter": "page"}}`), 0o644)
	a := startAgent(t, "ada", agentOpts{clientName: "claude-code", dir: repo, args: []string{"--actor", "ada@example.com"}})
	savePlay(t, a, "pickup-tour", []step{
		{[]any{press("ArrowRight", true)}, 800}, {[]any{press("ArrowRight", false), press("ArrowDown", true)}, 600},
		{[]any{press("ArrowDown", false), press("ArrowLeft", true)}, 700}, {[]any{press("ArrowLeft", false)}, 400},
	})
	var play struct {
		Game   string `json:"game"`
		Replay struct {
			Format string `json:"format"`
		} `json:"replay"`
	}
	b, _ := os.ReadFile(filepath.Join(repo, ".crosscode", "plays", "pickup-tour.play.json"))
	if err := json.Unmarshal(b, &play); err != nil || play.Replay.Format != "crosscode-page/1" || play.Game == "" {
		t.Fatalf("the play: %v %s", err, b)
	}
	stdout, stderr, code := runIn(t, repo, "test")
	if code != 0 || !strings.Contains(stdout, "PASS    pickup-tour") {
		t.Fatalf("test: exit %d\n%s\n%s", code, stdout, stderr)
	}
}
