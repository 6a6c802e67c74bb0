package capture

import (
	"context"
	"errors"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/crosscode/crosscode-mcp/bridge/cappy"
	"github.com/crosscode/crosscode-mcp/store"
	"github.com/crosscode/crosscode-mcp/tools"
)

type getCaptureIn struct {
	Op          string   `json:"op"`
	AfterSeq    int64    `json:"afterSeq,omitempty" jsonschema_description:"Page: events after this seq (nextSeq of the previous answer)."`
	Events      []string `json:"events,omitempty" jsonschema_description:"Only these event names."`
	FromT       *float64 `json:"fromT,omitempty" jsonschema_description:"Only events at t >= fromT (ms)."`
	ToT         *float64 `json:"toT,omitempty"`
	Limit       int      `json:"limit,omitempty" jsonschema:"minimum=1,maximum=200" jsonschema_description:"Default 50."`
	WaitSeconds int      `json:"waitSeconds,omitempty" jsonschema:"minimum=0,maximum=55" jsonschema_description:"If it still runs, wait this long for the outcome first."`
	// Pictures of the frames, as image content.
	Keyframes         int       `json:"keyframes,omitempty" jsonschema:"minimum=0,maximum=8" jsonschema_description:"Pictures: this many frames evenly spaced, first and last included."`
	KeyframesAt       []float64 `json:"keyframesAt,omitempty" jsonschema_description:"Pictures: the frame nearest each of these t (ms)."`
	KeyframesAtEvents []string  `json:"keyframesAtEvents,omitempty" jsonschema_description:"Pictures: the first frame at or after each event of these names (first 8)."`
	ContactSheet      bool      `json:"contactSheet,omitempty" jsonschema_description:"A contact sheet: up to 24 frames, each labelled with t and its last event."`
	ImageBudgetBytes  int       `json:"imageBudgetBytes,omitempty" jsonschema:"minimum=1,maximum=4000000" jsonschema_description:"Most image bytes in this answer (default 1000000); picturesLeftOut names the rest."`
	Video             bool      `json:"video,omitempty" jsonschema_description:"An MP4 of the frames with the events as WebVTT subtitles, for a human; answers their paths."`
}

type getCaptureOut struct {
	OpView
	// Page holds the events matching the filters, in order; payloads are
	// data from the game.
	Page []EventView `json:"page"`
	// NextSeq is set when there are more: pass it as afterSeq.
	NextSeq int64 `json:"nextSeq,omitempty"`
	waited  bool  // for the outcome: then a failed one is an error
}

// Failed: get_capture that waited for an operation answers its failure
// as the operation's own call would; reading a past failure is no error.
func (o *getCaptureOut) Failed() bool { return o.waited && o.OpView.Failed() }

// GetCapture is the get_capture tool.
func GetCapture(s *cappy.Service) tools.Tool {
	return tools.New[getCaptureIn, getCaptureOut](Toolset, "get_capture", "Get capture",
		"An operation's outcome and events (paged, filtered by name and t) and pictures: frames at named events, at given t or evenly spaced, a labelled contact sheet (within a byte budget), an MP4 on request. waitSeconds waits for a running one first.",
		tools.Annotations{ReadOnly: true, Idempotent: true},
		handler(func(ctx context.Context, req mcpgo.CallToolRequest, in getCaptureIn) (*getCaptureOut, error) {
			waited := false
			if op := s.Controller.Active(); op != nil && op.ID == in.Op && in.WaitSeconds > 0 {
				await(ctx, req, s.Controller, op, waitFor(in.WaitSeconds), true)
				waited = true
			}
			view, err := opView(context.WithoutCancel(ctx), s.Store, in.Op)
			if err != nil {
				return nil, err
			}
			view.Timeline, view.Omitted = nil, 0 // the page below replaces them
			view.Next = next(view)
			limit := in.Limit
			if limit <= 0 || limit > 200 {
				limit = 50
			}
			evs, err := s.Store.Events(ctx, store.EventQuery{Op: in.Op, AfterSeq: in.AfterSeq, Names: in.Events, FromT: in.FromT, ToT: in.ToT, Limit: limit + 1})
			if err != nil {
				return nil, err
			}
			more := len(evs) > limit
			out := &getCaptureOut{OpView: *view, waited: waited}
			var left int
			if out.Page, left = tools.Fit(eventViews(evs[:min(len(evs), limit)]), pageBudget); left > 0 || more {
				out.NextSeq = out.Page[len(out.Page)-1].Seq
			}
			bg := context.WithoutCancel(ctx)
			ps := newPictures(in.ImageBudgetBytes)
			if in.Keyframes > 0 || len(in.KeyframesAt) > 0 || len(in.KeyframesAtEvents) > 0 {
				pics, notes, err := s.Keyframes(bg, in.Op, cappy.KeyframeQuery{Events: in.KeyframesAtEvents, Ts: in.KeyframesAt, Count: in.Keyframes})
				switch {
				case errors.Is(err, cappy.ErrNoFrames):
					ps.note("no pictures: the capture has no frames (frames are taken when the game advertises them; see run_scenario's frames)")
				case err != nil:
					return nil, err
				}
				for _, p := range pics {
					ps.add(p)
				}
				ps.note(notes...)
			}
			if in.ContactSheet {
				if p, err := s.ContactSheet(bg, in.Op); err == nil {
					ps.add(p)
				} else {
					ps.note(sheetErr(err))
				}
			}
			ps.into(&out.OpView)
			if in.Video {
				out.Video, out.VideoNote = video(bg, s, in.Op)
			}
			return out, nil
		}))
}

