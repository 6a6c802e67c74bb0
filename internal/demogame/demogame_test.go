package demogame_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crosscode/crosscode-mcp/adapters/go/cappy"
	"github.com/crosscode/crosscode-mcp/internal/demogame"
	"github.com/crosscode/crosscode-mcp/protocol"
)

// run runs one scenario on a local op and returns its events and summary.
func run(t *testing.T, g *demogame.Game, scenario string, params map[string]any, p protocol.Presentation) ([]protocol.Event, map[string]any, error) {
	t.Helper()
	var evs []protocol.Event
	op, _ := cappy.NewLocalOp(context.Background(), "op_test", func(e protocol.Event) error {
		evs = append(evs, e)
		return nil
	})
	err := g.RunScenario(context.Background(), op, scenario, params, p)
	var sum map[string]any
	if s := op.Summary(); s != nil {
		json.Unmarshal(s, &sum)
	}
	return evs, sum, err
}

func mustRun(t *testing.T, g *demogame.Game, scenario string, params map[string]any, p protocol.Presentation) ([]protocol.Event, map[string]any) {
	t.Helper()
	evs, sum, err := run(t, g, scenario, params, p)
	if err != nil {
		t.Fatalf("%s %v %v: %v", scenario, params, p, err)
	}
	return evs, sum
}

func simT(t *testing.T, e protocol.Event) float64 {
	t.Helper()
	var p struct {
		SimT *float64 `json:"simT"`
	}
	if err := json.Unmarshal(e.Payload, &p); err != nil || p.SimT == nil {
		t.Fatalf("event %s payload %s has no simT", e.Event, e.Payload)
	}
	return *p.SimT
}

// sameEvents compares names and payloads, and t and durationMs scaled by
// factor (presented at timeScale 1/factor relative to a).
func sameEvents(t *testing.T, a, b []protocol.Event, factor float64) {
	t.Helper()
	if len(a) != len(b) {
		t.Fatalf("%d events vs %d", len(a), len(b))
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Event != y.Event || string(x.Payload) != string(y.Payload) {
			t.Fatalf("event %d: %s %s vs %s %s", i, x.Event, x.Payload, y.Event, y.Payload)
		}
		if !near(x.T*factor, y.T) {
			t.Fatalf("event %d (%s): t %v vs %v, want ×%v", i, x.Event, x.T, y.T, factor)
		}
		if (x.DurationMs == nil) != (y.DurationMs == nil) || (x.DurationMs != nil && !near(*x.DurationMs*factor, *y.DurationMs)) {
			t.Fatalf("event %d (%s): durationMs %v vs %v", i, x.Event, x.DurationMs, y.DurationMs)
		}
	}
}

func near(a, b float64) bool { d := a - b; return d < 1e-6 && d > -1e-6 }

func names(evs []protocol.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Event
	}
	return out
}

func TestInfoAndRegistry(t *testing.T) {
	g := demogame.New()
	info := g.Info()
	if info.Game.ID != "demo-arena" || info.Game.Name != "Demo Arena" {
		t.Fatalf("info = %+v", info)
	}
	for _, c := range []string{protocol.CapScenarios, protocol.CapFreeformRecording, protocol.CapReplay, protocol.CapTimeScale, protocol.CapAlternateCameras} {
		if !slices.Contains(info.Capabilities, c) {
			t.Errorf("capability %s missing", c)
		}
	}
	// The registry passes the controller's validation.
	b, _ := json.Marshal(protocol.Scenarios{Type: "scenarios", Scenarios: g.Scenarios()})
	if _, err := protocol.DecodeAdapterMessage(b); err != nil {
		t.Fatalf("registry refused: %v\n%s", err, b)
	}
	byID := map[string]protocol.Scenario{}
	for _, s := range g.Scenarios() {
		byID[s.ID] = s
	}
	if p := byID["boss_intro"].Parameters; p["difficulty"].Default != 2.0 || p["hero"].Default != "knight" || len(p["hero"].Enum) != 3 {
		t.Errorf("boss_intro parameters = %+v", p)
	}
	if p := byID["speedrun"].Parameters["route"]; !p.Required || len(p.Enum) != 2 {
		t.Errorf("speedrun route = %+v", p)
	}
	if p := byID["stress"].Parameters["events"]; *p.Minimum != 1 || *p.Maximum != 1_000_000 || p.Default != 1000.0 {
		t.Errorf("stress events = %+v", p)
	}
}

