package store

import (
	"context"
	"encoding/json"
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
	agent := ""
	if p.Agent != nil {
		b, err := json.Marshal(p.Agent)
		if err != nil {
			return nil, fmt.Errorf("set presence: %w", err)
		}
		agent = string(b)
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

// MarkOffline sets replica offline if it has a presence that is not
// offline yet, and returns the new presence (nil if nothing changed).
func (s *Store) MarkOffline(ctx context.Context, workspace, replica string) (*protocol.RemotePresence, error) {
	ws, err := s.workspaceID(ctx, s.w, workspace)
	if err != nil {
		return nil, fmt.Errorf("mark offline: %w", err)
	}
	now := micros(time.Now())
	res, err := s.w.ExecContext(ctx, "UPDATE presence SET status = 'offline', updated_us = ? WHERE ws = ? AND replica = ? AND status != 'offline'", now, ws, replica)
	if err != nil {
		return nil, fmt.Errorf("mark offline: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return nil, nil
	}
	list, err := s.presence(ctx, ws, workspace, replica)
	if err != nil || len(list) == 0 {
		return nil, err
	}
	return list[0], nil
}

// Presence lists the presence of every replica of the workspace that ever
// reported one, most recently updated first.
func (s *Store) Presence(ctx context.Context, workspace string) ([]*protocol.RemotePresence, error) {
	ws, err := s.workspaceID(ctx, s.r, workspace)
	if err != nil {
		return nil, fmt.Errorf("presence: %w", err)
	}
	return s.presence(ctx, ws, workspace, "")
}

func (s *Store) presence(ctx context.Context, ws int64, workspace, replica string) ([]*protocol.RemotePresence, error) {
	q := "SELECT replica, actor, session, agent, status, updated_us FROM presence WHERE ws = ?"
	args := []any{ws}
	if replica != "" {
		q += " AND replica = ?"
		args = append(args, replica)
	}
	rows, err := s.readQuery(ctx, q+" ORDER BY updated_us DESC", args...)
	if err != nil {
		return nil, fmt.Errorf("presence: %w", err)
	}
	defer rows.Close()
	var out []*protocol.RemotePresence
	for rows.Next() {
		p := &protocol.RemotePresence{WorkspaceID: workspace}
		var agent, status string
		var us int64
		if err := rows.Scan(&p.SenderReplicaID, &p.ActorID, &p.SessionID, &agent, &status, &us); err != nil {
			return nil, fmt.Errorf("presence: %w", err)
		}
		if agent != "" {
			p.Agent = new(protocol.Agent)
			if err := json.Unmarshal([]byte(agent), p.Agent); err != nil {
				return nil, fmt.Errorf("presence: %w", err)
			}
		}
		p.Status, p.UpdatedAt = protocol.PresenceStatus(status), fromMicros(us)
		out = append(out, p)
	}
	return out, rows.Err()
}
