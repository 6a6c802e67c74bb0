package coord

import (
	"context"
	"fmt"
	"strings"
	"time"

	bc "github.com/crosscode/crosscode-mcp/bridge/coord"
	"github.com/crosscode/crosscode-mcp/store"
	"github.com/crosscode/crosscode-mcp/tools"
)

type releaser interface {
	session
	Release(ctx context.Context, claimIDs []string, all bool, reason string) (*bc.ReleaseResult, error)
}

type releaseClaimIn struct {
	ClaimIDs []string `json:"claimIds,omitempty" jsonschema_description:"Your claims to release."`
	All      bool     `json:"all,omitempty" jsonschema_description:"Release every active claim of yours, and withdraw every one still waiting."`
	Reason   string   `json:"reason,omitempty"`
}

type releaseClaimOut struct {
	Released []string `json:"released"`
	// MoreReleased counts the claims released but not listed.
	MoreReleased int `json:"moreReleased,omitempty"`
	// Withdrawn are those of the released claims that were still waiting
	// their turn: they leave the line.
	Withdrawn []string `json:"withdrawn,omitempty"`
	// Writes are the released claims' writes, in the same order.
	Writes []Write `json:"writes"`
	// Unchanged are the claims named that hold nothing to release: denied,
	// released already, expired, or whose wait ended. Not an error: they
	// are already free.
	Unchanged     []Unreleased `json:"unchanged,omitempty"`
	MoreUnchanged int          `json:"moreUnchanged,omitempty"`
	// Next says what happened when nothing was released.
	Next string `json:"next,omitempty"`
	WithNews
}

// Unreleased is a claim release_claim left as it was, and why.
type Unreleased struct {
	ClaimID string `json:"claimId"`
	// Status is denied, released, expired or wait_expired.
	Status string `json:"status" jsonschema:"enum=denied,enum=released,enum=expired,enum=wait_expired"`
	// At is when it was denied, released, expired, or stopped waiting.
	At time.Time `json:"at"`
	// HeldBy are, for a denied claim, the claims that denied it.
	HeldBy []ClaimView `json:"heldBy,omitempty"`
	Note   string      `json:"note"`
}

// releasedBudget bounds the released ids listed; each comes with its write.
const releasedBudget = 4 << 10

// ReleaseClaim is the release_claim tool.
func ReleaseClaim(c releaser) tools.Tool {
	return tools.New[releaseClaimIn, releaseClaimOut](Toolset, "release_claim", "Release claims",
		"Release your claims as soon as you are done (or give up): the next agent in line gets the paths at once. Releasing a claim still in line withdraws it.",
		tools.Annotations{Idempotent: true},
		handler(c, func(ctx context.Context, in releaseClaimIn) (*releaseClaimOut, error) {
			res, err := c.Release(ctx, in.ClaimIDs, in.All, in.Reason)
			if err != nil {
				return nil, err
			}
			out := &releaseClaimOut{Released: []string{}, Writes: []Write{}}
			if len(res.Released) > 0 {
				out.Released, out.MoreReleased = tools.Fit(res.Released, releasedBudget)
				out.Withdrawn, _ = tools.Fit(res.Withdrawn, releasedBudget/4)
			}
			for _, p := range res.Writes[:len(out.Released)] {
				out.Writes = append(out.Writes, write(p))
			}
			var un []Unreleased
			for _, u := range res.Unchanged {
				un = append(un, unreleasedView(u))
			}
			out.Unchanged, out.MoreUnchanged = tools.Fit(un, claimsBudget)
			switch {
			case len(res.Released) > 0:
			case in.All:
				out.Next = "You hold no active claims: nothing to release."
			case len(res.Unchanged) == 1:
				out.Next = out.Unchanged[0].Note
			default:
				out.Next = "None of these claims holds paths any more: nothing to release (see unchanged)."
			}
			return out, nil
		}))
}

func unreleasedView(u bc.Unreleased) Unreleased {
	v := Unreleased{ClaimID: u.ClaimID, Status: u.Status, At: u.At}
	at := u.At.UTC().Format(time.RFC3339)
	switch u.Status {
	case store.ClaimDenied:
		v.HeldBy = conflictViews(u.Conflicts)
		var why string
		switch {
		case u.Limit > 0:
			why = fmt.Sprintf(" (you held %d active claims, the most allowed)", u.Limit)
		case len(u.Conflicts) > 0:
			var hs []string
			for i, c := range u.Conflicts {
				if i == maxHolders {
					hs = append(hs, fmt.Sprintf("and %d more", len(u.Conflicts)-i))
					break
				}
				hs = append(hs, fmt.Sprintf("%s held %s (claim %s)", line(c.Actor), strings.Join(v.HeldBy[i].Patterns, ", "), c.ClaimID))
			}
			why = ": " + strings.Join(hs, "; ")
		}
		v.Note = fmt.Sprintf("Claim %s was denied at %s%s. It never held the paths, so there is nothing to release.", u.ClaimID, at, why)
	case store.ClaimReleased:
		v.Note = fmt.Sprintf("Claim %s was already released at %s: nothing to release.", u.ClaimID, at)
	case store.ClaimWaitExpired:
		v.Note = fmt.Sprintf("Claim %s stopped waiting at %s without being granted: it holds nothing and is in no line, so there is nothing to release.", u.ClaimID, at)
	default:
		v.Note = fmt.Sprintf("Claim %s expired at %s: it holds nothing, so there is nothing to release.", u.ClaimID, at)
	}
	return v
}
