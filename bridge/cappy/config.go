package cappy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/crosscode/crosscode-mcp/protocol"
)

// CaptureConfig is .crosscode/capture.json.
type CaptureConfig struct {
	Game                 *GameConfig                      `json:"game,omitempty"`
	Listen               string                           `json:"listen,omitempty"`
	RequiredCapabilities []string                         `json:"requiredCapabilities,omitempty"`
	Presets              map[string]protocol.Presentation `json:"presets,omitempty"`
	AllowedOrigins       []string                         `json:"allowedOrigins,omitempty"`
	Frames               *FramesConfig                    `json:"frames,omitempty"`
	// Events maps the game's own signals to events, with no game code:
	// "NODE_PATH:signal" (the path relative to the main scene's root, "."
	// for the root) to the event's name. The controller hands it to an
	// adapter that advertises protocol.CapConfigEvents (the Godot addon).
	Events map[string]string `json:"events,omitempty"`
	// Plays is the folder of the saved plays, relative to the repository
	// (default: "plays" beside the capture config, so .crosscode/plays).
	Plays string `json:"plays,omitempty"`
}

// MaxConfigEvents is the most signals a capture config's events maps.
const MaxConfigEvents = 256

// checkEvents checks the capture config's events map.
func checkEvents(events map[string]string) error {
	if len(events) > MaxConfigEvents {
		return fmt.Errorf("events: %d signals, at most %d", len(events), MaxConfigEvents)
	}
	for key, name := range events {
		i := strings.LastIndex(key, ":")
		if i <= 0 || i == len(key)-1 || len(key) > 1024 || strings.ContainsAny(key, "\x00\n\r") {
			return fmt.Errorf("events: %q is not \"NODE_PATH:signal\" (a node path relative to the main scene's root, \".\" for the root, then the signal's name), e.g. \"Player:died\"", key)
		}
		if name == "" || len(name) > 256 || strings.ContainsAny(name, "\x00\n\r") {
			return fmt.Errorf("events: %q: the event's name must be 1 to 256 bytes on one line, got %q", key, name)
		}
	}
	return nil
}

// FramesConfig is the capture config's frames section: the defaults of
// what the agent sees. Every field is optional.
type FramesConfig struct {
	// FPS is the frame rate asked of games that send frames, per second of
	// presented time (default 2; 0 asks for none unless a tool call does).
	FPS *float64 `json:"fps,omitempty"`
	// MaxWidth is the widest frame asked for (default 640).
	MaxWidth int `json:"maxWidth,omitempty"`
	// BudgetMiB is the most frame bytes one operation keeps (default 256).
	BudgetMiB int `json:"budgetMiB,omitempty"`
	// ContactSheet: a finished run_scenario or replay result carries a
	// contact sheet of its frames (default true).
	ContactSheet *bool `json:"contactSheet,omitempty"`
	// Video is when an MP4 is made: "request" (default: get_capture with
	// video), "end" (also as each operation ends), or "off".
	Video string `json:"video,omitempty"`
	// DivergenceThreshold is the picture difference (0-1) over which a
	// replay's frame differs from its recording's (default 0.02).
	DivergenceThreshold float64 `json:"divergenceThreshold,omitempty"`
	// DivergenceCellThreshold is the largest change (0-1) one small area
	// of the picture may have (a sprite drawn elsewhere) before the frame
	// differs (default 0.3).
	DivergenceCellThreshold float64 `json:"divergenceCellThreshold,omitempty"`
	// MaxSkewMs is how far apart in simulation time a replay frame and a
	// recording frame may be to be paired (default 20); paired frames at
	// different ticks are compared only when most pairs are not at the
	// same simulation time (see Service.CompareFrames).
	MaxSkewMs float64 `json:"maxSkewMs,omitempty"`
}

// Frame defaults.
const (
	DefaultFPS      = 2.0
	DefaultMaxWidth = 640
)

// FPSOrDefault is the frame rate to ask for when a call does not say.
func (f *FramesConfig) FPSOrDefault() float64 {
	if f == nil || f.FPS == nil {
		return DefaultFPS
	}
	return *f.FPS
}

// MaxWidthOrDefault is the widest frame to ask for.
func (f *FramesConfig) MaxWidthOrDefault() int {
	if f == nil || f.MaxWidth == 0 {
		return DefaultMaxWidth
	}
	return f.MaxWidth
}

// ContactSheetOrDefault says whether finished results carry a contact sheet.
func (f *FramesConfig) ContactSheetOrDefault() bool {
	return f == nil || f.ContactSheet == nil || *f.ContactSheet
}

// VideoAtEnd says whether a video is made as each operation ends.
func (f *FramesConfig) VideoAtEnd() bool { return f != nil && f.Video == "end" }

// VideoOff says whether videos are never made.
func (f *FramesConfig) VideoOff() bool { return f != nil && f.Video == "off" }

// Visual are the options of the replay's picture comparison.
func (f *FramesConfig) Visual() *VisualOptions {
	if f == nil {
		return nil
	}
	return &VisualOptions{Threshold: f.DivergenceThreshold, CellThreshold: f.DivergenceCellThreshold, MaxSkewMs: f.MaxSkewMs}
}

