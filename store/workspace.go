package store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"sync"
	"time"
)

// ErrNoWorkspace is returned for a workspace that does not exist.
var ErrNoWorkspace = errors.New("no such workspace")

// ErrUnavailable is a database that cannot be reached now (down,
// restarting, the connection lost): the service answers 503, and the
// client retries.
var ErrUnavailable = errors.New("the database is unavailable")

// ErrBadToken is returned by Authenticate for an unknown token.
var ErrBadToken = errors.New("unknown access token")

// Workspace is one workspace's row.
type Workspace struct {
	ID              int64
	Name            string
	Plan            string
	Head            int64 // highest serverSequence assigned
	RetainedThrough int64 // highest serverSequence retention deleted (the watermark)
	CreatedAt       time.Time
}

// EnsureWorkspace returns the workspace named name, creating it with plan
// if it does not exist. A non-empty plan replaces an existing workspace's plan.
func (s *Store) EnsureWorkspace(ctx context.Context, name, plan string) (*Workspace, error) {
	if name == "" {
		return nil, errors.New("ensure workspace: empty name")
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("ensure workspace: %w", err)
	}
	defer tx.Rollback()
	ws, err := scanWorkspace(tx.QueryRowContext(ctx, workspaceSelect+" WHERE name = ?", name))
	switch {
	case errors.Is(err, ErrNoWorkspace):
		if plan == "" {
			plan = DefaultPlan
		}
		now := time.Now()
		res, err := tx.ExecContext(ctx, "INSERT INTO workspaces (name, plan, created_us) VALUES (?, ?, ?)", name, plan, micros(now))
		if err != nil {
			return nil, fmt.Errorf("ensure workspace: %w", err)
		}
		id, _ := res.LastInsertId()
		ws = &Workspace{ID: id, Name: name, Plan: plan, CreatedAt: fromMicros(micros(now))}
	case err != nil:
		return nil, fmt.Errorf("ensure workspace: %w", err)
	case plan != "" && plan != ws.Plan:
		if _, err := tx.ExecContext(ctx, "UPDATE workspaces SET plan = ? WHERE id = ?", plan, ws.ID); err != nil {
			return nil, fmt.Errorf("ensure workspace: %w", err)
		}
		ws.Plan = plan
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("ensure workspace: %w", err)
	}
	s.rememberWorkspace(ws.Name, ws.ID)
	return ws, nil
}

// workspaceSelect reads a workspace with its head: the newest operation's
// serverSequence, or the retention watermark if retention deleted them all.
// The ops ids of workspace w lie strictly between opID(w, 0) and
// opID(w+1, 0), and opSeq masks the serverSequence out of one: the same
// arithmetic in SQL, built from seqBits.
var workspaceSelect = fmt.Sprintf(`SELECT id, name, plan,
	max(retained_through, coalesce((SELECT max(o.id) FROM ops o WHERE o.id > (w.id << %[1]d) AND o.id < ((w.id + 1) << %[1]d)), 0) & %[2]d),
	retained_through, created_us FROM workspaces w`, seqBits, int64(1)<<seqBits-1)

type rowScanner interface{ Scan(...any) error }

func scanWorkspace(row rowScanner) (*Workspace, error) {
	var ws Workspace
	var created int64
	err := row.Scan(&ws.ID, &ws.Name, &ws.Plan, &ws.Head, &ws.RetainedThrough, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNoWorkspace
	}
	if err != nil {
		return nil, err
	}
	ws.CreatedAt = fromMicros(created)
	return &ws, nil
}

// Workspace reads a workspace's current row.
func (s *Store) Workspace(ctx context.Context, name string) (*Workspace, error) {
	ws, err := scanWorkspace(s.readQueryRow(ctx, workspaceSelect+" WHERE name = ?", name))
	if err != nil {
		return nil, fmt.Errorf("workspace %q: %w", name, err)
	}
	return ws, nil
}

// Workspaces lists every workspace.
func (s *Store) Workspaces(ctx context.Context) ([]*Workspace, error) {
	rows, err := s.readQuery(ctx, workspaceSelect+" ORDER BY id")
	if err != nil {
		return nil, fmt.Errorf("list workspaces: %w", err)
	}
	defer rows.Close()
	var out []*Workspace
	for rows.Next() {
		ws, err := scanWorkspace(rows)
		if err != nil {
			return nil, fmt.Errorf("list workspaces: %w", err)
		}
		out = append(out, ws)
	}
	return out, rows.Err()
}

func (s *Store) rememberWorkspace(name string, id int64) {
	s.wsMu.Lock()
	s.wsIDs[name] = id
	s.wsMu.Unlock()
}

