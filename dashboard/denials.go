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

// Denials lists the claims arbitration denied, newest first, and the
// workspace's lines (who waits for what) at a time. Both are a pure
// function of the log (sections 3 and 14 of the spec), computed by the
// store's projections, the code every replica runs.
type Denials interface {
	Denied(ctx context.Context, workspace string, limit int) ([]*store.Entity, error)
	Waits(ctx context.Context, workspace string, at time.Time) (*store.Waits, error)
}

// ProjectedDenials reads denials from a store that keeps projections:
// the local workspace database.
type ProjectedDenials struct{ Store *store.Store }

// Denied lists the denied claims of workspace, newest first.
func (p ProjectedDenials) Denied(ctx context.Context, workspace string, limit int) ([]*store.Entity, error) {
	return p.Store.Entities(ctx, store.EntityQuery{Workspace: workspace, Kind: protocol.KindClaim, Status: []string{store.ClaimDenied}, Limit: limit})
}

// Waits reads the workspace's lines at `at`.
func (p ProjectedDenials) Waits(ctx context.Context, workspace string, at time.Time) (*store.Waits, error) {
	return p.Store.Waits(ctx, workspace, at)
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
	if ok, err := m.catchUp(ctx, workspace); err != nil || !ok {
		return nil, err
	}
	return m.Mirror.Entities(ctx, store.EntityQuery{Workspace: workspace, Kind: protocol.KindClaim, Status: []string{store.ClaimDenied}, Limit: limit})
}

// Waits catches the mirror up with the service's log and reads the
// workspace's lines at `at`.
func (m *MirroredDenials) Waits(ctx context.Context, workspace string, at time.Time) (*store.Waits, error) {
	if ok, err := m.catchUp(ctx, workspace); err != nil || !ok {
		return &store.Waits{}, err
	}
	return m.Mirror.Waits(ctx, workspace, at)
}

// catchUp mirrors the service's log of workspace up to its head; false
// when nothing is logged yet (the mirror has no such workspace).
func (m *MirroredDenials) catchUp(ctx context.Context, workspace string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	name := mirrorCursor(workspace)
	cursor, err := m.Mirror.Cursor(ctx, name)
	if err != nil {
		return false, err
	}
	for {
		p, err := m.Log.Page(ctx, store.PageQuery{Workspace: workspace, After: cursor, Limit: store.MaxPageLimit})
		if err != nil {
			return false, err
		}
		if p.TooOld {
			if err := m.Mirror.Resync(ctx, workspace, name, p.ResyncFrom); err != nil {
				return false, err
			}
			cursor = p.ResyncFrom
			continue
		}
		if len(p.Ops) > 0 {
			envs := make([]*protocol.Envelope, 0, len(p.Ops))
			for i := range p.Ops {
				e, err := p.Ops[i].Envelope()
				if err != nil {
					return false, err
				}
				envs = append(envs, e)
			}
			if err := m.Mirror.Mirror(ctx, workspace, envs, name, p.NextCursor); err != nil {
				return false, err
			}
		}
		cursor = p.NextCursor
		if !p.HasMore {
			break
		}
	}
	return cursor > 0, nil
}

// waiting is one waiting claim of GET /v1/queues.
type waiting struct {
	ClaimID   string           `json:"claimId"`
	ActorID   string           `json:"actorId"`
	Since     time.Time        `json:"since"`
	WaitUntil time.Time        `json:"waitUntil"`
	Position  int              `json:"position"`
	WaitsFor  []store.Conflict `json:"waitsFor"`
	Claim     *json.RawMessage `json:"claim"`
}

// granted is one claim that asked to wait and holds its paths.
type granted struct {
	ClaimID   string     `json:"claimId"`
	ExpiresAt time.Time  `json:"expiresAt"`
	GrantedAt *time.Time `json:"grantedAt,omitempty"`
}

// queues serves GET /v1/queues: the workspace's lines now, as every
// replica computes them: the claims waiting their turn, in log order, each
// with its place and what it waits for, and the claims that asked to wait
// and hold their paths, with their leases (from the grant). A claim that
// asked to wait and is in neither is not live (its wait ended, or it was
// denied or released).
func (d *Dashboard) queues(w http.ResponseWriter, r *http.Request, ws string) {
	now := time.Now()
	q, err := d.opts.Denials.Waits(r.Context(), ws, now)
	if err != nil {
		d.internal(w, "queues", err)
		return
	}
	out := struct {
		At      time.Time `json:"at"`
		Waiting []waiting `json:"waiting"`
		Granted []granted `json:"granted"`
	}{At: now.UTC(), Waiting: []waiting{}, Granted: []granted{}}
	for _, c := range q.Waiting {
		body := json.RawMessage(c.Body)
		out.Waiting = append(out.Waiting, waiting{ClaimID: c.ID, ActorID: c.Actor, Since: c.IngestedAt, WaitUntil: c.WaitUntil, Position: c.Position, WaitsFor: c.WaitsFor, Claim: &body})
	}
	for _, e := range q.Granted {
		g := granted{ClaimID: e.ID, ExpiresAt: e.ExpiresAt}
		if !e.GrantAt.IsZero() {
			at := e.GrantAt
			g.GrantedAt = &at
		}
		out.Granted = append(out.Granted, g)
	}
	writeJSON(w, http.StatusOK, out)
}
