package sysdeps

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// Mono is Debian's Mono (mono-mcs, mono-runtime, NUnit 2.6) that
// scripts/deps installs: the C# core of the Unity package
// (adapters/unity/Runtime/Core) and the example game built on it
// (examples/csharp-arena) compile with its mcs and run under its mono.
type Mono struct {
	// Repo is the repository's root.
	Repo string
	// Mcs and Mono are the compiler and the runtime.
	Mcs, Mono string
}

// NeedMono returns Mono, or fails t with how to install it.
func NeedMono(t testing.TB) Mono {
	t.Helper()
	repo, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return Mono{Repo: repo, Mcs: Need(t, "mcs"), Mono: Need(t, "mono")}
}

// Arena copies examples/csharp-arena and the core it is built from
// (adapters/unity/Runtime/Core) into repo at the same paths, builds it with
// its build.sh, and returns the example's folder. The copy leaves out a
// build of the checkout (bin/).
func (m Mono) Arena(t testing.TB, repo string) string {
	t.Helper()
	dir := m.CopyArena(t, repo)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "build.sh")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("examples/csharp-arena/build.sh: %v\n%s", err, out)
	}
	return dir
}

// CopyArena copies examples/csharp-arena and the core it is built from
// into repo at the same paths (less a build of the checkout) and returns
// the example's folder, unbuilt.
func (m Mono) CopyArena(t testing.TB, repo string) string {
	t.Helper()
	for _, rel := range []string{"examples/csharp-arena", "adapters/unity/Runtime/Core"} {
		if err := copyTree(filepath.Join(m.Repo, rel), filepath.Join(repo, filepath.FromSlash(rel)), "bin", "obj"); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(repo, "examples", "csharp-arena")
}
