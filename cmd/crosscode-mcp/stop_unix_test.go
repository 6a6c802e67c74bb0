//go:build unix

package main

import (
	"os"
	"os/exec"
	"syscall"
)

// stoppable prepares cmd so that stopGracefully can stop it (nothing to do
// here).
func stoppable(*exec.Cmd) {}

// stopGracefully asks a process to stop as a service manager would: SIGTERM.
func stopGracefully(p *os.Process) error { return p.Signal(syscall.SIGTERM) }
