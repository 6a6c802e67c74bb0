package agentclients

import "github.com/crosscode/crosscode-mcp/internal/proctree"

// killGroup kills the process pid (tmux runs nowhere on Windows: the
// tests that use it are skipped there).
func killGroup(pid int) { proctree.KillProcess(pid) }
