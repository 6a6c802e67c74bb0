package coord

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/invopop/jsonschema"

	"github.com/crosscode/crosscode-mcp/internal/sanitize"
	"github.com/crosscode/crosscode-mcp/protocol"
	"github.com/crosscode/crosscode-mcp/store"
)

// News is what other agents did since this session's previous tool call.
type News struct {
	// Items are the most relevant events, those addressed to this actor
	// first; text in them was written by other agents and is data.
	Items []NewsItem `json:"items"`
	// More counts events not shown; read_feed lists them.
	More int `json:"more,omitempty"`
	// Notices are things this session must know once (a resync, a refused upload).
	Notices []string `json:"notices,omitempty"`
	// Through is the log position the news covers.
	Through int64 `json:"through"`
}

// JSONSchema keeps News's schema short: it rides on every tool's output
// schema, and tools/list is read into the agent's context.
func (News) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{Type: "object", Description: "{items:[{seq,event,id,actor,provider,text,forYou}],more,notices,through}"}
}

// NewsItem is one event, summarized.
type NewsItem struct {
	Seq      int64  `json:"seq"`
	Event    string `json:"event"`
	ID       string `json:"id"`
	Actor    string `json:"actor"`
	Provider string `json:"provider,omitempty"`
	Text     string `json:"text"`
	ForYou   bool   `json:"forYou,omitempty"`
}

// Limits of the news digest: it rides on every tool result.
const (
	newsItems   = 8
	newsScan    = 500
	newsTextMax = 200
)

// News returns the digest of what others did since the previous call and
// moves the session's news position to the log's head.
func (c *Coordinator) News(ctx context.Context) (*News, error) {
	c.mu.Lock()
	from := c.newsFrom
	c.mu.Unlock()
	n := &News{Items: []NewsItem{}, Notices: c.takeNotices(), Through: from}
	page, err := c.st.Page(ctx, store.PageQuery{Workspace: c.cfg.Workspace, After: from, Limit: newsScan})
	if err != nil {
		return n, err
	}
	if page.TooOld {
		from = page.ResyncFrom
		if page, err = c.st.Page(ctx, store.PageQuery{Workspace: c.cfg.Workspace, After: from, Limit: newsScan}); err != nil {
			return n, err
		}
	}
	var items []NewsItem
	for _, op := range page.Ops {
		e, err := op.Envelope()
		if err != nil {
			continue
		}
		if e.ReplicaID == c.cfg.Replica && e.SessionID == c.cfg.Session {
			continue // this session's own doing
		}
		items = append(items, c.describe(ctx, e))
	}
	n.Through = page.NextCursor
	if page.HasMore {
		// Skip the rest: the digest is a glance, read_feed has it all.
		if head, err := c.st.Head(ctx, c.cfg.Workspace); err == nil {
			n.More += int(head - page.NextCursor)
			n.Through = head
		}
	}
	// Addressed to this actor first, then the newest.
	sort.SliceStable(items, func(i, j int) bool {
		if items[i].ForYou != items[j].ForYou {
			return items[i].ForYou
		}
		return items[i].Seq > items[j].Seq
	})
	if len(items) > newsItems {
		n.More += len(items) - newsItems
		items = items[:newsItems]
	}
	sort.SliceStable(items, func(i, j int) bool { return items[i].Seq < items[j].Seq })
	n.Items = append(n.Items, items...)
	c.mu.Lock()
	if n.Through > c.newsFrom {
		c.newsFrom = n.Through
	}
	c.mu.Unlock()
	return n, nil
}

// describe summarizes one event in a line, with other agents' text sanitized.
func (c *Coordinator) describe(ctx context.Context, e *protocol.Envelope) NewsItem {
	it := NewsItem{Seq: e.ServerSequence, Event: string(e.Type), ID: e.ID, Actor: sanitize.Line(e.ActorID, 120)}
	if e.Agent != nil {
		it.Provider = string(e.Agent.Provider)
	}
	line := func(s string) string { return sanitize.Line(s, newsTextMax) }
	me := c.cfg.Actor
	switch p := e.Payload.(type) {
	case *protocol.Intent:
		it.Text = fmt.Sprintf("intends to %s (%s)", line(p.Summary), line(strings.Join(p.Paths, ", ")))
	case *protocol.Claim:
		if e.Type == protocol.EventClaimReleased {
			it.Text = fmt.Sprintf("released %s", line(strings.Join(p.Patterns, ", ")))
			break
		}
		status := "pending"
		if ent, err := c.st.Entity(ctx, c.cfg.Workspace, protocol.KindClaim, e.ID); err == nil {
			status = ent.Current(c.now())
		}
		kind := "shared"
		if p.Exclusive {
			kind = "exclusive"
		}
		it.Text = fmt.Sprintf("claimed %s (%s, %s until %s): %s", line(strings.Join(p.Patterns, ", ")), kind, status, p.ExpiresAt.Format(time.Kitchen), line(p.Reason))
	case *protocol.Handoff:
		if e.Type == protocol.EventHandoffRequested {
			it.ForYou = p.ToActorID == me || (p.ToActorID == "" && p.FromActorID != me)
		} else {
			it.ForYou = p.FromActorID == me // the answer to my request
		}
		if e.Type == protocol.EventHandoffRequested {
			to := p.ToActorID
			if to == "" {
				to = "anyone"
			}
			it.Text = fmt.Sprintf("asks %s to take over (%d claims): %s", sanitize.Line(to, 120), len(p.ClaimIDs), line(p.Summary))
		} else {
			it.Text = fmt.Sprintf("%s handoff %s: %s", p.Status, p.ID, line(p.ResponseNote))
		}
	case *protocol.Task:
		it.ForYou = p.AssigneeActorID == me
		verb := "created"
		if e.Type == protocol.EventTaskUpdated {
			verb = "updated"
		}
		it.Text = fmt.Sprintf("%s task %q [%s]", verb, line(p.Title), p.Status)
		if p.AssigneeActorID != "" {
			it.Text += " assigned to " + sanitize.Line(p.AssigneeActorID, 120)
		}
	case *protocol.Validation:
		it.Text = fmt.Sprintf("%s %s %s: %s", p.Kind, line(p.Name), p.Status, line(p.Summary))
	case *protocol.ChangeTransaction:
		it.Text = fmt.Sprintf("shared changes to %d files: %s", len(p.Files), line(p.Summary))
	}
	it.Text = sanitize.Line(it.Text, newsTextMax*2)
	return it
}
