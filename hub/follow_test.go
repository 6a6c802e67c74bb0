package hub_test

import (
	"context"
	"testing"
	"time"

	"github.com/crosscode/crosscode-mcp/hub"
	"github.com/crosscode/crosscode-mcp/internal/testing/fixture"
	"github.com/crosscode/crosscode-mcp/protocol"
	"github.com/crosscode/crosscode-mcp/store"
)

// TestFollowOtherProcesses: with Follow, what another process commits to
// the same database file (a local-mode agent) and the presence it writes
// fan out to subscribers, in order, without gaps or duplicates.
func TestFollowOtherProcesses(t *testing.T) {
	sqliteOnly(t)
	h := newHub(t, hub.Config{Follow: 20 * time.Millisecond})
	ctx := context.Background()
	other, err := store.Open(ctx, h.Path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	in := other.NewIngester(&store.IngesterOptions{GatherWait: -1})
	defer in.Close()
	r := fixture.NewReplica(wsMain, "rep-other", "ada")
	ingest := func(e *protocol.Envelope) int64 {
		t.Helper()
		res, err := in.Ingest(ctx, wsMain, e)
		if err == nil {
			err = res.Err
		}
		if err != nil {
			t.Fatal(err)
		}
		return res.Receipt.ServerSequence
	}
	before := ingest(r.Claim("clm-before", true, "src/**"))
	w := h.subscribe(t, wsMain, "rep-watch", h.Token)
	if w.Cursor != before {
		t.Fatalf("cursor %d, want %d", w.Cursor, before)
	}
	var want []int64
	for i := range 5 {
		want = append(want, ingest(r.Any("flw", i)))
	}
	for _, seq := range want {
		if got := frameSeq(w.next(t)); got != seq {
			t.Fatalf("frame #%d, want #%d", got, seq)
		}
	}
	if _, err := other.SetPresence(ctx, wsMain, &protocol.PresenceUpdate{ReplicaID: "rep-other", ActorID: "ada", Status: protocol.PresenceIdle}); err != nil {
		t.Fatal(err)
	}
	for {
		f := w.next(t)
		if f.Type != "presence" {
			t.Fatalf("want ada's presence, got %+v", f)
		}
		if f.Presence.SenderReplicaID == "rep-other" && f.Presence.Status == protocol.PresenceIdle {
			break
		}
	}
}
