package cappy

import (
	"context"
	"testing"

	"github.com/crosscode/crosscode-mcp/protocol"
)

// seededRecording records with seed (nil: none asked) and returns the
// operation and the record_start the adapter got.
func seededRecording(t *testing.T, e *env, a *testAdapter, seed *int64) (*Operation, msg) {
	t.Helper()
	o := start(t, e, Request{Kind: KindRecording, Seed: seed})
	rs := a.expect(t, "record_start")
	a.send(t, map[string]any{"type": "started", "op": o.ID})
	waitStatus(t, o, StatusRunning)
	if err := e.ctrl.Stop(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	a.expect(t, "stop")
	a.send(t, map[string]any{"type": "completed", "op": o.ID, "replay": inlineReplay([]byte("steps of " + o.ID))})
	wantOutcome(t, e, o, StatusCompleted, "")
	return o, rs
}

// TestSeedToSeededAdapter: an adapter that advertises seed gets one in
// every record_start (1 when none was asked) and prepare_replay (the
// recording's), and the capture keeps it.
func TestSeedToSeededAdapter(t *testing.T) {
	e := newEnv(t, nil)
	a := connect(t, e, append(allCaps, protocol.CapSeed)...)
	ctx := context.Background()

	def, rs := seededRecording(t, e, a, nil)
	if rs.M["seed"] != 1.0 {
		t.Fatalf("record_start without a seed asked: %s, want seed 1", rs.Raw)
	}
	seven := int64(7)
	rec, rs := seededRecording(t, e, a, &seven)
	if rs.M["seed"] != 7.0 {
		t.Fatalf("record_start %s, want seed 7", rs.Raw)
	}
	for op, want := range map[string]int64{def.ID: 1, rec.ID: 7} {
		c, err := e.st.Capture(ctx, op)
		if err != nil || c.Seed == nil || *c.Seed != want {
			t.Fatalf("capture %s: seed %v (%v), want %d", op, c.Seed, err, want)
		}
	}
	c, _ := e.st.Capture(ctx, rec.ID)
	stored, err := e.st.Replay(ctx, c.ReplaySHA)
	if err != nil {
		t.Fatal(err)
	}
	o := start(t, e, Request{Kind: KindReplay, Replay: stored, ReplayOf: rec.ID, Seed: c.Seed})
	if p := a.expect(t, "prepare_replay"); p.M["seed"] != 7.0 {
		t.Fatalf("prepare_replay %s, want seed 7", p.Raw)
	}
	e.ctrl.Cancel(o)
	a.expect(t, "cancel")
	if rc, _ := e.st.Capture(ctx, o.ID); rc.Seed == nil || *rc.Seed != 7 {
		t.Fatalf("replay capture seed %v, want 7", rc.Seed)
	}
	// A recording made before seeds (none stored) replays with the default.
	o = start(t, e, Request{Kind: KindReplay, Replay: stored})
	if p := a.expect(t, "prepare_replay"); p.M["seed"] != 1.0 {
		t.Fatalf("prepare_replay %s, want seed 1", p.Raw)
	}
	e.ctrl.Cancel(o)
	a.expect(t, "cancel")

	// Out of range, or on a scenario: refused before anything is sent.
	for _, bad := range []int64{-1, protocol.MaxSeed + 1} {
		startErr(t, e, Request{Kind: KindRecording, Seed: &bad}, protocol.CappyInvalidParameters)
	}
	startErr(t, e, Request{Kind: KindScenario, Scenario: "boss_intro", Seed: &seven}, protocol.CappyInvalidParameters)
}

// TestSeedNeverReachesOlderAdapters: an adapter without the capability
// never sees a seed field (its strict decoder would refuse it); a
// recording asked for a seed is refused with CAPABILITY_MISSING, and a
// replay of a seeded recording goes without.
func TestSeedNeverReachesOlderAdapters(t *testing.T) {
	e := newEnv(t, nil)
	a := connect(t, e, allCaps...)
	seven := int64(7)
	if err := startErr(t, e, Request{Kind: KindRecording, Seed: &seven}, protocol.CappyCapabilityMissing); err.Message == "" {
		t.Fatal("no message")
	}
	rec, rs := seededRecording(t, e, a, nil)
	if _, has := rs.M["seed"]; has {
		t.Fatalf("record_start to an adapter without seed: %s", rs.Raw)
	}
	c, _ := e.st.Capture(context.Background(), rec.ID)
	if c.Seed != nil {
		t.Fatalf("capture seed %d, want none", *c.Seed)
	}
	stored, _ := e.st.Replay(context.Background(), c.ReplaySHA)
	o := start(t, e, Request{Kind: KindReplay, Replay: stored, Seed: &seven})
	if p := a.expect(t, "prepare_replay"); p.M["seed"] != nil {
		t.Fatalf("prepare_replay to an adapter without seed: %s", p.Raw)
	}
	e.ctrl.Cancel(o)
}
