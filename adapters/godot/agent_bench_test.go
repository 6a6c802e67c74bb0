package godot_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/crosscode/crosscode-mcp/internal/testing/sysdeps"
	"github.com/crosscode/crosscode-mcp/protocol"
)

// BenchmarkAgentLook: a step of 0 ms (apply and look) to the arena held
// under agent control, rendering under Xvfb, from sending the step to its
// stepped, with its picture (a 640x360 JPEG) read on the way
// ("look-p50-ms"), beside its floor in the same iterations: a ping's round
// trip over the same socket ("ping-p50-ms"), answered by the addon's
// connection thread. The main thread takes the step at its next frame
// (the arena runs at most 60 a second, sleeping between them) and sends
// the picture of the held game the last draw shows, so a look costs up
// to a frame more than the round trip.
func BenchmarkAgentLook(b *testing.B) {
	g := sysdeps.NeedGodot(b)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ctrl := scripted(b)
	launch(b, g, project(b, g, "examples/godot-arena"), ctrl.Endpoint, ctrl.Token, nil, "--xvfb", "--path", ".")
	peer, err := ctrl.Accept(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer peer.Close()
	if _, _, err := peer.Handshake(ctx, ctrl.Token); err != nil {
		b.Fatal(err)
	}
	req := &protocol.FramesRequest{FPS: 2, MaxWidth: 640, Formats: []string{protocol.MimeJPEG}}
	if err := peer.Send(ctx, map[string]any{"type": "record_start", "op": "look", "control": "agent", "frames": req}); err != nil {
		b.Fatal(err)
	}
	expectMsg(b, ctx, peer, "started")
	look := func(id string) {
		if err := peer.Send(ctx, map[string]any{"type": "step", "op": "look", "id": id, "actions": []any{}, "ms": 0}); err != nil {
			b.Fatal(err)
		}
		pictures := 0
		for {
			m := recvMsg(b, ctx, peer)
			if m.typ() == "frame" && m.m["reason"] == "step" {
				pictures++
			}
			if m.typ() == "stepped" {
				if pictures != 1 {
					b.Fatalf("step %s: %d pictures", id, pictures)
				}
				return
			}
		}
	}
	look("warm") // the first physics frame has run, the game is held
	var looks, pings []time.Duration
	b.ResetTimer()
	for i := range b.N {
		t0 := time.Now()
		look(fmt.Sprint("l", i))
		looks = append(looks, time.Since(t0))
		t0 = time.Now()
		if err := peer.Send(ctx, protocol.Ping{Type: "ping", Nonce: fmt.Sprint("p", i)}); err != nil {
			b.Fatal(err)
		}
		expectMsg(b, ctx, peer, "pong")
		pings = append(pings, time.Since(t0))
	}
	b.StopTimer()
	b.ReportMetric(p50(looks), "look-p50-ms")
	b.ReportMetric(p50(pings), "ping-p50-ms")
}

func p50(d []time.Duration) float64 {
	s := slices.Clone(d)
	slices.Sort(s)
	return float64(s[len(s)/2].Microseconds()) / 1000
}

// BenchmarkPlainStep: a step of 1000 ms of game time on the plain game
// (no Cappy code) with a fixed frame step, headless: the 60 frames run as
// fast as the machine goes ("step-1s-p50-ms", wall time from sending the
// step to its stepped), beside its floor in the same iterations, a look
// (a step of 0 ms: the round trip and the held frame it waits for,
// "look-p50-ms").
func BenchmarkPlainStep(b *testing.B) {
	g := sysdeps.NeedGodot(b)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ctrl := scripted(b)
	launch(b, g, project(b, g, "adapters/godot/testdata/plain"), ctrl.Endpoint, ctrl.Token, nil, "--headless", "--fixed-fps", "60", "--path", ".")
	peer, err := ctrl.Accept(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer peer.Close()
	if _, _, err := peer.Handshake(ctx, ctrl.Token); err != nil {
		b.Fatal(err)
	}
	if err := peer.Send(ctx, map[string]any{"type": "record_start", "op": "steps", "control": "agent"}); err != nil {
		b.Fatal(err)
	}
	expectMsg(b, ctx, peer, "started")
	step := func(id string, ms float64) time.Duration {
		t0 := time.Now()
		if err := peer.Send(ctx, map[string]any{"type": "step", "op": "steps", "id": id, "actions": []any{}, "ms": ms}); err != nil {
			b.Fatal(err)
		}
		for recvMsg(b, ctx, peer).typ() != "stepped" {
		}
		return time.Since(t0)
	}
	step("warm", 0)
	var steps, looks []time.Duration
	b.ResetTimer()
	for i := range b.N {
		steps = append(steps, step(fmt.Sprint("s", i), 1000))
		looks = append(looks, step(fmt.Sprint("l", i), 0))
	}
	b.StopTimer()
	b.ReportMetric(p50(steps), "step-1s-p50-ms")
	b.ReportMetric(p50(looks), "look-p50-ms")
}
