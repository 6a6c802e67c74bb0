package cappy

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestFindBrowserInstalled: with no browser on PATH, the first browser
// installed where its OS puts it is found; with none there either, the
// error names where it looked and what to do.
func TestFindBrowserInstalled(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	if runtime.GOOS == "windows" {
		// Edge under Program Files (x86), where Windows puts it.
		pf, pf86, local := t.TempDir(), t.TempDir(), t.TempDir()
		t.Setenv("ProgramFiles", pf)
		t.Setenv("ProgramFiles(x86)", pf86)
		t.Setenv("LOCALAPPDATA", local)
		if _, err := FindBrowser(""); err == nil || !strings.Contains(err.Error(), filepath.Join(pf, `Google\Chrome\Application\chrome.exe`)) {
			t.Fatalf("with no browser installed: %v", err)
		}
		edge := filepath.Join(pf86, `Microsoft\Edge\Application\msedge.exe`)
		if err := os.MkdirAll(filepath.Dir(edge), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(edge, []byte("MZ"), 0o755); err != nil {
			t.Fatal(err)
		}
		if got, err := FindBrowser(""); err != nil || got != edge {
			t.Fatalf("FindBrowser = %q, %v; want %s", got, err, edge)
		}
		return
	}
	_, err := FindBrowser("")
	if err == nil || !strings.Contains(err.Error(), "set game.browser to its path") {
		t.Fatalf("with no browser on PATH: %v", err)
	}
	for _, p := range InstalledBrowsers() {
		if _, serr := os.Stat(p); serr != nil && !strings.Contains(err.Error(), p) {
			t.Errorf("the error does not name %s: %v", p, err)
		}
	}
}
