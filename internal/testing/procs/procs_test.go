package procs

import (
	"os"
	"os/exec"
	"runtime"
	"slices"
	"testing"
)

// TestParse: the fields after a comm that holds spaces and parentheses.
func TestParse(t *testing.T) {
	p, err := parse(42, "42 (a (b) c) S 7 40 40 0 -1 4194304 100 0 0 0 250 31 0 0 20 0 1 0 5 0 0")
	if err != nil {
		t.Fatal(err)
	}
	if want := (Proc{PID: 42, PPID: 7, PGID: 40, Comm: "a (b) c", State: "S", Ticks: 281}); p != want {
		t.Fatalf("%+v, want %+v", p, want)
	}
	if _, err := parse(1, "1 (x) S 0"); err == nil {
		t.Fatal("a short line parsed")
	}
}

// TestThisProcessAndItsChild: a child started here is among this
// process's descendants, alive, with this process as its parent; once
// waited for, it is gone.
func TestThisProcessAndItsChild(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc is Linux's")
	}
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	child := cmd.Process.Pid
	all := All()
	if p := all[child]; p.PPID != os.Getpid() || !Alive(child) {
		t.Fatalf("the child: %+v", p)
	}
	if !slices.Contains(Descendants(all, os.Getpid()), child) {
		t.Fatalf("the child %d is not among this process's descendants %v", child, Descendants(all, os.Getpid()))
	}
	if me, err := Stat(os.Getpid()); err != nil || me.State != "R" || me.PID != os.Getpid() {
		t.Fatalf("this process: %+v %v", me, err)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if Alive(child) {
		t.Fatal("the child is alive after its wait")
	}
}
