package proctree

import "syscall"

// dieWithUs makes the launched game get SIGKILL when this process dies,
// even by kill -9, when Stop never runs: no game outlives its server.
func dieWithUs(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
