package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// Stamped by the release build (.goreleaser.yaml):
//
//	-X main.version=1.2.3 -X main.commit=<full hash> -X main.date=2026-12-02T05:00:00Z
//
// Empty in a plain build, where build info fills in what it knows.
var (
	version string
	commit  string
	date    string
)

// buildFacts is what `crosscode-mcp version` reports.
type buildFacts struct {
	Version string // "1.2.3", a module version without its "v", or "dev"
	Commit  string // VCS revision, "" when unknown
	Dirty   bool   // the tree had uncommitted changes (build info only)
	Date    string // build date, "" when not stamped
	Go      string // runtime.Version()
	OS      string
	Arch    string
}

// versionString is the line `crosscode-mcp version` prints, e.g.
//
//	crosscode-mcp 1.2.3 (commit abc123def456, built 2026-12-02T05:00:00Z, go1.26.8 linux/amd64)
//	crosscode-mcp dev (commit abc123def456+dirty, go1.26.8 linux/amd64)
func versionString() string { return formatVersion(thisBuild()) }

// thisBuild is what this binary knows of its build: the stamps, else its
// build info.
func thisBuild() buildFacts {
	info, _ := debug.ReadBuildInfo() // nil when the binary has none
	return resolveBuild(version, commit, date, info)
}

// resolveBuild prefers the release build's stamps; without them it takes
// the module version (`go install ...@v1.2.3`) and the VCS revision from
// build info, and calls the version "dev" when there is no module version
// (a build from a clone). info may be nil.
func resolveBuild(stampVersion, stampCommit, stampDate string, info *debug.BuildInfo) buildFacts {
	// GoReleaser stamps "none" for what it could not learn from git (a
	// snapshot in a clone without a remote).
	if stampCommit == "none" {
		stampCommit = ""
	}
	f := buildFacts{Version: stampVersion, Commit: stampCommit, Date: stampDate,
		Go: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH}
	if info != nil {
		if f.Version == "" {
			if v := info.Main.Version; v != "" && v != "(devel)" {
				f.Version = v
			}
		}
		if f.Commit == "" {
			for _, s := range info.Settings {
				switch s.Key {
				case "vcs.revision":
					f.Commit = s.Value
				case "vcs.modified":
					f.Dirty = s.Value == "true"
				}
			}
		}
	}
	if f.Version == "" {
		f.Version = "dev"
	}
	// GoReleaser's .Version has no "v"; a module version does.
	if strings.HasPrefix(f.Version, "v") && len(f.Version) > 1 && f.Version[1] >= '0' && f.Version[1] <= '9' {
		f.Version = f.Version[1:]
	}
	return f
}

// formatVersion renders f on one line; what is unknown is left out.
func formatVersion(f buildFacts) string {
	var details []string
	if f.Commit != "" {
		c := f.Commit[:min(12, len(f.Commit))]
		if f.Dirty {
			c += "+dirty"
		}
		details = append(details, "commit "+c)
	}
	if f.Date != "" {
		details = append(details, "built "+f.Date)
	}
	details = append(details, fmt.Sprintf("%s %s/%s", f.Go, f.OS, f.Arch))
	return fmt.Sprintf("crosscode-mcp %s (%s)", f.Version, strings.Join(details, ", "))
}
