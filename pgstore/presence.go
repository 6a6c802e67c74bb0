package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/crosscode/crosscode-mcp/protocol"
	"github.com/crosscode/crosscode-mcp/store"
)

// SetPresence records a replica's presence and returns it as the fan-out
// frame data.
func (s *Store) SetPresence(ctx context.Context, workspace string, p *protocol.PresenceUpdate) (*protocol.RemotePresence, error) {
	ws, err := s.workspaceID(ctx, workspace)
	if err != nil {
		return nil, fmt.Errorf("set presence: %w", err)
	}
	agent, err := store.AgentJSON(p.Agent)
	if err != nil {
		return nil, fmt.Errorf("set presence: %w", err)
	}
	now := micros(time.Now())
	_, err = s.pool.Exec(ctx, `INSERT INTO presence (ws, replica, actor, session, agent, status, updated_us) VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (ws, replica) DO UPDATE SET actor = excluded.actor, session = excluded.session, agent = excluded.agent, status = excluded.status, updated_us = excluded.updated_us`,
		ws, p.ReplicaID, p.ActorID, p.SessionID, agent, string(p.Status), now)
	if err != nil {
		return nil, fmt.Errorf("set presence: %w", Explain(err))
	}
	return &protocol.RemotePresence{
		WorkspaceID: workspace, SenderReplicaID: p.ReplicaID, ActorID: p.ActorID,
		SessionID: p.SessionID, Agent: p.Agent, Status: p.Status, UpdatedAt: fromMicros(now),
	}, nil
}

const presenceCols = "replica, actor, session, agent, status, updated_us"

// MarkOffline sets replica offline if it has a presence that is not
// offline yet, and returns the new presence (nil if nothing changed).
func (s *Store) MarkOffline(ctx context.Context, workspace, replica string) (*protocol.RemotePresence, error) {
	ws, err := s.workspaceID(ctx, workspace)
	if err != nil {
		return nil, fmt.Errorf("mark offline: %w", err)
	}
	p, err := scanPresence(s.pool.QueryRow(ctx, "UPDATE presence SET status = 'offline', updated_us = $1 WHERE ws = $2 AND replica = $3 AND status <> 'offline' RETURNING "+presenceCols,
		micros(time.Now()), ws, replica), workspace)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("mark offline: %w", Explain(err))
	}
	return p, nil
}

// Presence lists the presence of every replica of the workspace that ever
// reported one, most recently updated first.
func (s *Store) Presence(ctx context.Context, workspace string) ([]*protocol.RemotePresence, error) {
	ws, err := s.workspaceID(ctx, workspace)
	if err != nil {
		return nil, fmt.Errorf("presence: %w", err)
	}
	rows, err := s.pool.Query(ctx, "SELECT "+presenceCols+" FROM presence WHERE ws = $1 ORDER BY updated_us DESC", ws)
	if err != nil {
		return nil, fmt.Errorf("presence: %w", Explain(err))
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

func scanPresence(row pgx.Row, workspace string) (*protocol.RemotePresence, error) {
	var replica, actor, session, agent, status string
	var us int64
	if err := row.Scan(&replica, &actor, &session, &agent, &status, &us); err != nil {
		return nil, err
	}
	return store.PresenceOf(workspace, replica, actor, session, agent, status, us)
}
