package capture

import (
	"context"
	"errors"
	"fmt"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/crosscode/crosscode-mcp/bridge/cappy"
	"github.com/crosscode/crosscode-mcp/protocol"
	"github.com/crosscode/crosscode-mcp/store"
	"github.com/crosscode/crosscode-mcp/tools"
)

type replayIn struct {
	Op             string                `json:"op,omitempty" jsonschema_description:"The recording to play back (its op)."`
	Play           string                `json:"play,omitempty" jsonschema_description:"Or a saved play's name (list_captures lists them), checked against its saved events and pictures."`
	Preset         string                `json:"preset,omitempty"`
	Presentation   protocol.Presentation `json:"presentation,omitempty" jsonschema_description:"timeScale, camera: only how it is shown changes."`
	Compare        *bool                 `json:"compare,omitempty" jsonschema_description:"Compare its events with the recording's (default true)."`
	ToleranceMs    float64               `json:"toleranceMs,omitempty" jsonschema:"minimum=0" jsonschema_description:"Allowed t difference in the recording's clock (default 50)."`
	WaitSeconds    int                   `json:"waitSeconds,omitempty" jsonschema:"minimum=1,maximum=55"`
	TimeoutSeconds int                   `json:"timeoutSeconds,omitempty" jsonschema:"minimum=1"`
	Publish        bool                  `json:"publishValidation,omitempty" jsonschema_description:"Share the outcome as a validation."`
	Frames         *float64              `json:"frames,omitempty" jsonschema:"minimum=0,maximum=30" jsonschema_description:"Frames per second of presented time (default 2; 0: none); pictures are compared when both sides have them."`
	ContactSheet   *bool                 `json:"contactSheet,omitempty" jsonschema_description:"When it finishes, attach a contact sheet of its frames (default true)."`
}

type replayOut struct {
	OpView
	// Of is the recording replayed.
	Of string `json:"of"`
	// Divergence is the first difference from the recording, or identical.
	Divergence *cappy.Divergence `json:"divergence,omitempty"`
	// VisualDivergence is the first frame whose picture differs from the
	// recording's at the same simulation time (with a side-by-side image).
	VisualDivergence *cappy.VisualDivergence `json:"visualDivergence,omitempty"`
	// Play is a saved play's verdict.
	Play *playVerdict `json:"play,omitempty"`
}

// playVerdict is a saved play's run, judged.
type playVerdict struct {
	Name    string `json:"name"`
	File    string `json:"file"`
	Status  string `json:"status"`
	Message string `json:"message,omitempty"`
}

// Replay is the replay tool.
func Replay(s *cappy.Service, v Validations) tools.Tool {
	return tools.New[replayIn, replayOut](Toolset, "replay", "Replay",
		"Replay a recording (op) or a saved play (play), optionally at another timeScale or camera: where its events first diverge (event, payload, t beyond a tolerance) and, with frames, where its pictures differ at the same simulation time.",
		tools.Annotations{},
		handler(func(ctx context.Context, req mcpgo.CallToolRequest, in replayIn) (*replayOut, error) {
			switch {
			case in.Play != "" && in.Op != "":
				return nil, inputErr("give op (a recording) or play (a saved play), not both")
			case in.Play != "":
				return replayPlay(ctx, req, s, v, in)
			case in.Op == "":
				return nil, inputErr("give op (a recording's, from stop_recording or list_captures) or play (a saved play's name, from list_captures)")
			}
			rec, err := s.Store.Capture(ctx, in.Op)
			if err != nil {
				return nil, err
			}
			if rec.Kind != cappy.KindRecording || rec.ReplaySHA == "" {
				return nil, inputErr("operation %q is not a completed recording with a replay (it is a %s, %s)", in.Op, rec.Kind, rec.Status)
			}
			stored, err := s.Store.Replay(ctx, rec.ReplaySHA)
			if err != nil {
				return nil, err
			}
			pres, err := presentation(s, in.Preset, in.Presentation)
			if err != nil {
				return nil, err
			}
			// A new game process, as for the recording, unless the game
			// resets itself.
			if _, err := s.EnsureFresh(ctx, seedOr(rec.Seed)); err != nil {
				return nil, err
			}
			onEvent, endProgress := progress(ctx, req)
			defer endProgress() // the operation may outlive the call
			frames := s.FramesRequest(framesArg(in.Frames))
			op, err := s.Controller.Start(ctx, cappy.Request{Kind: cappy.KindReplay, Replay: stored, ReplayOf: rec.Op, Presentation: pres, Seed: rec.Seed,
				Timeout: time.Duration(in.TimeoutSeconds) * time.Second, OnEvent: onEvent, Frames: frames})
			if err != nil {
				return nil, err
			}
			await(ctx, req, s.Controller, op, waitFor(in.WaitSeconds), false)
			bg := context.WithoutCancel(ctx)
			view, err := opView(bg, s.Store, op.ID)
			if err != nil {
				return nil, err
			}
			out := &replayOut{OpView: *view, Of: rec.Op}
			out.Next = next(view)
			if frames != nil && op.FramesAsked() == nil {
				out.Frames = notAsked()
			}
			ps := newPictures(DefaultImageBudget)
			if view.Status == cappy.StatusCompleted && (in.Compare == nil || *in.Compare) {
				tol := in.ToleranceMs
				if tol <= 0 {
					tol = cappy.DefaultToleranceMs
				}
				d, err := cappy.Compare(bg, s.Store, rec.Op, op.ID, pres.TimeScale(), tol)
				if err != nil {
					return nil, err
				}
				out.Divergence = gameText(d)
				if d.Identical {
					out.Next = fmt.Sprintf("The replay reproduced the recording: %d events, identical.", d.Compared)
				} else {
					out.Next = fmt.Sprintf("The replay diverged at event %d (%s): the game is not deterministic there, or the code changed since the recording.", d.Index, d.Field)
				}
				if out.Frames != nil && out.Frames.Stored > 0 {
					vd, err := s.CompareFrames(bg, rec.Op, op.ID, s.Config.Frames.Visual())
					if err != nil {
						return nil, err
					}
					out.VisualDivergence = vd
					switch {
					case vd.Picture() != nil:
						ps.add(vd.Picture())
						out.Next += fmt.Sprintf(" The picture differs from the recording's at t=%s (simulation %s; %.1f%% of it changed, one area by %.0f%%): see the side-by-side image.", cappy.FormatMs(vd.T), cappy.FormatMs(vd.SimT), 100*vd.Diff, 100*vd.Cell)
						if n := len(vd.Spans) + vd.SpansOmitted; n > 1 {
							out.Next += fmt.Sprintf(" It differs in %d spans of time in all: %s (visualDivergence.spans, each with its side-by-side image).", n, cappy.SpanText(vd, false))
						}
					case vd.Identical:
						out.Next += fmt.Sprintf(" Its %d compared frames look the same as the recording's.", vd.Compared)
					}
				}
			}
			finishPictures(bg, s, &out.OpView, in.ContactSheet, ps)
			ps.into(&out.OpView)
			if in.Publish {
				status, summary := outcome(view)
				if d := out.Divergence; d != nil && !d.Identical {
					status, summary = protocol.ValidationFailed, fmt.Sprintf("%s %s: diverged from the recording at event %d", cappy.StatusFailed, view.Code, d.Index)
				}
				out.Next += publish(ctx, v, view, protocol.ValidationReplay, "replay of "+rec.Op, status, summary)
			}
			return out, nil
		}))
}

