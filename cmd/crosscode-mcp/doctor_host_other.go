//go:build !linux

package main

// hostForGodot is what this machine offers a Godot game: a desktop
// (Windows, macOS) has a display and a sound device.
func hostForGodot() godotHost { return godotHost{display: true, audio: true} }