func TestScenariosAreDeterministic(t *testing.T) {
	g := demogame.New()
	for _, tc := range []struct {
		scenario string
		params   map[string]any
		want     []string // event names that must occur
		end      string   // one of these ends the run ("|"-separated)
	}{
		{"boss_intro", nil, []string{"SPAWN", "BOSS_INTRO", "BOSS_PHASE", "HIT", "SHIELD_UP"}, "BOSS_DEFEATED|PLAYER_DOWN|ENCOUNTER_TIMEOUT"},
		{"boss_intro", map[string]any{"hero": "mage", "difficulty": 3.0}, []string{"SPELL_CAST", "HIT", "BOSS_PHASE"}, "BOSS_DEFEATED|PLAYER_DOWN|ENCOUNTER_TIMEOUT"},
		{"boss_intro", map[string]any{"hero": "rogue", "difficulty": 1.0}, []string{"HIT", "BOSS_PHASE"}, "BOSS_DEFEATED"},
		{"speedrun", map[string]any{"route": "short"}, []string{"RUN_START", "CHECKPOINT"}, "FINISH"},
		{"speedrun", map[string]any{"route": "long", "hero": "mage"}, []string{"RUN_START", "CHECKPOINT"}, "FINISH"},
		{"stress", map[string]any{"events": 500.0}, []string{"STRESS"}, "STRESS"},
	} {
		t.Run(fmt.Sprintf("%s %v", tc.scenario, tc.params), func(t *testing.T) {
			a, sumA := mustRun(t, g, tc.scenario, tc.params, nil)
			b, sumB := mustRun(t, demogame.New(), tc.scenario, tc.params, nil)
			sameEvents(t, a, b, 1)
			if fmt.Sprint(sumA) != fmt.Sprint(sumB) {
				t.Fatalf("summaries differ: %v vs %v", sumA, sumB)
			}
			got := names(a)
			for _, w := range tc.want {
				if !slices.Contains(got, w) {
					t.Errorf("no %s event in %v", w, got)
				}
			}
			if last := got[len(got)-1]; !slices.Contains(strings.Split(tc.end, "|"), last) {
				t.Errorf("last event %s, want one of %s", last, tc.end)
			}
			prev := -1.0
			for _, e := range a {
				if e.T < prev {
					t.Fatalf("t goes back: %v after %v", e.T, prev)
				}
				prev = e.T
				if st := simT(t, e); st != e.T {
					t.Fatalf("%s: t %v != simT %v at timeScale 1", e.Event, e.T, st)
				}
			}
		})
	}
	if tc := "stress"; true {
		evs, _ := mustRun(t, g, tc, map[string]any{"events": 1234.0}, nil)
		if len(evs) != 1234 {
			t.Fatalf("stress emitted %d events, want 1234", len(evs))
		}
	}
	// Different parameters, different fights.
	knight, _ := mustRun(t, g, "boss_intro", map[string]any{"hero": "knight"}, nil)
	mage, _ := mustRun(t, g, "boss_intro", map[string]any{"hero": "mage"}, nil)
	if slices.Equal(names(knight), names(mage)) {
		t.Fatal("knight and mage fights are identical")
	}
	// Go integers are accepted like JSON numbers.
	viaInt, _ := mustRun(t, g, "boss_intro", map[string]any{"difficulty": 2}, nil)
	sameEvents(t, knight, viaInt, 1)
}

func TestTimeScaleChangesOnlyPresentedTime(t *testing.T) {
	g := demogame.New()
	base, sum := mustRun(t, g, "boss_intro", nil, nil)
	for _, ts := range []float64{0.5, 0.1, 2, 4} {
		evs, s := mustRun(t, g, "boss_intro", nil, protocol.Presentation{"timeScale": ts})
		sameEvents(t, base, evs, 1/ts)
		if fmt.Sprint(s) != fmt.Sprint(sum) {
			t.Errorf("timeScale %v: summary %v, want %v", ts, s, sum)
		}
	}
	half, _ := mustRun(t, g, "boss_intro", nil, protocol.Presentation{"timeScale": 0.5})
	last := len(base) - 1
	if half[last].T != 2*base[last].T || base[last].T == 0 {
		t.Fatalf("at half speed the last event is at %v, at full speed %v", half[last].T, base[last].T)
	}
	sr, _ := mustRun(t, g, "speedrun", map[string]any{"route": "short"}, nil)
	sr2, _ := mustRun(t, g, "speedrun", map[string]any{"route": "short"}, protocol.Presentation{"timeScale": 0.5, "camera": "overview"})
	sameEvents(t, sr, sr2, 2)
}

