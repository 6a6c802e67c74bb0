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

// session is what every coordination tool needs: the caller's identity,
// and the news digest that rides on every result.
type session interface {
	Actor() string
	Touch(ctx context.Context)
	News(ctx context.Context) (*bc.News, error)
}

// WithNews carries the news digest on every coordination result.
type WithNews struct {
	News *bc.News `json:"news"`
}

func (w *WithNews) setNews(n *bc.News) { w.News = n }

type newsCarrier interface{ setNews(*bc.News) }

// handler binds arguments strictly, runs f, attaches the news, and turns
// the errors an agent can act on into tool errors.
func handler[In any, Out any, PO interface {
	*Out
	newsCarrier
}](s session, f func(context.Context, In) (*Out, error)) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		s.Touch(ctx)
		in, err := tools.Bind[In](req)
		if err != nil {
			return tools.Error(err.Error() + "; see the tool's input schema"), nil
		}
		out, err := f(ctx, in)
		if msg, ok := actionable(err); ok {
			return tools.Error(msg), nil
		}
		if err != nil {
			return nil, err
		}
		news, err := s.News(ctx)
		if err != nil {
			return nil, err
		}
		PO(out).setNews(news)
		return tools.Result(out), nil
	}
}

// actionable reports the message of an error the agent can act on.
func actionable(err error) (string, bool) {
	var in *bc.InputError
	var ref *bc.RefusedError
	switch {
	case err == nil:
		return "", false
	case errors.As(err, &in):
		return in.Message, true
	case errors.As(err, &ref):
		return fmt.Sprintf("refused (%s): %s", ref.Code, ref.Message), true
	}
	return "", false
}

// Write tells what happened to an envelope the tool emitted.
type Write struct {
	Status         string     `json:"status" jsonschema:"enum=acknowledged,enum=queued" jsonschema_description:"acknowledged: in the ordered workspace log at serverSequence. queued: committed locally; uploads in order when the service is reachable."`
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
