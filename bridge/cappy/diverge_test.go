package cappy

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/crosscode/crosscode-mcp/store"
)

// twoCaptures stores a recording and a replay with the same n events; the
// replay's event at diffAt (if in range) gets another name.
func twoCaptures(t *testing.T, st *store.Store, n, diffAt int) {
	t.Helper()
	ctx := context.Background()
	for _, op := range []string{"op_rec", "op_play"} {
		if err := st.CreateCapture(ctx, &store.Capture{Op: op, Kind: KindScenario, Status: StatusCompleted, CreatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
		evs := make([]store.CaptureEvent, n)
		for i := range evs {
			name := "E"
			if op == "op_play" && i == diffAt {
				name = "OTHER"
			}
			evs[i] = store.CaptureEvent{Seq: int64(i + 1), T: float64(i), Event: name, Payload: json.RawMessage(`{"i":1}`), ReceivedAt: time.Now()}
		}
		if err := st.AppendEvents(ctx, op, evs); err != nil {
			t.Fatal(err)
		}
	}
}

func TestCompare(t *testing.T) {
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "c.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	twoCaptures(t, st, 1500, 1200)
	d, err := Compare(context.Background(), st, "op_rec", "op_play", 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if d.Identical || d.Index != 1200 || d.Compared != 1200 || d.Field != "event" || d.Expected == nil || d.Actual == nil ||
		d.Expected.Event != "E" || d.Actual.Event != "OTHER" || d.Expected.Seq != 1201 || d.Actual.Seq != 1201 {
		t.Fatalf("divergence %+v", d)
	}
	if d, err := Compare(context.Background(), st, "op_rec", "op_rec", 1, 0); err != nil || !d.Identical || d.Compared != 1500 {
		t.Fatalf("a capture against itself: %+v %v", d, err)
	}
}

// Compare allocates nothing per equal event on top of reading the pages:
// the two events and the Divergence are built at a difference only.
func TestCompareAllocatesPerDifferenceOnly(t *testing.T) {
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "c.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	const n = 3000
	twoCaptures(t, st, n, -1)
	ctx := context.Background()
	read := func() { // the pages Compare reads, alone
		for _, op := range []string{"op_rec", "op_play"} {
			var after int64
			for {
				evs, err := st.Events(ctx, store.EventQuery{Op: op, AfterSeq: after, Limit: 1000})
				if err != nil {
					t.Fatal(err)
				}
				if len(evs) == 0 {
					break
				}
				after = evs[len(evs)-1].Seq
			}
		}
	}
	compare := func() {
		if d, err := Compare(ctx, st, "op_rec", "op_play", 1, 0); err != nil || !d.Identical || d.Compared != n {
			t.Fatalf("Compare: %+v %v", d, err)
		}
	}
	pages := testing.AllocsPerRun(5, read)
	all := testing.AllocsPerRun(5, compare)
	if extra := all - pages; extra > n/10 {
		t.Fatalf("Compare allocated %.0f times beyond reading its pages, over %d equal events", extra, n)
	}
}
