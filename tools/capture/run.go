package capture

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/crosscode/crosscode-mcp/bridge/cappy"
	"github.com/crosscode/crosscode-mcp/protocol"
	"github.com/crosscode/crosscode-mcp/tools"
)

type runScenarioIn struct {
	Scenario       string                `json:"scenario"`
	Parameters     map[string]any        `json:"parameters,omitempty" jsonschema_description:"By name, as list_scenarios describes; defaults fill the rest."`
	Preset         string                `json:"preset,omitempty" jsonschema_description:"A presentation preset from the capture config."`
	Presentation   protocol.Presentation `json:"presentation,omitempty" jsonschema_description:"timeScale (0.1-4), camera, and the game's own keys; overrides the preset's."`
	WaitSeconds    int                   `json:"waitSeconds,omitempty" jsonschema:"minimum=1,maximum=55" jsonschema_description:"Wait this long for the outcome (default 45); a longer run answers running."`
	TimeoutSeconds int                   `json:"timeoutSeconds,omitempty" jsonschema:"minimum=1" jsonschema_description:"Cancel the run after this long (default 600)."`
	Publish        bool                  `json:"publishValidation,omitempty" jsonschema_description:"Share the outcome with the other agents as a validation."`
	Frames         *float64              `json:"frames,omitempty" jsonschema:"minimum=0,maximum=30" jsonschema_description:"Frames per second of presented time (default: the config's frames.fps, 2; 0: none)."`
	ContactSheet   *bool                 `json:"contactSheet,omitempty" jsonschema_description:"When it finishes, attach a contact sheet of its frames (default true)."`
}

// presentation merges a preset and explicit keys.
func presentation(s *cappy.Service, preset string, p protocol.Presentation) (protocol.Presentation, error) {
	out := protocol.Presentation{}
	if preset != "" {
		base, err := s.Preset(preset)
		if err != nil {
			return nil, err
		}
		for k, v := range base {
			out[k] = v
		}
	}
	for k, v := range p {
		out[k] = v
	}
	return out, nil
}

// RunScenario is the run_scenario tool.
func RunScenario(s *cappy.Service, v Validations) tools.Tool {
	return tools.New[runScenarioIn, OpView](Toolset, "run_scenario", "Run scenario",
		"Play an authored scenario with parameters: its outcome, event timeline and, with frames, a contact sheet. Launches the game if needed; waits at most waitSeconds, then answers running (get_capture waits again).",
		tools.Annotations{},
		handler(func(ctx context.Context, req mcpgo.CallToolRequest, in runScenarioIn) (*OpView, error) {
			if in.Scenario == "" {
				return nil, inputErr("scenario is required; list_scenarios names them")
			}
			pres, err := presentation(s, in.Preset, in.Presentation)
			if err != nil {
				return nil, err
			}
			if _, err := s.EnsureAdapter(ctx); err != nil {
				return nil, err
			}
			onEvent, endProgress := progress(ctx, req)
			defer endProgress() // the operation may outlive the call
			frames := s.FramesRequest(framesArg(in.Frames))
			op, err := s.Controller.Start(ctx, cappy.Request{Kind: cappy.KindScenario, Scenario: in.Scenario, Parameters: in.Parameters, Presentation: pres,
				Timeout: time.Duration(in.TimeoutSeconds) * time.Second, OnEvent: onEvent, Frames: frames})
			if err != nil {
				return nil, err
			}
			await(ctx, req, s.Controller, op, waitFor(in.WaitSeconds), false)
			view, err := opView(context.WithoutCancel(ctx), s.Store, op.ID)
			if err != nil {
				return nil, err
			}
			view.Next = next(view)
			if frames != nil && op.FramesAsked() == nil {
				view.Frames = notAsked()
			}
			ps := newPictures(DefaultImageBudget)
			finishPictures(context.WithoutCancel(ctx), s, view, in.ContactSheet, ps)
			ps.into(view)
			if in.Publish {
				status, summary := outcome(view)
				view.Next += publish(ctx, v, view, protocol.ValidationScenario, in.Scenario+formatParams(op.Parameters), status, summary)
			}
			return view, nil
		}))
}

// outcome is the validation a finished operation makes: passed when it
// completed, else failed.
func outcome(view *OpView) (protocol.ValidationStatus, string) {
	if view.Status != cappy.StatusCompleted {
		return protocol.ValidationFailed, fmt.Sprintf("%s %s: %s", view.Status, view.Code, view.Message)
	}
	return protocol.ValidationPassed, fmt.Sprintf("%s: %d events", view.Status, view.Events)
}

// publish records a finished operation as a validation, best effort, and
// returns what to add to the answer's next.
func publish(ctx context.Context, v Validations, view *OpView, kind protocol.ValidationKind, name string, status protocol.ValidationStatus, summary string) string {
	if v == nil || !cappy.Final(view.Status) {
		return ""
	}
	dur := view.DurationMs
	if _, _, err := v.RecordValidation(context.WithoutCancel(ctx), protocol.Validation{Kind: kind, Name: name, Status: status, Summary: summary, CaptureOp: view.Op, DurationMs: &dur}); err != nil {
		return " (publishing the validation failed: " + err.Error() + ")"
	}
	return " Published as a validation."
}

// formatParams renders parameters as " k=v k=v", sorted.
func formatParams(p map[string]any) string {
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, " %s=%v", k, p[k])
	}
	return b.String()
}
