package capture

import (
	"context"
	"fmt"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/crosscode/crosscode-mcp/bridge/cappy"
	"github.com/crosscode/crosscode-mcp/protocol"
	"github.com/crosscode/crosscode-mcp/tools"
)

type startRecordingIn struct {
	TimeoutSeconds int      `json:"timeoutSeconds,omitempty" jsonschema:"minimum=1" jsonschema_description:"Cancel the recording after this long (default 600)."`
	Frames         *float64 `json:"frames,omitempty" jsonschema:"minimum=0,maximum=30" jsonschema_description:"Frames per second of presented time (default 2; 0: none but steps' pictures). Its replays compare their pictures with these."`
	Control        string   `json:"control,omitempty" jsonschema:"enum=agent" jsonschema_description:"agent: you play it with step_game."`
	Seed           *int64   `json:"seed,omitempty" jsonschema:"minimum=0,maximum=9007199254740991" jsonschema_description:"Seed of the game's randomness (default 1), for games that take one; its replay uses it, so the same steps play the same."`
}

type startRecordingOut struct {
	OpView
	// Actions are the game's actions, for step_game (agent control).
	Actions []cappy.ActionView `json:"actions,omitempty"`
	Buttons []string           `json:"buttons,omitempty" jsonschema_description:"More buttons by name; A..B: all from A to B."`
	// T and SimT: where the paused game stands (agent control).
	T    *float64 `json:"t,omitempty"`
	SimT *float64 `json:"simT,omitempty"`
}

// StartRecording is the start_recording tool.
func StartRecording(s *cappy.Service) tools.Tool {
	return tools.New[startRecordingIn, startRecordingOut](Toolset, "start_recording", "Start recording",
		"Start a freeform recording: the player plays, or with control \"agent\" you play it in steps (the answer lists the game's actions and a first picture). stop_recording ends it.",
		tools.Annotations{},
		handler(func(ctx context.Context, req mcpgo.CallToolRequest, in startRecordingIn) (*startRecordingOut, error) {
			// A new game process unless the game resets itself: nothing of
			// a previous run leaks into this one.
			if _, err := s.EnsureFresh(ctx, seedOr(in.Seed)); err != nil {
				return nil, err
			}
			frames := s.FramesRequest(framesArg(in.Frames))
			if frames == nil && in.Control == cappy.ControlAgent {
				frames = s.StepPictures() // frames is the recording's rate: each step still has its picture
			}
			op, err := s.Controller.Start(ctx, cappy.Request{Kind: cappy.KindRecording, Timeout: time.Duration(in.TimeoutSeconds) * time.Second, Frames: frames, Control: in.Control, Seed: in.Seed})
			if err != nil {
				return nil, err
			}
			// Wait for started (or the end), briefly.
			deadline := time.Now().Add(10 * time.Second)
			for time.Now().Before(deadline) {
				st := op.Status().Status
				if st != cappy.StatusStarting {
					break
				}
				select {
				case <-op.Done():
				case <-ctx.Done():
					s.Controller.Cancel(op)
				case <-time.After(10 * time.Millisecond):
				}
			}
			view, err := opView(context.WithoutCancel(ctx), s.Store, op.ID)
			if err != nil {
				return nil, err
			}
			if frames != nil && op.FramesAsked() == nil {
				view.Frames = notAsked()
			}
			view.Next = "Recording as " + op.ID + ". Call stop_recording with this op to end it and store its replay."
			out := &startRecordingOut{OpView: *view}
			if cappy.Final(view.Status) {
				out.Next = next(view)
				return out, nil
			}
			if op.AgentControlled() && view.Status == cappy.StatusRunning {
				out.Actions, out.Buttons = s.ActionList()
				// The first look: a step of 0 ms without input.
				r, err := s.Controller.Step(ctx, op, nil, 0)
				if err != nil {
					return nil, err
				}
				sv := stepView(s, op, r)
				out.T, out.SimT = &r.T, &r.SimT
				out.Pictures, out.PicturesLeftOut = sv.Pictures, appendNote(nil, sv.PictureNote)
				out.attached = sv.attached
				out.Next = "You play " + op.ID + ": the game is paused. step_game {actions, ms} runs it with your inputs held and shows the result; inspect_game reads its state; stop_recording op=" + op.ID + " ends the play and stores its replay."
			}
			return out, nil
		}))
}

// seedOr is seed, or protocol.DefaultSeed when none was given.
func seedOr(seed *int64) int64 {
	if seed == nil {
		return protocol.DefaultSeed
	}
	return *seed
}

func appendNote(list []string, note string) []string {
	if note == "" {
		return list
	}
	return append(list, note)
}

type stopRecordingIn struct {
	Op           string `json:"op,omitempty" jsonschema_description:"The recording's op (start_recording's answer). Default: the running recording."`
	WaitSeconds  int    `json:"waitSeconds,omitempty" jsonschema:"minimum=1,maximum=55" jsonschema_description:"Wait this long for it to finish (default 45)."`
	ContactSheet *bool  `json:"contactSheet,omitempty" jsonschema_description:"Attach a contact sheet of its frames (default true)."`
	SaveAs       string `json:"saveAs,omitempty" jsonschema_description:"Also save it in the repository as a play: a regression test to commit."`
	Overwrite    bool   `json:"overwrite,omitempty" jsonschema_description:"Replace a saved play of that name."`
}