func TestCameras(t *testing.T) {
	g := demogame.New()
	base, _ := mustRun(t, g, "boss_intro", nil, nil)
	for _, cam := range demogame.Cameras {
		evs, _ := mustRun(t, g, "boss_intro", nil, protocol.Presentation{"camera": cam})
		sameEvents(t, base, evs, 1)
	}
	var f *cappy.Failure
	_, _, err := run(t, g, "boss_intro", nil, protocol.Presentation{"camera": "cinematic"})
	if !errors.As(err, &f) || f.Code != protocol.CappyUnknownCamera {
		t.Fatalf("unknown camera: %v", err)
	}
	if err := g.ValidateScenario("boss_intro", nil, protocol.Presentation{"camera": "drone"}); !errors.As(err, &f) || f.Code != protocol.CappyUnknownCamera {
		t.Fatalf("ValidateScenario with an unknown camera: %v", err)
	}
	// Not a camera name at all: refused as the adapter and the controller do.
	if err := g.ValidateScenario("boss_intro", nil, protocol.Presentation{"camera": 3.0}); !errors.As(err, &f) || f.Code != protocol.CappyPresentationRejected {
		t.Fatalf("ValidateScenario with a numeric camera: %v", err)
	}
	if _, _, err := run(t, g, "boss_intro", nil, protocol.Presentation{"camera": ""}); !errors.As(err, &f) || f.Code != protocol.CappyPresentationRejected {
		t.Fatalf("empty camera: %v", err)
	}
	if _, _, err := run(t, g, "boss_intro", nil, protocol.Presentation{"timeScale": 5.0}); !errors.As(err, &f) || f.Code != protocol.CappyPresentationRejected {
		t.Fatalf("timeScale 5: %v", err)
	}
	if err := g.ValidateScenario("boss_intro", map[string]any{"hero": "mage"}, protocol.Presentation{"camera": "overview", "timeScale": 0.25}); err != nil {
		t.Fatalf("a valid presentation refused: %v", err)
	}
}

func TestScenarioFailures(t *testing.T) {
	g := demogame.New()
	for _, tc := range []struct {
		scenario string
		params   map[string]any
		code     string
	}{
		{"nope", nil, protocol.CappyScenarioNotFound},
		{"boss_intro", map[string]any{"difficulty": 7.0}, protocol.CappyInvalidParameters},
		{"boss_intro", map[string]any{"hero": "bard"}, protocol.CappyInvalidParameters},
		{"speedrun", nil, protocol.CappyInvalidParameters},
		{"stress", map[string]any{"events": 0.0}, protocol.CappyInvalidParameters},
	} {
		evs, _, err := run(t, g, tc.scenario, tc.params, nil)
		var f *cappy.Failure
		if !errors.As(err, &f) || f.Code != tc.code || len(evs) != 0 {
			t.Errorf("%s %v: %v (%d events), want %s", tc.scenario, tc.params, err, len(evs), tc.code)
		}
		if err := g.ValidateScenario(tc.scenario, tc.params, nil); !errors.As(err, &f) || f.Code != tc.code {
			t.Errorf("ValidateScenario %s %v: %v, want %s", tc.scenario, tc.params, err, tc.code)
		}
	}
}

func TestCancelStopsAStressRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n := 0
	op, _ := cappy.NewLocalOp(ctx, "op_c", func(protocol.Event) error {
		if n++; n == 1000 {
			cancel()
		}
		return nil
	})
	err := demogame.New().RunScenario(ctx, op, "stress", map[string]any{"events": 1_000_000.0}, nil)
	if !errors.Is(err, context.Canceled) || n != 1000 {
		t.Fatalf("stress after cancel: %v after %d events", err, n)
	}
}

// record runs a freeform recording on a local op for about d.
func record(t *testing.T, g *demogame.Game, d time.Duration) ([]protocol.Event, *protocol.ReplayPayload) {
	t.Helper()
	var mu sync.Mutex
	var evs []protocol.Event
	op, stop := cappy.NewLocalOp(context.Background(), "op_rec", func(e protocol.Event) error {
		mu.Lock()
		evs = append(evs, e)
		mu.Unlock()
		return nil
	})
	time.AfterFunc(d, stop)
	replay, err := g.Record(context.Background(), op)
	if err != nil {
		t.Fatal(err)
	}
	if err := replay.Validate(); err != nil {
		t.Fatal(err)
	}
	return evs, replay
}

func replay(t *testing.T, g *demogame.Game, r *protocol.ReplayPayload, p protocol.Presentation) ([]protocol.Event, error) {
	t.Helper()
	var evs []protocol.Event
	op, _ := cappy.NewLocalOp(context.Background(), "op_play", func(e protocol.Event) error {
		evs = append(evs, e)
		return nil
	})
	return evs, g.Replay(context.Background(), op, r, p)
}

