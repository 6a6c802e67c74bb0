package visual_test

import (
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/jpeg"
	"os"
	"path/filepath"
	"slices"

	"github.com/crosscode/crosscode-mcp/bridge/cappy/visual"
)

// writeFrame writes a w×h JPEG frame of one colour with a white square at x.
func writeFrame(dir, name string, w, h, x int, c color.RGBA) string {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	draw.Draw(img, img.Rect, image.NewUniform(c), image.Point{}, draw.Src)
	draw.Draw(img, image.Rect(x, h/3, x+w/32, h/3+w/32), image.White, image.Point{}, draw.Src)
	p := filepath.Join(dir, name)
	f, err := os.Create(p)
	if err != nil {
		panic(err)
	}
	defer f.Close()
	if err := jpeg.Encode(f, img, nil); err != nil {
		panic(err)
	}
	return p
}

func Example() {
	dir, _ := os.MkdirTemp("", "visual-example")
	defer os.RemoveAll(dir)
	a := writeFrame(dir, "a.jpg", 1280, 720, 100, color.RGBA{40, 70, 50, 255})
	b := writeFrame(dir, "b.jpg", 1280, 720, 900, color.RGBA{40, 70, 50, 255})

	// An image for the agent, at most 640 px wide.
	_, w, h, err := visual.AgentJPEG(a, 640, 0)
	fmt.Println("agent image:", w, h, err)

	// A contact sheet with labels.
	_, w, h, err = visual.ContactSheet([]visual.SheetItem{
		{Path: a, Label: []string{"0.0 s", "START"}},
		{Path: b, Label: []string{"12.5 s", "BOSS_PHASE"}},
	}, nil)
	fmt.Println("contact sheet:", w, h, err)

	// Comparing two frames: the square moved, which Diff (the share of the
	// picture that changed) barely sees and DiffMax (the most any part
	// changed) does.
	sa, _ := visual.SignatureOf(a)
	sb, _ := visual.SignatureOf(b)
	fmt.Println("diverged:", visual.Diff(sa, sb) > visual.DefaultDiffThreshold,
		visual.DiffMax(sa, sb) > visual.DefaultDiffMaxThreshold)
	// Output:
	// agent image: 640 360 <nil>
	// contact sheet: 640 788 <nil>
	// diverged: false true
}

func ExampleEventCues() {
	events := []visual.Event{
		{T: 0, Name: "START"},
		{T: 1200, Name: "BOSS_PHASE", Payload: []byte(`{"phase": 2}`)},
		{T: 1300, Name: "HIT", Payload: []byte(`{"damage": 12}`)},
	}
	visual.WriteVTTSeq(os.Stdout, visual.EventCues(slices.Values(events), nil))
	// Output:
	// WEBVTT
	//
	// 1
	// 00:00:00.000 --> 00:00:01.200
	// START
	//
	// 2
	// 00:00:01.200 --> 00:00:03.200
	// BOSS_PHASE {"phase":2}
	// HIT {"damage":12}
}
