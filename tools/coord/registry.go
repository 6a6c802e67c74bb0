package coord

import (
	bc "github.com/crosscode/crosscode-mcp/bridge/coord"
	"github.com/crosscode/crosscode-mcp/internal/gitx"
	"github.com/crosscode/crosscode-mcp/tools"
)

// All returns the coordination tools over c. repo may be nil outside a
// git repository (share_changes then says so).
func All(c *bc.Coordinator, repo *gitx.Repo) []tools.Tool {
	var r interface {
		Repo
		ChangeReader
	}
	if repo != nil {
		r = repo
	}
	return []tools.Tool{
		WorkspaceStatus(c),
		PublishIntent(c),
		Claim(c),
		ReleaseClaim(c),
		CheckConflicts(c),
		RequestHandoff(c, r),
		RespondHandoff(c),
		CreateTask(c),
		UpdateTask(c),
		ListTasks(c),
		RecordValidation(c, r),
		ShareChanges(c, r),
		ReadFeed(c),
	}
}
