package cappy_test

import (
	"context"
	"fmt"
	"image"
	"image/color"
	"image/draw"

	"github.com/crosscode/crosscode-mcp/adapters/go/cappy"
	"github.com/crosscode/crosscode-mcp/adapters/go/cappy/cappytest"
	"github.com/crosscode/crosscode-mcp/protocol"
)

// blinker is a game whose one scenario is a square blinking for a second.
type blinker struct{}

func (blinker) Info() cappy.Info {
	return cappy.Info{
		Game: protocol.GameInfo{ID: "blinker"},
		// Listing CapFrames is all it takes for the controller to ask.
		Capabilities: []string{protocol.CapScenarios, protocol.CapFrames},
	}
}

func (blinker) Scenarios() []protocol.Scenario { return []protocol.Scenario{{ID: "blink"}} }

func (blinker) RunScenario(ctx context.Context, op *cappy.Op, _ string, _ map[string]any, _ protocol.Presentation) error {
	for tick := range 21 { // 50 ms ticks of simulated time
		t := float64(tick * 50)
		on := tick%4 < 2
		if err := op.Emit(t, "TICK", nil, map[string]any{"on": on}); err != nil {
			return err
		}
		if op.FrameDue(t) { // false when no frames were asked
			// Snapshot on the loop, draw on the adapter's worker.
			op.SendFrameFunc(t, func() image.Image { return square(on) }, &cappy.FrameOptions{Wait: true})
		}
	}
	stats, err := op.FlushFrames(ctx)
	if err != nil {
		return err
	}
	return op.SetSummary(map[string]any{"frames": stats})
}

func (blinker) Record(context.Context, *cappy.Op) (*protocol.ReplayPayload, error) {
	return nil, cappy.Failf(protocol.CappyCapabilityMissing, "no recordings")
}

func (blinker) Replay(context.Context, *cappy.Op, *protocol.ReplayPayload, protocol.Presentation) error {
	return cappy.Failf(protocol.CappyReplayUnsupported, "no replays")
}

func square(on bool) image.Image {
	m := image.NewRGBA(image.Rect(0, 0, 320, 180))
	c := color.RGBA{20, 20, 20, 255}
	if on {
		c = color.RGBA{250, 200, 40, 255}
	}
	draw.Draw(m, image.Rect(110, 40, 210, 140), image.NewUniform(c), image.Point{}, draw.Src)
	return m
}

// A game implements Game and runs Run beside its loop; the controller
// (crosscode-mcp's, here cappytest's scripted one) then runs its
// scenarios. In a game, Run reads the endpoint and the token from
// CAPPY_ENDPOINT and CAPPY_SESSION_TOKEN:
//
//	go func() { log.Println(cappy.Run(ctx, blinker{}, nil)) }()
func Example() {
	ctl, _ := cappytest.NewController()
	defer ctl.Close()
	ctx := context.Background()
	go cappy.Run(ctx, blinker{}, ctl.Options())

	peer, _ := ctl.Accept(ctx)
	defer peer.Close()
	hello, scenarios, _ := peer.Handshake(ctx, ctl.Token)
	fmt.Println(hello.Game.ID, hello.Capabilities, scenarios.Scenarios[0].ID)
	peer.Send(ctx, &protocol.PrepareScenario{Type: "prepare_scenario", Op: "op_1", Scenario: "blink", Parameters: map[string]any{}},
		&protocol.OpMessage{Type: "start", Op: "op_1"})
	peer.Expect(ctx, "ready", "op_1")
	peer.Expect(ctx, "started", "op_1")
	events, end, _ := peer.Collect(ctx, "op_1")
	fmt.Println(len(events), events[0].Event, end.Type)
	// Output:
	// blinker [scenarios frames] blink
	// 21 TICK completed
}

// A game hands frames at the rate the controller asked, on its presented
// clock; the adapter scales, encodes and sends them off the game loop.
func ExampleOp_SendFrameFunc() {
	ctl, _ := cappytest.NewController()
	defer ctl.Close()
	ctx := context.Background()
	go cappy.Run(ctx, blinker{}, ctl.Options())

	peer, _ := ctl.Accept(ctx)
	defer peer.Close()
	peer.Handshake(ctx, ctl.Token)
	req := &protocol.FramesRequest{FPS: 4, MaxWidth: 160, Formats: []string{protocol.MimeJPEG, protocol.MimePNG}}
	peer.Send(ctx, &protocol.PrepareScenario{Type: "prepare_scenario", Op: "op_1", Scenario: "blink", Parameters: map[string]any{}, Frames: req},
		&protocol.OpMessage{Type: "start", Op: "op_1"})
	peer.Expect(ctx, "ready", "op_1")
	peer.Expect(ctx, "started", "op_1")
	c, err := peer.CollectCapture(ctx, "op_1", req)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, f := range c.Frames {
		fmt.Printf("t=%v %s %dx%d\n", f.T, f.Mime, f.Width, f.Height)
	}
	fmt.Printf("%d events, summary %s\n", len(c.Events), c.End.Completed.Summary)
	// Output:
	// t=0 image/jpeg 160x90
	// t=250 image/jpeg 160x90
	// t=500 image/jpeg 160x90
	// t=750 image/jpeg 160x90
	// t=1000 image/jpeg 160x90
	// 21 events, summary {"frames":{"sent":5}}
}
