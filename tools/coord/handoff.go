package coord

import (
	"context"

	bc "github.com/crosscode/crosscode-mcp/bridge/coord"
	"github.com/crosscode/crosscode-mcp/protocol"
	"github.com/crosscode/crosscode-mcp/tools"
)

// Repo is what the tools read from the git repository.
type Repo interface {
	Head(ctx context.Context) (commit, branch string, err error)
}

type handoffRequester interface {
	session
	RequestHandoff(ctx context.Context, to, summary, notes, taskID string, claimIDs []string, branch, commit string) (*bc.Published, *protocol.Handoff, error)
}

type requestHandoffIn struct {
	To       string   `json:"toActor,omitempty" jsonschema_description:"Who should take over (an actorId, usually an email). Empty: anyone may accept."`
	Summary  string   `json:"summary" jsonschema_description:"What is done and what is left."`
	Notes    string   `json:"notes,omitempty" jsonschema_description:"Details the next agent needs: how to test, pitfalls."`
	TaskID   string   `json:"taskId,omitempty"`
	ClaimIDs []string `json:"claimIds,omitempty" jsonschema_description:"Your claims that move when they accept. Default: all your active claims; [] for none."`
}

type requestHandoffOut struct {
	Handoff HandoffView `json:"handoff"`
	Write   Write       `json:"write"`
	WithNews
}

// RequestHandoff is the request_handoff tool.
func RequestHandoff(c handoffRequester, repo Repo) tools.Tool {
	return tools.New[requestHandoffIn, requestHandoffOut](Toolset, "request_handoff", "Request handoff",
		"Hand your work and claims to another agent: they see it in their news and accept or decline with respond_handoff. Records your branch and commit.",
		tools.Annotations{},
		handler(c, func(ctx context.Context, in requestHandoffIn) (*requestHandoffOut, error) {
			var commit, branch string
			if repo != nil {
				commit, branch, _ = repo.Head(ctx)
			}
			pub, h, err := c.RequestHandoff(ctx, in.To, in.Summary, in.Notes, in.TaskID, in.ClaimIDs, branch, commit)
			if err != nil {
				return nil, err
			}
			return &requestHandoffOut{Handoff: handoffView(h, false), Write: write(pub)}, nil
		}))
}

type handoffResponder interface {
	session
	RespondHandoff(ctx context.Context, id string, status protocol.HandoffStatus, note string) (*bc.Published, *protocol.Handoff, error)
}

type respondHandoffIn struct {
	HandoffID string `json:"handoffId"`
	Response  string `json:"response" jsonschema:"enum=accept,enum=decline,enum=withdraw" jsonschema_description:"accept or decline a handoff to you; withdraw one of yours."`
	Note      string `json:"note,omitempty"`
}

type respondHandoffOut struct {
	Handoff HandoffView `json:"handoff"`
	Next    string      `json:"next"`
	Write   Write       `json:"write"`
	WithNews
}

// RespondHandoff is the respond_handoff tool.
func RespondHandoff(c handoffResponder) tools.Tool {
	return tools.New[respondHandoffIn, respondHandoffOut](Toolset, "respond_handoff", "Respond to handoff",
		"Accept or decline a handoff addressed to you (accepting moves its claims to you), or withdraw your own.",
		tools.Annotations{},
		handler(c, func(ctx context.Context, in respondHandoffIn) (*respondHandoffOut, error) {
			status, ok := map[string]protocol.HandoffStatus{"accept": protocol.HandoffAccepted, "decline": protocol.HandoffDeclined, "withdraw": protocol.HandoffWithdrawn}[in.Response]
			if !ok {
				return nil, &bc.InputError{Message: "response must be accept, decline or withdraw"}
			}
			pub, h, err := c.RespondHandoff(ctx, in.HandoffID, status, in.Note)
			if err != nil {
				return nil, err
			}
			next := "Done."
			if status == protocol.HandoffAccepted {
				next = "The claims listed are yours now: check out the branch and commit, read the notes, and continue."
				if h.Branch != "" {
					next += " Branch: " + line(h.Branch) + "."
				}
			}
			return &respondHandoffOut{Handoff: handoffView(h, false), Next: next, Write: write(pub)}, nil
		}))
}
