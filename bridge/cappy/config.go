package cappy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
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
		case !g.Web() && (g.Browser != "" || g.Headed):
			return errors.New("game.browser and game.headed are for a web game: give game.url or game.serve")
		case g.Web() && g.Serve == "" && len(g.Command) == 0 && g.URL != "" && !strings.Contains(g.URL, "://"):
			return fmt.Errorf("game.url %q: a path needs game.serve; otherwise give the full http:// URL", g.URL)
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
