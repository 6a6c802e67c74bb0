package bench

import (
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/crosscode/crosscode-mcp/internal/testing/npmtest"
)

// BenchmarkNpxStart: from starting the process to the answer of
// initialize, for the three ways an MCP config can start the server, in
// turn within each iteration (so they share the machine's load): the bare
// binary; the npm launcher (node_modules/.bin/crosscode-mcp, node running
// bin/crosscode-mcp.js, which spawns the binary); and
// `npx --no-install crosscode-mcp` (npm's CLI, a shell, the launcher, the
// binary), in a project where scripts/npm's tarballs were installed
// offline (internal/testing/npmtest). The server is the same stamped binary in all
// three, local mode, its database already created.
func BenchmarkNpxStart(b *testing.B) {
	p := npmtest.Pack(b)
	proj := p.Install(b, true)
	ways := []struct {
		name string
		cmd  func() *exec.Cmd
	}{
		{"binary", func() *exec.Cmd { return p.Command(proj, p.Binary) }},
		{"launcher", func() *exec.Cmd { return p.Command(proj, filepath.Join(proj, "node_modules", ".bin", "crosscode-mcp")) }},
		{"npx", func() *exec.Cmd { return p.Command(proj, "npx", "--no-install", "crosscode-mcp") }},
	}
	once := func(cmd *exec.Cmd) time.Duration {
		start := time.Now()
		s, err := npmtest.Start(cmd)
		if err != nil {
			b.Fatal(err)
		}
		res, err := s.Initialize(time.Minute)
		d := time.Since(start)
		if err != nil || npmtest.ServerName(res) != "crosscode-mcp" {
			b.Fatalf("%s: %v %v", cmd, err, res)
		}
		s.CloseStdin()
		if st, err := s.Wait(time.Minute); err != nil || st.ExitCode() != 0 {
			b.Fatalf("%s: %v %v\n%s", cmd, err, st, s.Stderr())
		}
		return d
	}
	for _, w := range ways {
		once(w.cmd()) // the first start creates the database; warms the page cache
	}
	lat := make([][]time.Duration, len(ways))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j, w := range ways {
			lat[j] = append(lat[j], once(w.cmd()))
		}
	}
	b.StopTimer()
	for j, w := range ways {
		b.ReportMetric(ms(percentile(lat[j], 0.5)), w.name+"-p50-ms")
		b.ReportMetric(ms(percentile(lat[j], 0.99)), w.name+"-p99-ms")
	}
	bare := ms(percentile(lat[0], 0.5))
	b.ReportMetric(ms(percentile(lat[1], 0.5))-bare, "launcher-over-binary-p50-ms")
	b.ReportMetric(ms(percentile(lat[2], 0.5))-bare, "npx-over-binary-p50-ms")
}
