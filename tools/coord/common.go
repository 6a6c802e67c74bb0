// Package coord holds the coordination tools: one file per tool, each a
// constructor over the small interface it needs from the coordination
// client (bridge/coord).
package coord

import (
	"context"
	"errors"
	"fmt"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	bc "github.com/crosscode/crosscode-mcp/bridge/coord"
	"github.com/crosscode/crosscode-mcp/internal/sanitize"
	"github.com/crosscode/crosscode-mcp/tools"
)

// Toolset is the name of this toolset (--toolsets coord).
const Toolset = "coord"

// session is what every coordination tool needs: who makes the call (the
// session's identity, or over HTTP the calling session's), and the news
// digest that rides on every result.
type session interface {
	Me(ctx context.Context) bc.Me
	News(ctx context.Context) (*bc.News, error)
}

// WithNews carries the news digest on every coordination result.
type WithNews struct {
	News *bc.News `json:"news"`
}

func (w *WithNews) setNews(n *bc.News) { w.News = n }

// Shrink drops the digest's items (counting them in more) from a result
// that would be too large; see tools.Shrinker.
func (w *WithNews) Shrink() bool {
	if w.News == nil || len(w.News.Items) == 0 {
		return false
	}
	w.News.More += len(w.News.Items)
	w.News.Items = []bc.NewsItem{}
	return true
}

type newsCarrier interface{ setNews(*bc.News) }

// handler is tools.Handler with the news digest attached to the result.
func handler[In any, Out any, PO interface {
	*Out
	newsCarrier
}](s session, f func(context.Context, In) (*Out, error)) server.ToolHandlerFunc {
	return handlerReq[In, Out, PO](s, func(ctx context.Context, _ mcpgo.CallToolRequest, in In) (*Out, error) { return f(ctx, in) })
}

// handlerReq is handler for a tool that reads its request (its progress
// token).
func handlerReq[In any, Out any, PO interface {
	*Out
	newsCarrier
}](s session, f func(context.Context, mcpgo.CallToolRequest, In) (*Out, error)) server.ToolHandlerFunc {
	return tools.Handler(actionable, func(ctx context.Context, req mcpgo.CallToolRequest, in In) (*Out, error) {
		out, err := f(ctx, req, in)
		if err != nil {
			return nil, err
		}
		// A call whose wait was cancelled still answers with what it did.
		news, err := s.News(context.WithoutCancel(ctx))
		if err != nil {
			return nil, err
		}
		PO(out).setNews(news)
		return out, nil
	})
}

// actionable reports the message of an error the agent can act on.
func actionable(err error) (string, bool) {
	var in *bc.InputError
	var ref *bc.RefusedError
	switch {
	case errors.As(err, &in):
		return in.Message, true
	case errors.As(err, &ref):
		return fmt.Sprintf("refused (%s): %s", ref.Code, ref.Message), true
	}
	return "", false
}

// Write tells what happened to an envelope the tool emitted.
type Write struct {
	// Status: acknowledged (in the ordered workspace log at
	// serverSequence) or queued (committed locally; uploads in order when
	// the service is reachable).
	Status         string     `json:"status" jsonschema:"enum=acknowledged,enum=queued"`
	ServerSequence int64      `json:"serverSequence,omitempty"`
	IngestedAt     *time.Time `json:"ingestedAt,omitempty"`
}

func write(p *bc.Published) Write {
	if p == nil {
		return Write{}
	}
	if !p.Acknowledged {
		return Write{Status: "queued"}
	}
	at := p.IngestedAt
	return Write{Status: "acknowledged", ServerSequence: p.ServerSequence, IngestedAt: &at}
}

// text caps and sanitizes text written by other agents.
func text(s string) string { return sanitize.Text(s, 2000) }

// line caps and sanitizes a one-line value written by other agents.
func line(s string) string { return sanitize.Line(s, 200) }

func minutes(m int) time.Duration { return time.Duration(m) * time.Minute }

// progressSender returns a function that sends an MCP progress
// notification for the call, or nil when the call asked for none.
func progressSender(ctx context.Context, req mcpgo.CallToolRequest) func(progress, total float64, message string) {
	if req.Params.Meta == nil || req.Params.Meta.ProgressToken == nil {
		return nil
	}
	srv := server.ServerFromContext(ctx)
	if srv == nil {
		return nil
	}
	token := req.Params.Meta.ProgressToken
	return func(progress, total float64, message string) {
		_ = srv.SendNotificationToClient(ctx, "notifications/progress", map[string]any{
			"progressToken": token, "progress": progress, "total": total, "message": message,
		})
	}
}
