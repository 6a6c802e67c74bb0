package capture

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/crosscode/crosscode-mcp/bridge/cappy"
	"github.com/crosscode/crosscode-mcp/bridge/cappy/visual"
	"github.com/crosscode/crosscode-mcp/protocol"
	"github.com/crosscode/crosscode-mcp/store"
)

// What an agent sees: pictures ride on a result as MCP image content
// (JPEG, at most 640 px wide), each listed in the structured result with
// its t, the last event at or before it and its file, within a per-result
// byte budget.

// DefaultImageBudget is the image bytes one result carries by default.
const DefaultImageBudget = 1_000_000

// MaxImageBudget is the most a call may ask for.
const MaxImageBudget = 4_000_000

// FramesView is what an operation's frames came to.
type FramesView struct {
	FPS     float64          `json:"fps,omitempty" jsonschema_description:"Asked, per second of presented time."`
	Stored  int64            `json:"stored"`
	Bytes   int64            `json:"bytes"`
	Dropped store.FrameDrops `json:"dropped" jsonschema_description:"Dropped, never failing the run: over twice the asked rate, over the byte budget, or while the disk was behind."`
	Note    string           `json:"note,omitempty"`
}

// framesView reads a capture's frames counters; nil when none were asked.
func framesView(c *store.Capture) *FramesView {
	if len(c.FramesRequest) == 0 {
		return nil
	}
	v := &FramesView{Stored: c.Frames, Bytes: c.FrameBytes, Dropped: c.FramesDropped}
	var req protocol.FramesRequest
	if json.Unmarshal(c.FramesRequest, &req) == nil {
		v.FPS = req.FPS
	}
	if v.FPS == 0 {
		v.Note = "frames 0: none at a rate, only each step's picture"
	}
	return v
}

// notAsked is the frames view of an operation whose game sends none.
func notAsked() *FramesView {
	return &FramesView{Note: `no frames: the game's adapter does not advertise "frames" (see the README: Wire your game)`}
}

// framesArg turns a call's frames argument into the rate to ask for (-1:
// the config's default).
func framesArg(f *float64) float64 {
	if f == nil {
		return -1
	}
	return *f
}

// pictures collects a result's images within its byte budget.
type pictures struct {
	budget   int
	used     int
	listed   []cappy.Picture
	leftOut  []string
	contents []mcpgo.Content
}

func newPictures(budget int) *pictures {
	if budget <= 0 {
		budget = DefaultImageBudget
	}
	return &pictures{budget: min(budget, MaxImageBudget)}
}

// add attaches p, or notes it left out when it is over the budget.
func (ps *pictures) add(p *cappy.Picture) {
	if ps.used+p.Bytes > ps.budget {
		ps.leftOut = append(ps.leftOut, fmt.Sprintf("%s at t=%s (%s, %d bytes): over the %d-byte image budget of this result; ask for fewer, or a larger imageBudgetBytes", p.Kind, cappy.FormatMs(p.T), p.File, p.Bytes, ps.budget))
		return
	}
	ps.used += p.Bytes
	ps.listed = append(ps.listed, *p)
	ps.contents = append(ps.contents, mcpgo.NewImageContent(base64.StdEncoding.EncodeToString(p.JPEG), visual.MimeJPEG))
}

// note records what could not be shown.
func (ps *pictures) note(s ...string) { ps.leftOut = append(ps.leftOut, s...) }

// into puts the pictures on a view.
func (ps *pictures) into(v *OpView) {
	v.Pictures = append(v.Pictures, ps.listed...)
	v.PicturesLeftOut = append(v.PicturesLeftOut, ps.leftOut...)
	v.attached = append(v.attached, ps.contents...)
}

// sheetNote says why a contact sheet is missing, or "" when it is fine to
// say nothing (no frames were asked).
func sheetErr(err error) string {
	if errors.Is(err, cappy.ErrNoFrames) {
		return "no contact sheet: the capture has no frames"
	}
	return "no contact sheet: " + err.Error()
}

// finishPictures gives a finished scenario's or replay's view its contact
// sheet (when frames were taken and it is wanted) and, when the capture
// config says so, its video.
func finishPictures(ctx context.Context, s *cappy.Service, v *OpView, sheet *bool, ps *pictures) {
	if !cappy.Final(v.Status) || v.Frames == nil || v.Frames.Stored == 0 {
		return
	}
	if (sheet == nil && s.Config.Frames.ContactSheetOrDefault()) || (sheet != nil && *sheet) {
		if p, err := s.ContactSheet(ctx, v.Op); err == nil {
			ps.add(p)
		} else {
			ps.note(sheetErr(err))
		}
	}
	if s.Config.Frames.VideoAtEnd() {
		v.Video, v.VideoNote = video(ctx, s, v.Op)
	}
}

// video makes (or finds) the capture's video; without ffmpeg, the note
// says how to get it.
func video(ctx context.Context, s *cappy.Service, op string) (*cappy.VideoInfo, string) {
	if s.Config.Frames.VideoOff() {
		return nil, "videos are off in the capture config (frames.video)"
	}
	info, err := s.Video(ctx, op)
	switch {
	case errors.Is(err, visual.ErrNoFFmpeg):
		return nil, "no video: ffmpeg is not installed (Debian/Ubuntu: apt-get install ffmpeg; macOS: brew install ffmpeg), then ask again"
	case errors.Is(err, cappy.ErrNoFrames):
		return nil, "no video: the capture has no frames"
	case err != nil:
		return nil, "no video: " + err.Error()
	}
	return info, ""
}
