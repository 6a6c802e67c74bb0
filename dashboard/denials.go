package dashboard

import (
	"context"
	"encoding/json"
	"net/http"
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
