package main

import (
	"path/filepath"

	"golang.org/x/sys/windows"
)

// networkFS reports a path on a network drive (a mapped share or a UNC
// path), where SQLite's locking (and so local mode) is not reliable.
func networkFS(path string) (string, bool) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", false
	}
	root, err := windows.UTF16PtrFromString(filepath.VolumeName(abs) + `\`)
	if err != nil {
		return "", false
	}
	if windows.GetDriveType(root) == windows.DRIVE_REMOTE {
		return "a network drive", true
	}
	return "", false
}
