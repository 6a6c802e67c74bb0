package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/crosscode/crosscode-mcp/store"
)

// EnsureWorkspace returns the workspace named name, creating it with plan
// if it does not exist. A non-empty plan replaces an existing workspace's plan.
func (s *Store) EnsureWorkspace(ctx context.Context, name, plan string) (*store.Workspace, error) {
	if name == "" {
		return nil, errors.New("ensure workspace: empty name")
	}
	var ws store.Workspace
	err := s.tx(ctx, func(tx pgx.Tx) error {
		def := plan
		if def == "" {
			def = store.DefaultPlan
		}
		var created int64
		// A new workspace and its counter row, or nothing if it exists.
		err := tx.QueryRow(ctx, `WITH ins AS (
				INSERT INTO workspaces (name, plan, created_us) VALUES ($1, $2, $3) ON CONFLICT (name) DO NOTHING RETURNING id)
			INSERT INTO heads (ws) SELECT id FROM ins RETURNING ws`, name, def, micros(time.Now())).Scan(&ws.ID)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		if plan != "" {
			if _, err := tx.Exec(ctx, "UPDATE workspaces SET plan = $2 WHERE name = $1 AND plan <> $2", name, plan); err != nil {
				return err
			}
		}
		return tx.QueryRow(ctx, `SELECT w.id, w.name, w.plan, h.seq, w.retained_through, w.created_us
			FROM workspaces w JOIN heads h ON h.ws = w.id WHERE w.name = $1`, name).
			Scan(&ws.ID, &ws.Name, &ws.Plan, &ws.Head, &ws.RetainedThrough, &created)
	})
	if err != nil {
		return nil, fmt.Errorf("ensure workspace: %w", Explain(err))
	}
	s.rememberWorkspace(ws.Name, ws.ID)
	return &ws, nil
}

// Workspaces lists every workspace.
func (s *Store) Workspaces(ctx context.Context) ([]*store.Workspace, error) {
	rows, err := s.pool.Query(ctx, `SELECT w.id, w.name, w.plan, h.seq, w.retained_through, w.created_us
		FROM workspaces w JOIN heads h ON h.ws = w.id ORDER BY w.id`)
	if err != nil {
		return nil, fmt.Errorf("list workspaces: %w", Explain(err))
	}
	defer rows.Close()
	var out []*store.Workspace
	for rows.Next() {
		var ws store.Workspace
		var created int64
		if err := rows.Scan(&ws.ID, &ws.Name, &ws.Plan, &ws.Head, &ws.RetainedThrough, &created); err != nil {
			return nil, fmt.Errorf("list workspaces: %w", err)
		}
		ws.CreatedAt = fromMicros(created)
		out = append(out, &ws)
	}
	return out, rows.Err()
}

func (s *Store) rememberWorkspace(name string, id int64) {
	s.wsMu.Lock()
	s.wsIDs[name] = id
	s.wsMu.Unlock()
}

// workspaceIDs resolves names to ids, from memory when it can (ids never
// change); names that do not exist are left out.
func (s *Store) workspaceIDs(ctx context.Context, names []string) (map[string]int64, error) {
	out := make(map[string]int64, len(names))
	var missing []string
	s.wsMu.RLock()
	for _, n := range names {
		if id, ok := s.wsIDs[n]; ok {
			out[n] = id
		} else {
			missing = append(missing, n)
		}
	}
	s.wsMu.RUnlock()
	if len(missing) == 0 {
		return out, nil
	}
	rows, err := s.pool.Query(ctx, "SELECT name, id FROM workspaces WHERE name = ANY($1)", missing)
	if err != nil {
		return nil, Explain(err)
	}
	defer rows.Close()
	for rows.Next() {
		var n string
		var id int64
		if err := rows.Scan(&n, &id); err != nil {
			return nil, err
		}
		out[n] = id
		s.rememberWorkspace(n, id)
	}
	return out, rows.Err()
}

// workspaceID resolves one name, or store.ErrNoWorkspace.
func (s *Store) workspaceID(ctx context.Context, name string) (int64, error) {
	ids, err := s.workspaceIDs(ctx, []string{name})
	if err != nil {
		return 0, err
	}
	id, ok := ids[name]
	if !ok {
		return 0, fmt.Errorf("workspace %q: %w", name, store.ErrNoWorkspace)
	}
	return id, nil
}

// CreateToken creates the workspace if it is new (with plan, or
// store.DefaultPlan) and returns a new access token for it. Only the
// token's SHA-256 is stored.
func (s *Store) CreateToken(ctx context.Context, workspace, plan string) (string, error) {
	if plan != "" {
		if _, ok := store.Plans[plan]; !ok {
			return "", fmt.Errorf("create token: unknown plan %q (free, team or enterprise)", plan)
		}
	}
	ws, err := s.EnsureWorkspace(ctx, workspace, plan)
	if err != nil {
		return "", fmt.Errorf("create token: %w", err)
	}
	token, hash, err := store.NewToken()
	if err != nil {
		return "", fmt.Errorf("create token: %w", err)
	}
	if _, err := s.pool.Exec(ctx, "INSERT INTO tokens (hash, ws, created_us) VALUES ($1, $2, $3)", hash[:], ws.ID, micros(time.Now())); err != nil {
		return "", fmt.Errorf("create token: %w", Explain(err))
	}
	return token, nil
}

// Authenticate returns the name of the workspace token belongs to, or
// store.ErrBadToken (see store.TokenCache).
func (s *Store) Authenticate(ctx context.Context, token string) (string, error) {
	return s.tokens.Authenticate(token, func(hash []byte) (string, error) {
		var name string
		err := s.pool.QueryRow(ctx, "SELECT w.name FROM tokens t JOIN workspaces w ON w.id = t.ws WHERE t.hash = $1", hash).Scan(&name)
		if errors.Is(err, pgx.ErrNoRows) {
			return "", store.ErrBadToken
		}
		if err != nil {
			return "", fmt.Errorf("authenticate: %w", Explain(err))
		}
		return name, nil
	})
}