type listCapturesIn struct {
	Kind   string `json:"kind,omitempty" jsonschema:"enum=scenario,enum=recording,enum=replay"`
	Before string `json:"before,omitempty" jsonschema_description:"Page: createdAt of the last capture of the previous answer."`
	Limit  int    `json:"limit,omitempty" jsonschema:"minimum=1,maximum=50" jsonschema_description:"Default 20."`
}

type captureItem struct {
	Op        string    `json:"op"`
	Kind      string    `json:"kind"`
	Scenario  string    `json:"scenario,omitempty"`
	Status    string    `json:"status"`
	Code      string    `json:"code,omitempty"`
	Events    int64     `json:"events"`
	CreatedAt time.Time `json:"createdAt"`
	ReplayOf  string    `json:"replayOf,omitempty"`
	HasReplay bool      `json:"hasReplay,omitempty"`
}

type listCapturesOut struct {
	Captures []captureItem `json:"captures"`
	// Plays are the saved plays (first page only), with their last
	// result here; PlaysOmitted counts those not listed.
	Plays        []cappy.PlayItem `json:"plays,omitempty"`
	PlaysOmitted int              `json:"playsOmitted,omitempty"`
}

// ListCaptures is the list_captures tool.
func ListCaptures(s *cappy.Service) tools.Tool {
	return tools.New[listCapturesIn, listCapturesOut](Toolset, "list_captures", "List captures",
		"Past scenarios, recordings and replays, newest first; and the saved plays with their last result.",
		tools.Annotations{ReadOnly: true, Idempotent: true},
		handler(func(ctx context.Context, _ mcpgo.CallToolRequest, in listCapturesIn) (*listCapturesOut, error) {
			var before time.Time
			if in.Before != "" {
				t, err := time.Parse(time.RFC3339Nano, in.Before)
				if err != nil {
					return nil, inputErr("before must be an RFC 3339 time (a createdAt from the previous page)")
				}
				before = t
			}
			limit := in.Limit
			if limit <= 0 || limit > 50 {
				limit = 20
			}
			list, err := s.Store.Captures(ctx, in.Kind, before, limit)
			if err != nil {
				return nil, err
			}
			out := &listCapturesOut{Captures: []captureItem{}}
			for _, c := range list {
				out.Captures = append(out.Captures, captureItem{Op: c.Op, Kind: c.Kind, Scenario: c.Scenario, Status: c.Status, Code: c.Code,
					Events: c.Events, CreatedAt: c.CreatedAt, ReplayOf: c.ReplayOf, HasReplay: c.Kind == cappy.KindRecording && c.ReplaySHA != ""})
			}
			if in.Before == "" {
				if out.Plays, out.PlaysOmitted, err = s.Plays(ctx); err != nil {
					return nil, err
				}
			}
			return out, nil
		}))
}

// All returns the capture tools over s; v publishes validations (nil
// without the coordination toolset).
func All(s *cappy.Service, v Validations) []tools.Tool {
	return []tools.Tool{
		CaptureStatus(s), ListScenarios(s), RunScenario(s, v), StartRecording(s), StopRecording(s),
		Replay(s, v), CancelCapture(s), GetCapture(s), ListCaptures(s), StepGame(s), InspectGame(s),
	}
}
