package bench

import (
	"testing"
	"time"

	"github.com/crosscode/crosscode-mcp/internal/testing/capturebench"
	"github.com/crosscode/crosscode-mcp/internal/testing/procs"
)

// BenchmarkGodotHeld: what a Godot game held between an agent's steps
// costs the machine, and what it costs the agent's next step. The game is
// the Godot example rendering under Xvfb (Mesa's software renderer); in
// each iteration it is held 5 s after a step, and the CPU time of its
// launch (Godot and its Xvfb: every process under the server) over those
// 5 s is read from /proc; then a step of 0 ms (apply and look, one
// picture) is timed. The floor, after the iterations, from the same
// launch: the CPU time of a step of 1 s (the game playing, flat out), and
// a step of 0 ms right behind it (no idle before).
func BenchmarkGodotHeld(b *testing.B) {
	repo, env := godotArena(b)
	useGame(b, repo, map[string]any{"game": map[string]any{"command": godotCommand}}, env)
	a := startStdio(b, repo, "--data", b.TempDir())
	a.call(b, "start_recording", map[string]any{"control": "agent"})
	a.call(b, "step_game", map[string]any{"ms": 500})
	server := a.cmd.Process.Pid
	// held and play are CPU time per second of wall time: a core's share.
	var held, steps, play, busySteps []time.Duration
	b.ResetTimer()
	for range b.N {
		c0 := treeCPU(server)
		time.Sleep(5 * time.Second)
		held = append(held, (treeCPU(server)-c0)/5)
		t0 := time.Now()
		a.call(b, "step_game", map[string]any{"ms": 0})
		steps = append(steps, time.Since(t0))
	}
	b.StopTimer()
	for range 3 {
		c0, t0 := treeCPU(server), time.Now()
		a.call(b, "step_game", map[string]any{"ms": 1000})
		play = append(play, time.Duration(float64(treeCPU(server)-c0)/time.Since(t0).Seconds()))
		t1 := time.Now()
		a.call(b, "step_game", map[string]any{"ms": 0})
		busySteps = append(busySteps, time.Since(t1))
	}
	share := func(d []time.Duration) float64 { return capturebench.Median(d).Seconds() * 100 }
	b.ReportMetric(share(held), "held-cpu-%")
	b.ReportMetric(ms(capturebench.Median(steps)), "step0-after-idle-ms")
	b.ReportMetric(share(play), "playing-cpu-%")
	b.ReportMetric(ms(capturebench.Median(busySteps)), "step0-busy-ms")
}

// treeCPU is the CPU time every process under root has used so far.
func treeCPU(root int) time.Duration {
	all := procs.All()
	var ticks int64
	for _, pid := range procs.Descendants(all, root) {
		ticks += all[pid].Ticks
	}
	return time.Duration(ticks) * 10 * time.Millisecond // a clock tick is 1/100 s
}
