package coord

import (
	"context"
	"fmt"
	"strings"
	"time"

	bc "github.com/crosscode/crosscode-mcp/bridge/coord"
	"github.com/crosscode/crosscode-mcp/tools"
)

type claimer interface {
	session
	Claim(ctx context.Context, patterns []string, exclusive bool, reason string, ttl time.Duration, renew string) (*bc.ClaimResult, error)
}

type claimIn struct {
	Patterns   []string `json:"patterns,omitempty" jsonschema_description:"Repository-relative paths or globs to reserve, e.g. src/game/boss.gd or assets/boss/**. Required unless renewing."`
	Exclusive  *bool    `json:"exclusive,omitempty" jsonschema_description:"Default true: nobody else may claim overlapping paths. false: a shared claim that only conflicts with exclusive ones."`
	Reason     string   `json:"reason,omitempty" jsonschema_description:"Why, in a few words; others see it."`
	TTLMinutes int      `json:"ttlMinutes,omitempty" jsonschema:"minimum=1,maximum=480" jsonschema_description:"Lease length. Default 30; renew before it ends."`
	Renew      string   `json:"renewClaimId,omitempty" jsonschema_description:"Renew this active claim of yours (same patterns unless given) for a new lease."`
}

type claimOut struct {
	ClaimID string `json:"claimId"`
	// Status pending: queued for a service that is unreachable; see likely.
	Status string `json:"status" jsonschema:"enum=granted,enum=denied,enum=pending"`
	// Likely is, for pending claims, what the local copy of the log predicts.
	Likely       string    `json:"likely,omitempty"`
	Patterns     []string  `json:"patterns"`
	MorePatterns int       `json:"morePatterns,omitempty"`
	Exclusive    bool      `json:"exclusive"`
	ExpiresAt    time.Time `json:"expiresAt"`
	// Conflicts are the earlier claims of others that deny this one: who
	// holds which paths until when.
	Conflicts     []ClaimView `json:"conflicts"`
	MoreConflicts int         `json:"moreConflicts,omitempty"`
	// Next is what to do now.
	Next  string `json:"next"`
	Write Write  `json:"write"`
	WithNews
}

// Claim is the claim tool.
func Claim(c claimer) tools.Tool {
	return tools.New[claimIn, claimOut](Toolset, "claim", "Claim files",
		"Reserve paths before editing them, so no other agent edits them at the same time. Granted or denied at once, the same for every agent (first claim in the log wins); a denial names who holds the paths until when. Leases expire: renew with renewClaimId, release when done.",
		tools.Annotations{},
		handler(c, func(ctx context.Context, in claimIn) (*claimOut, error) {
			exclusive := in.Exclusive == nil || *in.Exclusive
			res, err := c.Claim(ctx, in.Patterns, exclusive, in.Reason, minutes(in.TTLMinutes), in.Renew)
			if err != nil {
				return nil, err
			}
			out := &claimOut{ClaimID: res.Claim.ID, Status: res.Status, Likely: res.Likely, Exclusive: res.Claim.Exclusive,
				ExpiresAt: res.Claim.ExpiresAt, Write: write(res.Published)}
			out.Patterns, out.MorePatterns = tools.Fit(res.Claim.Patterns, patternsBudget)
			out.Conflicts, out.MoreConflicts = tools.Fit(conflictViews(res.Conflicts), claimsBudget)
			out.Next = claimNext(res)
			return out, nil
		}))
}

// patternsBudget bounds the patterns a claim's result echoes.
const patternsBudget = 4 << 10

// maxHolders bounds the holders claimNext names.
const maxHolders = 3

func claimNext(res *bc.ClaimResult) string {
	holders := func() string {
		var hs []string
		for i, c := range res.Conflicts {
			if i == maxHolders {
				hs = append(hs, fmt.Sprintf("and %d more (see conflicts)", len(res.Conflicts)-i))
				break
			}
			pats, more := linesOf(c.Patterns, 3)
			held := strings.Join(pats, ", ")
			if more > 0 {
				held += fmt.Sprintf(" and %d more", more)
			}
			hs = append(hs, fmt.Sprintf("%s holds %s until %s (claim %s)", line(c.Actor), held, c.ExpiresAt.Format(time.RFC3339), c.ClaimID))
		}
		return strings.Join(hs, "; ")
	}
	switch {
	case res.Status == "granted" && res.Renewed != "":
		return fmt.Sprintf("Renewed: claim %s replaces %s. Edit away; renew again before %s.", res.Claim.ID, res.Renewed, res.Claim.ExpiresAt.Format(time.RFC3339))
	case res.Status == "granted":
		return fmt.Sprintf("Edit these paths. Renew with renewClaimId=%s before %s if you need longer; release_claim when done.", res.Claim.ID, res.Claim.ExpiresAt.Format(time.RFC3339))
	case res.Limit > 0:
		return fmt.Sprintf("Denied: you already hold %d active claims, the most allowed. Release the ones you are done with (release_claim), or claim a wider glob instead of many paths.", res.Limit)
	case res.Status == "denied":
		return "Denied: " + holders() + ". Do not edit these paths. Work on something else, publish_intent to say you are waiting, or ask the holder to hand over (they call request_handoff); claim again after it expires or is released."
	case res.Likely == "denied":
		return "Pending (service unreachable), and likely denied: " + holders() + ". Do not edit these paths yet; workspace_status shows when the service is back."
	default:
		return "Pending: the service is unreachable; the claim uploads when it is back, and will likely be granted. Prefer waiting for the grant before editing shared paths."
	}
}
