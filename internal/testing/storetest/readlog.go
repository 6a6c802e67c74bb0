package storetest

import (
	"context"
	"testing"

	"github.com/crosscode/crosscode-mcp/protocol"
	"github.com/crosscode/crosscode-mcp/store"
)

// ReadLog opens the SQLite database at dbPath (an MCP server's local
// state) and returns its workspace's log in server order, failing the
// test on an envelope that does not decode or a gap in the sequence.
func ReadLog(t testing.TB, dbPath, workspace string) []*protocol.Envelope {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, dbPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	return PageLog(t, st, workspace)
}

// Pager reads a workspace's log by cursor (both stores, and hub.Store).
type Pager interface {
	Page(ctx context.Context, q store.PageQuery) (*store.PageResult, error)
}

// PageLog returns the whole log of workspace from st in server order,
// failing the test on an envelope that does not decode or a gap in the
// sequence.
func PageLog(t testing.TB, st Pager, workspace string) []*protocol.Envelope {
	t.Helper()
	ctx := context.Background()
	var out []*protocol.Envelope
	for after := int64(0); ; {
		p, err := st.Page(ctx, store.PageQuery{Workspace: workspace, After: after, Limit: store.MaxPageLimit})
		if err != nil {
			t.Fatal(err)
		}
		for _, op := range p.Ops {
			e, err := op.Envelope()
			if err != nil {
				t.Fatal(err)
			}
			if e.ServerSequence != int64(len(out))+1 {
				t.Fatalf("log gap at %d", e.ServerSequence)
			}
			out = append(out, e)
		}
		if !p.HasMore {
			return out
		}
		after = p.NextCursor
	}
}
