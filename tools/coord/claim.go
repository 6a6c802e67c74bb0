package coord

import (
	"context"
	"fmt"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	bc "github.com/crosscode/crosscode-mcp/bridge/coord"
	"github.com/crosscode/crosscode-mcp/protocol"
	"github.com/crosscode/crosscode-mcp/store"
	"github.com/crosscode/crosscode-mcp/tools"
)

type claimer interface {
	session
	Request(ctx context.Context, r bc.ClaimRequest) (*bc.ClaimResult, error)
}

type claimIn struct {
	Patterns    []string `json:"patterns,omitempty" jsonschema_description:"Repository-relative paths or globs to reserve, e.g. src/game/boss.gd or assets/boss/**. Required unless renewing."`
	Exclusive   *bool    `json:"exclusive,omitempty" jsonschema_description:"Default true: nobody else may claim overlapping paths. false: shared, conflicting only with exclusive claims."`
	Reason      string   `json:"reason,omitempty" jsonschema_description:"Why, in a few words; others see it (the holder too, while you wait)."`
	TTLMinutes  int      `json:"ttlMinutes,omitempty" jsonschema:"minimum=1,maximum=480" jsonschema_description:"Lease length, from the grant. Default 30; renew before it ends."`
	Renew       string   `json:"renewClaimId,omitempty" jsonschema_description:"Renew this active claim of yours (same patterns unless given) for a new lease."`
	WaitSeconds int      `json:"waitSeconds,omitempty" jsonschema:"minimum=0,maximum=3600" jsonschema_description:"Queue for your turn instead of being denied, for up to this long (first come, first served); this call waits up to 50 s of it, a later grant comes in news. 0 (default): answer at once."`
}

type claimOut struct {
	ClaimID string `json:"claimId"`
	// Status pending: queued for a service that is unreachable; see likely.
	Status string `json:"status" jsonschema:"enum=granted,enum=queued,enum=denied,enum=wait_expired,enum=pending,enum=released"`
	// Likely is, for pending claims, what the local copy of the log predicts.
	Likely       string   `json:"likely,omitempty"`
	Patterns     []string `json:"patterns"`
	MorePatterns int      `json:"morePatterns,omitempty"`
	Exclusive    bool     `json:"exclusive"`
	// ExpiresAt is when the lease ends (from the grant); absent while the
	// claim waits.
	ExpiresAt *time.Time `json:"expiresAt,omitempty"`
	// GrantedAt is when a claim that waited was granted.
	GrantedAt *time.Time `json:"grantedAt,omitempty"`
	// WaitUntil is when a queued claim stops waiting; Position is its
	// place in line (1: next).
	WaitUntil *time.Time `json:"waitUntil,omitempty"`
	Position  int        `json:"position,omitempty"`
	// Conflicts are the claims of others that deny this one, or, while it
	// waits, those it waits for (holders, and claims queued ahead); once
	// its wait ended, those that still hold or wait ahead.
	Conflicts     []ClaimView `json:"conflicts"`
	MoreConflicts int         `json:"moreConflicts,omitempty"`
	// Reason says why a claim was denied.
	Reason string `json:"reason,omitempty" jsonschema:"enum=CONFLICT,enum=LIMIT,enum=DEADLOCK"`
	// Cycle is, for a DEADLOCK, who waits for whom.
	Cycle []store.WaitEdge `json:"cycle,omitempty"`
	// Next is what to do now.
	Next  string `json:"next"`
	Write Write  `json:"write"`
	WithNews
}

// Claim is the claim tool.
func Claim(c claimer) tools.Tool {
	return tools.New[claimIn, claimOut](Toolset, "claim", "Claim files",
		"Reserve paths before editing them, so no other agent edits them at once. The first claim in the log wins, for every agent alike; a denial names who holds the paths until when. To wait instead of polling, pass waitSeconds: the claim queues (first come, first served), this call waits up to 50 s, and a later grant reaches you in news. Leases start at the grant: renew with renewClaimId, release when done.",
		tools.Annotations{},
		handlerReq(c, func(ctx context.Context, req mcpgo.CallToolRequest, in claimIn) (*claimOut, error) {
			if in.WaitSeconds < 0 || in.WaitSeconds > int(protocol.MaxClaimWait.Seconds()) {
				return nil, &bc.InputError{Message: fmt.Sprintf("waitSeconds must be a whole number of seconds from 0 to %d (got %d); nothing was claimed", int(protocol.MaxClaimWait.Seconds()), in.WaitSeconds)}
			}
			wait := time.Duration(in.WaitSeconds) * time.Second
			r := bc.ClaimRequest{Patterns: in.Patterns, Exclusive: in.Exclusive == nil || *in.Exclusive, Reason: in.Reason,
				TTL: minutes(in.TTLMinutes), Renew: in.Renew, Wait: wait, CallWait: min(wait, callWaitCap)}
			if send := progressSender(ctx, req); send != nil {
				total := r.CallWait.Seconds()
				r.Progress = func(waited time.Duration, res *bc.ClaimResult) {
					send(waited.Seconds(), total, fmt.Sprintf("%s, position %d in line", res.Status, res.Position))
				}
			}
			res, err := c.Request(ctx, r)
			if err != nil {
				return nil, err
			}
			return claimResult(res), nil
		}))
}

