//go:build linux

package bench

import (
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crosscode/crosscode-mcp/internal/testing/sysdeps"
)

// BenchmarkGodotHeld: what a Godot game held between an agent's steps
// costs the machine, and what it costs the agent's next step. The game is
// the Godot example rendering under Xvfb (Mesa's software renderer); in
// each iteration it is held 5 s after a step, and the CPU time of its
// launch (Godot and its Xvfb, every process under the server) is read
// from /proc over those 5 s; then a step of 0 ms (apply and look, one
// picture) is timed. Beside them, the floor in the same iterations: the
// same game playing (a 2 s step at real-time pace is not what an agent
// does, so the floor is a step of 1 s, flat out, timed the same way, and
// the CPU time of 1 s of the game running on its own, as a player sees it,
// measured by a freeform recording).
func BenchmarkGodotHeld(b *testing.B) {
	g := sysdeps.NeedGodot(b)
	repo := benchRepo(b)
	g.Project(b, "examples/godot-arena", repo)
	bin := b.TempDir()
	script := "#!/bin/sh\nexec '" + g.Launcher + "' --xvfb \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "godot"), []byte(script), 0o755); err != nil {
		b.Fatal(err)
	}
	os.MkdirAll(filepath.Join(repo, ".crosscode"), 0o755)
	cfg := `{"game": {"command": ["godot", "--fixed-fps", "60", "--audio-driver", "Dummy", "--path", "."]}}`
	if err := os.WriteFile(filepath.Join(repo, ".crosscode", "capture.json"), []byte(cfg), 0o644); err != nil {
		b.Fatal(err)
	}
	b.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	b.Setenv("CROSSCODE_GODOT_TREE", g.Tree)
	a := startStdio(b, repo, "--data", b.TempDir())
	a.call(b, "start_recording", map[string]any{"control": "agent"})
	a.call(b, "step_game", map[string]any{"ms": 500})
	server := a.cmd.Process.Pid
	var held, steps []float64
	b.ResetTimer()
	for range b.N {
		c0 := treeTicks(b, server)
		time.Sleep(5 * time.Second)
		held = append(held, float64(treeTicks(b, server)-c0)/5) // ticks a second: % of a core
		t0 := time.Now()
		a.call(b, "step_game", map[string]any{"ms": 0})
		steps = append(steps, ms(time.Since(t0)))
	}
	b.StopTimer()
	median := func(v []float64) float64 {
		s := append([]float64(nil), v...)
		sort.Float64s(s)
		return s[len(s)/2]
	}
	b.ReportMetric(median(held), "held-cpu-%")
	b.ReportMetric(median(steps), "step0-after-idle-ms")
	// The floor: the same launch playing, one step of 1 s flat out, and
	// the step of 0 ms right behind it (the game had no idle time).
	var play, busySteps []float64
	for range 3 {
		c0 := treeTicks(b, server)
		t0 := time.Now()
		a.call(b, "step_game", map[string]any{"ms": 1000})
		play = append(play, float64(treeTicks(b, server)-c0)/time.Since(t0).Seconds())
		t1 := time.Now()
		a.call(b, "step_game", map[string]any{"ms": 0})
		busySteps = append(busySteps, ms(time.Since(t1)))
	}
	b.ReportMetric(median(play), "playing-cpu-%")
	b.ReportMetric(median(busySteps), "step0-busy-ms")
}

// treeTicks is the CPU time (user and system, in clock ticks of 10 ms) of
// every process under root, and root's, as /proc says now.
func treeTicks(b *testing.B, root int) int64 {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		b.Fatal(err)
	}
	parent := map[int]int{}
	ticks := map[int]int64{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // gone meanwhile
		}
		// After the command's ")": state, ppid, ... utime (14th field), stime (15th).
		f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+1:]))
		if len(f) < 13 {
			continue
		}
		parent[pid], _ = strconv.Atoi(f[1])
		u, _ := strconv.ParseInt(f[11], 10, 64)
		s, _ := strconv.ParseInt(f[12], 10, 64)
		ticks[pid] = u + s
	}
	var sum int64
	for pid, t := range ticks {
		for p := pid; p > 1; p = parent[p] {
			if p == root {
				sum += t
				break
			}
		}
	}
	return sum
}
