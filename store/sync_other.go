//go:build !linux

package store

import "os"

// datasync flushes f's data.
func datasync(f *os.File) error { return f.Sync() }
