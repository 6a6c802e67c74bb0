//go:build !linux

package cappy

// killLeftovers does nothing here: there is no /proc to find a browser's
// helpers by their command line (on Linux, under load, they outlived it).
func killLeftovers(string) {}
