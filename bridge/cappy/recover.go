package cappy

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/gofrs/flock"

	"github.com/crosscode/crosscode-mcp/internal/ids"
	"github.com/crosscode/crosscode-mcp/internal/scratch"
	"github.com/crosscode/crosscode-mcp/protocol"
	"github.com/crosscode/crosscode-mcp/store"
)

// A capture store may be shared by several controllers (every agent of a
// repository runs one), and a controller may die without ending its
// operation (kill -9, a crash, a power cut). Each controller holds a lock
// file for as long as it runs and stamps its captures with its id; an
// operation still open in the store whose controller's lock is free was
// left behind, and the next controller to start ends it as failed, keeping
// its events and frames, instead of it looking like it still runs.

// ownerLock is a controller's claim on its captures while it runs.
type ownerLock struct {
	id string
	fl *flock.Flock
}

func lockDir(frameDir string) string { return filepath.Join(filepath.Dir(frameDir), "controllers") }

// takeOwnerLock creates and locks this controller's lock file.
func takeOwnerLock(frameDir string) (*ownerLock, error) {
	dir := lockDir(frameDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("cappy: %w", err)
	}
	id := ids.New("ctl")
	fl, err := scratch.Lock(filepath.Join(dir, id+".lock"))
	if err != nil {
		return nil, fmt.Errorf("cappy: %w", err)
	}
	return &ownerLock{id: id, fl: fl}, nil
}

// release unlocks and removes the lock file.
func (l *ownerLock) release() { scratch.Unlock(l.fl) }

// ownerGone reports whether the controller id no longer runs: its lock
// file is missing, or can be locked.
func ownerGone(frameDir, id string) bool {
	if id == "" {
		return true // from a controller that kept no lock
	}
	path := filepath.Join(lockDir(frameDir), id+".lock")
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return true
	}
	fl := scratch.TakeIfFree(path)
	if fl == nil {
		return false // held: it runs (or cannot be told)
	}
	scratch.Unlock(fl)
	return true
}

// RecoverAbandoned ends, as failed, the operations left open in the store
// by controllers that stopped without ending them, and returns how many.
func (c *Controller) RecoverAbandoned(ctx context.Context) (int, error) {
	open, err := c.st.OpenCaptures(ctx)
	if err != nil {
		return 0, err
	}
	gone := map[string]bool{}
	n := 0
	for _, oc := range open {
		if oc.Owner == c.owner.id {
			continue
		}
		g, seen := gone[oc.Owner]
		if !seen {
			g = ownerGone(c.cfg.FrameDir, oc.Owner)
			gone[oc.Owner] = g
		}
		if !g {
			continue
		}
		err := c.st.UpdateCapture(ctx, oc.Op, store.CaptureUpdate{Status: StatusFailed, Code: protocol.CappyAdapterDisconnected,
			Message: "the crosscode-mcp process that ran it stopped (it crashed or was killed) before it ended; its events and frames so far are kept", EndedAt: time.Now()})
		if err != nil {
			return n, err
		}
		c.log.Warn("abandoned operation ended", "op", oc.Op, "was", oc.Status)
		n++
	}
	return n, nil
}
