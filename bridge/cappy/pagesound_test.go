package cappy

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/crosscode/crosscode-mcp/protocol"
)

// soundNote is one of the sound check page's notes.
type soundNote struct {
	T           float64  `json:"t"`
	What        string   `json:"what"`
	CtxTime     *float64 `json:"ctxTime"`
	CurrentTime *float64 `json:"currentTime"`
	Paused      *bool    `json:"paused"`
	Duration    float64  `json:"duration"`
}

type soundState struct {
	Frames   int
	CtxTime  float64
	CtxState string
	Element  struct {
		CurrentTime, Duration float64
		Paused, Ended         bool
		Timeupdates           int
	}
	Notes []soundNote
}

func soundCheck(t *testing.T, s *Service) (soundState, string) {
	t.Helper()
	return inspectText[soundState](t, s)
}

// at is the page time of the first frame at or after t ms.
func at(t float64) float64 {
	return math.Ceil(t/PageFrameMs-1e-9) * PageFrameMs
}

// TestPageDriverSound: the page driver holds sound to page time, as a
// game's sounds load and play (internal/testing/webgames/audio, in real
// Chromium): decodeAudioData in both forms, an <audio> element's load and
// an OfflineAudioContext's rendering end at the frame that started them;
// an AudioContext's currentTime is page time while it runs, its suspend
// and resume change its state at the page time of the call, a source's
// ended comes at the first frame after its end; an <audio> element plays
// on page time (play, playing, the play() promise, currentTime, then
// timeupdate, pause and ended at its end). The promise callbacks of a
// timer run before the next timer. Two plays with the same steps
// are the same, and the replay's pictures are the recording's.
func TestPageDriverSound(t *testing.T) {
	s := webGameService(t, "audio", "/", AdapterPage)
	steps := []struct {
		ms  float64
		key string
	}{{0, ""}, {100, ""}, {500, "KeyB"}, {600, "KeyM"}, {300, "KeyS"}, {100, "KeyR"}, {100, ""}}
	play := func() (*Operation, []soundState, string) {
		op := pageRecording(t, s, 3)
		var states []soundState
		for _, st := range steps {
			var in []protocol.ActionInput
			if st.key != "" {
				in = []protocol.ActionInput{key(st.key, true), key(st.key, false)}
			}
			r := step(t, s, op, st.ms, in...)
			if len(r.Events) != 0 {
				t.Fatalf("events at %v: %+v", r.T, r.Events)
			}
			g, _ := soundCheck(t, s)
			states = append(states, g)
		}
		_, text := soundCheck(t, s)
		return op, states, text
	}
	op, states, text := play()
	// want finds the note what at page time t0.
	want := func(what string, t0 float64) soundNote {
		t.Helper()
		var at []float64
		for _, n := range states[len(states)-1].Notes {
			if n.What == what && math.Abs(n.T-t0) < 1e-6 {
				return n
			} else if n.What == what {
				at = append(at, n.T)
			}
		}
		t.Fatalf("%q at %v, want %v; the notes:\n%s", what, at, t0, text)
		return soundNote{}
	}
	// The context runs from page time 0; the loads the fourth frame
	// started (page time 50) all ended at it.
	if n := want("context running", 0); *n.CtxTime != 0 {
		t.Fatalf("context: %+v", n)
	}
	want("statechange running", 0)
	for _, w := range []string{"decoded blip.ogg", "decoded theme.mp3", "element canplaythrough", "rendered offline"} {
		want(w, 50)
	}
	if d := want("decoded theme.mp3", 50).Duration; d < 7.9 || d > 8.2 {
		t.Fatalf("theme.mp3 lasts %v s", d)
	}
	// The chain of timeouts the fourth frame started: each awaited one
	// runs its promise's callback before the next timeout; from the
	// seventh on they wait 4 ms, as in Chromium.
	for i, t0 := range []float64{50, 50, 50, 50, 50, 50, 54, 58, 62, 66} {
		want(fmt.Sprint("chain ", i), t0)
	}
	// The blip, started at 100 ms, ends at the first frame after its end.
	blip := want("decoded blip.ogg", 50).Duration
	if n := want("blip started", 100); math.Abs(*n.CtxTime-0.1) > 1e-9 {
		t.Fatalf("blip started: %+v", n)
	}
	end := at(100 + blip*1000)
	if n := want("blip ended", end); math.Abs(*n.CtxTime-end/1000) > 1e-9 {
		t.Fatalf("blip ended: %+v", n)
	}
	// The <audio> element, played at 600 ms.
	d := states[3].Element.Duration
	for _, w := range []string{"element play", "element playing", "play resolved"} {
		if n := want(w, 600); *n.CurrentTime != 0 {
			t.Fatalf("%s: %+v", w, n)
		}
	}
	for _, w := range []string{"element pause", "element ended"} {
		if n := want(w, at(600+d*1000)); *n.CurrentTime != d || !*n.Paused {
			t.Fatalf("%s: %+v (duration %v)", w, n, d)
		}
	}
	if e := states[3].Element; !e.Ended || !e.Paused || e.CurrentTime != d || e.Timeupdates != int(math.Ceil(d*1000/250)) {
		t.Fatalf("the element after it played: %+v", e)
	}
	// Suspended at 1200 ms for 300 ms of page time, then resumed.
	want("suspended", 1200)
	want("statechange suspended", 1200)
	want("resumed", 1500)
	want("statechange running", 1500)
	if st := states[4]; st.CtxState != "suspended" || math.Abs(st.CtxTime-1.2) > 1e-9 {
		t.Fatalf("suspended: %s at %v", st.CtxState, st.CtxTime)
	}
	for i, ctxT := range map[int]float64{5: 1.3, 6: 1.4} {
		if st := states[i]; st.CtxState != "running" || math.Abs(st.CtxTime-ctxT) > 1e-9 {
			t.Fatalf("resumed: %s at %v, want %v", st.CtxState, st.CtxTime, ctxT)
		}
	}
	if err := s.Controller.Stop(context.Background(), op); err != nil {
		t.Fatal(err)
	}
	out := op.Wait(ctxTimeout(t, 30*time.Second))
	if out.Status != StatusCompleted || out.Replay == nil {
		t.Fatalf("stopped: %+v", out)
	}

	// The same steps play the same page again.
	op2, _, text2 := play()
	if text2 != text {
		t.Fatalf("the same steps played another page:\n%s\n%s", text, text2)
	}
	s.Controller.Cancel(op2)

	// The replay shows the recording's pictures.
	ctx := context.Background()
	c, err := s.Store.Capture(ctx, op.ID)
	if err != nil {
		t.Fatal(err)
	}
	stored, err := s.Store.Replay(ctx, out.Replay.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := s.Controller.Start(ctx, Request{Kind: KindReplay, Replay: stored, ReplayOf: op.ID, Seed: c.Seed, Frames: s.FramesRequest(2)})
	if err != nil {
		t.Fatal(err)
	}
	if out := rep.Wait(ctxTimeout(t, 60*time.Second)); out.Status != StatusCompleted {
		t.Fatalf("replay: %+v", out)
	}
	if _, again := soundCheck(t, s); again != text {
		t.Fatalf("the replay ended elsewhere:\n%s\n%s", text, again)
	}
	vd, err := s.CompareFrames(ctx, op.ID, rep.ID, nil)
	if err != nil || !vd.Identical || vd.Compared < 3 {
		t.Fatalf("visual divergence %+v %v", vd, err)
	}
}
