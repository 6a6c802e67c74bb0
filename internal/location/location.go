// Package location says where a repository's coordination state lives:
// the workspace's name, the data folder and the database file. It is a
// leaf (the standard library only), so the hook client, a small program
// started before every edit, can find the database without linking the
// rest. internal/identity answers the same questions for a *gitx.Repo.
package location

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
)

// Workspace names the workspace after the repository's top-level folder
// (top, the worktree's; commonDir, git's common dir, shared by every
// worktree of a clone: a clone's worktrees share its name), or after dir
// outside git (top empty).
func Workspace(top, commonDir, dir string) string {
	if top == "" {
		return filepath.Base(dir)
	}
	if filepath.Base(commonDir) == ".git" {
		return filepath.Base(filepath.Dir(commonDir))
	}
	return filepath.Base(top)
}

// Data is where local state lives: <git common dir>/crosscode (so every
// worktree shares it), else, outside git (commonDir empty), a
// per-directory folder in the user's cache dir.
func Data(commonDir, dir string) (string, error) {
	if commonDir != "" {
		return filepath.Join(commonDir, "crosscode"), nil
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no git repository and no user cache dir for local state: pass --data: %w", err)
	}
	abs, _ := filepath.Abs(dir)
	return filepath.Join(base, "crosscode-mcp", unsafeChars().ReplaceAllString(strings.Trim(abs, "/"), "_")), nil
}

var unsafeChars = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[^A-Za-z0-9._-]+`) })

// Database is the local database: workspace.db in local mode, one file
// per service and workspace in remote mode.
func Database(data, service, workspace string) string {
	if service == "" {
		return filepath.Join(data, "workspace.db")
	}
	host := unsafeChars().ReplaceAllString(strings.TrimPrefix(strings.TrimPrefix(service, "https://"), "http://"), "_")
	return filepath.Join(data, "remote", host+"--"+unsafeChars().ReplaceAllString(workspace, "_")+".db")
}
