package cappy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crosscode/crosscode-mcp/internal/testing/sysdeps"
	"github.com/crosscode/crosscode-mcp/protocol"
	"github.com/crosscode/crosscode-mcp/store"
)

// mediaEnv is a service (for its media methods) with a scripted adapter.
func mediaEnv(t *testing.T) (*Service, *env, *testAdapter) {
	t.Helper()
	s, err := NewService(context.Background(), ServiceConfig{Data: t.TempDir(), PingEvery: 50e6})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	e := &env{ctrl: s.Controller, st: s.Store, frameDir: s.Controller.FrameDir()}
	return s, e, connect(t, e, frameCaps...)
}

// shot is one frame of a scripted run: at t, a picture of colour c, with
// a small white box at boxX when it is not 0.
type shot struct {
	t    float64
	c    color.RGBA
	boxX int
}

// scriptedRun runs boss_intro with pres, sending the shots as 320x180 JPEG
// frames (at quality q) and events at the given t; it returns the op.
func scriptedRun(t *testing.T, e *env, a *testAdapter, pres protocol.Presentation, shots []shot, q int, events map[float64]string) string {
	t.Helper()
	return scriptedRunFPS(t, e, a, pres, shots, q, events, 4)
}

// scriptedRunFPS is scriptedRun with frames asked at fps (the controller
// keeps up to twice that rate).
func scriptedRunFPS(t *testing.T, e *env, a *testAdapter, pres protocol.Presentation, shots []shot, q int, events map[float64]string, fps float64) string {
	t.Helper()
	r := scenarioReq()
	r.Presentation, r.Frames = pres, &protocol.FramesRequest{FPS: fps, MaxWidth: 640, Formats: []string{protocol.MimeJPEG}}
	o := start(t, e, r)
	a.expect(t, "prepare_scenario")
	a.send(t, map[string]any{"type": "ready", "op": o.ID})
	a.expect(t, "start")
	a.send(t, map[string]any{"type": "started", "op": o.ID})
	waitStatus(t, o, StatusRunning)
	var ts []float64
	for tt := range events {
		ts = append(ts, tt)
	}
	slices.Sort(ts)
	for i, sh := range shots {
		// The events up to the frame's t, before it (as a game sends
		// what happened before it draws).
		for len(ts) > 0 && ts[0] <= sh.t {
			a.send(t, map[string]any{"type": "event", "op": o.ID, "t": ts[0], "event": events[ts[0]]})
			ts = ts[1:]
		}
		a.send(t, frameMsg(o.ID, sh.t, protocol.MimeJPEG, 320, 180, pictureBox(t, 320, 180, sh.c, q, sh.boxX)))
		if (i+1)%(frameQueue/2) == 0 {
			// Every frame is kept, however loaded the machine: the next
			// ones wait for the disk to have these.
			eventually(t, "the frames are stored", func() bool {
				c, err := e.st.Capture(context.Background(), o.ID)
				return err == nil && c.Frames == int64(i+1)
			})
		}
	}
	a.send(t, map[string]any{"type": "completed", "op": o.ID})
	wantOutcome(t, e, o, StatusCompleted, "")
	if c, err := e.st.Capture(context.Background(), o.ID); err != nil || c.Frames != int64(len(shots)) {
		t.Fatalf("the scripted run stored %+v of %d frames (%v)", c, len(shots), err)
	}
	return o.ID
}

func pictureQ(t *testing.T, w, h int, c color.RGBA, q int) []byte {
	return pictureBox(t, w, h, c, q, 0)
}

func pictureBox(t *testing.T, w, h int, c color.RGBA, q, boxX int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			// A gradient over the colour, so JPEG quality changes the bytes.
			img.Set(x, y, color.RGBA{c.R ^ uint8(x/8), c.G ^ uint8(y/8), c.B, 255})
			if boxX > 0 && x >= boxX && x < boxX+20 && y >= 80 && y < 100 {
				img.Set(x, y, color.RGBA{255, 255, 255, 255})
			}
		}
	}
	var out bytes.Buffer
	if err := jpeg.Encode(&out, img, &jpeg.Options{Quality: q}); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

