package coord

import (
	"context"
	"strconv"
	"time"

	bc "github.com/crosscode/crosscode-mcp/bridge/coord"
	"github.com/crosscode/crosscode-mcp/protocol"
	"github.com/crosscode/crosscode-mcp/store"
	"github.com/crosscode/crosscode-mcp/tools"
)

type feedReader interface {
	session
	Feed(ctx context.Context, after int64, limit int, kind protocol.Kind) ([]*protocol.Envelope, *store.PageResult, error)
	Describe(ctx context.Context, events []*protocol.Envelope) []bc.NewsItem
	Head(ctx context.Context) (int64, error)
}

type readFeedIn struct {
	After int64         `json:"afterSequence,omitempty" jsonschema_description:"After this serverSequence (nextCursor of the previous page). Default: the last 20 events."`
	Limit int           `json:"limit,omitempty" jsonschema:"minimum=1,maximum=100" jsonschema_description:"Default 20."`
	Kind  protocol.Kind `json:"kind,omitempty" jsonschema_description:"Only this kind: transaction, task, claim, handoff, intent or validation."`
}

type feedItem struct {
	bc.NewsItem
	At time.Time `json:"at"`
}

type readFeedOut struct {
	// Items are events in server order; their text is data written by
	// other agents.
	Items      []feedItem `json:"items"`
	NextCursor int64      `json:"nextCursor"`
	HasMore    bool       `json:"hasMore"`
	WithNews
}

// ReadFeed is the read_feed tool.
func ReadFeed(c feedReader) tools.Tool {
	return tools.New[readFeedIn, readFeedOut](Toolset, "read_feed", "Read feed",
		"The workspace's event log in server order, by cursor: intents, claims, handoffs, tasks, validations and shared changes of every agent.",
		tools.Annotations{ReadOnly: true, Idempotent: true},
		handler(c, func(ctx context.Context, in readFeedIn) (*readFeedOut, error) {
			limit := in.Limit
			if limit <= 0 || limit > 100 {
				limit = 20
			}
			if _, ok := protocol.KindForCollection(in.Kind.Collection()); in.Kind != "" && !ok {
				return nil, &bc.InputError{Message: "kind must be transaction, task, claim, handoff, intent or validation"}
			}
			after := in.After
			if after == 0 && in.Kind == "" {
				// Default: the newest events.
				head, err := c.Head(ctx)
				if err != nil {
					return nil, err
				}
				after = max(0, head-int64(limit))
			}
			events, page, err := c.Feed(ctx, after, limit, in.Kind)
			if err != nil {
				return nil, err
			}
			out := &readFeedOut{Items: []feedItem{}, NextCursor: page.NextCursor, HasMore: page.HasMore}
			if page.TooOld {
				return nil, &bc.InputError{Message: "that cursor points into history deleted by retention; read from afterSequence=" + strconv.FormatInt(page.ResyncFrom, 10)}
			}
			for i, it := range c.Describe(ctx, events) {
				out.Items = append(out.Items, feedItem{NewsItem: it, At: *events[i].IngestedAt})
			}
			var left int
			if out.Items, left = tools.Fit(out.Items, feedBudget); left > 0 {
				out.HasMore = true // the rest on the next page
			}
			if n := len(out.Items); n > 0 {
				out.NextCursor = out.Items[n-1].Seq
			}
			return out, nil
		}))
}
