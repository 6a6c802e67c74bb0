package scratch

import (
	"errors"
	"fmt"
	"os"

	"github.com/gofrs/flock"
)

// Lock files say that a process runs: its owner holds the lock for as long
// as it runs, and the OS releases it when the owner dies, however it dies.
// A scratch directory's lock and the capture controller's lock are such
// files.

// Lock creates the lock file at path if it is missing and locks it for
// this process; a lock another process holds is an error.
func Lock(path string) (*flock.Flock, error) {
	fl := flock.New(path, flock.SetPermissions(0o600))
	locked, err := fl.TryLock()
	if err == nil && !locked {
		err = errors.New("held by another process")
	}
	if err != nil {
		fl.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return fl, nil
}

// TakeIfFree locks the lock file at path when no process holds it (its
// owner is gone) and returns it, for Unlock once what the owner left is
// cleared; nil when it is held, or cannot be told.
func TakeIfFree(path string) *flock.Flock {
	fl := flock.New(path)
	if locked, err := fl.TryLock(); err != nil || !locked {
		fl.Close()
		return nil
	}
	return fl
}

// Unlock releases a lock and removes its file (closed first: Windows
// removes no open file).
func Unlock(fl *flock.Flock) {
	fl.Close()
	os.Remove(fl.Path())
}
