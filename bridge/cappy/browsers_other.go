//go:build !windows && !darwin

package cappy

// InstalledBrowsers: on Linux, browsers are found on PATH (Browsers).
func InstalledBrowsers() []string { return nil }
