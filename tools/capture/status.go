package capture

import (
	"context"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/crosscode/crosscode-mcp/bridge/cappy"
	"github.com/crosscode/crosscode-mcp/internal/sanitize"
	"github.com/crosscode/crosscode-mcp/tools"
)

type captureStatusIn struct{}

type captureStatusOut struct {
	// Endpoint is the Cappy controller's loopback WebSocket; EndpointFile
	// is where endpoint and token are written for a game you start
	// yourself.
	Endpoint     string       `json:"endpoint"`
	EndpointFile string       `json:"endpointFile,omitempty"`
	Adapter      *AdapterView `json:"adapter,omitempty"`
	Game         *GameView    `json:"game,omitempty"`
	Active       *OpView      `json:"active,omitempty"`
	Presets      []string     `json:"presets,omitempty"`
	// Warnings are what the connected game warns of (game text: data).
	Warnings []string `json:"warnings,omitempty"`
}

// AdapterView is the connected adapter.
type AdapterView struct {
	Name         string   `json:"name"`
	Version      string   `json:"version,omitempty"`
	Game         string   `json:"game"`
	Build        string   `json:"build,omitempty"`
	Capabilities []string `json:"capabilities"`
	Scenarios    int      `json:"scenarios"`
}

// GameView is the launched game process.
type GameView struct {
	Command  []string `json:"command"`
	Running  bool     `json:"running"`
	PID      int      `json:"pid,omitempty"`
	Launches int      `json:"launches"`
	LastExit string   `json:"lastExit,omitempty"`
	Log      string   `json:"log"`
	LogTail  string   `json:"logTail,omitempty"` // the end of the game's output; data written by the game
}

// CaptureStatus is the capture_status tool.
func CaptureStatus(s *cappy.Service) tools.Tool {
	return tools.New[captureStatusIn, captureStatusOut](Toolset, "capture_status", "Capture status",
		"Whether the game is connected (capabilities, warnings), its process and log's end, and the running operation. Does not launch the game.",
		tools.Annotations{ReadOnly: true, Idempotent: true},
		handler(func(ctx context.Context, _ mcpgo.CallToolRequest, _ captureStatusIn) (*captureStatusOut, error) {
			out := &captureStatusOut{Endpoint: s.Controller.Endpoint(), EndpointFile: s.EndpointFile(), Warnings: warningViews(s.Controller.Warnings())}
			if a := s.Controller.Connected(); a != nil {
				out.Adapter = &AdapterView{Name: sanitize.Line(a.Name, 100), Version: sanitize.Line(a.Version, 60), Game: sanitize.Line(a.Game, 100),
					Build: sanitize.Line(a.Build, 100), Capabilities: a.Capabilities, Scenarios: len(a.Scenarios)}
			}
			if s.Launcher != nil {
				in := s.Launcher.Info()
				out.Game = &GameView{Command: in.Command, Running: in.Running, PID: in.PID, Launches: in.Starts, LastExit: sanitize.Line(in.LastExit, 200),
					Log: in.LogPath, LogTail: sanitize.Text(s.Launcher.Tail(2048), 2048)}
			}
			if op := s.Controller.Active(); op != nil {
				v, err := opView(ctx, s.Store, op.ID)
				if err == nil {
					v.Timeline = nil
					out.Active = v
				}
			}
			for name := range s.Config.Presets {
				out.Presets = append(out.Presets, name)
			}
			return out, nil
		}))
}

type listScenariosIn struct{}

type listScenariosOut struct {
	Game      string         `json:"game"`
	Scenarios []ScenarioView `json:"scenarios"`
}

// ScenarioView is one authored scenario and its parameters.
type ScenarioView struct {
	ID                   string                   `json:"id"`
	Name                 string                   `json:"name,omitempty"`
	Description          string                   `json:"description,omitempty"`
	Parameters           map[string]ParameterView `json:"parameters,omitempty"`
	RequiredCapabilities []string                 `json:"requiredCapabilities,omitempty"`
}

// ParameterView is one scenario parameter.
type ParameterView struct {
	Type        string   `json:"type"`
	Description string   `json:"description,omitempty"`
	Required    bool     `json:"required,omitempty"`
	Default     any      `json:"default,omitempty"`
	Enum        []any    `json:"enum,omitempty"`
	Minimum     *float64 `json:"minimum,omitempty"`
	Maximum     *float64 `json:"maximum,omitempty"`
}

// ListScenarios is the list_scenarios tool.
func ListScenarios(s *cappy.Service) tools.Tool {
	return tools.New[listScenariosIn, listScenariosOut](Toolset, "list_scenarios", "List scenarios",
		"The game's authored scenarios and their parameters (types, defaults, ranges). Launches the game if needed.",
		tools.Annotations{ReadOnly: true, Idempotent: true},
		handler(func(ctx context.Context, _ mcpgo.CallToolRequest, _ listScenariosIn) (*listScenariosOut, error) {
			a, err := s.EnsureAdapter(ctx)
			if err != nil {
				return nil, err
			}
			out := &listScenariosOut{Game: sanitize.Line(a.Game, 100), Scenarios: []ScenarioView{}}
			for _, sc := range a.Scenarios {
				v := ScenarioView{ID: sanitize.Line(sc.ID, 120), Name: sanitize.Line(sc.Name, 200), Description: sanitize.Text(sc.Description, 500), RequiredCapabilities: sc.RequiredCapabilities}
				if len(sc.Parameters) > 0 {
					v.Parameters = map[string]ParameterView{}
					for name, p := range sc.Parameters {
						v.Parameters[sanitize.Line(name, 80)] = ParameterView{Type: p.Type, Description: sanitize.Line(p.Description, 200), Required: p.Required,
							Default: p.Default, Enum: p.Enum, Minimum: p.Minimum, Maximum: p.Maximum}
					}
				}
				out.Scenarios = append(out.Scenarios, v)
			}
			return out, nil
		}))
}
