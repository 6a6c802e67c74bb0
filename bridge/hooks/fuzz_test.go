package hooks

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// FuzzInstallRoundTrip: for any settings file install accepts, uninstall
// gives back exactly the bytes there were, and a second install changes
// nothing; the reader never panics on any input.
func FuzzInstallRoundTrip(f *testing.F) {
	for _, cases := range settingsCases {
		for _, tc := range cases {
			f.Add(tc.text, false)
			f.Add(tc.text, true)
		}
	}
	f.Add(`{"a": [1, {"b": "\u00e9\"//"}], /* x */ "hooks": {"X": []}}`, false)
	f.Fuzz(func(t *testing.T, text string, gemini bool) {
		parseJSONC([]byte(text)) // must not panic
		client := "claude-code"
		if gemini {
			client = "gemini"
		}
		cfg := InstallConfig{Client: client, Top: t.TempDir(), Command: testCommand, StateDir: t.TempDir()}
		path, _ := SettingsPath(cfg)
		os.MkdirAll(filepath.Dir(path), 0o755)
		if text != "" {
			os.WriteFile(path, []byte(text), 0o644)
		}
		if _, _, err := Install(cfg); err != nil {
			return // not a settings file it can read: left alone
		}
		after, _ := os.ReadFile(path)
		if _, err := parseJSONC(after); err != nil {
			t.Fatalf("install made a file it cannot read: %v\n%q", err, after)
		}
		if _, changed, err := Install(cfg); err != nil || changed {
			t.Fatalf("second install: %v %v", changed, err)
		}
		if _, _, err := Uninstall(cfg); err != nil {
			t.Fatal(err)
		}
		back, err := os.ReadFile(path)
		if text == "" {
			if err == nil {
				t.Fatalf("uninstall left %q", back)
			}
			return
		}
		if !bytes.Equal(back, []byte(text)) {
			t.Fatalf("round trip:\nbefore %q\nafter  %q", text, back)
		}
	})
}
