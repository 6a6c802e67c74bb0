package pgstore

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/crosscode/crosscode-mcp/protocol"
	"github.com/crosscode/crosscode-mcp/store"
)

// notifyChannel is the LISTEN/NOTIFY channel of the service's instances.
const notifyChannel = "crosscode_mcp"

// maxPayload keeps a notice under PostgreSQL's 8000-byte NOTIFY limit.
const maxPayload = 7000

// wireNotice is a notice as sent: with the sending instance, so that an
// instance skips its own.
type wireNotice struct {
	From string `json:"f"`
	store.Notice
}

// Announce tells the other instances sharing the database of moved heads
// and presence changes, with NOTIFY in a transaction of its own: sent
// after the ingest commit, never inside it (a NOTIFY in a transaction
// takes PostgreSQL's global notify lock at commit, serialising every
// commit that carries one). A large notice goes in several.
func (s *Store) Announce(ctx context.Context, n store.Notice) error {
	var payloads []string
	add := func(w wireNotice) error {
		b, err := json.Marshal(w)
		if err != nil {
			return err
		}
		payloads = append(payloads, string(b))
		return nil
	}
	cur := wireNotice{From: s.instance, Notice: store.Notice{Heads: map[string]int64{}}}
	size := 0
	for ws, h := range n.Heads {
		if size += len(ws) + 24; size > maxPayload {
			if err := add(cur); err != nil {
				return err
			}
			cur, size = wireNotice{From: s.instance, Notice: store.Notice{Heads: map[string]int64{}}}, len(ws)+24
		}
		cur.Heads[ws] = h
	}
	if len(cur.Heads) > 0 {
		if err := add(cur); err != nil {
			return err
		}
	}
	for _, p := range n.Presence {
		if err := add(wireNotice{From: s.instance, Notice: store.Notice{Presence: []*protocol.RemotePresence{p}}}); err != nil {
			return err
		}
	}
	if len(payloads) == 0 {
		return nil
	}
	b := &pgx.Batch{}
	for _, p := range payloads {
		if len(p) > maxPayload+1000 {
			continue // a presence too large to announce: the others see it at the next presence read
		}
		b.Queue("SELECT pg_notify($1, $2)", notifyChannel, p)
	}
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("announce: %w", Explain(err))
	}
	return nil
}

// Listen calls fn with every other instance's notices until ctx ends, on a
// connection of its own (LISTEN), reconnecting with backoff when it drops.
// Notices sent while it is disconnected are lost; the hub's head check
// covers them.
func (s *Store) Listen(ctx context.Context, fn func(store.Notice)) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := s.listen(ctx, fn, func() { backoff = 100 * time.Millisecond })
		if ctx.Err() != nil {
			return
		}
		s.log("listen for other instances (reconnecting)", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

func (s *Store) listen(ctx context.Context, fn func(store.Notice), connected func()) error {
	cfg, err := ParseURL(s.url)
	if err != nil {
		return err
	}
	conn, err := pgx.ConnectConfig(ctx, cfg.ConnConfig)
	if err != nil {
		return Explain(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "LISTEN "+notifyChannel); err != nil {
		return err
	}
	connected()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		var w wireNotice
		if err := json.Unmarshal([]byte(n.Payload), &w); err != nil || w.From == s.instance {
			continue
		}
		fn(w.Notice)
	}
}
