package proctree

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"
)

// The test binary plays the processes of a tree: PROCTREE_ROLE=root starts
// a grandchild and prints both pids; =sleeper sleeps; =owner starts a root
// as a tree, prints its line, and sleeps until killed.
func TestMain(m *testing.M) {
	switch os.Getenv("PROCTREE_ROLE") {
	case "sleeper":
		time.Sleep(time.Hour)
		os.Exit(0)
	case "root":
		g := self("sleeper")
		if err := g.Start(); err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Println(os.Getpid(), g.Process.Pid)
		time.Sleep(time.Hour)
		os.Exit(0)
	case "owner":
		cmd := self("root")
		out, _ := cmd.StdoutPipe()
		Prepare(cmd)
		if err := cmd.Start(); err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		if _, err := Attach(cmd); err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		line, _ := bufio.NewReader(out).ReadString('\n')
		fmt.Print(line)
		time.Sleep(time.Hour)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func self(role string) *exec.Cmd {
	exe, _ := os.Executable()
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), "PROCTREE_ROLE="+role)
	return cmd
}

// pids reads "ROOT GRANDCHILD" from r.
func pids(t *testing.T, r *bufio.Reader) (root, grandchild int) {
	t.Helper()
	line, err := r.ReadString('\n')
	if _, serr := fmt.Sscan(line, &root, &grandchild); err != nil || serr != nil {
		t.Fatalf("the tree's pids: %q: %v %v", line, err, serr)
	}
	return root, grandchild
}

func waitDead(t *testing.T, what string, pid int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for Alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("%s (pid %d) still runs", what, pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestKillStopsTheWholeTree: Kill stops the root and what it started.
func TestKillStopsTheWholeTree(t *testing.T) {
	cmd := self("root")
	out, _ := cmd.StdoutPipe()
	Prepare(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tree, err := Attach(cmd)
	if err != nil {
		t.Fatal(err)
	}
	defer tree.Close()
	root, grandchild := pids(t, bufio.NewReader(out))
	if root != cmd.Process.Pid || !Alive(root) || !Alive(grandchild) {
		t.Fatalf("root %d (started %d, alive %v), grandchild %d (alive %v)", root, cmd.Process.Pid, Alive(root), grandchild, Alive(grandchild))
	}
	if err := tree.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	waitDead(t, "the grandchild", grandchild)
	if err := tree.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestTreeDiesWithItsOwner: the owner of a tree killed without a word
// (SIGKILL, TerminateProcess) takes the tree's root with it, and on
// Windows (the Job Object closes) everything the root started too.
func TestTreeDiesWithItsOwner(t *testing.T) {
	if runtime.GOOS != "linux" && runtime.GOOS != "windows" {
		t.Skip("only Linux (Pdeathsig) and Windows (Job Objects) tie a child's life to its parent's")
	}
	owner := self("owner")
	out, _ := owner.StdoutPipe()
	if err := owner.Start(); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(out)
	line, _ := r.Peek(5)
	if strings.HasPrefix(string(line), "error") {
		l, _ := r.ReadString('\n')
		t.Fatal(l)
	}
	root, grandchild := pids(t, r)
	if err := owner.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	owner.Wait()
	waitDead(t, "the root", root)
	if runtime.GOOS == "windows" {
		waitDead(t, "the grandchild", grandchild)
	} else {
		KillProcess(grandchild) // Linux kills the root only; the launcher's game (godot-chroot) takes its own
	}
}

func TestAttachRefusesAnUnstartedCommand(t *testing.T) {
	if _, err := Attach(exec.Command("nothing")); err == nil {
		t.Fatal("Attach of a command never started succeeded")
	}
}