func claimResult(res *bc.ClaimResult) *claimOut {
	out := &claimOut{ClaimID: res.Claim.ID, Status: res.Status, Likely: res.Likely, Exclusive: res.Claim.Exclusive,
		Position: res.Position, Write: write(res.Published)}
	switch res.Status {
	case "granted", "denied", "pending", "released":
		at := res.ExpiresAt
		out.ExpiresAt = &at
	}
	if res.Status == "granted" && res.Waited {
		at := res.GrantedAt
		out.GrantedAt = &at
	}
	if !res.WaitUntil.IsZero() && (res.Status == "queued" || res.Status == "wait_expired") {
		at := res.WaitUntil
		out.WaitUntil = &at
	}
	switch res.Denial {
	case store.DenialConflict:
		out.Reason = "CONFLICT"
	case store.DenialLimit:
		out.Reason = "LIMIT"
	case store.DenialDeadlock:
		out.Reason = "DEADLOCK"
		out.Cycle = res.Cycle
		if len(out.Cycle) > maxListed {
			out.Cycle = out.Cycle[:maxListed]
		}
		for i := range out.Cycle {
			out.Cycle[i].Actor, out.Cycle[i].Holder = line(out.Cycle[i].Actor), line(out.Cycle[i].Holder)
		}
	}
	out.Patterns, out.MorePatterns = tools.Fit(res.Claim.Patterns, patternsBudget)
	out.Conflicts, out.MoreConflicts = tools.Fit(conflictViews(res.Conflicts), claimsBudget)
	out.Next = claimNext(res)
	return out
}

// callWaitCap is how long a claim call waits for its turn at most
// (bc.MaxCallWait; tests shorten it).
var callWaitCap = bc.MaxCallWait

// patternsBudget bounds the patterns a claim's result echoes.
const patternsBudget = 4 << 10

// maxHolders bounds the holders claimNext names.
const maxHolders = 3

func claimNext(res *bc.ClaimResult) string {
	holders := func() string { return bc.HoldersText(res.Conflicts, maxHolders, 3) }
	waitedFor := func() bool {
		for _, c := range res.Conflicts {
			if c.Queued() {
				return true
			}
		}
		return false
	}
	switch {
	case res.Status == "granted" && res.Renewed != "":
		return fmt.Sprintf("Renewed: claim %s replaces %s. Edit away; renew again before %s.", res.Claim.ID, res.Renewed, res.ExpiresAt.Format(time.RFC3339))
	case res.Status == "granted" && res.Waited:
		return fmt.Sprintf("Granted after waiting, at %s: edit these paths now. The lease runs from the grant to %s; renew with renewClaimId=%s if you need longer, release_claim when done.", res.GrantedAt.Format(time.RFC3339), res.ExpiresAt.Format(time.RFC3339), res.Claim.ID)
	case res.Status == "granted":
		return fmt.Sprintf("Edit these paths. Renew with renewClaimId=%s before %s if you need longer; release_claim when done.", res.Claim.ID, res.ExpiresAt.Format(time.RFC3339))
	case res.Status == "queued":
		return fmt.Sprintf("Queued, position %d: %s. Do not edit these paths yet. Work on something else: the grant reaches you in the news of your next tool result (or call claim again later only to check); the wait ends at %s. release_claim %s to stop waiting.",
			res.Position, holders(), res.WaitUntil.Format(time.RFC3339), res.Claim.ID)
	case res.Status == "wait_expired" && len(res.Conflicts) == 0:
		return fmt.Sprintf("Your wait ended at %s before the paths were free; they look free now: claim again.", res.WaitUntil.Format(time.RFC3339))
	case res.Status == "wait_expired":
		return fmt.Sprintf("Your wait ended at %s before the paths were free: %s. Claim again with waitSeconds to queue again (at the back of the line), or work on something else, or ask the holder to hand over (request_handoff).", res.WaitUntil.Format(time.RFC3339), holders())
	case res.Status == "released":
		return "This claim was released (withdrawn) meanwhile; it holds nothing."
	case res.Denial == store.DenialDeadlock:
		return "Denied (DEADLOCK): waiting would close a cycle, so nobody would ever get their turn: " + bc.CycleText(res.Cycle, res.Claim.ActorID) +
			". Release what others wait for (release_claim) or hand it over (request_handoff), then claim again."
	case res.Limit > 0:
		return fmt.Sprintf("Denied: you already hold or wait for %d claims, the most allowed. Release the ones you are done with (release_claim), or claim a wider glob instead of many paths.", res.Limit)
	case res.Status == "denied" && res.Renewed != "" && waitedFor():
		return "Not renewed: others wait for these paths (" + holders() + "), and nobody jumps the line. Your claim " + res.Renewed + " holds until its lease ends: finish and release_claim, or request_handoff."
	case res.Status == "denied" && waitedFor():
		return "Denied: " + holders() + ". Nobody jumps the line. Pass waitSeconds to queue for these paths instead of polling, or work on something else."
	case res.Status == "denied":
		return "Denied: " + holders() + ". Do not edit these paths. To wait for them, claim again with waitSeconds (e.g. 600): you get them when they are free, first come first served, without polling. Or work on something else, or ask the holder to hand over (request_handoff)."
	case res.Likely == "denied" || res.Likely == "queued":
		return "Pending (service unreachable), and likely " + res.Likely + ": " + holders() + ". Do not edit these paths yet; workspace_status shows when the service is back."
	default:
		return "Pending: the service is unreachable; the claim uploads when it is back, and will likely be granted. Prefer waiting for the grant before editing shared paths."
	}
}
