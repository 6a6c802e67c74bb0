//go:build unix && !darwin

package main

import (
	"os"
	"path/filepath"
)

// userDataDir is $XDG_DATA_HOME, else ~/.local/share ("" when there is no
// home).
func userDataDir() string {
	if d := os.Getenv("XDG_DATA_HOME"); d != "" {
		return d
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".local", "share")
	}
	return ""
}