func TestRecordThenReplay(t *testing.T) {
	g := &demogame.Game{RecordTick: 2 * time.Millisecond}
	recorded, r := record(t, g, 300*time.Millisecond)
	if r.Kind != "inline" || r.Format != demogame.Format {
		t.Fatalf("replay = %+v", r)
	}
	data, err := cappy.DecodeInline(r)
	if err != nil {
		t.Fatal(err)
	}
	var rec struct {
		Format string `json:"format"`
		Seed   uint64 `json:"seed"`
		Ticks  int    `json:"ticks"`
		Inputs string `json:"inputs"`
	}
	if err := json.Unmarshal(data, &rec); err != nil || rec.Format != demogame.Format || rec.Ticks < 20 || len(rec.Inputs) != rec.Ticks || rec.Seed == 0 {
		t.Fatalf("replay data %.200s: %v", data, err)
	}
	if len(recorded) < 5 {
		t.Fatalf("only %d events recorded in %d ticks", len(recorded), rec.Ticks)
	}
	if last := recorded[len(recorded)-1]; simT(t, last) >= float64(rec.Ticks*demogame.TickMs) {
		t.Fatalf("an event at simT %v beyond %d ticks", simT(t, last), rec.Ticks)
	}

	played, err := replay(t, g, r, nil)
	if err != nil {
		t.Fatal(err)
	}
	sameEvents(t, recorded, played, 1)

	half, err := replay(t, demogame.New(), r, protocol.Presentation{"timeScale": 0.5, "camera": "overview"})
	if err != nil {
		t.Fatal(err)
	}
	sameEvents(t, recorded, half, 2)

	// Another seed, another session.
	other, r2 := record(t, &demogame.Game{RecordTick: 2 * time.Millisecond, Seed: 12345}, 100*time.Millisecond)
	if r2.SHA256 == r.SHA256 || len(other) == 0 {
		t.Fatal("a recording with another seed is the same")
	}
}

func TestReplayRefusals(t *testing.T) {
	g := demogame.New()
	_, r := record(t, &demogame.Game{RecordTick: time.Millisecond}, 50*time.Millisecond)
	data, _ := cappy.DecodeInline(r)
	var f *cappy.Failure
	check := func(name string, rp *protocol.ReplayPayload, code string) {
		t.Helper()
		if err := g.ValidateReplay(rp, nil); !errors.As(err, &f) || f.Code != code {
			t.Errorf("%s: ValidateReplay = %v, want %s", name, err, code)
		}
		evs, err := replay(t, g, rp, nil)
		if !errors.As(err, &f) || f.Code != code || len(evs) != 0 {
			t.Errorf("%s: Replay = %v (%d events), want %s", name, err, len(evs), code)
		}
	}
	check("foreign format field", cappy.InlineReplay(data, "other-game/v3"), protocol.CappyReplayUnsupported)
	check("foreign content", cappy.InlineReplay([]byte(`{"format":"other-game/v3"}`), ""), protocol.CappyReplayUnsupported)
	check("not JSON", cappy.InlineReplay([]byte("\x00\x01binary"), ""), protocol.CappyReplayUnsupported)
	tampered := *r
	tampered.SHA256 = strings.Repeat("ab", 32)
	check("tampered", &tampered, protocol.CappyReplayInvalid)
	bad := strings.Replace(string(data), `"inputs":"`, `"inputs":"x`, 1)
	check("bad input", cappy.InlineReplay([]byte(bad), demogame.Format), protocol.CappyReplayInvalid)
	if err := g.ValidateReplay(r, protocol.Presentation{"camera": "drone"}); !errors.As(err, &f) || f.Code != protocol.CappyUnknownCamera {
		t.Errorf("replay with an unknown camera: %v", err)
	}
	if _, err := replay(t, g, r, protocol.Presentation{"camera": "drone"}); !errors.As(err, &f) || f.Code != protocol.CappyUnknownCamera {
		t.Errorf("replay with an unknown camera: %v", err)
	}
}

func TestReplayStopsOnStop(t *testing.T) {
	inputs := strings.Repeat("a.s.d...p.", 20_000) // 200,000 ticks
	rec, _ := json.Marshal(map[string]any{"format": demogame.Format, "seed": 7, "hero": "rogue", "tickMs": 50, "ticks": len(inputs), "inputs": inputs})
	n := 0
	var stop func()
	op, stop := cappy.NewLocalOp(context.Background(), "op_s", func(protocol.Event) error {
		if n++; n == 50 {
			stop()
		}
		return nil
	})
	if err := demogame.New().Replay(context.Background(), op, cappy.InlineReplay(rec, demogame.Format), nil); err != nil {
		t.Fatal(err)
	}
	var sum map[string]any
	json.Unmarshal(op.Summary(), &sum)
	if sum["stopped"] != true || sum["ticks"].(float64) >= float64(len(inputs)) || n < 50 {
		t.Fatalf("stopped replay: summary %v after %d events", sum, n)
	}
}
