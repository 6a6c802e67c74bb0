package coord

import (
	"context"
	"errors"

	bc "github.com/crosscode/crosscode-mcp/bridge/coord"
	"github.com/crosscode/crosscode-mcp/internal/gitx"
	"github.com/crosscode/crosscode-mcp/protocol"
	"github.com/crosscode/crosscode-mcp/tools"
)

// ChangeReader reads the working tree's changes.
type ChangeReader interface {
	Changes(ctx context.Context, maxPatch int) (*gitx.Changes, error)
}

type changeSharer interface {
	session
	ShareChanges(ctx context.Context, tr protocol.ChangeTransaction) (*bc.Published, *protocol.ChangeTransaction, error)
}

type shareChangesIn struct {
	Summary      string `json:"summary" jsonschema_description:"What the changes do."`
	IncludePatch *bool  `json:"includePatch,omitempty" jsonschema_description:"Attach the unified diff (at most 256 KiB). Default true."`
}

type shareChangesOut struct {
	TransactionID string `json:"transactionId"`
	BaseCommit    string `json:"baseCommit"`
	Branch        string `json:"branch,omitempty"`
	Files         int    `json:"files"`
	Additions     int64  `json:"additions"`
	Deletions     int64  `json:"deletions"`
	PatchBytes    int    `json:"patchBytes"`
	Truncated     bool   `json:"truncated,omitempty"` // the diff was cut at 256 KiB
	Write         Write  `json:"write"`
	WithNews
}

// ShareChanges is the share_changes tool.
func ShareChanges(c changeSharer, repo ChangeReader) tools.Tool {
	return tools.New[shareChangesIn, shareChangesOut](Toolset, "share_changes", "Share changes",
		"Publish your uncommitted changes (from git: files, line counts, the diff) so other agents see them before you commit or push.",
		tools.Annotations{},
		handler(c, func(ctx context.Context, in shareChangesIn) (*shareChangesOut, error) {
			if repo == nil {
				return nil, &bc.InputError{Message: "share_changes reads a git working tree, and this server has none: run crosscode-mcp inside your checkout (or pass --repo); connected to the service by URL, push a branch instead and name it in request_handoff"}
			}
			ch, err := repo.Changes(ctx, protocol.MaxPatchBytes)
			if errors.Is(err, gitx.ErrNotRepo) {
				return nil, &bc.InputError{Message: "share_changes needs a git repository"}
			}
			if err != nil {
				return nil, err
			}
			tr := protocol.ChangeTransaction{Summary: in.Summary, BaseCommit: ch.BaseCommit, Branch: ch.Branch, Files: []protocol.FileChange{}}
			out := &shareChangesOut{BaseCommit: ch.BaseCommit, Branch: ch.Branch, Truncated: ch.Truncated}
			for _, f := range ch.Files {
				tr.Files = append(tr.Files, protocol.FileChange{Path: f.Path, Status: f.Status, Additions: f.Additions, Deletions: f.Deletions})
				out.Additions += f.Additions
				out.Deletions += f.Deletions
			}
			if in.IncludePatch == nil || *in.IncludePatch {
				tr.Patch = ch.Patch
			}
			pub, t, err := c.ShareChanges(ctx, tr)
			if err != nil {
				return nil, err
			}
			out.TransactionID, out.Files, out.PatchBytes, out.Write = t.ID, len(t.Files), len(t.Patch), write(pub)
			if out.BaseCommit == "" {
				out.BaseCommit = t.BaseCommit
			}
			return out, nil
		}))
}
