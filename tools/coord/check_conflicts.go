package coord

import (
	"context"

	bc "github.com/crosscode/crosscode-mcp/bridge/coord"
	"github.com/crosscode/crosscode-mcp/tools"
)

type conflictChecker interface {
	session
	CheckConflicts(ctx context.Context, paths []string) (*bc.Conflicts, error)
}

type checkConflictsIn struct {
	Paths []string `json:"paths" jsonschema:"minItems=1" jsonschema_description:"Paths or globs you are about to edit."`
}

type checkConflictsOut struct {
	Clear   bool         `json:"clear" jsonschema_description:"true: no other agent claims or intends to change these paths."`
	Claims  []ClaimView  `json:"claims"`
	Intents []IntentView `json:"intents"`
	WithNews
}

// CheckConflicts is the check_conflicts tool.
func CheckConflicts(c conflictChecker) tools.Tool {
	return tools.New[checkConflictsIn, checkConflictsOut](Toolset, "check_conflicts", "Check conflicts",
		"Before editing, see whether other agents hold claims on, or announced intents for, any of these paths.",
		tools.Annotations{ReadOnly: true, Idempotent: true},
		handler(c, func(ctx context.Context, in checkConflictsIn) (*checkConflictsOut, error) {
			cf, err := c.CheckConflicts(ctx, in.Paths)
			if err != nil {
				return nil, err
			}
			return &checkConflictsOut{Clear: len(cf.Claims) == 0 && len(cf.Intents) == 0, Claims: conflictViews(cf.Claims), Intents: intentViews(cf.Intents)}, nil
		}))
}
