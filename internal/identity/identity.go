// Package identity says who the calling agent is and where its workspace
// lives: the provider and session reference stamped on every envelope, the
// actor, the replica id of a clone or worktree, the workspace's name, data
// dir and database. The stdio server (mcp), the hooks (bridge/hooks), the
// service's MCP endpoint and the commands all ask it, so each computes the
// same identity the same way.
package identity

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"time"

	"github.com/crosscode/crosscode-mcp/internal/gitx"
	"github.com/crosscode/crosscode-mcp/internal/ids"
	"github.com/crosscode/crosscode-mcp/internal/location"
	"github.com/crosscode/crosscode-mcp/protocol"
)

// ProviderFromClient maps an MCP client's clientInfo.name to a provider
// (case-insensitive: claude -> claude-code, cursor, codex, opencode,
// devin -> devin-like, else unknown).
func ProviderFromClient(name string) protocol.Provider {
	n := strings.ToLower(name)
	switch {
	case strings.Contains(n, "claude"):
		return protocol.ProviderClaude
	case strings.Contains(n, "cursor"):
		return protocol.ProviderCursor
	case strings.Contains(n, "codex"):
		return protocol.ProviderCodex
	case strings.Contains(n, "opencode"):
		return protocol.ProviderOpenCode
	case strings.Contains(n, "devin"):
		return protocol.ProviderDevinLike
	}
	return protocol.ProviderUnknown
}

// SessionRefInput is what sessionReference is chosen from.
type SessionRefInput struct {
	Flag      string            // --session-ref or CROSSCODE_SESSION_REF
	Provider  protocol.Provider // the resolved provider
	ClaudeEnv string            // CLAUDE_CODE_SESSION_ID
	CallMeta  map[string]any    // the tool call's _meta
	SessionID string            // this MCP session's id
}

// SessionReference picks agent.sessionReference by the documented
// precedence: the flag (or CROSSCODE_SESSION_REF), then
// CLAUDE_CODE_SESSION_ID when the provider is claude-code, then the
// sessionId in the tool call's _meta (Codex sends its thread id there;
// OpenCode once sent sessionID, 1.18 sends none), then this MCP
// session's own id.
func SessionReference(in SessionRefInput) string {
	if in.Flag != "" {
		return in.Flag
	}
	if in.Provider == protocol.ProviderClaude && in.ClaudeEnv != "" {
		return in.ClaudeEnv
	}
	for _, key := range []string{"sessionID", "sessionId"} {
		if v, ok := in.CallMeta[key].(string); ok && v != "" {
			return v
		}
	}
	return in.SessionID
}

// OpenRepo opens the git repository around dir, or returns nil when dir
// is in none, or when git is not installed (which it logs: the server works
// without git, but worktrees of one clone cannot share state then).
func OpenRepo(ctx context.Context, dir string, log *slog.Logger) (*gitx.Repo, error) {
	repo, err := gitx.Open(ctx, dir)
	switch {
	case errors.Is(err, gitx.ErrNotRepo):
		return nil, nil
	case errors.Is(err, gitx.ErrNoGit):
		log.Warn("git is not installed (not on PATH): local state is kept per folder, and worktrees of one clone do not share it; install Git (on Windows, Git for Windows) to fix that", "dir", dir)
		return nil, nil
	}
	return repo, err
}

// Locate returns workspace and data, each defaulted (DefaultWorkspace,
// DefaultData) when empty, for the repository (or, outside git, the
// directory) dir.
func Locate(repo *gitx.Repo, dir, workspace, data string) (string, string, error) {
	if workspace == "" {
		workspace = DefaultWorkspace(repo, dir)
	}
	if data == "" {
		var err error
		if data, err = DefaultData(repo, dir); err != nil {
			return "", "", err
		}
	}
	return workspace, data, nil
}

// DefaultWorkspace names the workspace after the repository's top-level
// folder, the same for every worktree of a clone.
func DefaultWorkspace(repo *gitx.Repo, dir string) string {
	if repo == nil {
		return location.Workspace("", "", dir)
	}
	return location.Workspace(repo.Top, repo.CommonDir, dir)
}

// DefaultData is where local state lives: <git common dir>/crosscode (so
// every worktree shares it), else a per-directory folder in the user's
// state dir.
func DefaultData(repo *gitx.Repo, dir string) (string, error) {
	if repo == nil {
		return location.Data("", dir)
	}
	return location.Data(repo.CommonDir, dir)
}

// DatabasePath is the local database: workspace.db in local mode, one file
// per service and workspace in remote mode.
func DatabasePath(data, service, workspace string) string {
	return location.Database(data, service, workspace)
}

// DefaultActor is git's user.email, else the OS user name.
func DefaultActor(ctx context.Context, repo *gitx.Repo) string {
	if repo != nil {
		if email, err := repo.UserEmail(ctx); err == nil && email != "" {
			return email
		}
	}
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	return "unknown"
}

// LoadReplica returns the replica id of this clone or worktree, kept in its
// git dir (or the data dir outside git), creating it on first use.
func LoadReplica(repo *gitx.Repo, data string) (string, error) {
	dir := data
	if repo != nil {
		dir = repo.GitDir
	}
	path := filepath.Join(dir, "crosscode-replica")
	for range 3 {
		if b, err := os.ReadFile(path); err == nil {
			if id := strings.TrimSpace(string(b)); id != "" {
				return id, nil
			}
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return "", fmt.Errorf("replica id: %w", err)
		}
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, os.ErrExist) {
			time.Sleep(10 * time.Millisecond) // another process is writing it
			continue
		}
		if err != nil {
			return "", fmt.Errorf("replica id: %w", err)
		}
		id := ids.New("rep")
		_, werr := f.WriteString(id + "\n")
		serr := f.Sync()
		if err := errors.Join(werr, serr, f.Close()); err != nil {
			return "", fmt.Errorf("replica id: %w", err)
		}
		return id, nil
	}
	return "", fmt.Errorf("replica id: %s exists but is empty; delete it", path)
}
