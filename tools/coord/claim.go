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
	ClaimID   string      `json:"claimId"`
	Status    string      `json:"status" jsonschema:"enum=granted,enum=denied,enum=pending" jsonschema_description:"pending: queued for a service that is unreachable; see likely."`
	Likely    string      `json:"likely,omitempty" jsonschema_description:"For pending claims: what the local copy of the log predicts."`
	Patterns  []string    `json:"patterns"`
	Exclusive bool        `json:"exclusive"`
	ExpiresAt time.Time   `json:"expiresAt"`
	Conflicts []ClaimView `json:"conflicts" jsonschema_description:"The earlier claims of others that deny this one: who holds which paths until when."`
	Next      string      `json:"next" jsonschema_description:"What to do now."`
	Write     Write       `json:"write"`
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
			out := &claimOut{ClaimID: res.Claim.ID, Status: res.Status, Likely: res.Likely, Patterns: res.Claim.Patterns, Exclusive: res.Claim.Exclusive,
				ExpiresAt: res.Claim.ExpiresAt, Conflicts: conflictViews(res.Conflicts), Write: write(res.Published)}
			out.Next = claimNext(res)
			return out, nil
		}))
}

func claimNext(res *bc.ClaimResult) string {
	holders := func() string {
		var hs []string
		for _, c := range res.Conflicts {
			hs = append(hs, fmt.Sprintf("%s holds %s until %s (claim %s)", line(c.Actor), strings.Join(linesOf(c.Patterns), ", "), c.ExpiresAt.Format(time.RFC3339), c.ClaimID))
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
