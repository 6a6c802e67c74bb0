package coord

import (
	"context"

	bc "github.com/crosscode/crosscode-mcp/bridge/coord"
	"github.com/crosscode/crosscode-mcp/tools"
)

type releaser interface {
	session
	Release(ctx context.Context, claimIDs []string, all bool, reason string) ([]string, []*bc.Published, error)
}

type releaseClaimIn struct {
	ClaimIDs []string `json:"claimIds,omitempty" jsonschema_description:"Your claims to release."`
	All      bool     `json:"all,omitempty" jsonschema_description:"Release every active claim of yours."`
	Reason   string   `json:"reason,omitempty"`
}

type releaseClaimOut struct {
	Released []string `json:"released"`
	// MoreReleased counts the claims released but not listed.
	MoreReleased int `json:"moreReleased,omitempty"`
	// Writes are the released claims' writes, in the same order.
	Writes []Write `json:"writes"`
	WithNews
}

// releasedBudget bounds the released ids listed; each comes with its write.
const releasedBudget = 4 << 10

// ReleaseClaim is the release_claim tool.
func ReleaseClaim(c releaser) tools.Tool {
	return tools.New[releaseClaimIn, releaseClaimOut](Toolset, "release_claim", "Release claims",
		"Release your claims as soon as you are done with the paths (or give up on them), so others can claim them.",
		tools.Annotations{Idempotent: true},
		handler(c, func(ctx context.Context, in releaseClaimIn) (*releaseClaimOut, error) {
			ids, pubs, err := c.Release(ctx, in.ClaimIDs, in.All, in.Reason)
			if err != nil {
				return nil, err
			}
			out := &releaseClaimOut{Writes: []Write{}}
			out.Released, out.MoreReleased = tools.Fit(ids, releasedBudget)
			for _, p := range pubs[:len(out.Released)] {
				out.Writes = append(out.Writes, write(p))
			}
			return out, nil
		}))
}
