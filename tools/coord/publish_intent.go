package coord

import (
	"context"
	"time"

	bc "github.com/crosscode/crosscode-mcp/bridge/coord"
	"github.com/crosscode/crosscode-mcp/tools"
)

type intentPublisher interface {
	session
	PublishIntent(ctx context.Context, summary string, paths []string, taskID string, ttl time.Duration) (*bc.Published, error)
	CheckConflicts(ctx context.Context, paths []string) (*bc.Conflicts, error)
}

type publishIntentIn struct {
	Summary    string   `json:"summary" jsonschema_description:"One line: what you are about to do."`
	Paths      []string `json:"paths" jsonschema:"minItems=1" jsonschema_description:"Paths or globs you expect to touch (dir/** for a directory)."`
	TaskID     string   `json:"taskId,omitempty"`
	TTLMinutes int      `json:"ttlMinutes,omitempty" jsonschema:"minimum=1,maximum=1440" jsonschema_description:"How long the intent stands. Default 120."`
}

type publishIntentOut struct {
	IntentID  string    `json:"intentId"`
	ExpiresAt time.Time `json:"expiresAt"`
	Write     Write     `json:"write"`
	// Overlaps are others' active claims and intents on the same paths:
	// coordinate before editing.
	Overlaps Overlaps `json:"overlaps"`
	WithNews
}

// Overlaps are others' claims and intents overlapping some paths.
type Overlaps struct {
	Claims      []ClaimView  `json:"claims"`
	MoreClaims  int          `json:"moreClaims,omitempty"`
	Intents     []IntentView `json:"intents"`
	MoreIntents int          `json:"moreIntents,omitempty"`
}

// PublishIntent is the publish_intent tool.
func PublishIntent(c intentPublisher) tools.Tool {
	return tools.New[publishIntentIn, publishIntentOut](Toolset, "publish_intent", "Publish intent",
		"Tell the other agents what you are about to work on, before you start. Cheap, non-blocking (claim reserves files); answers others' claims and intents on those paths.",
		tools.Annotations{},
		handler(c, func(ctx context.Context, in publishIntentIn) (*publishIntentOut, error) {
			// Others' overlaps do not depend on this write: read them meanwhile.
			var ov *bc.Conflicts
			var ovErr error
			wait := bc.Beside(func() { ov, ovErr = c.CheckConflicts(ctx, in.Paths) })
			pub, err := c.PublishIntent(ctx, in.Summary, in.Paths, in.TaskID, minutes(in.TTLMinutes))
			wait()
			if err != nil {
				return nil, err
			}
			if ovErr != nil {
				return nil, ovErr
			}
			intent := pub.Envelope.Intent()
			out := &publishIntentOut{IntentID: intent.ID, Write: write(pub)}
			out.Overlaps.Claims, out.Overlaps.MoreClaims = tools.Fit(conflictViews(ov.Claims), claimsBudget)
			out.Overlaps.Intents, out.Overlaps.MoreIntents = tools.Fit(intentViews(ov.Intents), intentsBudget)
			if intent.ExpiresAt != nil {
				out.ExpiresAt = *intent.ExpiresAt
			}
			return out, nil
		}))
}
