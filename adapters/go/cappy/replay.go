package cappy

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/crosscode/crosscode-mcp/protocol"
)

// InlineReplay wraps replay data as an inline payload: base64 with its
// SHA-256 (protocol.NewInlineReplay). Inline replays may hold at most
// protocol.MaxInlineReplayBytes; use FileReplay for more (the controller
// refuses a larger inline one).
func InlineReplay(data []byte, format string) *protocol.ReplayPayload {
	return protocol.NewInlineReplay(data, format)
}

// DecodeInline returns an inline replay's data, checking its encoding, the
// 1 MiB limit and its SHA-256 (protocol's DecodeInline, as the controller
// does); a refusal is a *Failure with protocol.CappyReplayInvalid.
func DecodeInline(r *protocol.ReplayPayload) ([]byte, error) {
	data, err := r.DecodeInline()
	if err != nil {
		return nil, Failf(protocol.CappyReplayInvalid, "%v", err)
	}
	return data, nil
}

// FileReplay describes a replay file the game wrote: its absolute path,
// size and SHA-256.
func FileReplay(path, format string) (*protocol.ReplayPayload, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, fmt.Errorf("cappy: replay file %s is empty", path)
	}
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	return &protocol.ReplayPayload{
		Kind:   "file",
		Path:   path,
		SHA256: hex.EncodeToString(h.Sum(nil)),
		Bytes:  n,
		Format: format,
	}, nil
}

// ReadReplay returns a replay's data, inline or file, checking its size
// and SHA-256. A file replay larger than maxFileBytes (when > 0) is
// refused.
func ReadReplay(r *protocol.ReplayPayload, maxFileBytes int64) ([]byte, error) {
	if r == nil || r.Kind != "file" {
		return DecodeInline(r)
	}
	if maxFileBytes > 0 && r.Bytes > maxFileBytes {
		return nil, Failf(protocol.CappyReplayInvalid, "replay file is %d bytes, more than %d", r.Bytes, maxFileBytes)
	}
	f, err := os.Open(r.Path)
	if err != nil {
		return nil, Failf(protocol.CappyReplayInvalid, "replay file: %v", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, r.Bytes+1))
	if err != nil {
		return nil, Failf(protocol.CappyReplayInvalid, "replay file: %v", err)
	}
	if int64(len(data)) != r.Bytes {
		return nil, Failf(protocol.CappyReplayInvalid, "replay file %s is not %d bytes", r.Path, r.Bytes)
	}
	if err := checkSum(data, r.SHA256); err != nil {
		return nil, err
	}
	return data, nil
}

func checkSum(data []byte, want string) error {
	sum := sha256.Sum256(data)
	if got := hex.EncodeToString(sum[:]); !strings.EqualFold(got, want) {
		return Failf(protocol.CappyReplayInvalid, "replay SHA-256 is %s, expected %s", got, want)
	}
	return nil
}
