package demogame_test

import (
	"bytes"
	"encoding/json"
	"image"
	"image/png"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/crosscode/crosscode-mcp/adapters/go/cappy"
	"github.com/crosscode/crosscode-mcp/adapters/go/cappy/cappytest"
	"github.com/crosscode/crosscode-mcp/internal/demogame"
	"github.com/crosscode/crosscode-mcp/protocol"
)

// framesReq asks for frames 320 px wide (cheap under the race detector)
// or, with full, of the demo's own 640.
func framesReq(fps float64, full bool, formats ...string) *protocol.FramesRequest {
	if len(formats) == 0 {
		formats = []string{protocol.MimeJPEG, protocol.MimePNG}
	}
	w := demogame.FrameW / 2
	if full {
		w = demogame.FrameW
	}
	return &protocol.FramesRequest{FPS: fps, MaxWidth: w, Formats: formats}
}

// scenarioFrames runs one scenario with frames over the wire.
func scenarioFrames(t *testing.T, h *cappytest.Harness, op, scenario string, params map[string]any, pres protocol.Presentation, req *protocol.FramesRequest) *cappytest.Capture {
	t.Helper()
	if params == nil {
		params = map[string]any{}
	}
	h.Send(&protocol.PrepareScenario{Type: "prepare_scenario", Op: op, Scenario: scenario, Parameters: params, Presentation: pres, Frames: req},
		&protocol.OpMessage{Type: "start", Op: op})
	h.Expect("ready", op)
	h.Expect("started", op)
	c := h.CollectCapture(op, req) // checks each frame (CheckFrameImage, mime, width, order)
	if c.End.Completed == nil {
		t.Fatalf("%s ended with %s %+v", scenario, c.End.Type, c.End.Failed)
	}
	if err := cappytest.CheckFrameRate(c.Frames, req.FPS); err != nil {
		t.Fatal(err)
	}
	return c
}

type summary struct {
	SimMs  float64           `json:"simMs"`
	Frames *cappy.FrameStats `json:"frames"`
}

func summaryOf(t *testing.T, c *cappytest.Capture) summary {
	t.Helper()
	var s summary
	if err := json.Unmarshal(c.End.Completed.Summary, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// everySlot checks that each 1/fps slot of presented time up to end has a
// frame (none dropped on the waiting path).
func everySlot(t *testing.T, frames []protocol.Frame, fps, end float64) {
	t.Helper()
	slot := 1000 / fps
	have := map[int]bool{}
	for _, f := range frames {
		have[int(math.Floor(f.T/slot+1e-9))] = true
	}
	for k := 0; float64(k)*slot <= end; k++ {
		if !have[k] {
			t.Fatalf("no frame in slot %d (t %v to %v) of %v ms", k, float64(k)*slot, float64(k+1)*slot, end)
		}
	}
}

func reasons(frames []protocol.Frame) []string {
	var out []string
	for _, f := range frames {
		if f.Reason != "" {
			out = append(out, f.Reason)
		}
	}
	return out
}

func TestScenarioFramesOverTheWire(t *testing.T) {
	h := connect(t, demogame.New())
	for _, tc := range []struct {
		scenario string
		params   map[string]any
		pres     protocol.Presentation
		req      *protocol.FramesRequest
		want     []string // reasons that must occur
	}{
		{"boss_intro", nil, nil, framesReq(0.2, true), []string{"BOSS_INTRO", "BOSS_PHASE", "BOSS_DEFEATED"}},
		{"boss_intro", map[string]any{"hero": "mage"}, protocol.Presentation{"timeScale": 0.5, "camera": "overview"}, framesReq(0.1, false), []string{"BOSS_PHASE"}},
		{"speedrun", map[string]any{"route": "short"}, nil, framesReq(1, false), []string{"CHECKPOINT", "FINISH"}},
	} {
		c := scenarioFrames(t, h, "op_"+tc.scenario, tc.scenario, tc.params, tc.pres, tc.req)
		s := summaryOf(t, c)
		end := s.SimMs / tc.pres.TimeScale()
		everySlot(t, c.Frames, tc.req.FPS, end-50/tc.pres.TimeScale())
		if s.Frames == nil || s.Frames.Sent != len(c.Frames) || s.Frames.Busy != 0 || s.Frames.Unsent != 0 {
			t.Fatalf("%s: summary frames %+v for %d frames", tc.scenario, s.Frames, len(c.Frames))
		}
		for _, w := range tc.want {
			if !slices.Contains(reasons(c.Frames), w) {
				t.Errorf("%s: no frame for %s among %v", tc.scenario, w, reasons(c.Frames))
			}
		}
		for _, f := range c.Frames {
			if f.Mime != protocol.MimeJPEG || f.Width != tc.req.MaxWidth || f.Height != tc.req.MaxWidth*9/16 {
				t.Fatalf("frame %s %dx%d", f.Mime, f.Width, f.Height)
			}
		}
	}
	// Without frames the summary stays as it was.
	h.Send(&protocol.PrepareScenario{Type: "prepare_scenario", Op: "op_plain", Scenario: "boss_intro", Parameters: map[string]any{}},
		&protocol.OpMessage{Type: "start", Op: "op_plain"})
	h.Expect("ready", "op_plain")
	h.Expect("started", "op_plain")
	if _, end := h.Collect("op_plain"); end.Completed == nil || bytes.Contains(end.Completed.Summary, []byte(`"frames"`)) {
		t.Fatalf("boss_intro without frames: %s %s", end.Type, end.Completed.Summary)
	}
}

func decodePNG(t *testing.T, f protocol.Frame) *image.RGBA {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(f.Data))
	if err != nil {
		t.Fatal(err)
	}
	m, ok := img.(*image.RGBA)
	if !ok {
		nm := image.NewRGBA(img.Bounds())
		for y := img.Bounds().Min.Y; y < img.Bounds().Max.Y; y++ {
			for x := img.Bounds().Min.X; x < img.Bounds().Max.X; x++ {
				nm.Set(x, y, img.At(x, y))
			}
		}
		m = nm
	}
	return m
}

// A recording (in real time, frames dropped when the encoder is busy) and
// its replay at half speed (twice the frames per simulated second, none
// dropped) draw the same pixels at every simulation time both have.
func TestReplayAtHalfSpeedDrawsTheRecordedPictures(t *testing.T) {
	h := cappytest.StartWith(t, &demogame.Game{RecordTick: 2 * time.Millisecond}, &cappy.Options{FrameCPU: 1})
	h.Handshake()
	req := framesReq(1, false, protocol.MimePNG) // lossless: pixels compare exactly
	h.Send(&protocol.RecordStart{Type: "record_start", Op: "op_r", Frames: req})
	h.Expect("started", "op_r")
	// Stop once the recording has a few frames.
	var rec cappytest.Capture
	for len(rec.Frames) < 2 {
		m, err := h.Peer.Recv(h.Ctx)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case m.Event != nil:
			rec.Events = append(rec.Events, *m.Event)
		case m.Frame != nil:
			rec.Frames = append(rec.Frames, *m.Frame)
		default:
			t.Fatalf("recording: %s", m.Type)
		}
	}
	h.Send(&protocol.OpMessage{Type: "stop", Op: "op_r"})
	rest := h.CollectCapture("op_r", req)
	rec.Events, rec.Frames = append(rec.Events, rest.Events...), append(rec.Frames, rest.Frames...)
	if rest.End.Completed == nil {
		t.Fatalf("recording ended with %s", rest.End.Type)
	}
	h.Send(&protocol.PrepareReplay{Type: "prepare_replay", Op: "op_p", Replay: rest.End.Completed.Replay,
		Presentation: protocol.Presentation{"timeScale": 0.5}, Frames: req}, &protocol.OpMessage{Type: "start", Op: "op_p"})
	h.Expect("ready", "op_p")
	h.Expect("started", "op_p")
	rep := h.CollectCapture("op_p", req)
	sameEvents(t, rec.Events, rep.Events, 2)

	bySimT := map[float64][]protocol.Frame{}
	for _, f := range rep.Frames {
		bySimT[f.T/2] = append(bySimT[f.T/2], f)
	}
	pairs := 0
	for _, f := range rec.Frames {
		partners := bySimT[f.T]
		if len(partners) == 0 {
			if f.Reason == "" {
				t.Fatalf("the recording's frame at simT %v has no replay frame", f.T)
			}
			continue // an extra the replay's allowance spent elsewhere
		}
		a := decodePNG(t, f)
		for _, g := range partners {
			if !bytes.Equal(a.Pix, decodePNG(t, g).Pix) {
				t.Fatalf("simT %v: the replay's picture differs from the recording's", f.T)
			}
			pairs++
		}
	}
	if pairs < 2 {
		t.Fatalf("only %d frame pairs compared", pairs)
	}
	// Twice the frames per simulated second at half speed.
	if last := rec.Frames[len(rec.Frames)-1].T; float64(len(rep.Frames)) < 2*last/1000 {
		t.Fatalf("%d replay frames for %v ms recorded", len(rep.Frames), last)
	}
}

