// Package skill holds crosscode's Agent Skill (SKILL.md): the working
// rules an agent follows with crosscode-mcp's tools. The plugin and the
// extension carry the same file (plugins/crosscode/skills/crosscode/,
// checked equal by a test); `crosscode-mcp skill install` writes it where
// a client without a package format reads skills (OpenCode).
package skill

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Name is the skill's name, and its folder's.
const Name = "crosscode"

// Text is SKILL.md.
//
//go:embed SKILL.md
var Text []byte

// Dir is the folder that holds SKILL.md for client in scope: OpenCode
// reads skills from $XDG_CONFIG_HOME/opencode/skills (~/.config/...) for
// the user and .opencode/skills in the project.
func Dir(client, scope, home, configHome, project string) (string, error) {
	if client != "opencode" {
		return "", fmt.Errorf("skill: unknown client %q (opencode: Claude Code, Codex and Gemini CLI get the skill with the crosscode plugin or extension)", client)
	}
	switch scope {
	case "user":
		if configHome == "" {
			configHome = filepath.Join(home, ".config")
		}
		return filepath.Join(configHome, "opencode", "skills", Name), nil
	case "project":
		if project == "" {
			return "", errors.New("skill: the project scope needs the repository")
		}
		return filepath.Join(project, ".opencode", "skills", Name), nil
	}
	return "", fmt.Errorf("skill: unknown scope %q (user, project)", scope)
}

// Install writes SKILL.md into dir. changed is false when it was there
// already; a SKILL.md that differs (an older version, or the user's own
// edit) is replaced only when it is an earlier crosscode skill.
func Install(dir string) (changed bool, err error) {
	path := filepath.Join(dir, "SKILL.md")
	old, err := os.ReadFile(path)
	switch {
	case err == nil && bytes.Equal(old, Text):
		return false, nil
	case err == nil && !bytes.Contains(old, []byte("\nname: "+Name+"\n")):
		return false, fmt.Errorf("skill: %s holds another skill; move it away first", path)
	case err != nil && !errors.Is(err, os.ErrNotExist):
		return false, fmt.Errorf("skill: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return false, fmt.Errorf("skill: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, Text, 0o644); err != nil {
		return false, fmt.Errorf("skill: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return false, fmt.Errorf("skill: %w", err)
	}
	return true, nil
}

// Uninstall removes SKILL.md from dir when it is crosscode's (any
// version), and dir when that leaves it empty.
func Uninstall(dir string) (changed bool, err error) {
	path := filepath.Join(dir, "SKILL.md")
	old, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("skill: %w", err)
	}
	if !bytes.Contains(old, []byte("\nname: "+Name+"\n")) {
		return false, fmt.Errorf("skill: %s is not crosscode's skill; left as it is", path)
	}
	if err := os.Remove(path); err != nil {
		return false, fmt.Errorf("skill: %w", err)
	}
	os.Remove(dir) // only when empty
	return true, nil
}
