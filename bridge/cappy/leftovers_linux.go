package cappy

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
	"time"
)

// killLeftovers kills what is left of a browser that ran with profile as
// its user data dir. Chromium's helpers (the network service, the zygote
// and its renderers) can outlive the main process by seconds when it is
// killed, and the network service flushes its disk cache index into the
// profile after the profile was removed (seen under load: a test's temp
// dir held profile/Default/Cache/.../the-real-index after its cleanup).
// Chromium passes --user-data-dir to every helper, and each launch's
// profile is its own, so the command line finds them without a process
// group; a helper can fork as the main process dies, so it looks again
// until a few passes in a row find nothing.
func killLeftovers(profile string) {
	const (
		quietPasses = 3
		pause       = 10 * time.Millisecond
		limit       = 2 * time.Second
	)
	want := []byte("--user-data-dir=" + profile)
	deadline := time.Now().Add(limit)
	for quiet := 0; quiet < quietPasses && time.Now().Before(deadline); time.Sleep(pause) {
		if killProcessesWith(want) == 0 {
			quiet++
		} else {
			quiet = 0
		}
	}
}

// killProcessesWith kills the processes (but this one) that have arg in
// their command line, and returns how many it found.
func killProcessesWith(arg []byte) int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	self := os.Getpid()
	n := 0
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		for a := range bytes.SplitSeq(cmdline, []byte{0}) {
			if bytes.Equal(a, arg) {
				syscall.Kill(pid, syscall.SIGKILL)
				n++
				break
			}
		}
	}
	return n
}