// The palette changes every picture and nothing else.
func TestPaletteChangesPicturesNotEvents(t *testing.T) {
	g := demogame.New()
	h := connect(t, g)
	req := framesReq(0.2, false)
	params := map[string]any{"hero": "rogue", "difficulty": 1.0}
	a := scenarioFrames(t, h, "op_a", "boss_intro", params, nil, req)
	if err := g.SetPalette("night"); err != nil {
		t.Fatal(err)
	}
	b := scenarioFrames(t, h, "op_b", "boss_intro", params, nil, req)
	sameEvents(t, a.Events, b.Events, 1)
	if len(a.Frames) != len(b.Frames) || len(a.Frames) < 5 {
		t.Fatalf("%d frames vs %d", len(a.Frames), len(b.Frames))
	}
	for i := range a.Frames {
		if a.Frames[i].T != b.Frames[i].T || bytes.Equal(a.Frames[i].Data, b.Frames[i].Data) {
			t.Fatalf("frame %d: t %v vs %v, same picture %v", i, a.Frames[i].T, b.Frames[i].T, bytes.Equal(a.Frames[i].Data, b.Frames[i].Data))
		}
	}
	if err := g.SetPalette("sepia"); err == nil {
		t.Fatal("an unknown palette was accepted")
	}
	g.SetPalette("")
	c := scenarioFrames(t, h, "op_c", "boss_intro", params, nil, req)
	for i := range a.Frames {
		if !bytes.Equal(a.Frames[i].Data, c.Frames[i].Data) {
			t.Fatalf("frame %d differs between two runs with the default palette", i)
		}
	}
}

func TestStressFramesDropRatherThanWait(t *testing.T) {
	h := connect(t, demogame.New())
	req := framesReq(10, true)
	c := scenarioFrames(t, h, "op_s", "stress", map[string]any{"events": 10_000.0}, nil, req)
	if len(c.Events) != 10_000 {
		t.Fatalf("%d events", len(c.Events))
	}
	s := summaryOf(t, c)
	// 100 frames due over 10 s of presented time; the encoder takes what
	// it has time for.
	if s.Frames == nil || s.Frames.Sent != len(c.Frames) || len(c.Frames) == 0 || s.Frames.Sent+s.Frames.Dropped() != 100 {
		t.Fatalf("stress frames %+v, %d received", s.Frames, len(c.Frames))
	}
}
