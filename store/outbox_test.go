package store

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/crosscode/crosscode-mcp/internal/testing/fixture"
	"github.com/crosscode/crosscode-mcp/protocol"
)

// TestOutboxUntilMirrored: an acknowledged entry stays (read by
// Unmirrored) until the mirror holds its serverSequence, then goes; one
// acknowledged after the mirror got there goes at once; a pending one
// whose envelope the mirror brings (its receipt was lost) goes too; none
// is listed twice, and Unmirrored lists acknowledged ones first, in
// server order, then pending ones.
func TestOutboxUntilMirrored(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "replica.db"), &Options{Projections: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.EnsureWorkspace(ctx, "mygame", ""); err != nil {
		t.Fatal(err)
	}
	r := fixture.NewReplica("mygame", "rep_a", "ada")
	var envs []*protocol.Envelope
	for _, e := range []*protocol.Envelope{r.Claim("clm_1", true, "a/**"), r.Claim("clm_2", true, "b/**"), r.Claim("clm_3", true, "c/**"), r.Intent("int_1", "d")} {
		if _, err := s.Enqueue(ctx, e); err != nil {
			t.Fatal(err)
		}
		envs = append(envs, e)
	}
	at := time.Now().UTC()
	receipt := func(seq int64) protocol.IngestReceipt {
		return protocol.IngestReceipt{ID: envs[seq-1].ID, ServerSequence: seq, IngestedAt: at}
	}
	list := func(kinds ...protocol.Kind) (seqs []int64, through int64) {
		t.Helper()
		es, through, err := s.Unmirrored(ctx, "mygame", kinds...)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range es {
			seqs = append(seqs, e.ClientSequence)
		}
		return seqs, through
	}
	if err := s.Acknowledge(ctx, "rep_a", 2, receipt(2)); err != nil {
		t.Fatal(err)
	}
	if err := s.Acknowledge(ctx, "rep_a", 1, receipt(1)); err != nil {
		t.Fatal(err)
	}
	if got, through := list(protocol.KindClaim); !slices.Equal(got, []int64{1, 2, 3}) || through != 0 {
		t.Fatalf("unmirrored claims %v through %d, want [1 2 3] (acknowledged in server order, then pending) through 0", got, through)
	}
	if got, _ := list(); !slices.Equal(got, []int64{1, 2, 3, 4}) {
		t.Fatalf("unmirrored %v, want all four", got)
	}
	// The mirror reaches 1; the service's 3 is envelope 3, whose receipt
	// was lost (still pending here).
	mirrored := func(i int, seq int64) *protocol.Envelope {
		e := *envs[i]
		e.ServerSequence, e.IngestedAt = seq, &at
		return &e
	}
	if err := s.Mirror(ctx, "mygame", []*protocol.Envelope{mirrored(0, 1)}, "remote:mygame", 1); err != nil {
		t.Fatal(err)
	}
	if got, through := list(); !slices.Equal(got, []int64{2, 3, 4}) || through != 1 {
		t.Fatalf("after mirroring 1: %v through %d", got, through)
	}
	if _, err := s.OutboxEntry(ctx, "rep_a", 1); !errors.Is(err, ErrNotFound) {
		t.Fatalf("entry 1 kept once mirrored: %v", err)
	}
	if err := s.Mirror(ctx, "mygame", []*protocol.Envelope{mirrored(1, 2), mirrored(2, 3)}, "remote:mygame", 3); err != nil {
		t.Fatal(err)
	}
	if got, _ := list(); !slices.Equal(got, []int64{4}) {
		t.Fatalf("after mirroring 2 and 3: %v, want only the pending intent", got)
	}
	if pending, _, _ := s.OutboxCounts(ctx, "rep_a"); pending != 1 {
		t.Fatalf("%d pending, want 1: entry 3 is in the log", pending)
	}
	// The mirror got to 4 before the receipt of 4 arrived: it goes at once.
	if err := s.Mirror(ctx, "mygame", nil, "remote:mygame", 3); err != nil {
		t.Fatal(err)
	}
	e4 := mirrored(3, 4)
	e4.ClientSequence = 99 // as if mirrored from elsewhere: the entry stays pending
	if err := s.Mirror(ctx, "mygame", []*protocol.Envelope{e4}, "remote:mygame", 4); err != nil {
		t.Fatal(err)
	}
	if got, _ := list(); !slices.Equal(got, []int64{4}) {
		t.Fatalf("before its receipt: %v", got)
	}
	if err := s.Acknowledge(ctx, "rep_a", 4, receipt(4)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.OutboxEntry(ctx, "rep_a", 4); !errors.Is(err, ErrNotFound) {
		t.Fatalf("entry acknowledged after the mirror held it is kept: %v", err)
	}
	if got, _ := list(); len(got) != 0 {
		t.Fatalf("left: %v", got)
	}
}
