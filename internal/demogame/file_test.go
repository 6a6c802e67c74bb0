package demogame

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crosscode/crosscode-mcp/adapters/go/cappy"
	"github.com/crosscode/crosscode-mcp/protocol"
)

// A recording too large for inline goes to a file, which Replay reads.
func TestLargeRecordingIsAFileReplay(t *testing.T) {
	dir := t.TempDir()
	g := &Game{ReplayDir: dir}
	inputs := strings.Repeat("a...", protocol.MaxInlineReplayBytes/4+100)
	r, err := g.replayPayload("op_big", recording{Format: Format, Seed: 9, Hero: "knight", TickMs: TickMs, Ticks: len(inputs), Inputs: inputs})
	if err != nil {
		t.Fatal(err)
	}
	if r.Kind != "file" || filepath.Dir(r.Path) != dir || r.Bytes <= protocol.MaxInlineReplayBytes || r.Format != Format {
		t.Fatalf("replay = %+v", r)
	}
	if err := r.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := g.ValidateReplay(r, nil); err != nil {
		t.Fatal(err)
	}
	n := 0
	var stop func()
	op, stop := cappy.NewLocalOp(context.Background(), "op_f", func(protocol.Event) error {
		if n++; n == 100 {
			stop()
		}
		return nil
	})
	if err := g.Replay(context.Background(), op, r, nil); err != nil || n < 100 {
		t.Fatalf("file replay: %v after %d events", err, n)
	}
	// A changed file is refused.
	os.WriteFile(r.Path, []byte(`{"format":"demo-arena/v1"}`), 0o600)
	if err := g.ValidateReplay(r, nil); err == nil {
		t.Fatal("a changed replay file was accepted")
	}
}

// A file replay is read and decoded once: at ValidateReplay, which the
// adapter calls before ready; the Replay of the same payload that follows
// uses it (here, with the file gone in between).
func TestFileReplayDecodedOnce(t *testing.T) {
	g := &Game{ReplayDir: t.TempDir()}
	inputs := strings.Repeat("a.s.", protocol.MaxInlineReplayBytes/4+100)
	r, err := g.replayPayload("op_big", recording{Format: Format, Seed: 3, Hero: "rogue", TickMs: TickMs, Ticks: len(inputs), Inputs: inputs})
	if err != nil {
		t.Fatal(err)
	}
	if r.Kind != "file" {
		t.Fatalf("replay = %+v", r)
	}
	if err := g.ValidateReplay(r, nil); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(r.Path); err != nil {
		t.Fatal(err)
	}
	n := 0
	var stop func()
	op, stop := cappy.NewLocalOp(context.Background(), "op_once", func(protocol.Event) error {
		if n++; n == 10 {
			stop()
		}
		return nil
	})
	if err := g.Replay(context.Background(), op, r, nil); err != nil || n < 10 {
		t.Fatalf("Replay after ValidateReplay read the file again: %v after %d events", err, n)
	}
	// Another payload, or the same one again, is read anew.
	op2, _ := cappy.NewLocalOp(context.Background(), "op_again", nil)
	if err := g.Replay(context.Background(), op2, r, nil); err == nil {
		t.Fatal("a second Replay of a payload whose file is gone succeeded")
	}
}
