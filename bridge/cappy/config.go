package cappy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"

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

// GameConfig is how to launch the game.
type GameConfig struct {
	Command []string          `json:"command"`
	Cwd     string            `json:"cwd,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
}

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
	if c.Game != nil && len(c.Game.Command) == 0 {
		return errors.New("game.command: give the program and its arguments, e.g. [\"godot\", \"--path\", \".\"]")
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
