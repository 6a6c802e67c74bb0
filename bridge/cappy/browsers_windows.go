package cappy

import (
	"os"
	"path/filepath"
)

// InstalledBrowsers are where Chrome, Edge and Chromium install themselves
// on Windows (for all users, then for this one), in order of preference.
func InstalledBrowsers() []string {
	var out []string
	for _, c := range []struct{ env, rel string }{
		{"ProgramFiles", `Google\Chrome\Application\chrome.exe`},
		{"ProgramFiles(x86)", `Google\Chrome\Application\chrome.exe`},
		{"LOCALAPPDATA", `Google\Chrome\Application\chrome.exe`},
		{"ProgramFiles(x86)", `Microsoft\Edge\Application\msedge.exe`},
		{"ProgramFiles", `Microsoft\Edge\Application\msedge.exe`},
		{"LOCALAPPDATA", `Chromium\Application\chrome.exe`},
	} {
		if dir := os.Getenv(c.env); dir != "" {
			out = append(out, filepath.Join(dir, c.rel))
		}
	}
	return out
}
