package main

import (
	"os"
	"path/filepath"
	"strings"
)

// hostForGodot is what this machine offers a Godot game: a display
// ($DISPLAY or $WAYLAND_DISPLAY) and a sound device (an ALSA card, or a
// PulseAudio or PipeWire server).
func hostForGodot() godotHost {
	h := godotHost{display: os.Getenv("DISPLAY") != "" || os.Getenv("WAYLAND_DISPLAY") != ""}
	if cards, _ := filepath.Glob("/dev/snd/pcm*"); len(cards) > 0 || os.Getenv("PULSE_SERVER") != "" {
		h.audio = true
		return h
	}
	if run := os.Getenv("XDG_RUNTIME_DIR"); run != "" {
		for _, sock := range []string{"pulse/native", "pipewire-0"} {
			if _, err := os.Stat(filepath.Join(run, sock)); err == nil {
				h.audio = true
				return h
			}
		}
	}
	h.audioWhy = strings.Join([]string{"no sound card in /dev/snd", "no PulseAudio or PipeWire server"}, ", ")
	return h
}