// workspaceID resolves a name to its id, from memory when it can: ids never change.
func (s *Store) workspaceID(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, name string) (int64, error) {
	s.wsMu.RLock()
	id, ok := s.wsIDs[name]
	s.wsMu.RUnlock()
	if ok {
		return id, nil
	}
	err := q.QueryRowContext(ctx, "SELECT id FROM workspaces WHERE name = ?", name).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, ErrNoWorkspace
	}
	if err != nil {
		return 0, err
	}
	s.rememberWorkspace(name, id)
	return id, nil
}

// Plans and their history retention, as in the service's PLAN_LIMITS.
var Plans = map[string]Plan{
	"free":       {HistoryRetentionDays: 7},
	"team":       {HistoryRetentionDays: 30},
	"enterprise": {HistoryRetentionDays: 365},
}

// DefaultPlan is the plan of a workspace created without one.
const DefaultPlan = "team"

// Plan holds a plan's limits.
type Plan struct {
	HistoryRetentionDays float64
}

// Retention is the plan's history retention as a duration.
func (p Plan) Retention() time.Duration {
	return time.Duration(p.HistoryRetentionDays * float64(24*time.Hour))
}

const tokenPrefix = "ccm_"

// CreateToken creates the workspace if it is new (with plan, or
// DefaultPlan) and returns a new access token for it. Only the token's
// SHA-256 is stored.
func (s *Store) CreateToken(ctx context.Context, workspace, plan string) (string, error) {
	if plan != "" {
		if _, ok := Plans[plan]; !ok {
			return "", fmt.Errorf("create token: unknown plan %q (free, team or enterprise)", plan)
		}
	}
	ws, err := s.EnsureWorkspace(ctx, workspace, plan)
	if err != nil {
		return "", fmt.Errorf("create token: %w", err)
	}
	token, hash, err := NewToken()
	if err != nil {
		return "", fmt.Errorf("create token: %w", err)
	}
	if _, err := s.w.ExecContext(ctx, "INSERT INTO tokens (hash, ws, created_us) VALUES (?, ?, ?)", hash[:], ws.ID, micros(time.Now())); err != nil {
		return "", fmt.Errorf("create token: %w", err)
	}
	return token, nil
}

// NewToken returns a new random access token and its SHA-256, which is
// all a store keeps of it.
func NewToken() (string, [32]byte, error) {
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", [32]byte{}, err
	}
	token := tokenPrefix + base64.RawURLEncoding.EncodeToString(raw[:])
	return token, sha256.Sum256([]byte(token)), nil
}

// TokenCache remembers token lookups for a minute, so authenticating a
// request seldom reads the database. The zero value is ready to use.
type TokenCache struct {
	mu sync.Mutex
	m  map[[32]byte]tokenEntry
}

type tokenEntry struct {
	name    string
	expires time.Time
}

// tokenCacheTTL bounds how long a token lookup is remembered.
const tokenCacheTTL = time.Minute

// Authenticate returns the workspace of token, from memory or else from
// load, which looks the token's SHA-256 up (returning ErrBadToken for an
// unknown one). Tokens are found by their hash, so no comparison ever
// touches the secret itself, and each takes the same time.
func (c *TokenCache) Authenticate(token string, load func(hash []byte) (string, error)) (string, error) {
	hash := sha256.Sum256([]byte(token))
	now := time.Now()
	c.mu.Lock()
	e, ok := c.m[hash]
	c.mu.Unlock()
	if ok && now.Before(e.expires) {
		return e.name, nil
	}
	name, err := load(hash[:])
	if err != nil {
		return "", err
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) > 10_000 {
		c.m = map[[32]byte]tokenEntry{}
	}
	c.m[hash] = tokenEntry{name: name, expires: now.Add(tokenCacheTTL)}
	c.mu.Unlock()
	return name, nil
}

// Authenticate returns the name of the workspace token belongs to, or
// ErrBadToken. Tokens are looked up by their SHA-256, so the comparison
// never touches the secret itself and takes the same time for every token.
func (s *Store) Authenticate(ctx context.Context, token string) (string, error) {
	return s.tokens.Authenticate(token, func(hash []byte) (string, error) {
		var name string
		err := s.readQueryRow(ctx, "SELECT w.name FROM tokens t JOIN workspaces w ON w.id = t.ws WHERE t.hash = ?", hash).Scan(&name)
		if errors.Is(err, sql.ErrNoRows) {
			return "", ErrBadToken
		}
		if err != nil {
			return "", fmt.Errorf("authenticate: %w", err)
		}
		return name, nil
	})
}
