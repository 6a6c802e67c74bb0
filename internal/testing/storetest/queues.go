package storetest

import (
	"context"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/crosscode/crosscode-mcp/internal/testing/queuemodel"
	"github.com/crosscode/crosscode-mcp/protocol"
	"github.com/crosscode/crosscode-mcp/store"
)

// testClaimQueues: the service stores claims that may wait (waitUntil) as
// it stores any payload, in its order, and the grants every replica
// computes from the log it serves are the model's (internal/testing/
// queuemodel): random claims, waits, releases and handoffs among four
// actors, ingested in random batches; the log paged back whole equals
// what was sent, and a replica's projections of it (store.Mirror, as a
// remote replica's) agree with the model at random moments from the
// log's end on.
func testClaimQueues(t *testing.T, s Store) {
	ctx := context.Background()
	token(t, s, ws)
	g := queuemodel.NewGen(7, ws, 4, time.Now())
	var sent []*protocol.Envelope
	for len(sent) < 240 {
		batch := make([]*protocol.Envelope, 1+g.Rng.IntN(8))
		for i := range batch {
			g.Clock = g.Clock.Add(time.Second)
			batch[i] = g.Next()
		}
		for i, r := range ingest(t, s, batch...) {
			if r.Err != nil || r.Logged == nil {
				t.Fatalf("ingest %s: %+v", batch[i].ID, r)
			}
		}
		sent = append(sent, batch...)
	}
	log := PageLog(t, s, ws)
	if len(log) != len(sent) {
		t.Fatalf("paged %d operations, sent %d", len(log), len(sent))
	}
	waiting := 0
	for i, e := range log {
		if !reflect.DeepEqual(e.Payload, sent[i].Payload) || e.ServerSequence != int64(i+1) {
			t.Fatalf("operation %d: %+v, sent %+v", i+1, e.Payload, sent[i].Payload)
		}
		if c := e.Claim(); c != nil && c.WaitUntil != nil {
			waiting++
		}
	}
	if waiting < 50 {
		t.Fatalf("only %d claims asked to wait", waiting)
	}
	replica, err := store.Open(ctx, filepath.Join(t.TempDir(), "replica.db"), &store.Options{Projections: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { replica.Close() })
	if err := replica.Mirror(ctx, ws, log, "mirror", int64(len(log))); err != nil {
		t.Fatal(err)
	}
	m := queuemodel.Replay(log)
	totals := map[string]int{}
	end := *log[len(log)-1].IngestedAt
	for _, d := range []time.Duration{0, time.Second, 30 * time.Second, 5 * time.Minute, time.Hour, 2 * time.Hour} {
		queuemodel.Compare(t, replica, ws, m.Clone(), len(log), end.Add(d), totals)
	}
	t.Logf("states compared: %v", totals)
	if totals["queued"] == 0 || totals["late grant"] == 0 || totals["wait_expired"] == 0 {
		t.Fatalf("the log showed too little: %v", totals)
	}
}
