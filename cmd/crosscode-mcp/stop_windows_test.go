package main

import (
	"os"
	"os/exec"
	"sync"
	"syscall"

	"golang.org/x/sys/windows"
)

// killedExitCode is the exit code os.ProcessState reports for a killed
// process (Process.Kill is TerminateProcess with exit code 1).
const killedExitCode = 1

// console is made once: Ctrl+Break travels through a console the test and
// its children share (go test gives the test none).
var console = sync.OnceValue(func() error {
	k := windows.NewLazySystemDLL("kernel32.dll")
	if w, _, _ := k.NewProc("GetConsoleWindow").Call(); w != 0 {
		return nil
	}
	if ok, _, err := k.NewProc("AllocConsole").Call(); ok == 0 {
		return err
	}
	return nil
})

// stoppable starts cmd in a process group of its own, so that
// stopGracefully's Ctrl+Break reaches it and not the test.
func stoppable(cmd *exec.Cmd) {
	console()
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.CreationFlags |= windows.CREATE_NEW_PROCESS_GROUP
}

// stopGracefully asks a process to stop as a console would: Ctrl+Break,
// which Go delivers as os.Interrupt (Windows has no SIGTERM to send).
func stopGracefully(p *os.Process) error {
	return windows.GenerateConsoleCtrlEvent(windows.CTRL_BREAK_EVENT, uint32(p.Pid))
}
