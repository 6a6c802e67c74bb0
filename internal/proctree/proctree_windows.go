package proctree

import (
	"errors"
	"fmt"
	"os/exec"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

// The root starts suspended, joins the job and only then runs, so nothing
// it starts can escape the job. CREATE_NO_WINDOW: a console program (a game
// run from a script, the demo game) gets no console window of its own; its
// output goes to the log it was given.
func prepare(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.CreationFlags |= windows.CREATE_SUSPENDED | windows.CREATE_NO_WINDOW
}

var ntResumeProcess = windows.NewLazySystemDLL("ntdll.dll").NewProc("NtResumeProcess")

// sysTree is a Job Object that kills its processes when its handle closes.
// The handle is not inheritable, so only this process holds it: when this
// process ends, by Close or by dying, so does the tree.
type sysTree struct {
	mu  sync.Mutex
	job windows.Handle
}

func (t *sysTree) attach(pid int) error {
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return fmt.Errorf("create job object: %w", err)
	}
	info := windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION{}
	info.BasicLimitInformation.LimitFlags = windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		windows.CloseHandle(job)
		return fmt.Errorf("set job object limits: %w", err)
	}
	p, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE|windows.PROCESS_SUSPEND_RESUME, false, uint32(pid))
	if err != nil {
		windows.CloseHandle(job)
		return fmt.Errorf("open process %d: %w", pid, err)
	}
	defer windows.CloseHandle(p)
	if err := windows.AssignProcessToJobObject(job, p); err != nil {
		windows.CloseHandle(job)
		return fmt.Errorf("assign process %d to its job object: %w", pid, err)
	}
	if st, _, _ := ntResumeProcess.Call(uintptr(p)); st != 0 {
		windows.CloseHandle(job) // kills the suspended process
		return fmt.Errorf("resume process %d: %w", pid, windows.NTStatus(st))
	}
	t.job = job
	return nil
}

// terminate: Windows has no polite request that reaches a process without
// a console shared with us, so the tree is killed.
func (t *sysTree) terminate(pid int) error { return t.kill(pid) }

func (t *sysTree) kill(int) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.job == 0 {
		return nil
	}
	return windows.TerminateJobObject(t.job, 1)
}

func (t *sysTree) close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.job == 0 {
		return nil
	}
	err := windows.CloseHandle(t.job)
	t.job = 0
	return err
}

func alive(pid int) bool {
	p, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	if err != nil {
		return errors.Is(err, windows.ERROR_ACCESS_DENIED) // it runs, as someone we cannot see
	}
	defer windows.CloseHandle(p)
	var code uint32
	if windows.GetExitCodeProcess(p, &code) != nil {
		return false
	}
	return code == stillActive
}

// stillActive is the exit code GetExitCodeProcess reports for a process
// that runs (STILL_ACTIVE, 259).
const stillActive = 259

func groupAlive(pid int) bool { return alive(pid) }
