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
		if v, ok := p["timeScale"]; ok {
			if f, isNum := v.(float64); !isNum || f < 0.1 || f > 4 {
				return fmt.Errorf("presets.%s.timeScale: a number from 0.1 to 4", name)
			}
		}
		if v, ok := p["camera"]; ok {
			if s, isStr := v.(string); !isStr || s == "" {
				return fmt.Errorf("presets.%s.camera: a camera name", name)
			}
		}
	}
	return nil
}
