package dashboard

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"github.com/crosscode/crosscode-mcp/protocol"
	"github.com/crosscode/crosscode-mcp/store"
)

// Denials lists the claims arbitration denied, newest first. The denial
// is a pure function of the log (section 3 of the spec), computed by the
// store's projections, the code every replica runs.
type Denials interface {
	Denied(ctx context.Context, workspace string, limit int) ([]*store.Entity, error)
}

// ProjectedDenials reads denials from a store that keeps projections:
// the local workspace database.
type ProjectedDenials struct{ Store *store.Store }

// Denied lists the denied claims of workspace, newest first.
func (p ProjectedDenials) Denied(ctx context.Context, workspace string, limit int) ([]*store.Entity, error) {
	return p.Store.Entities(ctx, store.EntityQuery{Workspace: workspace, Kind: protocol.KindClaim, Status: []string{store.ClaimDenied}, Limit: limit})
}

// denial is one item of GET /v1/denials.
type denial struct {
	ClaimID        string           `json:"claimId"`
	ActorID        string           `json:"actorId"`
	ServerSequence int64            `json:"serverSequence"`
	IngestedAt     time.Time        `json:"ingestedAt"`
	Claim          *json.RawMessage `json:"claim"`
	Denial         *store.Denial    `json:"denial"`
}

// maxDenials is how many of the newest denials GET /v1/denials returns.
const maxDenials = 500

// denials serves GET /v1/denials: the newest denied claims, each with the
// active claims (or the per-actor limit) that denied it.
func (d *Dashboard) denials(w http.ResponseWriter, r *http.Request, ws string) {
	list, err := d.opts.Denials.Denied(r.Context(), ws, maxDenials)
	if err != nil {
		d.internal(w, "denials", err)
		return
	}
	items := make([]denial, 0, len(list))
	for _, e := range list {
		body := json.RawMessage(e.Body)
		items = append(items, denial{ClaimID: e.ID, ActorID: e.Actor, ServerSequence: e.CreatedSeq, IngestedAt: e.IngestedAt, Claim: &body, Denial: e.Denial()})
	}
	writeJSON(w, http.StatusOK, struct {
		Items []denial `json:"items"`
	}{items})
}

// Pager reads a workspace's log by cursor: the service's database
// (hub.Store has it).
type Pager interface {
	Page(ctx context.Context, q store.PageQuery) (*store.PageResult, error)
}

// MirroredDenials computes denials for the service, whose database keeps
// no projections: it mirrors each workspace's log, on demand, into a
// local SQLite store with projections, through store.Mirror, the code a
// remote replica runs. So the page shows the denials every replica
// computes, and the service's ingest path does no extra work.
type MirroredDenials struct {
	Log    Pager        // the service's database
	Mirror *store.Store // opened with Projections; a cache, rebuilt when lost

	mu sync.Mutex // one catch-up at a time
}

// mirrorCursor names the mirror's cursor of a workspace.
func mirrorCursor(ws string) string { return "dashboard-mirror:" + ws }

// Denied catches the mirror up with the service's log and lists the
// workspace's denied claims, newest first.
func (m *MirroredDenials) Denied(ctx context.Context, workspace string, limit int) ([]*store.Entity, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	name := mirrorCursor(workspace)
	cursor, err := m.Mirror.Cursor(ctx, name)
	if err != nil {
		return nil, err
	}
	for {
		p, err := m.Log.Page(ctx, store.PageQuery{Workspace: workspace, After: cursor, Limit: store.MaxPageLimit})
		if err != nil {
			return nil, err
		}
		if p.TooOld {
			if err := m.Mirror.Resync(ctx, workspace, name, p.ResyncFrom); err != nil {
				return nil, err
			}
			cursor = p.ResyncFrom
			continue
		}
		if len(p.Ops) > 0 {
			envs := make([]*protocol.Envelope, 0, len(p.Ops))
			for i := range p.Ops {
				e, err := p.Ops[i].Envelope()
				if err != nil {
					return nil, err
				}
				envs = append(envs, e)
			}
			if err := m.Mirror.Mirror(ctx, workspace, envs, name, p.NextCursor); err != nil {
				return nil, err
			}
		}
		cursor = p.NextCursor
		if !p.HasMore {
			break
		}
	}
	if cursor == 0 {
		return nil, nil // nothing logged yet: the mirror has no such workspace
	}
	return m.Mirror.Entities(ctx, store.EntityQuery{Workspace: workspace, Kind: protocol.KindClaim, Status: []string{store.ClaimDenied}, Limit: limit})
}
