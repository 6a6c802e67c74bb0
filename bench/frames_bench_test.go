package bench

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/coder/websocket"

	adapter "github.com/crosscode/crosscode-mcp/adapters/go/cappy"
	"github.com/crosscode/crosscode-mcp/bridge/cappy"
	"github.com/crosscode/crosscode-mcp/internal/demogame"
	"github.com/crosscode/crosscode-mcp/protocol"
	"github.com/crosscode/crosscode-mcp/store"
)

// Frames (issue 8): what frames cost the event stream, what get_capture's
// pictures cost on a long capture, and what a long capture at 30 fps
// costs the server's memory.

// BenchmarkCaptureStreamFrames: the demo game's stress scenario through
// the real controller into the capture store, without frames and with
// frames at 10 fps of 640x360 JPEG (the same run, for the ratio).
func BenchmarkCaptureStreamFrames(b *testing.B) {
	events := func(b *testing.B) int { return min(max(b.N, 1000), 1_000_000) }
	for _, fps := range []float64{0, 10} {
		b.Run(fmt.Sprintf("fps=%g", fps), func(b *testing.B) {
			n := events(b)
			ctx, ctrl, st := demoController(b)
			r := cappy.Request{Kind: cappy.KindScenario, Scenario: "stress", Parameters: map[string]any{"events": float64(n)}}
			if fps > 0 {
				r.Frames = &protocol.FramesRequest{FPS: fps, MaxWidth: 640, Formats: []string{protocol.MimeJPEG}}
			}
			b.ResetTimer()
			start := time.Now()
			op, err := ctrl.Start(ctx, r)
			if err != nil {
				b.Fatal(err)
			}
			out := op.Wait(ctx)
			elapsed := time.Since(start)
			if out.Status != cappy.StatusCompleted || out.Events != int64(n) {
				b.Fatalf("%+v", out)
			}
			c, _ := st.Capture(ctx, op.ID)
			if fps > 0 && c.Frames == 0 {
				b.Fatal("no frames were stored")
			}
			b.ReportMetric(float64(n)/elapsed.Seconds(), "events/s")
			b.ReportMetric(float64(c.Frames), "frames")
			b.ReportMetric(float64(c.Frames)/elapsed.Seconds(), "frames/s")
		})
	}
}

// demoFrames are the demo game's frames of a boss fight (640x360 JPEG),
// for synthetic captures made of real pictures.
func demoFrames(b *testing.B) [][]byte {
	b.Helper()
	dir := b.TempDir()
	svc, err := cappy.NewService(context.Background(), cappy.ServiceConfig{Data: dir})
	if err != nil {
		b.Fatal(err)
	}
	defer svc.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go adapter.Run(ctx, demogame.New(), &adapter.Options{Endpoint: svc.Controller.Endpoint(), Token: svc.Controller.Token()})
	if _, err := svc.Controller.WaitAdapter(ctx); err != nil {
		b.Fatal(err)
	}
	op, err := svc.Controller.Start(ctx, cappy.Request{Kind: cappy.KindScenario, Scenario: "boss_intro", Frames: svc.FramesRequest(4)})
	if err != nil {
		b.Fatal(err)
	}
	if out := op.Wait(ctx); out.Status != cappy.StatusCompleted {
		b.Fatalf("%+v", out)
	}
	fs, err := svc.Store.Frames(ctx, store.FrameQuery{Op: op.ID, Limit: 1000})
	if err != nil || len(fs) < 50 {
		b.Fatalf("%d frames: %v", len(fs), err)
	}
	var out [][]byte
	for _, f := range fs {
		data, err := os.ReadFile(filepath.Join(svc.Controller.FrameDir(), f.File))
		if err != nil {
			b.Fatal(err)
		}
		out = append(out, data)
	}
	return out
}