var palette = []color.RGBA{{200, 40, 40, 255}, {40, 200, 40, 255}, {40, 40, 200, 255}, {200, 200, 40, 255}, {40, 200, 200, 255}, {200, 40, 200, 255}, {120, 120, 120, 255}}

func fight(every float64) []shot {
	var out []shot
	for i, c := range palette {
		out = append(out, shot{float64(i) * every, c, 0})
	}
	return out
}

func TestKeyframesAndContactSheet(t *testing.T) {
	s, e, a := mediaEnv(t)
	op := scriptedRun(t, e, a, nil, fight(500), 90, map[float64]string{0: "SPAWN", 1500: "BOSS_PHASE", 3000: "BOSS_DOWN"})
	ctx := context.Background()

	pics, notes, err := s.Keyframes(ctx, op, KeyframeQuery{Count: 3})
	if err != nil || len(notes) != 0 {
		t.Fatalf("keyframes: %v %v", err, notes)
	}
	if len(pics) != 3 || pics[0].T != 0 || pics[1].T != 1500 || pics[2].T != 3000 {
		t.Fatalf("3 evenly spaced: %+v", pics)
	}
	if pics[1].Event != "BOSS_PHASE" || pics[1].EventT != 1500 || pics[2].Event != "BOSS_DOWN" {
		t.Fatalf("nearest events: %+v", pics)
	}
	for _, p := range pics {
		img, err := jpeg.Decode(bytes.NewReader(p.JPEG))
		if err != nil || img.Bounds().Dx() != p.Width || p.Width > AgentWidth || p.Bytes != len(p.JPEG) || p.Kind != "keyframe" {
			t.Fatalf("picture %+v: %v", p, err)
		}
		if _, err := os.Stat(p.File); err != nil {
			t.Fatalf("file %s: %v", p.File, err)
		}
	}
	// The frame nearest each named event, and nearest each t, each once.
	pics, _, err = s.Keyframes(ctx, op, KeyframeQuery{Events: []string{"BOSS_PHASE"}, Ts: []float64{1200, 1400, 2600}})
	if err != nil || len(pics) != 3 || pics[0].T != 1000 || pics[1].T != 1500 || pics[2].T != 2500 || !strings.Contains(pics[1].Why, "BOSS_PHASE") {
		t.Fatalf("at events and t: %+v %v", pics, err)
	}
	// A name the capture does not have is said, not an error.
	if pics, notes, err := s.Keyframes(ctx, op, KeyframeQuery{Events: []string{"NOPE"}}); err != nil || len(pics) != 0 || len(notes) != 1 {
		t.Fatalf("unknown event: %v %v %v", pics, notes, err)
	}
	// At most MaxKeyframes, and what was left out is said.
	var many []float64
	for i := range 7 {
		many = append(many, float64(i)*500)
	}
	pics, notes, err = s.Keyframes(ctx, op, KeyframeQuery{Ts: many, Max: 4})
	if err != nil || len(pics) != 4 || len(notes) != 3 {
		t.Fatalf("capped: %d pictures, notes %v, %v", len(pics), notes, err)
	}

	sheet, err := s.ContactSheet(ctx, op)
	if err != nil {
		t.Fatal(err)
	}
	img, err := jpeg.Decode(bytes.NewReader(sheet.JPEG))
	if err != nil || img.Bounds().Dx() > AgentWidth || sheet.Kind != "contact_sheet" || !strings.Contains(sheet.Why, "7 frames") {
		t.Fatalf("contact sheet %+v: %v", sheet, err)
	}
	if b, err := os.ReadFile(sheet.File); err != nil || !bytes.Equal(b, sheet.JPEG) {
		t.Fatalf("the sheet is not kept at %s: %v", sheet.File, err)
	}
	// A finished capture's sheet is made once: the kept one comes back.
	os.WriteFile(sheet.File, pictureQ(t, 64, 36, palette[0], 50), 0o600)
	if again, err := s.ContactSheet(ctx, op); err != nil || again.Width != 64 {
		t.Fatalf("the kept sheet was not reused: %+v %v", again, err)
	}

	// A capture without frames says so.
	noFrames := completeScenario(t, e, a)
	if _, err := s.ContactSheet(ctx, noFrames.Op); err != ErrNoFrames {
		t.Fatalf("sheet without frames: %v", err)
	}
}