type stopRecordingOut struct {
	OpView
	// Saved is the play written by saveAs.
	Saved *cappy.SavedPlay `json:"saved,omitempty"`
}

// StopRecording is the stop_recording tool.
func StopRecording(s *cappy.Service) tools.Tool {
	return tools.New[stopRecordingIn, stopRecordingOut](Toolset, "stop_recording", "Stop recording",
		"End a freeform recording: the game hands over its replay, verified and stored for replay (with saveAs, also saved as a play).",
		tools.Annotations{},
		handler(func(ctx context.Context, req mcpgo.CallToolRequest, in stopRecordingIn) (*stopRecordingOut, error) {
			op := s.Controller.Active()
			if in.Op == "" {
				switch {
				case op == nil:
					return nil, inputErr("no recording is running; start one with start_recording (list_captures shows those that ended)")
				case op.Kind == cappy.KindReplay:
					return nil, inputErr("no recording is running: %s is a replay; stop_recording op=%s stops it", op.ID, op.ID)
				case op.Kind != cappy.KindRecording:
					return nil, inputErr("no recording is running: %s is a %s; cancel_capture aborts it", op.ID, op.Kind)
				}
				in.Op = op.ID
			}
			if op == nil || op.ID != in.Op {
				if v, err := opView(ctx, s.Store, in.Op); err == nil && cappy.Final(v.Status) {
					v.Next = next(v)
					out := &stopRecordingOut{OpView: *v}
					if in.SaveAs != "" { // a recording over already: save it now
						if err := save(ctx, s, out, in); err != nil {
							return nil, err
						}
					}
					return out, nil // already over
				}
				return nil, inputErr("operation %q is not the running recording; capture_status shows what runs", in.Op)
			}
			if op.Kind != cappy.KindRecording && op.Kind != cappy.KindReplay {
				return nil, inputErr("operation %q is a %s; only recordings and replays stop (cancel_capture aborts)", in.Op, op.Kind)
			}
			if in.SaveAs != "" {
				if op.Kind != cappy.KindRecording {
					return nil, inputErr("operation %q is a replay: only a recording can be saved as a play", in.Op)
				}
				// Refused before anything stops: the recording goes on.
				if err := s.SaveCheck(in.SaveAs, in.Overwrite); err != nil {
					return nil, err
				}
			}
			if err := s.Controller.Stop(ctx, op); err != nil {
				return nil, err
			}
			await(ctx, req, s.Controller, op, waitFor(in.WaitSeconds), true)
			view, err := opView(context.WithoutCancel(ctx), s.Store, op.ID)
			if err != nil {
				return nil, err
			}
			view.Next = next(view)
			if view.Status == cappy.StatusCompleted && view.Replay != nil {
				view.Next = "Recorded. replay with op=" + op.ID + " plays it back and checks it reproduces the same events."
			}
			ps := newPictures(DefaultImageBudget)
			finishPictures(context.WithoutCancel(ctx), s, view, in.ContactSheet, ps)
			ps.into(view)
			out := &stopRecordingOut{OpView: *view}
			if in.SaveAs != "" {
				if err := save(context.WithoutCancel(ctx), s, out, in); err != nil {
					return nil, err
				}
			}
			return out, nil
		}))
}

// save writes the stopped recording as the play in.SaveAs, and says so.
func save(ctx context.Context, s *cappy.Service, out *stopRecordingOut, in stopRecordingIn) error {
	if out.Status != cappy.StatusCompleted || out.Replay == nil {
		if !cappy.Final(out.Status) {
			out.Next += " It is not saved yet: call stop_recording op=" + out.Op + " saveAs=" + in.SaveAs + " again once it has finished."
			return nil
		}
		return inputErr("recording %s ended %s without a replay: there is nothing to save as a play; record it again", out.Op, out.Status)
	}
	sp, err := s.SavePlay(ctx, out.Op, in.SaveAs, in.Overwrite)
	if err != nil {
		return err
	}
	out.Saved = sp
	out.Next = fmt.Sprintf("Recorded, and saved as the play %s (%s and its data/ files, %d KiB: commit them). `crosscode-mcp test %s`, or replay play=%s, runs it and compares events and pictures.",
		sp.Name, sp.File, (sp.Bytes+1023)/1024, sp.Name, sp.Name)
	return nil
}

type cancelCaptureIn struct {
	Op string `json:"op,omitempty" jsonschema_description:"The operation to cancel; default the running one."`
}

// CancelCapture is the cancel_capture tool.
func CancelCapture(s *cappy.Service) tools.Tool {
	return tools.New[cancelCaptureIn, OpView](Toolset, "cancel_capture", "Cancel capture",
		"Abort the running scenario, recording or replay; its events so far stay stored.",
		tools.Annotations{Destructive: true, Idempotent: true},
		handler(func(ctx context.Context, _ mcpgo.CallToolRequest, in cancelCaptureIn) (*OpView, error) {
			op := s.Controller.Active()
			if op == nil || (in.Op != "" && op.ID != in.Op) {
				if in.Op != "" {
					if v, err := opView(ctx, s.Store, in.Op); err == nil {
						v.Next = "Nothing to cancel: it is " + v.Status + "."
						return v, nil
					}
				}
				return nil, inputErr("no operation is running")
			}
			s.Controller.Cancel(op)
			view, err := opView(ctx, s.Store, op.ID)
			if err != nil {
				return nil, err
			}
			view.Next = "Cancelled."
			return view, nil
		}))
}
