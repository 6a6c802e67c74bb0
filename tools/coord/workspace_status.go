package coord

import (
	"context"
	"encoding/json"
	"time"

	bc "github.com/crosscode/crosscode-mcp/bridge/coord"
	"github.com/crosscode/crosscode-mcp/protocol"
	"github.com/crosscode/crosscode-mcp/tools"
)

type statusSource interface {
	session
	Workspace() string
	Mode() string
	Agent(ctx context.Context) protocol.Agent
	Status(ctx context.Context) (*bc.Status, error)
	Wake() bc.WakeState
}

type workspaceStatusIn struct{}

type workspaceStatusOut struct {
	Workspace string `json:"workspace"`
	// Mode local: agents on this machine share one database; remote: a
	// coordination service.
	Mode    string        `json:"mode" jsonschema:"enum=local,enum=remote"`
	You     Identity      `json:"you"`
	Service *ServiceState `json:"service,omitempty"`
	// Head is the newest serverSequence known here.
	Head           int64         `json:"head"`
	YourClaims     []ClaimView   `json:"yourClaims"`
	MoreYourClaims int           `json:"moreYourClaims,omitempty"`
	OthersClaims   int           `json:"othersActiveClaims"`
	OpenTasks      int           `json:"openTasks"`
	HandoffsForYou []HandoffView `json:"handoffsForYou"`
	MoreHandoffs   int           `json:"moreHandoffs,omitempty"`
	Online         []Presence    `json:"online,omitempty"`
	MoreOnline     int           `json:"moreOnline,omitempty"`
	Wake           Wake          `json:"wake"`
	WithNews
}

// Wake says whether news that needs you starts a new turn while you idle.
type Wake struct {
	Can bool   `json:"can"`
	How string `json:"how"`
}

// Identity is who this session acts as.
type Identity struct {
	Actor            string `json:"actor"`
	Replica          string `json:"replica"`
	Provider         string `json:"provider"`
	SessionReference string `json:"sessionReference,omitempty"`
}

// ServiceState is the remote service's reachability and the outbox.
type ServiceState struct {
	URL       string `json:"url"`
	Connected bool   `json:"connected"`
	// Live: subscribed to live updates.
	Live           bool   `json:"live"`
	PendingUploads int    `json:"pendingUploads"`
	RefusedUploads int    `json:"refusedUploads"`
	LastError      string `json:"lastError,omitempty"`
}

// Presence is another session's presence.
type Presence struct {
	Actor    string    `json:"actor"`
	Provider string    `json:"provider,omitempty"`
	Status   string    `json:"status"`
	Since    time.Time `json:"since"`
}

// WorkspaceStatus is the workspace_status tool.
func WorkspaceStatus(c statusSource) tools.Tool {
	return tools.New[workspaceStatusIn, workspaceStatusOut](Toolset, "workspace_status", "Workspace status",
		"Start here. Who you are, your claims (held, with who waits for each, or waiting your turn), handoffs for you, open tasks, who is online, and whether the service is reachable.",
		tools.Annotations{ReadOnly: true, Idempotent: true},
		handler(c, func(ctx context.Context, _ workspaceStatusIn) (*workspaceStatusOut, error) {
			st, err := c.Status(ctx)
			if err != nil {
				return nil, err
			}
			a, me := c.Agent(ctx), c.Me(ctx)
			out := &workspaceStatusOut{
				Workspace: c.Workspace(), Mode: c.Mode(), Head: st.Head, OthersClaims: st.OthersClaims, OpenTasks: st.OpenTasks,
				You:        Identity{Actor: me.Actor, Replica: me.Replica, Provider: string(a.Provider), SessionReference: a.SessionReference},
				YourClaims: []ClaimView{}, HandoffsForYou: []HandoffView{},
				Wake: Wake(c.Wake()),
			}
			if out.Mode == "remote" {
				out.Service = &ServiceState{URL: st.Service, Connected: st.Connected, Live: st.Live, PendingUploads: st.Pending, RefusedUploads: st.Refused, LastError: line(st.LastError)}
			}
			now := time.Now()
			for _, e := range st.MyClaims {
				out.YourClaims = append(out.YourClaims, claimView(e, now, st.Queues[e.ID]))
			}
			out.YourClaims, out.MoreYourClaims = tools.Fit(out.YourClaims, claimsBudget)
			for i, e := range st.HandoffsToMe {
				if i == 10 {
					break // the rest show in read_feed; the result stays small
				}
				var h protocol.Handoff
				if json.Unmarshal(e.Body, &h) == nil {
					out.HandoffsForYou = append(out.HandoffsForYou, handoffView(&h, true))
				}
			}
			out.HandoffsForYou, _ = tools.Fit(out.HandoffsForYou, handoffsBudget)
			out.MoreHandoffs = len(st.HandoffsToMe) - len(out.HandoffsForYou)
			for _, p := range st.Presence {
				if p.Status == protocol.PresenceOffline {
					continue
				}
				pr := Presence{Actor: line(p.ActorID), Status: string(p.Status), Since: p.UpdatedAt}
				if p.Agent != nil {
					pr.Provider = string(p.Agent.Provider)
				}
				out.Online = append(out.Online, pr)
			}
			out.Online, out.MoreOnline = tools.Fit(out.Online, onlineBudget)
			return out, nil
		}))
}
