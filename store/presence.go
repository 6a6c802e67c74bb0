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

// Connected records that replica has a subscription on this process (the
// coordination service), which is alive, so that after a crash the next
// one can tell whose subscriptions died with it.
func (s *Store) Connected(ctx context.Context, workspace, replica string) error {
	ws, err := s.workspaceID(ctx, s.r, workspace)
	if err != nil {
		return fmt.Errorf("connected: %w", err)
	}
	return s.writeTx(ctx, "connected", func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, beatSQL, s.instance, micros(time.Now())); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, "INSERT INTO connections (ws, replica, instance) VALUES (?, ?, ?) ON CONFLICT DO NOTHING", ws, replica, s.instance)
		return err
	})
}

// MarkOffline ends replica's subscriptions on this process and sets it
// offline if it has a presence that is not offline yet and no subscription
// on another live process; it returns the new presence (nil if nothing
// changed). The update is one statement, so no other write comes between.
func (s *Store) MarkOffline(ctx context.Context, workspace, replica string) (*protocol.RemotePresence, error) {
	ws, err := s.workspaceID(ctx, s.r, workspace)
	if err != nil {
		return nil, fmt.Errorf("mark offline: %w", err)
	}
	now := time.Now()
	var p *protocol.RemotePresence
	err = s.writeTx(ctx, "mark offline", func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, "DELETE FROM connections WHERE ws = ? AND replica = ? AND instance = ?", ws, replica, s.instance); err != nil {
			return err
		}
		var err error
		p, err = scanPresence(tx.QueryRowContext(ctx, `UPDATE presence SET status = 'offline', updated_us = ? WHERE ws = ? AND replica = ? AND status != 'offline'
			AND NOT EXISTS (SELECT 1 FROM connections c JOIN instances i ON i.id = c.instance WHERE c.ws = ? AND c.replica = ? AND i.seen_us >= ?)
			RETURNING `+presenceCols,
			micros(now), ws, replica, ws, replica, micros(now.Add(-s.ttl))), workspace)
		if errors.Is(err, sql.ErrNoRows) {
			p, err = nil, nil
		}
		return err
	})
	return p, err
}

// beatSQL records a process's heartbeat.
const beatSQL = "INSERT INTO instances (id, seen_us) VALUES (?, ?) ON CONFLICT (id) DO UPDATE SET seen_us = excluded.seen_us"

// Heartbeat keeps this process alive in the database and sets offline
// the replicas whose subscriptions were all held by processes that stopped
// beating for the TTL (a service that crashed or was killed), returning
// their new presence. takenForDead says this process had been taken for
// dead (it missed its beats) and its subscriptions forgotten; the service
// then records them again with Reconnected. It calls Heartbeat every
// HeartbeatEvery.
func (s *Store) Heartbeat(ctx context.Context) (_ []*protocol.RemotePresence, takenForDead bool, _ error) {
	now := time.Now()
	var out []*protocol.RemotePresence
	var taken bool
	err := s.writeTx(ctx, "heartbeat", func(tx *sql.Tx) error {
		out = nil
		var n int
		if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM instances WHERE id = ?", s.instance).Scan(&n); err != nil {
			return err
		}
		taken = n == 0 && s.beats.Load() > 0
		if _, err := tx.ExecContext(ctx, beatSQL, s.instance, micros(now)); err != nil {
			return err
		}
		cutoff := micros(now.Add(-s.ttl))
		rows, err := tx.QueryContext(ctx, `SELECT DISTINCT c.ws, c.replica FROM connections c JOIN instances i ON i.id = c.instance WHERE i.seen_us < ?`, cutoff)
		if err != nil {
			return err
		}
		type key struct {
			ws      int64
			replica string
		}
		var gone []key
		for rows.Next() {
			var k key
			if err := rows.Scan(&k.ws, &k.replica); err != nil {
				rows.Close()
				return err
			}
			gone = append(gone, k)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, "DELETE FROM connections WHERE instance IN (SELECT id FROM instances WHERE seen_us < ?)", cutoff); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, "DELETE FROM instances WHERE seen_us < ?", cutoff); err != nil {
			return err
		}
		for _, k := range gone {
			var name string
			if err := tx.QueryRowContext(ctx, "SELECT name FROM workspaces WHERE id = ?", k.ws).Scan(&name); err != nil {
				return err
			}
			p, err := scanPresence(tx.QueryRowContext(ctx, `UPDATE presence SET status = 'offline', updated_us = ? WHERE ws = ? AND replica = ? AND status != 'offline'
				AND NOT EXISTS (SELECT 1 FROM connections c WHERE c.ws = ? AND c.replica = ?)
				RETURNING `+presenceCols, micros(now), k.ws, k.replica, k.ws, k.replica), name)
			if errors.Is(err, sql.ErrNoRows) {
				continue
			}
			if err != nil {
				return err
			}
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	s.beats.Add(1)
	return out, taken, nil
}

// Reconnected records again a subscription of replica that this process
// held while it was taken for dead, and sets the replica online if it was
// set offline meanwhile, returning its presence then (else nil).
func (s *Store) Reconnected(ctx context.Context, workspace, replica string) (*protocol.RemotePresence, error) {
	if err := s.Connected(ctx, workspace, replica); err != nil {
		return nil, err
	}
	ws, err := s.workspaceID(ctx, s.r, workspace)
	if err != nil {
		return nil, fmt.Errorf("reconnected: %w", err)
	}
	now := time.Now()
	p, err := scanPresence(s.w.QueryRowContext(ctx, "UPDATE presence SET status = 'online', updated_us = ? WHERE ws = ? AND replica = ? AND status = 'offline' RETURNING "+presenceCols,
		micros(now), ws, replica), workspace)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reconnected: %w", err)
	}
	return p, nil
}

// HeartbeatEvery is how often the service calls Heartbeat: a third of the
// instance TTL.
func (s *Store) HeartbeatEvery() time.Duration { return s.ttl / 3 }

// writeTx runs fn in a write transaction, naming what for its error.
func (s *Store) writeTx(ctx context.Context, what string, fn func(*sql.Tx) error) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
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
