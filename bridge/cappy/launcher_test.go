package cappy

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// Concurrent Starts launch the game once: the others find it running.
// Checking and launching in separate critical sections let two of them
// launch now and then; many rounds make that show.
func TestLauncherConcurrentStartsLaunchOnce(t *testing.T) {
	const rounds, n = 200, 16
	dir := t.TempDir()
	for r := range rounds {
		// The test binary as a game that sleeps (TestMain).
		l := &Launcher{Command: []string{os.Args[0]}, Env: map[string]string{"CAPPY_TEST_GAME": "sleep"}, LogPath: filepath.Join(dir, "game.log")}
		var wg sync.WaitGroup
		ready := make(chan struct{})
		errs := make(chan error, n)
		for range n {
			wg.Go(func() {
				<-ready
				errs <- l.Start("ws://127.0.0.1:1", "token")
			})
		}
		close(ready)
		wg.Wait()
		in := l.Info()
		l.Stop(time.Second)
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		if in.Starts != 1 || !in.Running || in.PID == 0 {
			t.Fatalf("round %d: after %d concurrent Starts: %+v, want one running launch", r, n, in)
		}
		if l.Running() {
			t.Fatalf("round %d: running after Stop", r)
		}
	}
}
