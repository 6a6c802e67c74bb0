package cappy

import (
	"context"
	"slices"
	"testing"
)

// What the game warns of (its warnings messages, and the warnings of its
// summary) stands for the adapter and joins every operation it concerns:
// the one running, or starting, each warning once; the welcome says the
// controller takes them, to an adapter that advertises them only. An operation also keeps where it ended on its
// presented clock, beyond its last event.
func TestWarningsReachTheOperation(t *testing.T) {
	e := newEnv(t, nil)
	a := mustDial(t, e)
	a.send(t, hello(e.ctrl.Token(), append(slices.Clone(allCaps), "warnings")...))
	if w := a.expect(t, "welcome"); !slices.Contains(w.M["accepts"].([]any), any("warnings")) {
		t.Fatalf("the welcome does not say it takes warnings: %s", w.Raw)
	}
	a.send(t, registry())
	eventually(t, "the adapter is ready", func() bool { return e.ctrl.Connected() != nil })
	project := "the project is not imported: res://art/hero.png failed to load"
	a.send(t, map[string]any{"type": "warnings", "warnings": []string{project}})
	eventually(t, "the adapter's warnings", func() bool { return slices.Equal(e.ctrl.Warnings(), []string{project}) })

	o := runningScenario(t, e, a)
	typo := "events: no node Playr under the scene /root/Main (for PLAYER_HIT)"
	a.send(t, map[string]any{"type": "warnings", "warnings": []string{project, typo}})
	a.send(t, map[string]any{"type": "event", "op": o.ID, "t": 250, "event": "SPAWN"})
	a.send(t, map[string]any{"type": "completed", "op": o.ID, "summary": map[string]any{
		"simMs": 900, "warnings": []string{typo, "the engine runs on the wall clock"}, "scriptErrors": []string{"res://main.gd:3 in _ready(): oops"}}})
	wantOutcome(t, e, o, StatusCompleted, "")
	c, err := e.st.Capture(context.Background(), o.ID)
	want := []string{project, typo, "the engine runs on the wall clock", "a script error while it ran: res://main.gd:3 in _ready(): oops"}
	if err != nil || !slices.Equal(c.Warnings, want) {
		t.Fatalf("the operation's warnings %q, want %q (%v)", c.Warnings, want, err)
	}
	if c.LastT != 250 || c.EndT == nil || *c.EndT != 900 {
		t.Fatalf("lastT %v endT %v, want 250 and 900 (the summary's simMs)", c.LastT, c.EndT)
	}

	// The adapter's list as it stands joins the next operation from its
	// start; a cleared list clears the adapter's.
	o = runningScenario(t, e, a)
	if c, _ := e.st.Capture(context.Background(), o.ID); !slices.Equal(c.Warnings, []string{project, typo}) {
		t.Fatalf("a running operation's warnings %q", c.Warnings)
	}
	a.send(t, map[string]any{"type": "warnings", "warnings": []string{}})
	eventually(t, "the warnings cleared", func() bool { return len(e.ctrl.Warnings()) == 0 })
	a.send(t, map[string]any{"type": "completed", "op": o.ID})
	wantOutcome(t, e, o, StatusCompleted, "")
	if c, _ := e.st.Capture(context.Background(), o.ID); len(c.Warnings) != 2 || c.EndT == nil || *c.EndT != 0 {
		t.Fatalf("warnings %q endT %v", c.Warnings, c.EndT)
	}
}