func (f *FramesConfig) validate() error {
	if f.FPS != nil && *f.FPS != 0 && (*f.FPS < protocol.MinFrameFPS || *f.FPS > protocol.MaxFrameFPS) {
		return fmt.Errorf("frames.fps: from %g to %g, or 0 for none by default", protocol.MinFrameFPS, float64(protocol.MaxFrameFPS))
	}
	if f.MaxWidth != 0 && (f.MaxWidth < protocol.MinFrameWidth || f.MaxWidth > protocol.MaxFrameSide) {
		return fmt.Errorf("frames.maxWidth: from %d to %d", protocol.MinFrameWidth, protocol.MaxFrameSide)
	}
	if f.BudgetMiB < 0 {
		return errors.New("frames.budgetMiB: a number of MiB, at least 1")
	}
	switch f.Video {
	case "", "request", "end", "off":
	default:
		return fmt.Errorf("frames.video: \"request\", \"end\" or \"off\", not %q", f.Video)
	}
	if f.DivergenceThreshold < 0 || f.DivergenceThreshold > 1 {
		return errors.New("frames.divergenceThreshold: from 0 to 1")
	}
	if f.DivergenceCellThreshold < 0 || f.DivergenceCellThreshold > 1 {
		return errors.New("frames.divergenceCellThreshold: from 0 to 1")
	}
	if f.MaxSkewMs < 0 {
		return errors.New("frames.maxSkewMs: at least 0")
	}
	return nil
}

// GameConfig is how to launch the game: a process (Command), or a web
// game (URL and/or Serve) that a browser opens, after Command (a dev
// server) when both are given.
type GameConfig struct {
	Command []string          `json:"command,omitempty"`
	Cwd     string            `json:"cwd,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	// URL is a web game's page: a loopback http(s) URL, or a path (with
	// query) under Serve's root.
	URL string `json:"url,omitempty"`
	// Serve is a directory (relative to Cwd, itself relative to the
	// repository) that crosscode-mcp serves on a loopback port.
	Serve string `json:"serve,omitempty"`
	// Browser is the browser to launch (default: the first of Browsers on PATH).
	Browser string `json:"browser,omitempty"`
	// Headed shows the browser's window (default headless).
	Headed bool `json:"headed,omitempty"`
	// Adapter is who drives a web game: "page" (crosscode-mcp drives the
	// page itself, on virtual time: no adapter code in the game) or "auto"
	// (the default: the page's own adapter when one says hello within 5 s
	// of the load, else the page driver).
	Adapter string `json:"adapter,omitempty"`
	// Actions are the keys (by KeyboardEvent.code) and "pointer" that the
	// page driver offers the agent for a web game it drives; absent: every
	// key and the pointer.
	Actions []string `json:"actions,omitempty"`
}

// Who drives a web game (GameConfig.Adapter).
const (
	AdapterAuto = "auto"
	AdapterPage = "page"
)

// AdapterMode is the game's adapter setting with its default.
func (g *GameConfig) AdapterMode() string {
	if g == nil || g.Adapter == "" {
		return AdapterAuto
	}
	return g.Adapter
}

// Web reports whether the game is a web game a browser opens.
func (g *GameConfig) Web() bool { return g != nil && (g.URL != "" || g.Serve != "") }

// LoadConfig reads a capture config strictly; a missing file at an
// optional path is an empty config.
func LoadConfig(path string, optional bool) (*CaptureConfig, error) {
	cfg := &CaptureConfig{}
	if path == "" {
		return cfg, nil
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) && optional {
		return cfg, nil
	}
	if err != nil {
		return nil, fmt.Errorf("capture config: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(cfg); err != nil {
		return nil, fmt.Errorf("capture config %s: %w", path, err)
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("capture config %s: %w", path, err)
	}
	return cfg, nil
}

// Validate checks the config's values.
func (c *CaptureConfig) Validate() error {
	if g := c.Game; g != nil {
		switch {
		case !g.Web() && len(g.Command) == 0:
			return errors.New("game.command: give the program and its arguments, e.g. [\"godot\", \"--path\", \".\"]; for a web game, game.url or game.serve")
		case !g.Web() && (g.Browser != "" || g.Headed || g.Adapter != "" || g.Actions != nil):
			return errors.New("game.browser, game.headed, game.adapter and game.actions are for a web game: give game.url or game.serve")
		case g.Adapter != "" && g.Adapter != AdapterAuto && g.Adapter != AdapterPage:
			return fmt.Errorf("game.adapter: %q (crosscode-mcp drives the page itself) or %q (the page's own adapter if it has one, else the page driver), not %q", AdapterPage, AdapterAuto, g.Adapter)
		case g.Web() && g.Serve == "" && len(g.Command) == 0 && g.URL != "" && !strings.Contains(g.URL, "://"):
			return fmt.Errorf("game.url %q: a path needs game.serve; otherwise give the full http:// URL", g.URL)
		case g.Web() && CheckPageActions(g.Actions) != nil:
			return CheckPageActions(g.Actions)
		case g.Web():
			base := ""
			if g.Serve != "" {
				base = "http://127.0.0.1/"
			}
			if _, err := resolvePage(base, g.URL); err != nil {
				return err
			}
		}
	}
	if c.Listen != "" {
		if err := checkLoopback(c.Listen); err != nil {
			return fmt.Errorf("listen: %w", err)
		}
	}
	if c.Frames != nil {
		if err := c.Frames.validate(); err != nil {
			return err
		}
	}
	if err := checkEvents(c.Events); err != nil {
		return err
	}
	if c.Plays != "" && !filepath.IsLocal(filepath.FromSlash(c.Plays)) {
		return fmt.Errorf("plays: %q must be a folder inside the repository, given relative to it (e.g. \"tests/plays\")", c.Plays)
	}
	for name, p := range c.Presets {
		// The values only: capabilities are the adapter's, checked at Start.
		if err := p.Check(nil); err != nil {
			var f *protocol.CappyFailure
			if errors.As(err, &f) {
				return fmt.Errorf("presets.%s: %s", name, f.Message)
			}
			return fmt.Errorf("presets.%s: %w", name, err)
		}
	}
	return nil
}
