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

// Connected records that replica has a subscription on this instance (and
// that the instance is alive), so that another instance where the
// replica's subscription ends leaves it online.
func (s *Store) Connected(ctx context.Context, workspace, replica string) error {
	ws, err := s.workspaceID(ctx, workspace)
	if err != nil {
		return fmt.Errorf("connected: %w", err)
	}
	b := &pgx.Batch{}
	b.Queue(beatSQL, s.instance, micros(time.Now()))
	b.Queue("INSERT INTO connections (ws, replica, instance) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING", ws, replica, s.instance)
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("connected: %w", Explain(err))
	}
	return nil
}

// MarkOffline ends replica's subscriptions on this instance and sets it
// offline, unless it is already or still has a subscription on another
// live instance; it returns the new presence (nil if nothing changed).
func (s *Store) MarkOffline(ctx context.Context, workspace, replica string) (*protocol.RemotePresence, error) {
	ws, err := s.workspaceID(ctx, workspace)
	if err != nil {
		return nil, fmt.Errorf("mark offline: %w", err)
	}
	now := time.Now()
	p, err := scanPresence(s.pool.QueryRow(ctx, `WITH gone AS (DELETE FROM connections WHERE ws = $2 AND replica = $3 AND instance = $4)
		UPDATE presence SET status = 'offline', updated_us = $1 WHERE ws = $2 AND replica = $3 AND status <> 'offline'
		AND NOT EXISTS (SELECT 1 FROM connections c JOIN instances i ON i.id = c.instance
			WHERE c.ws = $2 AND c.replica = $3 AND c.instance <> $4 AND i.seen_us >= $5)
		RETURNING `+presenceCols,
		micros(now), ws, replica, s.instance, micros(now.Add(-s.ttl))), workspace)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("mark offline: %w", Explain(err))
	}
	return p, nil
}

// beatSQL records an instance's heartbeat; inserted says whether its row
// was missing (a first beat, or the others took it for dead).
const beatSQL = `INSERT INTO instances (id, seen_us) VALUES ($1, $2)
	ON CONFLICT (id) DO UPDATE SET seen_us = excluded.seen_us RETURNING (xmax = 0) AS inserted`

// reapSQL forgets the instances that missed their heartbeats for the TTL,
// with their subscriptions, and sets offline the replicas that have none
// left on a live instance. (The NOT EXISTS reads the statement's snapshot,
// where the dead instances' rows still are, but too old to count.)
const reapSQL = `WITH dead AS (DELETE FROM instances WHERE seen_us < $1 RETURNING id),
	gone AS (DELETE FROM connections c USING dead WHERE c.instance = dead.id RETURNING c.ws, c.replica)
	UPDATE presence p SET status = 'offline', updated_us = $2
	FROM (SELECT DISTINCT ws, replica FROM gone) g, workspaces w
	WHERE p.ws = g.ws AND p.replica = g.replica AND w.id = p.ws AND p.status <> 'offline'
	AND NOT EXISTS (SELECT 1 FROM connections c JOIN instances i ON i.id = c.instance
		WHERE c.ws = g.ws AND c.replica = g.replica AND i.seen_us >= $1)
	RETURNING w.name, p.replica, p.actor, p.session, p.agent, p.status, p.updated_us`

// Heartbeat keeps this instance alive for the others and sets offline the
// replicas whose subscriptions were all on instances that stopped beating
// (killed, or cut off from the database) for the TTL, returning their new
// presence. takenForDead says the others had taken this instance for dead
// (it missed its beats: a long pause, a lost database) and forgotten its
// subscriptions; the service then records them again with Reconnected. It
// calls Heartbeat every HeartbeatEvery.
func (s *Store) Heartbeat(ctx context.Context) (_ []*protocol.RemotePresence, takenForDead bool, _ error) {
	now := time.Now()
	var inserted bool
	if err := s.pool.QueryRow(ctx, beatSQL, s.instance, micros(now)).Scan(&inserted); err != nil {
		return nil, false, fmt.Errorf("heartbeat: %w", Explain(err))
	}
	taken := s.beats.Add(1) > 1 && inserted
	var out []*protocol.RemotePresence
	rows, err := s.pool.Query(ctx, reapSQL, micros(now.Add(-s.ttl)), micros(now))
	if err != nil {
		return nil, false, fmt.Errorf("heartbeat: reap: %w", Explain(err))
	}
	defer rows.Close()
	for rows.Next() {
		var ws, replica, actor, session, agent, status string
		var us int64
		if err := rows.Scan(&ws, &replica, &actor, &session, &agent, &status, &us); err != nil {
			return nil, false, fmt.Errorf("heartbeat: reap: %w", err)
		}
		p, err := store.PresenceOf(ws, replica, actor, session, agent, status, us)
		if err != nil {
			return nil, false, fmt.Errorf("heartbeat: reap: %w", err)
		}
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, false, fmt.Errorf("heartbeat: reap: %w", Explain(err))
	}
	return out, taken, nil
}

// Reconnected records again a subscription of replica that this instance
// held while the others took it for dead, and sets the replica online if
// it was set offline meanwhile, returning its presence then (else nil).
func (s *Store) Reconnected(ctx context.Context, workspace, replica string) (*protocol.RemotePresence, error) {
	if err := s.Connected(ctx, workspace, replica); err != nil {
		return nil, err
	}
	ws, err := s.workspaceID(ctx, workspace)
	if err != nil {
		return nil, fmt.Errorf("reconnected: %w", err)
	}
	now := time.Now()
	p, err := scanPresence(s.pool.QueryRow(ctx, "UPDATE presence SET status = 'online', updated_us = $1 WHERE ws = $2 AND replica = $3 AND status = 'offline' RETURNING "+presenceCols,
		micros(now), ws, replica), workspace)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reconnected: %w", Explain(err))
	}
	return p, nil
}

// HeartbeatEvery is how often the service calls Heartbeat: a third of the
// instance TTL.
func (s *Store) HeartbeatEvery() time.Duration { return s.ttl / 3 }

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