// A picture of an event is the first frame at or after it (what the game
// drew once it happened), never the frame before; a caption names the
// last event at or before its frame, never one that came later.
func TestPicturesOfEvents(t *testing.T) {
	s, e, a := mediaEnv(t)
	// Frames every 500 ms; the hit 83 ms after a frame, the start 100 ms
	// after one: each nearer the frame before it.
	op := scriptedRun(t, e, a, nil, fight(500), 90, map[float64]string{200: "SPAWN", 1100: "START_GAME", 2083: "PLAYER_HIT"})
	ctx := context.Background()
	pics, _, err := s.Keyframes(ctx, op, KeyframeQuery{Events: []string{"START_GAME", "PLAYER_HIT"}})
	if err != nil || len(pics) != 2 || pics[0].T != 1500 || pics[0].Event != "START_GAME" || pics[1].T != 2500 || pics[1].Event != "PLAYER_HIT" {
		t.Fatalf("pictures of START_GAME (1100) and PLAYER_HIT (2083): %+v %v", pics, err)
	}
	pics, _, err = s.Keyframes(ctx, op, KeyframeQuery{Ts: []float64{0, 1000, 2000}})
	if err != nil || len(pics) != 3 || pics[0].Event != "" || pics[1].Event != "SPAWN" || pics[2].Event != "START_GAME" {
		t.Fatalf("captions at 0, 1000 and 2000: %+v %v", pics, err)
	}
	items, _, err := s.sheetItems(ctx, op, 7)
	if err != nil || len(items) != 7 {
		t.Fatalf("sheet items: %+v %v", items, err)
	}
	var labels []string
	for _, it := range items {
		labels = append(labels, strings.Join(it.Label, " "))
	}
	want := []string{"0.0 s", "0.5 s SPAWN", "1.0 s SPAWN", "1.5 s START_GAME", "2.0 s START_GAME", "2.5 s PLAYER_HIT", "3.0 s PLAYER_HIT"}
	if !slices.Equal(labels, want) {
		t.Fatalf("contact sheet captions %q, want %q", labels, want)
	}
}

func TestVideo(t *testing.T) {
	ffprobe := sysdeps.Need(t, "ffprobe")
	sysdeps.Need(t, "ffmpeg")
	s, e, a := mediaEnv(t)
	op := scriptedRun(t, e, a, nil, fight(500), 90, map[float64]string{0: "SPAWN", 1500: "BOSS_PHASE", 3000: "BOSS_DOWN"})
	v, err := s.Video(context.Background(), op)
	if err != nil {
		t.Fatal(err)
	}
	if v.Frames != 7 || v.Width != 320 || v.Height != 180 {
		t.Fatalf("video %+v", v)
	}
	out, err := exec.Command(ffprobe, "-v", "error", "-show_entries", "format=duration:stream=codec_name,pix_fmt,nb_read_frames", "-count_frames", "-of", "json", v.MP4).Output()
	if err != nil {
		t.Fatal(err)
	}
	var probe struct {
		Format  struct{ Duration string }
		Streams []struct {
			CodecName    string `json:"codec_name"`
			PixFmt       string `json:"pix_fmt"`
			NbReadFrames string `json:"nb_read_frames"`
		}
	}
	if err := json.Unmarshal(out, &probe); err != nil || len(probe.Streams) != 1 {
		t.Fatalf("ffprobe: %s %v", out, err)
	}
	dur, _ := strconv.ParseFloat(probe.Format.Duration, 64)
	st := probe.Streams[0]
	// The last frame (t=3000) is held for a frame's time (4 fps: 250 ms);
	// the concat demuxer shows it once more at the end to hold it.
	if st.CodecName != "h264" || st.PixFmt != "yuv420p" || st.NbReadFrames != "8" || dur < 3.2 || dur > 3.3 {
		t.Fatalf("ffprobe: %s", out)
	}
	vtt, err := os.ReadFile(v.VTT)
	if err != nil || !bytes.HasPrefix(vtt, []byte("WEBVTT")) || !bytes.Contains(vtt, []byte("00:00:01.500 --> ")) || !bytes.Contains(vtt, []byte("BOSS_PHASE")) {
		t.Fatalf("subtitles: %s %v", vtt, err)
	}
	// Made once: asking again answers the same files.
	again, err := s.Video(context.Background(), op)
	if err != nil || *again != *v {
		t.Fatalf("again: %+v %v", again, err)
	}
}

