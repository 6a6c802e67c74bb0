package cappy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/crosscode/crosscode-mcp/protocol"
	"github.com/crosscode/crosscode-mcp/store"
)

// storeReplay verifies a replay the adapter sent and copies it, read-only,
// into the content-addressed store. An adapter's file is only read: never
// moved, changed or deleted. A replay over Config.MaxReplayBytes is
// refused before anything is read. It runs on the reader goroutine, paused
// (see adapterConn.paused), and ends early when ctx does.
func (c *Controller) storeReplay(ctx context.Context, r *protocol.ReplayPayload) (*store.Replay, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	limit := c.cfg.MaxReplayBytes
	if r.Kind == "file" && r.Bytes > limit {
		return nil, fmt.Errorf("the replay file is %d bytes, over the %d this controller stores", r.Bytes, limit)
	}
	if h := c.cfg.hooks.storingReplay; h != nil {
		h()
	}
	want := strings.ToLower(r.SHA256)
	if err := os.MkdirAll(c.cfg.ReplayDir, 0o700); err != nil {
		return nil, err
	}
	dst := filepath.Join(c.cfg.ReplayDir, want)
	var size int64
	switch r.Kind {
	case "inline":
		data, err := r.DecodeInline()
		if err != nil {
			return nil, fmt.Errorf("inline replay: %w", err)
		}
		if int64(len(data)) > limit {
			return nil, fmt.Errorf("the inline replay is %d bytes, over the %d this controller stores", len(data), limit)
		}
		size = int64(len(data))
		if err := writeOnce(dst, func(w io.Writer) error { _, err := w.Write(data); return err }); err != nil {
			return nil, err
		}
	case "file":
		n, err := copyVerified(ctx, r.Path, dst, r.Bytes, want)
		if err != nil {
			return nil, err
		}
		size = n
	}
	rep := store.Replay{SHA256: want, Bytes: size, Format: r.Format, Path: dst, CreatedAt: time.Now()}
	if err := c.st.PutReplay(ctx, rep); err != nil {
		return nil, err
	}
	return &rep, nil
}

// copyVerified copies the adapter's file at src to dst while hashing it,
// and keeps the copy only if its size and SHA-256 are what the adapter said.
func copyVerified(ctx context.Context, src, dst string, size int64, sha string) (int64, error) {
	fi, err := os.Lstat(src)
	if err != nil {
		return 0, fmt.Errorf("replay file: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return 0, fmt.Errorf("replay file %s is not a regular file", src)
	}
	if fi.Size() != size {
		return 0, fmt.Errorf("replay file %s is %d bytes, the adapter said %d", src, fi.Size(), size)
	}
	if _, err := os.Stat(dst); err == nil {
		// Already stored: verify the adapter's file anyway, without copying.
		got, n, err := hashFile(ctx, src, size)
		if err != nil {
			return 0, err
		}
		if got != sha || n != size {
			return 0, fmt.Errorf("replay file %s: sha256 %s (%d bytes), the adapter said %s (%d bytes)", src, got, n, sha, size)
		}
		return n, nil
	}
	in, err := os.Open(src)
	if err != nil {
		return 0, fmt.Errorf("replay file: %w", err)
	}
	defer in.Close()
	h := sha256.New()
	var n int64
	err = writeOnce(dst, func(w io.Writer) error {
		var err error
		n, err = io.Copy(io.MultiWriter(w, h), io.LimitReader(ctxReader{ctx, in}, size+1))
		if err != nil {
			return err
		}
		got := hex.EncodeToString(h.Sum(nil))
		if n != size || got != sha {
			return fmt.Errorf("replay file %s: sha256 %s (%d bytes), the adapter said %s (%d bytes)", src, got, n, sha, size)
		}
		return nil
	})
	return n, err
}

func hashFile(ctx context.Context, path string, limit int64) (string, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(ctxReader{ctx, f}, limit+1))
	return hex.EncodeToString(h.Sum(nil)), n, err
}

// ctxReader stops reading once ctx ends (the controller closing or the
// adapter gone), so a large copy does not hold them up.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// writeOnce writes dst through a temporary file in the same directory:
// fill it, sync it, make it read-only, rename it into place. A dst that
// exists already (the same content) is kept.
func writeOnce(dst string, fill func(io.Writer) error) error {
	if _, err := os.Stat(dst); err == nil {
		return nil
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".replay-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := fill(tmp); err != nil {
		tmp.Close()
		return err
	}
	if err := errors.Join(tmp.Sync(), tmp.Chmod(0o444), tmp.Close()); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), dst)
}

// replayPayload is what prepare_replay carries for a stored replay: small
// ones inline, larger ones as the store's read-only file.
func (c *Controller) replayPayload(r *store.Replay) (*protocol.ReplayPayload, error) {
	if r == nil {
		return nil, errorf(protocol.CappyReplayInvalid, "no replay given")
	}
	if r.Bytes <= protocol.MaxInlineReplayBytes {
		data, err := os.ReadFile(r.Path)
		if err != nil {
			return nil, errorf(protocol.CappyReplayInvalid, "read stored replay: %v", err)
		}
		p := protocol.NewInlineReplay(data, r.Format)
		if p.SHA256 != r.SHA256 {
			return nil, errorf(protocol.CappyReplayInvalid, "stored replay %s is corrupt", r.SHA256)
		}
		return p, nil
	}
	return &protocol.ReplayPayload{Kind: "file", Path: r.Path, SHA256: r.SHA256, Bytes: r.Bytes, Format: r.Format}, nil
}