// longCapture writes, straight into a capture store under data (the
// layout the stdio server reads), a finished capture of minutes of
// presented time at fps, made of the demo game's pictures, with an event
// every 10 ms and a BOSS_PHASE every minute. It returns the op.
func longCapture(b *testing.B, data string, minutes, fps float64) string {
	b.Helper()
	pics := demoFrames(b)
	dir := filepath.Join(data, "capture")
	st, err := store.Open(context.Background(), filepath.Join(dir, "captures.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	op := "op_long"
	now := time.Now()
	req, _ := json.Marshal(protocol.FramesRequest{FPS: fps, MaxWidth: 640, Formats: []string{protocol.MimeJPEG}})
	if err := st.CreateCapture(ctx, &store.Capture{Op: op, Kind: cappy.KindScenario, Scenario: "long", Status: cappy.StatusRunning, CreatedAt: now, FramesRequest: req}); err != nil {
		b.Fatal(err)
	}
	end := minutes * 60_000
	frameEvery := 1000 / fps
	if err := os.MkdirAll(filepath.Join(dir, "frames", op), 0o700); err != nil {
		b.Fatal(err)
	}
	var seq int64
	var evs []store.CaptureEvent
	var frames []store.CaptureFrame
	nextFrame := 0.0
	for t := 0.0; t <= end; t += 10 {
		seq++
		name := "TICK"
		if int(t)%60_000 == 0 {
			name = "BOSS_PHASE"
		}
		evs = append(evs, store.CaptureEvent{Seq: seq, T: t, Event: name, Payload: json.RawMessage(`{"simT":` + strconv.Itoa(int(t)) + `}`), ReceivedAt: now})
		if t >= nextFrame {
			seq++
			pic := pics[len(frames)%len(pics)]
			file := filepath.Join(op, fmt.Sprintf("%08d.jpg", seq))
			if err := os.WriteFile(filepath.Join(dir, "frames", file), pic, 0o600); err != nil {
				b.Fatal(err)
			}
			frames = append(frames, store.CaptureFrame{Seq: seq, T: t, Mime: protocol.MimeJPEG, Width: 640, Height: 360, Bytes: int64(len(pic)), File: file, SHA256: strconv.Itoa(len(frames) % len(pics)), ReceivedAt: now})
			nextFrame += frameEvery
		}
		if len(evs) == 2000 {
			if err := st.AppendEvents(ctx, op, evs); err != nil {
				b.Fatal(err)
			}
			if err := st.AppendFrames(ctx, op, frames); err != nil {
				b.Fatal(err)
			}
			evs, frames = evs[:0], frames[:0]
		}
	}
	if err := st.AppendEvents(ctx, op, evs); err != nil {
		b.Fatal(err)
	}
	if err := st.AppendFrames(ctx, op, frames); err != nil {
		b.Fatal(err)
	}
	if err := st.UpdateCapture(ctx, op, store.CaptureUpdate{Status: cappy.StatusCompleted, StartedAt: now, EndedAt: now.Add(time.Duration(end) * time.Millisecond)}); err != nil {
		b.Fatal(err)
	}
	return op
}

// BenchmarkGetCaptureKeyframes: get_capture over stdio (the server in its
// own process) with 8 keyframes (at BOSS_PHASE events and evenly spaced)
// and a contact sheet, from a 10-minute capture at 10 fps (6,000 frames,
// 60,000 events); beside it, the same server answering get_capture with
// no pictures, and the first sheet (which is then kept).
func BenchmarkGetCaptureKeyframes(b *testing.B) {
	repo := benchRepo(b)
	data := b.TempDir()
	op := longCapture(b, data, 10, 10)
	a := startStdio(b, repo, "--toolsets", "capture", "--data", data)
	plain := map[string]any{"op": op, "limit": 1}
	pictures := map[string]any{"op": op, "limit": 1, "keyframesAtEvents": []string{"BOSS_PHASE"}, "keyframes": 8, "contactSheet": true}
	start := time.Now()
	first := a.call(b, "get_capture", pictures)
	firstSheet := time.Since(start)
	if n := len(first["pictures"].([]any)); n != 9 {
		b.Fatalf("%d pictures: %v", n, first["picturesLeftOut"])
	}
	measure := func(args map[string]any) []time.Duration {
		lat := make([]time.Duration, 0, b.N)
		for i := 0; i < b.N; i++ {
			t0 := time.Now()
			out := a.call(b, "get_capture", args)
			lat = append(lat, time.Since(t0))
			if out["op"] != op {
				b.Fatal(out)
			}
		}
		sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
		return lat
	}
	b.ResetTimer()
	withPics := measure(pictures)
	without := measure(plain)
	b.StopTimer()
	b.ReportMetric(ms(percentile(withPics, 0.5)), "pictures-p50-ms")
	b.ReportMetric(ms(percentile(withPics, 0.99)), "pictures-p99-ms")
	b.ReportMetric(ms(percentile(without, 0.5)), "floor-no-pictures-p50-ms")
	b.ReportMetric(ms(firstSheet), "first-call-ms")
}

// BenchmarkCaptureFramesRSS: a 10-minute capture at 30 fps (18,000 frames
// of 640x360 JPEG, an event per frame) streamed as fast as the socket
// takes it into the stdio server (its own process) by a scripted adapter;
// reports the server's peak RSS, beside its RSS before the capture.
func BenchmarkCaptureFramesRSS(b *testing.B) {
	pics := demoFrames(b)
	for i := 0; i < b.N; i++ {
		repo := benchRepo(b)
		data := b.TempDir()
		a := startStdio(b, repo, "--toolsets", "capture", "--data", data)
		a.call(b, "capture_status", nil)
		idle, _ := procMem(b, a.cmd.Process.Pid)
		var ep struct{ Endpoint, Token string }
		raw, err := os.ReadFile(filepath.Join(data, "capture", "cappy-endpoint.json"))
		if err == nil {
			err = json.Unmarshal(raw, &ep)
		}
		if err != nil {
			raw, err = os.ReadFile(filepath.Join(data, "cappy-endpoint.json"))
			if err != nil || json.Unmarshal(raw, &ep) != nil {
				b.Fatalf("endpoint file: %v", err)
			}
		}
		ctx, cancel := context.WithCancel(context.Background())
		go scriptedFrameGame(ctx, b, ep.Endpoint, ep.Token, pics, 18_000, 30)
		for deadline := time.Now().Add(30 * time.Second); a.call(b, "capture_status", nil)["adapter"] == nil; time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				b.Fatal("the scripted game did not connect")
			}
		}
		start := time.Now()
		out := a.call(b, "run_scenario", map[string]any{"scenario": "frames", "frames": 30, "contactSheet": false, "waitSeconds": 55, "timeoutSeconds": 600})
		for out["status"] != "completed" {
			if time.Since(start) > 10*time.Minute {
				b.Fatalf("not done: %v", out)
			}
			out = a.call(b, "get_capture", map[string]any{"op": out["op"], "waitSeconds": 55, "limit": 1})
		}
		elapsed := time.Since(start)
		_, hwm := procMem(b, a.cmd.Process.Pid)
		cancel()
		fr := out["frames"].(map[string]any)
		b.ReportMetric(hwm/1024, "peak-RSS-MiB")
		b.ReportMetric(idle/1024, "idle-RSS-MiB")
		b.ReportMetric(fr["stored"].(float64), "frames-stored")
		dropped, _ := json.Marshal(fr["dropped"])
		b.Logf("%d events, frames stored %v (%v bytes), dropped %s, in %s", int(out["events"].(float64)), fr["stored"], fr["bytes"], dropped, elapsed)
		a.c.Close()
	}
}

