package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// crosscode-mcp godot install-addon writes the addon it carries, the
// repository's adapters/godot/addons/cappy byte for byte, into a project;
// again it changes nothing, after an edit it restores the file (and
// leaves Godot's own files there), and it says the next step until the
// autoload is enabled. A folder without project.godot is refused.
func TestGodotInstallAddon(t *testing.T) {
	project := t.TempDir()
	os.WriteFile(filepath.Join(project, "project.godot"), []byte("config_version=5\n\n[application]\n\nconfig/name=\"G\"\n"), 0o644)
	install := func(args ...string) (string, error) {
		var out, errb bytes.Buffer
		err := run(context.Background(), append([]string{"godot", "install-addon"}, args...), nil, &out, &errb)
		return out.String() + errb.String(), err
	}
	out, err := install(project)
	if err != nil || !strings.Contains(out, "wrote the Cappy addon") || !strings.Contains(out, `Cappy="*res://addons/cappy/cappy.gd"`) {
		t.Fatalf("install: %v\n%s", err, out)
	}
	repo := filepath.Join("..", "..", "adapters", "godot", "addons", "cappy")
	files, _ := os.ReadDir(repo)
	if len(files) < 5 {
		t.Fatalf("the repository's addon: %d files", len(files))
	}
	for _, f := range files {
		want, _ := os.ReadFile(filepath.Join(repo, f.Name()))
		got, err := os.ReadFile(filepath.Join(project, "addons", "cappy", f.Name()))
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s is not the repository's (%v)", f.Name(), err)
		}
	}

	cappy := filepath.Join(project, "addons", "cappy", "cappy.gd")
	os.WriteFile(cappy, []byte("# an older addon\n"), 0o644)
	os.WriteFile(cappy+".uid", []byte("uid://b1"), 0o644) // Godot's own
	os.WriteFile(filepath.Join(project, "project.godot"), []byte("config_version=5\n\n[autoload]\n\nCappy=\"*res://addons/cappy/cappy.gd\"\n"), 0o644)
	out, err = install(project)
	if err != nil || !strings.Contains(out, ": cappy.gd (") || !strings.Contains(out, "enables its autoload Cappy already") {
		t.Fatalf("update: %v\n%s", err, out)
	}
	if b, _ := os.ReadFile(cappy + ".uid"); string(b) != "uid://b1" {
		t.Fatal("Godot's .uid file was not left alone")
	}
	// No folder: the project where it runs (this build, as a process).
	cmd := exec.Command(os.Args[0], "godot", "install-addon")
	cmd.Dir, cmd.Env = project, append(os.Environ(), "CROSSCODE_MCP_TEST_MAIN=1")
	if b, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(b), "this version's already") {
		t.Fatalf("again, from the project's folder: %v\n%s", err, b)
	}

	if out, err := install(t.TempDir()); err == nil || !strings.Contains(err.Error(), "no project.godot") {
		t.Fatalf("a folder that is no Godot project: %v\n%s", err, out)
	}
	if _, err := install("a", "b"); err == nil {
		t.Fatal("two folders accepted")
	}
}
