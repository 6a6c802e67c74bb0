//go:build unix

package main

import (
	"os"
	"os/exec"
	"syscall"
)

// killedExitCode is the exit code os.ProcessState reports for a killed
// process (killed by a signal: -1).
const killedExitCode = -1

// stoppable prepares cmd so that stopGracefully can stop it (nothing to do
// here).
func stoppable(*exec.Cmd) {}

// stopGracefully asks a process to stop as a service manager would: SIGTERM.
func stopGracefully(p *os.Process) error { return p.Signal(syscall.SIGTERM) }
