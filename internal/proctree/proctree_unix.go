//go:build unix

package proctree

import (
	"errors"
	"os/exec"
	"syscall"
)

func prepare(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true // the tree is the root's process group
	dieWithUs(cmd.SysProcAttr)
}

// sysTree is a process group, whose id is the root's pid.
type sysTree struct{}

func (sysTree) attach(int) error { return nil }

func (sysTree) terminate(pid int) error { return signalGroup(pid, syscall.SIGTERM) }

func (sysTree) kill(pid int) error { return signalGroup(pid, syscall.SIGKILL) }

func (sysTree) close() error { return nil }

func signalGroup(pid int, sig syscall.Signal) error {
	err := syscall.Kill(-pid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return nil // the whole group is gone already
	}
	return err
}

func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM) // EPERM: it runs, as another user
}

func groupAlive(pgid int) bool { return alive(-pgid) }
