package unitytest

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/crosscode/crosscode-mcp/internal/testing/sysdeps"
)

// TestUnityLayerCompiles compiles the package as Unity builds it, one
// assembly per folder, with Mono's mcs (the C# 7.2 both accept) against
// reference declarations of the UnityEngine, Input System and UnityEditor
// members it uses (stubs/): the core alone (no engine), the Unity layer
// with the Input System 1.8 (project-wide actions), 1.7, and none at all
// (a project on the old Input Manager), the Editor folder, and the sample.
func TestUnityLayerCompiles(t *testing.T) {
	t.Parallel()
	m := sysdeps.NeedMono(t)
	dir := t.TempDir()
	out := func(name string) string { return filepath.Join(dir, name+".dll") }
	stub := func(name string) string { return filepath.Join(m.Repo, "adapters", "unitytest", "stubs", name+".cs") }
	mcs(t, m, out("UnityEngine"), "-target:library", stub("UnityEngine"))
	mcs(t, m, out("Unity.InputSystem"), "-target:library", "-r:"+out("UnityEngine"), stub("InputSystem"))
	mcs(t, m, out("UnityEditor"), "-target:library", "-r:"+out("UnityEngine"), stub("UnityEditor"))
	mcs(t, m, out("Crosscode.Cappy.Core"), append([]string{"-target:library"}, sources(t, m, "adapters/unity/Runtime/Core")...)...)

	layer := sources(t, m, "adapters/unity/Runtime/Unity")
	for _, v := range []struct {
		name    string
		defines []string
	}{
		{"input-system-1.8", []string{"CAPPY_INPUT_SYSTEM", "ENABLE_INPUT_SYSTEM", "CAPPY_PROJECT_WIDE_ACTIONS"}},
		{"input-system-1.7", []string{"CAPPY_INPUT_SYSTEM", "ENABLE_INPUT_SYSTEM"}},
		{"input-manager", nil},
	} {
		args := []string{"-target:library", "-r:" + out("Crosscode.Cappy.Core"), "-r:" + out("UnityEngine")}
		if v.defines != nil {
			args = append(args, "-r:"+out("Unity.InputSystem"), "-define:"+strings.Join(v.defines, ";"))
		}
		if err := os.MkdirAll(filepath.Join(dir, v.name), 0o755); err != nil {
			t.Fatal(err)
		}
		mcs(t, m, filepath.Join(dir, v.name, "Crosscode.Cappy.dll"), append(args, layer...)...)
	}
	layerDll := filepath.Join(dir, "input-system-1.8", "Crosscode.Cappy.dll")
	mcs(t, m, out("Crosscode.Cappy.Editor"), append([]string{"-target:library", "-r:" + out("Crosscode.Cappy.Core"), "-r:" + layerDll, "-r:" + out("UnityEngine"), "-r:" + out("UnityEditor")},
		sources(t, m, "adapters/unity/Editor")...)...)
	mcs(t, m, out("Samples"), append([]string{"-target:library", "-r:" + out("Crosscode.Cappy.Core"), "-r:" + out("UnityEngine")},
		sources(t, m, "adapters/unity/Samples~/Scenarios")...)...)
}

var (
	since     = regexp.MustCompile(`\[(?:[^\]]*, )?Since\("(\d+)\.(\d+)"\)`)
	publicDef = regexp.MustCompile(`^\s*(\[[^\]]*\]\s*)*public `)
)

// TestStubsNameTheirVersions: every member the reference declarations
// declare names the version it first appeared in, and each exists in the
// versions the package supports: Unity 2022.3 LTS (and so Unity 6), the
// Input System up to 1.8.
func TestStubsNameTheirVersions(t *testing.T) {
	for _, f := range []struct {
		file         string
		major, minor int
	}{{"UnityEngine.cs", 2022, 3}, {"UnityEditor.cs", 2022, 3}, {"InputSystem.cs", 1, 8}} {
		fh, err := os.Open(filepath.Join("stubs", f.file))
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		n, members := 0, 0
		previous := ""
		for sc.Scan() {
			n++
			line := sc.Text()
			above := previous
			if strings.TrimSpace(line) != "" {
				previous = line
			}
			if !publicDef.MatchString(line) || strings.Contains(line, " override ") || strings.Contains(line, "GetEnumerator()") ||
				strings.Contains(line, "class SinceAttribute") || strings.Contains(line, "public SinceAttribute") {
				continue
			}
			members++
			m := since.FindStringSubmatch(line)
			if m == nil && strings.HasPrefix(strings.TrimSpace(above), "[") {
				m = since.FindStringSubmatch(above) // the attribute on the line above
			}
			if m == nil {
				t.Errorf("stubs/%s:%d: no [Since(\"version\")]: %s", f.file, n, strings.TrimSpace(line))
				continue
			}
			major, _ := strconv.Atoi(m[1])
			minor, _ := strconv.Atoi(m[2])
			if major > f.major || major == f.major && minor > f.minor {
				t.Errorf("stubs/%s:%d: %s.%s is after %d.%d, which the package supports", f.file, n, m[1], m[2], f.major, f.minor)
			}
		}
		fh.Close()
		if members < 10 {
			t.Fatalf("stubs/%s: %d members found; the scan is broken", f.file, members)
		}
	}
}
