package unitytest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/crosscode/crosscode-mcp/internal/testing/sysdeps"
)

// nunitFramework is Debian's NUnit 2.6 (libnunit-framework2.6.3-cil).
const nunitFramework = "/usr/lib/cli/nunit.framework-2.6.3/nunit.framework.dll"

// mcs compiles C# 7.2 (what both Unity and Debian's Mono accept), warnings
// as errors, into out; args are mcs's (sources, references).
func mcs(t *testing.T, m sysdeps.Mono, out string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, m.Mcs, append([]string{"-langversion:7.2", "-warnaserror", "-nologo", "-out:" + out, "-r:System.dll", "-r:System.Core.dll"}, args...)...)
	cmd.Dir = m.Repo
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("mcs: %v\n%s", err, b)
	}
}

func sources(t *testing.T, m sysdeps.Mono, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(m.Repo, filepath.FromSlash(dir), "*.cs"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no C# sources in %s: %v", dir, err)
	}
	return files
}

// TestCoreUnitTests runs the core's NUnit tests (adapters/unity/Tests/Core,
// NUnit 2.6 here, the same subset NUnit 3 runs in Unity's Test Runner)
// under Mono: JSON, the protocol's checks, replays and their SHA-256,
// frames' pacing and limits, inspect, the config's events, the input plan,
// the endpoint file, and the adapter's state machine and time through the
// core's interfaces (holding, step scheduling, input queueing, capture
// pacing, pings off the main thread).
func TestCoreUnitTests(t *testing.T) {
	t.Parallel()
	m := sysdeps.NeedMono(t)
	nunit := sysdeps.Need(t, "nunit-console")
	if _, err := os.Stat(nunitFramework); err != nil {
		t.Fatalf("NUnit 2.6 is not installed (%v): run scripts/deps", err)
	}
	dir := t.TempDir()
	dll := filepath.Join(dir, "Crosscode.Cappy.Core.Tests.dll")
	args := append([]string{"-target:library", "-r:" + nunitFramework}, sources(t, m, "adapters/unity/Runtime/Core")...)
	mcs(t, m, dll, append(args, sources(t, m, "adapters/unity/Tests/Core")...)...)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	result := filepath.Join(dir, "result.xml")
	cmd := exec.CommandContext(ctx, nunit, "-nologo", "-noshadow", "-xml="+result, dll)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TMPDIR="+dir, "HOME="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("nunit-console: %v\n%s", err, out)
	}
	b, err := os.ReadFile(result)
	if err != nil {
		t.Fatal(err)
	}
	total := regexp.MustCompile(`<test-results [^>]*total="(\d+)"[^>]*failures="(\d+)"`).FindSubmatch(b)
	if total == nil || string(total[2]) != "0" {
		t.Fatalf("NUnit: %s\n%s", total, out)
	}
	t.Logf("NUnit 2.6 under Mono: %s tests passed", total[1])
}
