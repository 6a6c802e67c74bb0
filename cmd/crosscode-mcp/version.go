package main

import (
	"runtime/debug"
	"strings"
)

// versionString is the module version and VCS revision from build info.
func versionString() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "crosscode-mcp (unknown version)"
	}
	v := info.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var rev, dirty string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	parts := []string{"crosscode-mcp", v}
	if rev != "" {
		parts = append(parts, rev[:min(12, len(rev))]+dirty)
	}
	parts = append(parts, info.GoVersion)
	return strings.Join(parts, " ")
}
