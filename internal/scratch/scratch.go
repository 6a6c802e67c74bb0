// Package scratch makes working directories that a process owns while it
// runs and that the next process to make one of the same kind removes when
// their owner died without removing them (kill -9, a crash, a power cut).
//
// A directory parent/PREFIXn comes with a lock file parent/PREFIXn.lock
// (beside it, not in it: Windows removes no open file), locked by its
// owner before the directory is made and released after it is removed. A
// directory whose lock file is missing or free is stale.
package scratch

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gofrs/flock"
)

// Dir is one working directory, owned by this process until Remove.
type Dir struct {
	path string
	fl   *flock.Flock
}

// New removes the stale directories parent/prefix* (calling onStale, when
// not nil, with each before it is removed) and makes a new one ("" parent:
// os.TempDir()).
func New(parent, prefix string, onStale func(dir string)) (*Dir, error) {
	if parent == "" {
		parent = os.TempDir()
	}
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return nil, fmt.Errorf("scratch dir: %w", err)
	}
	Sweep(parent, prefix, onStale)
	for try := 0; ; try++ {
		d, err := create(parent, prefix)
		if err == nil || try == 10 {
			return d, err
		}
	}
}

// create makes the lock file, locks it and makes the directory. (Sweep
// leaves a lock file without its directory alone for a minute, so it does
// not take this one before it is locked.)
func create(parent, prefix string) (*Dir, error) {
	f, err := os.CreateTemp(parent, prefix+"*.lock")
	if err != nil {
		return nil, fmt.Errorf("scratch dir: %w", err)
	}
	lockPath := f.Name()
	f.Close()
	fl, err := Lock(lockPath)
	if err != nil {
		return nil, fmt.Errorf("scratch dir: %w", err)
	}
	path := strings.TrimSuffix(lockPath, ".lock")
	if err := os.Mkdir(path, 0o700); err != nil {
		fl.Close()
		return nil, fmt.Errorf("scratch dir: %w", err)
	}
	return &Dir{path: path, fl: fl}, nil
}

// Path is the directory.
func (d *Dir) Path() string { return d.path }

// Remove removes the directory (trying again for a few seconds while a
// child process, such as a browser's helper, still writes into it), then
// releases and removes its lock file.
func (d *Dir) Remove() error {
	err := RemoveAll(d.path, 5*time.Second)
	if err == nil {
		Unlock(d.fl)
	}
	return err
}

// RemoveAll removes path, trying again for up to within while a process
// that is ending (a browser's helper) still writes into it.
func RemoveAll(path string, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		err := os.RemoveAll(path)
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Sweep removes the stale directories parent/prefix* (calling onStale, when
// not nil, with each before it is removed), and lock files left without a
// directory for more than a minute. It returns how many directories it
// removed.
func Sweep(parent, prefix string, onStale func(dir string)) int {
	entries, _ := os.ReadDir(parent)
	n := 0
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, prefix) {
			continue
		}
		p := filepath.Join(parent, name)
		if dir, ok := strings.CutSuffix(p, ".lock"); ok {
			// A lock file is handled with its directory; alone, it is
			// either being created (a moment) or left by a crash.
			if _, err := os.Lstat(dir); !errors.Is(err, os.ErrNotExist) {
				continue
			}
			if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) > time.Minute {
				removeIfFree(p, "", nil)
			}
			continue
		}
		if !e.IsDir() {
			continue
		}
		lockPath := p + ".lock"
		if _, err := os.Lstat(lockPath); errors.Is(err, os.ErrNotExist) {
			// The lock is made before the directory and removed after it.
			if onStale != nil {
				onStale(p)
			}
			if os.RemoveAll(p) == nil {
				n++
			}
			continue
		}
		if removeIfFree(lockPath, p, onStale) {
			n++
		}
	}
	return n
}

// removeIfFree removes dir ("" for none; onStale first) and then the lock
// file when the lock can be taken; it reports whether it did.
func removeIfFree(lockPath, dir string, onStale func(string)) bool {
	fl := TakeIfFree(lockPath)
	if fl == nil {
		return false // held: its owner runs (or it cannot be told)
	}
	if dir != "" && onStale != nil {
		onStale(dir)
	}
	if dir != "" && os.RemoveAll(dir) != nil {
		fl.Close()
		return false
	}
	Unlock(fl)
	return true
}
