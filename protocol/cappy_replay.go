package protocol

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strings"
)

// Inline replays, encoded and decoded the same way by the controller and
// the adapter library.

// NewInlineReplay wraps data as an inline replay payload: base64 with its
// SHA-256 in lowercase hex. It does not check the size: DecodeInline (and
// so the controller) refuses more than MaxInlineReplayBytes.
func NewInlineReplay(data []byte, format string) *ReplayPayload {
	sum := sha256.Sum256(data)
	return &ReplayPayload{
		Kind:     "inline",
		Encoding: "base64",
		Data:     base64.StdEncoding.EncodeToString(data),
		SHA256:   hex.EncodeToString(sum[:]),
		Format:   format,
	}
}

// DecodeInline returns an inline replay's data after checking its shape
// (Validate, and kind inline), its size (at most MaxInlineReplayBytes
// decoded; longer data is refused before it is decoded) and its SHA-256
// (hex digits in either case). It returns nil or a *FieldError.
func (r *ReplayPayload) DecodeInline() ([]byte, error) {
	if r == nil {
		return nil, fieldErr("replay", "required")
	}
	if err := r.Validate(); err != nil {
		return nil, err
	}
	if r.Kind != "inline" {
		return nil, fieldErr("replay.kind", "is %q, not \"inline\"", r.Kind)
	}
	if len(r.Data) > base64.StdEncoding.EncodedLen(MaxInlineReplayBytes) {
		return nil, fieldErr("replay.data", "an inline replay holds at most %d bytes decoded, this one about %d; send it as a file",
			MaxInlineReplayBytes, base64.StdEncoding.DecodedLen(len(r.Data)))
	}
	data, err := base64.StdEncoding.DecodeString(r.Data)
	if err != nil {
		return nil, fieldErr("replay.data", "not valid base64: %v", err)
	}
	if len(data) > MaxInlineReplayBytes {
		return nil, fieldErr("replay.data", "an inline replay holds at most %d bytes decoded, this one %d; send it as a file", MaxInlineReplayBytes, len(data))
	}
	sum := sha256.Sum256(data)
	if got := hex.EncodeToString(sum[:]); !strings.EqualFold(got, r.SHA256) {
		return nil, fieldErr("replay.sha256", "the data's SHA-256 is %s, the payload says %s", got, r.SHA256)
	}
	return data, nil
}
