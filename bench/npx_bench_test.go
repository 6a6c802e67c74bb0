package bench

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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
	ways := []startWay{
		{"binary", func() *exec.Cmd { return p.Command(proj, p.Binary) }},
		{"launcher", func() *exec.Cmd { return p.Command(proj, filepath.Join(proj, "node_modules", ".bin", "crosscode-mcp")) }},
		{"npx", func() *exec.Cmd { return p.Command(proj, "npx", "--no-install", "crosscode-mcp") }},
	}
	lat := startTimes(b, ways)
	bare := ms(percentile(lat[0], 0.5))
	b.ReportMetric(ms(percentile(lat[1], 0.5))-bare, "launcher-over-binary-p50-ms")
	b.ReportMetric(ms(percentile(lat[2], 0.5))-bare, "npx-over-binary-p50-ms")
}

// BenchmarkPackageServerStart: from starting the process to the answer of
// initialize, the packages' MCP server entry (plugins/crosscode/.mcp.json:
// node -e, its script) as a client runs it, in the environment Codex gives
// a server, in turn within each iteration: with the binary recorded, which
// it starts directly; with none anywhere, when it runs
// `npx -y crosscode-mcp` (offline, the package installed in the project:
// no registry, no download). Beside the floors in the same iterations:
// the bare binary, and Node's own start (`node -e 0`, to its exit).
func BenchmarkPackageServerStart(b *testing.B) {
	p := npmtest.Pack(b)
	proj := p.Install(b, true)
	entry := npmtest.PackageEntry(b)
	// No crosscode-mcp on PATH; each way its own user cache folder: one
	// with the record, one without (the server records itself: removed
	// after each start).
	var path []string
	for _, d := range filepath.SplitList(os.Getenv("PATH")) {
		if _, err := os.Stat(filepath.Join(d, "crosscode-mcp")); err != nil {
			path = append(path, d)
		}
	}
	recorded, none := b.TempDir(), b.TempDir()
	if err := os.MkdirAll(filepath.Join(recorded, "crosscode-mcp"), 0o700); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(recorded, "crosscode-mcp", "binary"), []byte(p.Binary+"\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	pkg := func(cache string) func() *exec.Cmd {
		return func() *exec.Cmd {
			os.RemoveAll(filepath.Join(none, "crosscode-mcp"))
			cmd := p.Command(proj, entry.Command, entry.Args...)
			cmd.Env = append(cmd.Env, "PATH="+strings.Join(path, string(os.PathListSeparator)), "XDG_CACHE_HOME="+cache)
			for k, v := range entry.Env {
				cmd.Env = append(cmd.Env, k+"="+v)
			}
			return cmd
		}
	}
	ways := []startWay{
		{"binary", func() *exec.Cmd { return p.Command(proj, p.Binary) }},
		{"package-direct", pkg(recorded)},
		{"package-npx", pkg(none)},
	}
	var node []time.Duration
	lat := startTimes(b, ways, func() {
		start := time.Now()
		if out, err := exec.Command("node", "-e", "0").CombinedOutput(); err != nil {
			b.Fatalf("node -e 0: %v %s", err, out)
		}
		node = append(node, time.Since(start))
	})
	b.ReportMetric(ms(percentile(node, 0.5)), "node-e-0-p50-ms")
	bare := ms(percentile(lat[0], 0.5))
	b.ReportMetric(ms(percentile(lat[1], 0.5))-bare, "direct-over-binary-p50-ms")
	b.ReportMetric(ms(percentile(lat[2], 0.5))-bare, "npx-over-binary-p50-ms")
}

// startWay is a way to start the server: a fresh command each time.
type startWay struct {
	name string
	cmd  func() *exec.Cmd
}

// startTimes starts each way in turn within every iteration (after one
// start of each: the first creates the database and warms the page cache)
// and returns each one's times from the process's start to the answer of
// initialize, reporting their p50 and p99; also, in each iteration after
// the ways, runs each of also.
func startTimes(b *testing.B, ways []startWay, also ...func()) [][]time.Duration {
	once := func(cmd *exec.Cmd) time.Duration {
		start := time.Now()
		s, err := npmtest.Start(cmd)
		if err != nil {
			b.Fatal(err)
		}
		res, err := s.Initialize(time.Minute)
		d := time.Since(start)
		if err != nil || npmtest.ServerName(res) != "crosscode-mcp" {
			b.Fatalf("%s: %v %v\n%s", cmd, err, res, s.Stderr())
		}
		s.CloseStdin()
		if st, err := s.Wait(time.Minute); err != nil || st.ExitCode() != 0 {
			b.Fatalf("%s: %v %v\n%s", cmd, err, st, s.Stderr())
		}
		return d
	}
	for _, w := range ways {
		once(w.cmd())
	}
	lat := make([][]time.Duration, len(ways))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j, w := range ways {
			lat[j] = append(lat[j], once(w.cmd()))
		}
		for _, f := range also {
			f()
		}
	}
	b.StopTimer()
	for j, w := range ways {
		b.ReportMetric(ms(percentile(lat[j], 0.5)), w.name+"-p50-ms")
		b.ReportMetric(ms(percentile(lat[j], 0.99)), w.name+"-p99-ms")
	}
	return lat
}
