package main

import (
	"runtime"
	"runtime/debug"
	"testing"
)

func TestVersionFormat(t *testing.T) {
	host := runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH
	vcs := func(rev, modified string) *debug.BuildInfo {
		return &debug.BuildInfo{Main: debug.Module{Path: "github.com/crosscode/crosscode-mcp", Version: "(devel)"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified}}}
	}
	for _, c := range []struct {
		name                  string
		version, commit, date string
		info                  *debug.BuildInfo
		want                  string
	}{
		{"release build", "1.2.3", "abc123def4567890abc123def4567890abc123de", "2026-12-02T05:00:00Z", vcs("ffffffffffff", "true"),
			"crosscode-mcp 1.2.3 (commit abc123def456, built 2026-12-02T05:00:00Z, " + host + ")"},
		{"snapshot build", "0.0.1-snapshot.g1db7242", "1db72425b3a1", "2026-12-02T05:00:00Z", nil,
			"crosscode-mcp 0.0.1-snapshot.g1db7242 (commit 1db72425b3a1, built 2026-12-02T05:00:00Z, " + host + ")"},
		{"plain build from a clone", "", "", "", vcs("abc123def4567890", "false"),
			"crosscode-mcp dev (commit abc123def456, " + host + ")"},
		{"plain build, uncommitted changes", "", "", "", vcs("abc123def4567890", "true"),
			"crosscode-mcp dev (commit abc123def456+dirty, " + host + ")"},
		{"plain build, -buildvcs=false", "", "", "", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}},
			"crosscode-mcp dev (" + host + ")"},
		{"go install ...@v1.2.3", "", "", "", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}},
			"crosscode-mcp 1.2.3 (" + host + ")"},
		{"go install ...@pseudo-version", "", "", "", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261202050000-abc123def456"}},
			"crosscode-mcp 0.0.0-20261202050000-abc123def456 (" + host + ")"},
		{"no build info", "", "", "", nil, "crosscode-mcp dev (" + host + ")"},
		{"GoReleaser without git information", "0.0.1-snapshot.gnone", "none", "2026-12-02T05:00:00Z", nil,
			"crosscode-mcp 0.0.1-snapshot.gnone (built 2026-12-02T05:00:00Z, " + host + ")"},
		{"a short stamped commit stays whole", "1.2.3", "abc", "", nil, "crosscode-mcp 1.2.3 (commit abc, " + host + ")"},
	} {
		if got := formatVersion(resolveBuild(c.version, c.commit, c.date, c.info)); got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
	}
}

// The binary these tests run is a plain build: no stamps.
func TestVersionUnstamped(t *testing.T) {
	if version != "" || commit != "" || date != "" {
		t.Skipf("stamped build (%q %q %q)", version, commit, date)
	}
	out, errOut, code := runCLI(t, "version")
	if code != 0 || out != versionString()+"\n" || len(out) < len("crosscode-mcp dev (go") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if want := "crosscode-mcp dev ("; out[:len(want)] != want {
		t.Fatalf("a plain build's version is dev: %q", out)
	}
}
