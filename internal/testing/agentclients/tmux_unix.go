//go:build unix

package agentclients

import "syscall"

// killGroup kills the process group whose leader is pid.
func killGroup(pid int) { syscall.Kill(-pid, syscall.SIGKILL) }
