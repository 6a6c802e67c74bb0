package cappy

import (
	"os"
	"path/filepath"
)

// InstalledBrowsers are where Chrome, Chromium and Edge install themselves
// on macOS (for all users, then in this user's Applications).
func InstalledBrowsers() []string {
	apps := []string{
		"Google Chrome.app/Contents/MacOS/Google Chrome",
		"Chromium.app/Contents/MacOS/Chromium",
		"Microsoft Edge.app/Contents/MacOS/Microsoft Edge",
	}
	var out []string
	for _, a := range apps {
		out = append(out, filepath.Join("/Applications", a))
	}
	if home, err := os.UserHomeDir(); err == nil {
		for _, a := range apps {
			out = append(out, filepath.Join(home, "Applications", a))
		}
	}
	return out
}
