package cappytest

import (
	"context"
	"fmt"
	"slices"

	"github.com/crosscode/crosscode-mcp/protocol"
)

// Capture is what an adapter sent for one operation after its started:
// events and frames in the order they arrived, and the outcome.
type Capture struct {
	Events []protocol.Event
	Frames []protocol.Frame
	End    *protocol.AdapterMessage // completed or failed
}

// CollectCapture reads op's events and frames until its completed or
// failed. Each frame was decoded with the controller's rules (its image
// checked by protocol.CheckFrameImage) and is checked against req as a
// controller would: no frame when req is nil, mime one of req.Formats, at
// most req.MaxWidth wide, t never going back.
func (p *Peer) CollectCapture(ctx context.Context, op string, req *protocol.FramesRequest) (*Capture, error) {
	c := &Capture{}
	for {
		m, err := p.Recv(ctx)
		if err != nil {
			return c, err
		}
		switch {
		case m.Op() != op:
			return c, fmt.Errorf("cappytest: %s for op %q while collecting %q", m.Type, m.Op(), op)
		case m.Event != nil:
			c.Events = append(c.Events, *m.Event)
		case m.Frame != nil:
			if err := checkFrame(req, c.Frames, m.Frame); err != nil {
				return c, err
			}
			c.Frames = append(c.Frames, *m.Frame)
		case m.Completed != nil, m.Failed != nil:
			c.End = m
			return c, nil
		default:
			return c, fmt.Errorf("cappytest: unexpected %s while collecting %q", m.Type, op)
		}
	}
}

func checkFrame(req *protocol.FramesRequest, before []protocol.Frame, f *protocol.Frame) error {
	switch {
	case req == nil:
		return fmt.Errorf("cappytest: a frame (t=%v) when none were asked", f.T)
	case !slices.Contains(req.Formats, f.Mime):
		return fmt.Errorf("cappytest: frame t=%v is %s, not one of the offered %v", f.T, f.Mime, req.Formats)
	case f.Width > req.MaxWidth:
		return fmt.Errorf("cappytest: frame t=%v is %d px wide, over the asked %d", f.T, f.Width, req.MaxWidth)
	case len(before) > 0 && f.T < before[len(before)-1].T:
		return fmt.Errorf("cappytest: frame t=%v goes back from %v", f.T, before[len(before)-1].T)
	}
	return protocol.CheckFrameImage(f.Mime, f.Width, f.Height, f.Data)
}

// CheckFrameRate checks the Go adapter library's rate promise for frames
// sent at fps: in every window of W ms of presented time there are at
// most 2*fps*W/1000 + 2 frames (one per 1/fps slot plus as many extras).
func CheckFrameRate(frames []protocol.Frame, fps float64) error {
	for i := range frames {
		for j := i; j < len(frames); j++ {
			w := frames[j].T - frames[i].T
			if n := float64(j - i + 1); n > 2*fps*w/1000+2+1e-9 {
				return fmt.Errorf("cappytest: %v frames within %v ms (t %v to %v), over twice %g fps", n, w, frames[i].T, frames[j].T, fps)
			}
		}
	}
	return nil
}