func TestCompareFrames(t *testing.T) {
	s, e, a := mediaEnv(t)
	ctx := context.Background()
	ev := map[float64]string{0: "SPAWN"}
	rec := scriptedRun(t, e, a, nil, fight(500), 90, ev)

	// The same pictures at half speed: each at twice the t, some
	// re-encoded, with extra frames in between.
	var slow []shot
	for i, sh := range fight(500) {
		slow = append(slow, shot{sh.t * 2, sh.c, 0})
		if i < len(palette)-1 {
			slow = append(slow, shot{sh.t*2 + 500, color.RGBA{0, 0, 0, 255}, 0}) // no recording frame at this simulation time
		}
	}
	same := scriptedRun(t, e, a, protocol.Presentation{"timeScale": 0.5}, slow, 90, ev)
	d, err := s.CompareFrames(ctx, rec, same, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !d.Identical || d.Compared != 7 || d.Unpaired != 6 || d.MaxDiff != 0 || d.Skipped != "" {
		t.Fatalf("same pictures at 0.5: %+v", d)
	}
	// Re-encoded at another quality: not the same bytes, the same picture.
	reenc := scriptedRun(t, e, a, nil, fight(500), 60, ev)
	if d, err := s.CompareFrames(ctx, rec, reenc, nil); err != nil || !d.Identical || d.Compared != 7 || d.MaxDiff == 0 {
		t.Fatalf("re-encoded: %+v %v", d, err)
	}
	// The picture changes at simulation time 2000 while the events do not.
	changed := fight(500)
	changed[4].c = color.RGBA{250, 250, 250, 255}
	ch := scriptedRun(t, e, a, protocol.Presentation{"timeScale": 0.5}, func() []shot {
		var out []shot
		for _, sh := range changed {
			out = append(out, shot{sh.t * 2, sh.c, 0})
		}
		return out
	}(), 90, ev)
	d, err = s.CompareFrames(ctx, rec, ch, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d.Identical || d.T != 4000 || d.RecordingT != 2000 || d.SimT != 2000 || d.Diff <= d.Threshold || d.Picture() == nil || d.Image == "" {
		t.Fatalf("changed picture: %+v", d)
	}
	if img, err := jpeg.Decode(bytes.NewReader(d.Picture().JPEG)); err != nil || img.Bounds().Dx() > AgentWidth {
		t.Fatalf("side by side: %v", err)
	}
	if len(d.Spans) != 1 || d.Spans[0].T != 4000 || d.Spans[0].EndT != 4000 || d.Spans[0].Frames != 1 || d.Spans[0].Image == "" {
		t.Fatalf("one changed picture, one span: %+v", d.Spans)
	}
	// Every differing span, not only the first: a leftover at 500 and
	// 1000, the same picture again at 1500 and 2000, a change at 2500.
	planted := fight(500)
	planted[1].c, planted[2].c, planted[5].c = color.RGBA{250, 250, 250, 255}, color.RGBA{250, 250, 250, 255}, color.RGBA{5, 5, 5, 255}
	d, err = s.CompareFrames(ctx, rec, scriptedRun(t, e, a, nil, planted, 90, ev), nil)
	if err != nil || d.Identical || d.T != 500 || len(d.Spans) != 2 || d.SpansOmitted != 0 {
		t.Fatalf("two differing spans: %+v %v", d, err)
	}
	first, second := d.Spans[0], d.Spans[1]
	if first.T != 500 || first.EndT != 1000 || first.SimT != 500 || first.EndSimT != 1000 || first.Frames != 2 || first.MaxDiff <= d.Threshold ||
		second.T != 2500 || second.EndT != 2500 || second.Frames != 1 || first.Image == second.Image || second.Image == "" {
		t.Fatalf("the spans: %+v", d.Spans)
	}
	// More spans than are listed: the rest are counted.
	var still, blinking []shot
	for i := range 2 * (MaxVisualSpans + 3) {
		still = append(still, shot{float64(i) * 250, palette[0], 0})
		blinking = append(blinking, shot{float64(i) * 250, palette[i%2*4], 0})
	}
	d, err = s.CompareFrames(ctx, scriptedRun(t, e, a, nil, still, 90, ev), scriptedRun(t, e, a, nil, blinking, 90, ev), &VisualOptions{Budget: 5 * time.Minute})
	if err != nil || len(d.Spans) != MaxVisualSpans || d.SpansOmitted != 3 || d.Spans[MaxVisualSpans-1].T != float64(2*MaxVisualSpans-1)*250 {
		t.Fatalf("%d blinks: %d spans, %d omitted (%v; %s)", MaxVisualSpans+3, len(d.Spans), d.SpansOmitted, err, d.Skipped)
	}
	// A small sprite drawn somewhere else: little of the picture changes,
	// one area a lot.
	boxed := fight(500)
	for i := range boxed {
		boxed[i].boxX = 20
	}
	recBox := scriptedRun(t, e, a, nil, boxed, 90, ev)
	boxed[3].boxX = 260
	moved := scriptedRun(t, e, a, nil, boxed, 90, ev)
	d, err = s.CompareFrames(ctx, recBox, moved, nil)
	if err != nil || d.Identical || d.T != 1500 || d.Diff > d.Threshold || d.Cell <= d.CellThreshold {
		t.Fatalf("moved sprite: %+v %v", d, err)
	}
	// A game of fixed ticks: the recording has an extra frame at 900 (an
	// event's), the half-speed replay one at 890 too, 10 ms before its own
	// frame at 900, and showing the world moved on from there. The 900s are
	// compared with each other; 890 is not compared with the recording's
	// 900 (within maxSkewMs, but another replay frame is nearer it).
	ticks := []shot{{0, palette[0], 0}, {500, palette[1], 0}, {900, palette[2], 0}, {1000, palette[3], 0}}
	recTicks := scriptedRun(t, e, a, nil, ticks, 90, ev)
	half := []shot{{0, palette[0], 0}, {1000, palette[1], 0}, {1780, palette[5], 0}, {1800, palette[2], 0}, {2000, palette[3], 0}}
	d, err = s.CompareFrames(ctx, recTicks, scriptedRun(t, e, a, protocol.Presentation{"timeScale": 0.5}, half, 90, ev), nil)
	if err != nil || !d.Identical || d.Compared != 4 || d.Unpaired != 1 {
		t.Fatalf("a frame beside the same tick: %+v %v", d, err)
	}
	// Without the replay's frame at 900 (dropped), its 890 is the nearest,
	// and its picture differs: it shows another moment, not another
	// picture, and is not compared (the other pairs share their times).
	half = slices.Delete(half, 3, 4)
	d, err = s.CompareFrames(ctx, recTicks, scriptedRun(t, e, a, protocol.Presentation{"timeScale": 0.5}, half, 90, ev), nil)
	if err != nil || !d.Identical || d.Compared != 3 || d.Skewed != 1 || d.Unpaired != 0 {
		t.Fatalf("the nearest frame within maxSkewMs, a tick away: %+v %v", d, err)
	}
	// Another camera: pictures are not compared.
	cam := scriptedRun(t, e, a, protocol.Presentation{"camera": "overview"}, fight(500), 90, ev)
	if d, err := s.CompareFrames(ctx, rec, cam, nil); err != nil || d.Identical || !strings.Contains(d.Skipped, "camera") {
		t.Fatalf("another camera: %+v %v", d, err)
	}
	// The signatures were kept: a second comparison decodes nothing new.
	fs := storedFrames(t, e, rec)
	if len(fs[0].Sig) == 0 {
		t.Fatal("the recording's signatures were not kept")
	}
}

// tickRun is a game of fixed 20 ms ticks with a small sprite moving 6 px
// a tick over a still background (palette[2]): the shots of the given
// ticks at timeScale ts (t = simT / ts), less those in dropped (frames the
// adapter did not send, its encoder behind). change, when set, alters the
// shot of a tick.
func tickRun(ticks []int, ts float64, dropped []int, change func(tick int, sh *shot)) []shot {
	var out []shot
	for _, k := range ticks {
		if slices.Contains(dropped, k) {
			continue
		}
		sh := shot{float64(k*20) / ts, palette[2], 10 + 6*k}
		if change != nil {
			change(k, &sh)
		}
		out = append(out, sh)
	}
	return out
}

// TestCompareFramesTicks: a replay is compared with its recording at the
// same ticks; a frame whose same-tick partner was dropped is not compared
// with the tick beside it (where the sprite has moved on), and a real
// change at a tick both have still shows.
func TestCompareFramesTicks(t *testing.T) {
	s, e, a := mediaEnv(t)
	ctx := context.Background()
	ev := map[float64]string{0: "SPAWN"}
	var every, everyOther []int
	for k := 0; k <= 40; k++ {
		every = append(every, k)
		if k%2 == 0 {
			everyOther = append(everyOther, k)
		}
	}
	// The recording has a frame every other tick (0, 40, 80 ms ...); its
	// half-speed replay one every tick, but for three its encoder dropped
	// (40, 200 and 520 ms), so its frames at 60, 220 and 540 ms are the
	// nearest to the recording's there, 20 ms (one tick, within maxSkewMs)
	// away, and show the sprite 6 px further on.
	rec := scriptedRunFPS(t, e, a, nil, tickRun(everyOther, 1, nil, nil), 90, ev, 30)
	dropped := []int{2, 10, 26}
	replay := func(change func(int, *shot)) string {
		return scriptedRunFPS(t, e, a, protocol.Presentation{"timeScale": 0.5}, tickRun(every, 0.5, dropped, change), 90, ev, 30)
	}
	d, err := s.CompareFrames(ctx, rec, replay(nil), nil)
	if err != nil || !d.Identical || d.Compared != 18 || d.Skewed != 3 || d.Unpaired != 17 || d.Skipped != "" || d.Image != "" {
		t.Fatalf("a replay missing three same-tick frames: %+v %v", d, err)
	}
	// Those pairs do differ: at most 20 ms apart they are within
	// maxSkewMs, and a pair of ticks that is not the same tick is told
	// apart by its sprite.
	if d, err := s.CompareFrames(ctx, rec, replay(nil), &VisualOptions{MaxSkewMs: 10}); err != nil || !d.Identical || d.Compared != 18 || d.Skewed != 0 || d.Unpaired != 20 {
		t.Fatalf("maxSkewMs 10: %+v %v", d, err)
	}
	// The sprite drawn elsewhere at a tick both sides have (400 ms).
	d, err = s.CompareFrames(ctx, rec, replay(func(k int, sh *shot) {
		if k == 20 {
			sh.boxX = 280
		}
	}), nil)
	if err != nil || d.Identical || d.SimT != 400 || d.RecordingT != 400 || d.T != 800 || d.Cell <= d.CellThreshold || d.Image == "" {
		t.Fatalf("a sprite elsewhere at the same tick: %+v %v", d, err)
	}
	// Another palette from the tick of a skewed frame (540 ms) on: the
	// next tick both sides have (560 ms) shows it.
	d, err = s.CompareFrames(ctx, rec, replay(func(k int, sh *shot) {
		if k >= 27 {
			sh.c = palette[0]
		}
	}), nil)
	if err != nil || d.Identical || d.SimT != 560 || d.RecordingT != 560 || d.Diff <= d.Threshold || d.Skewed != 3 {
		t.Fatalf("another palette: %+v %v", d, err)
	}
}

// TestCompareFramesNearest: a game whose frames do not share their
// simulation times on the two sides (not fixed ticks, or another phase) is
// compared frame by nearest frame within maxSkewMs.
func TestCompareFramesNearest(t *testing.T) {
	s, e, a := mediaEnv(t)
	ctx := context.Background()
	ev := map[float64]string{0: "SPAWN"}
	rec := scriptedRun(t, e, a, nil, fight(500), 90, ev)
	// The replay's frames 7 ms after the recording's (but the first, at 0).
	shifted := func(change int) []shot {
		var out []shot
		for i, sh := range fight(500) {
			if i > 0 {
				sh.t += 7
			}
			if i == change {
				sh.c = color.RGBA{250, 250, 250, 255}
			}
			out = append(out, shot{sh.t * 2, sh.c, 0})
		}
		return out
	}
	d, err := s.CompareFrames(ctx, rec, scriptedRun(t, e, a, protocol.Presentation{"timeScale": 0.5}, shifted(-1), 90, ev), nil)
	if err != nil || !d.Identical || d.Compared != 7 || d.Skewed != 0 || d.Unpaired != 0 {
		t.Fatalf("7 ms apart: %+v %v", d, err)
	}
	d, err = s.CompareFrames(ctx, rec, scriptedRun(t, e, a, protocol.Presentation{"timeScale": 0.5}, shifted(4), 90, ev), nil)
	if err != nil || d.Identical || d.SimT != 2007 || d.RecordingT != 2000 || d.Diff <= d.Threshold {
		t.Fatalf("7 ms apart, another picture: %+v %v", d, err)
	}
}

// TestPairFrames: how a replay frame pairs with the recording's frames.
func TestPairFrames(t *testing.T) {
	frames := func(ts ...float64) func() (store.CaptureFrame, bool) {
		return func() (store.CaptureFrame, bool) {
			if len(ts) == 0 {
				return store.CaptureFrame{}, false
			}
			f := store.CaptureFrame{T: ts[0]}
			ts = ts[1:]
			return f, true
		}
	}
	// The replay at half speed: t is twice the simulation time.
	var got []string
	pairFrames(frames(0, 100, 200, 300, 400), frames(0, 99.5*2, 180*2, 190*2, 220*2, 330*2, 500*2), 1, 0.5, 20, func(best, f *store.CaptureFrame, sim float64, k pairKind) bool {
		r := "-"
		if best != nil {
			r = strconv.FormatFloat(best.T, 'f', -1, 64)
		}
		got = append(got, fmt.Sprintf("%g:%s:%s", sim, r, []string{"none", "beside", "same", "skewed"}[k]))
		return true
	})
	want := []string{
		"0:0:same",
		"99.5:100:same",  // within sameTimeMs
		"180:200:beside", // 20 ms from 200, to which 190 is nearer
		"190:200:skewed", // the nearest to 200, 10 ms away
		"220:200:beside", // 20 ms from 200, to which 190 is nearer
		"330:-:none",     // 30 ms from 300
		"500:-:none",     // past the recording
	}
	if !slices.Equal(got, want) {
		t.Fatalf("pairs (sim:recording t:kind):\n got %v\nwant %v", got, want)
	}
}

// TestFormatMs: labels and sentences show times without float noise (a
// replay at timeScale 0.5 has t = simT / 0.5, often 521.6300000000002).
func TestFormatMs(t *testing.T) {
	for _, c := range []struct {
		in   float64
		want string
	}{
		{521.6300000000002, "521.6ms"},
		{103.32000000000008, "103.3ms"},
		{51.66000000000004, "51.7ms"},
		{500, "500ms"},
		{0, "0ms"},
		{-0.01, "0ms"},
		{0.05, "0.1ms"},
		{1e9 + 0.25, "1000000000.3ms"},
	} {
		if got := FormatMs(c.in); got != c.want {
			t.Errorf("FormatMs(%v) = %q, want %q", c.in, got, c.want)
		}
		if got := ms(c.in); got != c.want {
			t.Errorf("ms(%v) = %q, want %q", c.in, got, c.want)
		}
	}
}
