// Package godot holds the Cappy addon for Godot 4 (addons/cappy: GDScript,
// what a game enables), embedded so that crosscode-mcp can write it into a
// project (crosscode-mcp godot install-addon) wherever it was installed
// from, npm included. Its tests run it in the real engine.
package godot

import "embed"

// Addon is the addon's folder: addons/cappy and its files.
//
//go:embed addons/cappy
var Addon embed.FS

// AddonDir is the addon's folder in Addon, and in a project.
const AddonDir = "addons/cappy"
