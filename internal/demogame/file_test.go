package demogame

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crosscode/crosscode-mcp/bridge/cappy/adapter"
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
	op, stop := adapter.NewLocalOp(context.Background(), "op_f", func(protocol.Event) error {
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
