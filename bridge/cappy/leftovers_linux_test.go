package cappy

import (
	"errors"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// A helper left by a browser whose profile this was is killed; one of
// another profile (a second launch beside it) is not.
func TestKillLeftovers(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep")
	}
	dir := t.TempDir()
	helper := func(profile string) *exec.Cmd {
		// argv[0] is free: the flag stands in it as a Chromium helper's does among its arguments.
		cmd := &exec.Cmd{Path: sleep, Args: []string{"--user-data-dir=" + profile, "60"}}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd
	}
	ours := helper(filepath.Join(dir, "a", "profile"))
	other := helper(filepath.Join(dir, "b", "profile"))
	prefix := helper(filepath.Join(dir, "a", "profile2")) // not the same dir, though its name starts like it

	killLeftovers(filepath.Join(dir, "a", "profile"))

	done := make(chan error, 1)
	go func() { done <- ours.Wait() }()
	select {
	case err := <-done:
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("the profile's helper ended with %v, not killed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the profile's helper still runs")
	}
	for _, c := range []*exec.Cmd{other, prefix} {
		if err := c.Process.Signal(syscall.Signal(0)); err != nil {
			t.Fatalf("%s was killed too: %v", c.Args[0], err)
		}
	}
}