// replayPlay runs a saved play and judges it against its expectation.
func replayPlay(ctx context.Context, req mcpgo.CallToolRequest, s *cappy.Service, v Validations, in replayIn) (*replayOut, error) {
	if in.Preset != "" || len(in.Presentation) > 0 || in.Compare != nil || in.ToleranceMs != 0 || in.Frames != nil {
		return nil, inputErr("a saved play runs as it was recorded and compares as its file says: leave out preset, presentation, compare, toleranceMs and frames")
	}
	begun := time.Now()
	onEvent, endProgress := progress(ctx, req)
	defer endProgress()
	ps, err := s.StartPlay(ctx, in.Play, onEvent, time.Duration(in.TimeoutSeconds)*time.Second)
	if err != nil {
		var pe *cappy.PlayError
		if errors.As(err, &pe) {
			// The file named from the repository, as `test` names it.
			o := s.FailedPlay(in.Play, err, begun)
			s.RecordPlayResult(context.WithoutCancel(ctx), o)
			return nil, inputErr("%s", o.Message)
		}
		return nil, err
	}
	await(ctx, req, s.Controller, ps.Op, waitFor(in.WaitSeconds), false)
	bg := context.WithoutCancel(ctx)
	view, err := opView(bg, s.Store, ps.Op.ID)
	if err != nil {
		return nil, err
	}
	out := &replayOut{OpView: *view, Of: ps.Expected}
	if !cappy.Final(view.Status) {
		out.Next = "The play " + in.Play + " still runs as " + view.Op + ": get_capture op=" + view.Op + " waitSeconds=55 waits for it; then call replay play=" + in.Play + " again for a verdict (or run `crosscode-mcp test " + in.Play + "`)."
		return out, nil
	}
	o, err := s.JudgePlay(bg, ps)
	if err != nil {
		return nil, err
	}
	s.RecordPlayResult(bg, o)
	out.Divergence, out.VisualDivergence = gameText(o.Events), o.Pictures
	out.Play = &playVerdict{Name: o.Name, File: o.File, Status: o.Status, Message: o.Message}
	ps2 := newPictures(DefaultImageBudget)
	for _, p := range cappy.SpanPictures(o.Pictures) {
		ps2.add(p)
	}
	switch o.Status {
	case cappy.PlayPassed:
		out.Next = fmt.Sprintf("The play %s passed: its %d events and %d pictures are as saved.", o.Name, o.Events.Compared, o.PicturesExpected)
	default:
		out.Next = fmt.Sprintf("The play %s %s: %s. If the change is intended, `crosscode-mcp test %s --update` rewrites its expectation (review and commit it); otherwise fix the game.", o.Name, o.Status, o.Message, o.Name)
	}
	finishPictures(bg, s, &out.OpView, in.ContactSheet, ps2)
	ps2.into(&out.OpView)
	if in.Publish {
		status := protocol.ValidationPassed
		if o.Status != cappy.PlayPassed {
			status = protocol.ValidationFailed
		}
		summary := "1 passed"
		if status == protocol.ValidationFailed {
			summary = "1 failed: " + o.Name
		}
		out.Next += publish(ctx, v, view, protocol.ValidationPlays, "plays: "+o.Name, status, summary)
	}
	return out, nil
}

// gameText sanitizes and caps the two events of a divergence (the game
// wrote them) as every event view is.
func gameText(d *cappy.Divergence) *cappy.Divergence {
	if d == nil {
		return nil
	}
	for _, ev := range []*store.CaptureEvent{d.Expected, d.Actual} {
		if ev != nil {
			v := eventView(*ev)
			ev.Payload, ev.Event = v.Payload, v.Event
		}
	}
	return d
}
