package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/crosscode/crosscode-mcp/protocol"
)

// SetPresence records a replica's presence and returns it as the fan-out
// frame data.
func (s *Store) SetPresence(ctx context.Context, workspace string, p *protocol.PresenceUpdate) (*protocol.RemotePresence, error) {
	ws, err := s.workspaceID(ctx, s.w, workspace)
	if err != nil {
		return nil, fmt.Errorf("set presence: %w", err)
	}
	agent, err := AgentJSON(p.Agent)
	if err != nil {
		return nil, fmt.Errorf("set presence: %w", err)
	}
	now := time.Now()
	_, err = s.w.ExecContext(ctx, `INSERT INTO presence (ws, replica, actor, session, agent, status, updated_us) VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (ws, replica) DO UPDATE SET actor = excluded.actor, session = excluded.session, agent = excluded.agent, status = excluded.status, updated_us = excluded.updated_us`,
		ws, p.ReplicaID, p.ActorID, p.SessionID, agent, string(p.Status), micros(now))
	if err != nil {
		return nil, fmt.Errorf("set presence: %w", err)
	}
	return &protocol.RemotePresence{
		WorkspaceID: workspace, SenderReplicaID: p.ReplicaID, ActorID: p.ActorID,
		SessionID: p.SessionID, Agent: p.Agent, Status: p.Status, UpdatedAt: fromMicros(micros(now)),
	}, nil
}

// presenceCols are the columns scanPresence reads.
const presenceCols = "replica, actor, session, agent, status, updated_us"

// MarkOffline sets replica offline if it has a presence that is not
// offline yet, and returns the new presence (nil if nothing changed). The
// row returned is the one the update wrote: one statement, so no other
// write can come between.
func (s *Store) MarkOffline(ctx context.Context, workspace, replica string) (*protocol.RemotePresence, error) {
	ws, err := s.workspaceID(ctx, s.r, workspace)
	if err != nil {
		return nil, fmt.Errorf("mark offline: %w", err)
	}
	p, err := scanPresence(s.w.QueryRowContext(ctx, "UPDATE presence SET status = 'offline', updated_us = ? WHERE ws = ? AND replica = ? AND status != 'offline' RETURNING "+presenceCols,
		micros(time.Now()), ws, replica), workspace)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("mark offline: %w", err)
	}
	return p, nil
}

// Presence lists the presence of every replica of the workspace that ever
// reported one, most recently updated first.
func (s *Store) Presence(ctx context.Context, workspace string) ([]*protocol.RemotePresence, error) {
	ws, err := s.workspaceID(ctx, s.r, workspace)
	if err != nil {
		return nil, fmt.Errorf("presence: %w", err)
	}
	rows, err := s.readQuery(ctx, "SELECT "+presenceCols+" FROM presence WHERE ws = ? ORDER BY updated_us DESC", ws)
	if err != nil {
		return nil, fmt.Errorf("presence: %w", err)
	}
	defer rows.Close()
	var out []*protocol.RemotePresence
	for rows.Next() {
		p, err := scanPresence(rows, workspace)
		if err != nil {
			return nil, fmt.Errorf("presence: %w", err)
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// scanPresence reads one row of presenceCols.
func scanPresence(row rowScanner, workspace string) (*protocol.RemotePresence, error) {
	var replica, actor, session, agent, status string
	var us int64
	if err := row.Scan(&replica, &actor, &session, &agent, &status, &us); err != nil {
		return nil, err
	}
	return PresenceOf(workspace, replica, actor, session, agent, status, us)
}

// PresenceOf builds a presence from a stored row (agent as AgentJSON
// stored it, updated in unix microseconds); both stores keep it so.
func PresenceOf(workspace, replica, actor, session, agent, status string, updatedUs int64) (*protocol.RemotePresence, error) {
	p := &protocol.RemotePresence{WorkspaceID: workspace, SenderReplicaID: replica, ActorID: actor, SessionID: session,
		Status: protocol.PresenceStatus(status), UpdatedAt: fromMicros(updatedUs)}
	if agent != "" {
		p.Agent = new(protocol.Agent)
		if err := json.Unmarshal([]byte(agent), p.Agent); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// AgentJSON is how a presence's agent is stored: its JSON, or "" for none.
func AgentJSON(a *protocol.Agent) (string, error) {
	if a == nil {
		return "", nil
	}
	b, err := json.Marshal(a)
	return string(b), err
}
