// Package proctree starts a program as the root of a process tree that is
// stopped as one: the program and every process it starts. On Windows the
// tree is a Job Object that kills what is left in it when its last handle
// closes, so the tree also dies with this process, however it ends; on
// Linux and macOS it is a process group (and on Linux the root gets SIGKILL
// when this process dies, even by kill -9).
//
//	cmd := exec.Command(...)
//	proctree.Prepare(cmd)
//	if err := cmd.Start(); err != nil { ... }
//	tree, err := proctree.Attach(cmd) // on error the process was killed
//	...
//	tree.Terminate() // politely where the OS has a way; Kill after a grace
//	cmd.Wait()
//	tree.Close()
package proctree

import (
	"fmt"
	"os"
	"os/exec"
)

// Tree is a started program and the processes it starts.
type Tree struct {
	pid int
	sys sysTree
}

// Prepare sets cmd up, before Start, to be the root of a tree.
func Prepare(cmd *exec.Cmd) { prepare(cmd) }

// Attach makes the tree of cmd, just started after Prepare. If it fails,
// it kills the process (it never runs outside its tree) and says why.
func Attach(cmd *exec.Cmd) (*Tree, error) {
	if cmd.Process == nil {
		return nil, fmt.Errorf("proctree: %s was not started", cmd.Path)
	}
	t := &Tree{pid: cmd.Process.Pid}
	if err := t.sys.attach(t.pid); err != nil {
		cmd.Process.Kill()
		return nil, fmt.Errorf("proctree: %w", err)
	}
	return t, nil
}

// Terminate asks every process of the tree to stop (SIGTERM to the group);
// where the OS has no such request (Windows), it is Kill.
func (t *Tree) Terminate() error { return t.sys.terminate(t.pid) }

// Kill stops every process of the tree at once.
func (t *Tree) Kill() error { return t.sys.kill(t.pid) }

// Close releases the tree; on Windows, whatever of it still runs is
// killed. Call it once the root has been waited for.
func (t *Tree) Close() error { return t.sys.close() }

// Alive reports whether a process with id pid runs (on Unix, a zombie not
// yet waited for counts as running).
func Alive(pid int) bool { return alive(pid) }

// GroupAlive reports whether any process of the tree whose root had id pid
// runs. On Windows, where a tree is known by its Job Object and not by an
// id, it is Alive(pid).
func GroupAlive(pid int) bool { return groupAlive(pid) }

// KillProcess kills the one process with id pid (not its tree).
func KillProcess(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Kill()
}
