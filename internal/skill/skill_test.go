package skill

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestSameAsThePlugins: the plugin and the extension carry this file.
func TestSameAsThePlugins(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "plugins", "crosscode", "skills", "crosscode", "SKILL.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, Text) {
		t.Fatal("internal/skill/SKILL.md and plugins/crosscode/skills/crosscode/SKILL.md differ: edit one, copy it to the other")
	}
}

func TestInstallUninstall(t *testing.T) {
	home := t.TempDir()
	dir, err := Dir("opencode", "user", home, "", "")
	if err != nil || dir != filepath.Join(home, ".config", "opencode", "skills", "crosscode") {
		t.Fatalf("Dir: %s %v", dir, err)
	}
	if changed, err := Install(dir); err != nil || !changed {
		t.Fatalf("install: %v %v", changed, err)
	}
	if changed, err := Install(dir); err != nil || changed {
		t.Fatalf("a second install: %v %v", changed, err)
	}
	// An earlier version of crosscode's skill is replaced; another skill is not.
	os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte("---\nname: crosscode\ndescription: old\n---\nold\n"), 0o644)
	if changed, err := Install(dir); err != nil || !changed {
		t.Fatalf("over an old version: %v %v", changed, err)
	}
	other := filepath.Join(home, "other")
	os.MkdirAll(other, 0o755)
	os.WriteFile(filepath.Join(other, "SKILL.md"), []byte("---\nname: mine\n---\n"), 0o644)
	if _, err := Install(other); err == nil {
		t.Error("install replaced another skill")
	}
	if _, err := Uninstall(other); err == nil {
		t.Error("uninstall removed another skill")
	}
	if changed, err := Uninstall(dir); err != nil || !changed {
		t.Fatalf("uninstall: %v %v", changed, err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the empty skill folder is left: %v", err)
	}
	if changed, err := Uninstall(dir); err != nil || changed {
		t.Fatalf("a second uninstall: %v %v", changed, err)
	}
	if _, err := Dir("claude-code", "user", home, "", ""); err == nil {
		t.Error("a client with a package got a skill folder")
	}
}