// scriptedFrameGame is an adapter that serves one scenario, "frames": n
// events and n frames at fps of presented time, sent as fast as the socket
// takes them (pre-encoded pictures, so the adapter costs nothing).
func scriptedFrameGame(ctx context.Context, b *testing.B, endpoint, token string, pics [][]byte, n int, fps float64) {
	ws, _, err := websocket.Dial(ctx, endpoint, nil)
	if err != nil {
		b.Error(err)
		return
	}
	defer ws.CloseNow()
	ws.SetReadLimit(protocol.CappyMaxMessageBytes)
	send := func(v any) error {
		m, _ := json.Marshal(v)
		return ws.Write(ctx, websocket.MessageText, m)
	}
	send(map[string]any{"type": "hello", "protocol": map[string]any{"min": 1, "max": 1}, "token": token,
		"adapter": map[string]any{"name": "bench"}, "game": map[string]any{"id": "bench"}, "capabilities": []string{"scenarios", "frames"}})
	send(map[string]any{"type": "scenarios", "scenarios": []any{map[string]any{"id": "frames"}}})
	encoded := make([]string, len(pics))
	for i, p := range pics {
		encoded[i] = base64.StdEncoding.EncodeToString(p)
	}
	for {
		_, data, err := ws.Read(ctx)
		if err != nil {
			return
		}
		var m struct{ Type, Op, Nonce string }
		json.Unmarshal(data, &m)
		switch m.Type {
		case "ping":
			send(map[string]any{"type": "pong", "nonce": m.Nonce})
		case "prepare_scenario":
			send(map[string]any{"type": "ready", "op": m.Op})
		case "start":
			send(map[string]any{"type": "started", "op": m.Op})
			go func(op string) {
				for i := range n {
					t := float64(i) * 1000 / fps
					send(map[string]any{"type": "event", "op": op, "t": t, "event": "TICK"})
					if err := send(map[string]any{"type": "frame", "op": op, "t": t, "mime": "image/jpeg", "width": 640, "height": 360, "data": encoded[i%len(encoded)]}); err != nil {
						return
					}
				}
				send(map[string]any{"type": "completed", "op": op})
			}(m.Op)
		}
	}
}
