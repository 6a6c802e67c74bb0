package coord

import (
	"context"
	"slices"

	bc "github.com/crosscode/crosscode-mcp/bridge/coord"
	"github.com/crosscode/crosscode-mcp/store"
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
	// Clear: no other agent claims, waits for or intends to change these
	// paths.
	Clear bool `json:"clear"`
	// Claims are others' claims on these paths: held ones (status active)
	// with the claims waiting for each, in line, and waiting ones (status
	// queued) that are in no queue shown.
	Claims      []ClaimView  `json:"claims"`
	MoreClaims  int          `json:"moreClaims,omitempty"`
	Intents     []IntentView `json:"intents"`
	MoreIntents int          `json:"moreIntents,omitempty"`
	WithNews
}

// CheckConflicts is the check_conflicts tool.
func CheckConflicts(c conflictChecker) tools.Tool {
	return tools.New[checkConflictsIn, checkConflictsOut](Toolset, "check_conflicts", "Check conflicts",
		"Before editing, see whether other agents hold, wait for, or announced intents on any of these paths; each held claim shows who waits for it, in line.",
		tools.Annotations{ReadOnly: true, Idempotent: true},
		handler(c, func(ctx context.Context, in checkConflictsIn) (*checkConflictsOut, error) {
			cf, err := c.CheckConflicts(ctx, in.Paths)
			if err != nil {
				return nil, err
			}
			out := &checkConflictsOut{Clear: len(cf.Claims) == 0 && len(cf.Intents) == 0}
			// A waiting claim shows once: in the queue of what it waits for.
			inQueue := map[string]bool{}
			for _, k := range cf.Claims {
				for _, w := range k.Queue {
					inQueue[w.ClaimID] = true
				}
			}
			claims := slices.DeleteFunc(slices.Clone(cf.Claims), func(k store.Conflict) bool { return k.Queued() && inQueue[k.ClaimID] })
			out.Claims, out.MoreClaims = tools.Fit(conflictViews(claims), claimsBudget)
			out.Intents, out.MoreIntents = tools.Fit(intentViews(cf.Intents), intentsBudget)
			return out, nil
		}))
}
