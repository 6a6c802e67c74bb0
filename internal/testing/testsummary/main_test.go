package main

import (
	"strings"
	"testing"
)

// A pass of two packages as `go test -json` writes it: one passes (a Wine
// skip, another skip, a subtest), one fails a test; then a build failure, a
// package without tests and a package that panicked outside any test's end.
const events = `{"Action":"start","Package":"ex/a"}
{"Action":"run","Package":"ex/a","Test":"TestOK"}
{"Action":"output","Package":"ex/a","Test":"TestOK","Output":"=== RUN   TestOK\n"}
{"Action":"run","Package":"ex/a","Test":"TestOK/sub"}
{"Action":"pass","Package":"ex/a","Test":"TestOK/sub","Elapsed":0}
{"Action":"pass","Package":"ex/a","Test":"TestOK","Elapsed":0}
{"Action":"run","Package":"ex/a","Test":"TestGit"}
{"Action":"output","Package":"ex/a","Test":"TestGit","Output":"=== RUN   TestGit\n"}
{"Action":"output","Package":"ex/a","Test":"TestGit","Output":"    git_test.go:12: under Wine: git is a Linux program, which Wine cannot start\n"}
{"Action":"output","Package":"ex/a","Test":"TestGit","Output":"--- SKIP: TestGit (0.00s)\n"}
{"Action":"skip","Package":"ex/a","Test":"TestGit","Elapsed":0}
{"Action":"run","Package":"ex/a","Test":"TestShort"}
{"Action":"output","Package":"ex/a","Test":"TestShort","Output":"    a_test.go:30: short mode\n"}
{"Action":"skip","Package":"ex/a","Test":"TestShort","Elapsed":0}
{"Action":"pass","Package":"ex/a","Elapsed":1.25}
{"Action":"run","Package":"ex/b","Test":"TestBad"}
{"Action":"output","Package":"ex/b","Test":"TestBad","Output":"    b_test.go:7: open C:\\x: Access is denied.\n"}
{"Action":"fail","Package":"ex/b","Test":"TestBad","Elapsed":0.5}
{"Action":"run","Package":"ex/b","Test":"TestGit2"}
{"Action":"output","Package":"ex/b","Test":"TestGit2","Output":"    b_test.go:9: under Wine: git is a Linux program, which Wine cannot start\n"}
{"Action":"skip","Package":"ex/b","Test":"TestGit2","Elapsed":0}
{"Action":"fail","Package":"ex/b","Elapsed":0.75}
{"ImportPath":"ex/c [ex/c.test]","Action":"build-output","Output":"c.go:3:2: undefined: unix.Flock\n"}
{"ImportPath":"ex/c [ex/c.test]","Action":"build-fail"}
{"Action":"fail","Package":"ex/c","Elapsed":0,"FailedBuild":"ex/c [ex/c.test]"}
{"Action":"skip","Package":"ex/d","Output":"?   \tex/d\t[no test files]\n"}
{"Action":"run","Package":"ex/e","Test":"TestHang"}
{"Action":"output","Package":"ex/e","Output":"panic: test timed out after 10m0s\n"}
{"Action":"fail","Package":"ex/e","Elapsed":600}
FAIL
`

func TestSummary(t *testing.T) {
	var out strings.Builder
	if run(strings.NewReader(events), &out, "windows (wine)", "under Wine: ") {
		t.Error("run reported success; want failure")
	}
	got := out.String()
	t.Log("\n" + got)
	for _, want := range []string{
		"ok   ex/a", "2 passed, 0 failed, 2 skipped (1 under Wine)",
		"FAIL ex/b", "open C:\\x: Access is denied.",
		"FAIL ex/c", "build failed", "undefined: unix.Flock",
		"FAIL ex/e", "panic: test timed out after 10m0s",
		"1 packages have no test files",
		"     2  under Wine: git is a Linux program, which Wine cannot start\n",
		"     1  short mode\n",
		"failed packages: ex/b ex/c ex/e\n",
		"2 of the 3 skips are Wine skips",
		"\nFAIL\n", // a line that is not an event passes through
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the report lacks %q", want)
		}
	}
	// ex/b's failed test, ex/c's build, ex/e's hung test.
	const closing = "windows (wine): 2 passed, 3 failed, 3 skipped\n"
	if !strings.HasSuffix(got, closing) {
		t.Errorf("the report does not end with %q", closing)
	}
}

func TestSuccess(t *testing.T) {
	var out strings.Builder
	in := `{"Action":"run","Package":"ex/a","Test":"TestOK"}
{"Action":"pass","Package":"ex/a","Test":"TestOK"}
{"Action":"pass","Package":"ex/a","Elapsed":0.1}
`
	if !run(strings.NewReader(in), &out, "x", "under Wine: ") {
		t.Errorf("run reported failure:\n%s", out.String())
	}
	if !strings.HasSuffix(out.String(), "x: 1 passed, 0 failed, 0 skipped\n") {
		t.Errorf("closing line wrong:\n%s", out.String())
	}
}

func TestSkipReason(t *testing.T) {
	for in, want := range map[string]string{
		"    x_test.go:3: under Wine: why\n": "under Wine: why",
		"=== RUN   T\n":                      "(no reason given)",
	} {
		if got := skipReason([]string{in}); got != want {
			t.Errorf("skipReason(%q) = %q, want %q", in, got, want)
		}
	}
	// A t.Log before the t.Skip, and a skip message of two lines.
	out := []string{"=== RUN   T\n", "    x_test.go:3: 402 acknowledged\n",
		"    x_test.go:9: under Wine: why\n", "        and more\n", "--- SKIP: T (0.00s)\n"}
	if got := skipReason(out); got != "under Wine: why" {
		t.Errorf("skipReason after a t.Log = %q, want %q", got, "under Wine: why")
	}
}
