package pgstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/crosscode/crosscode-mcp/internal/testing/pgtest"
	"github.com/crosscode/crosscode-mcp/pgstore"
	"github.com/crosscode/crosscode-mcp/store"
)

// A database that is down is unavailable (the service answers 503 and
// clients retry), not an internal error.
func TestDatabaseDownIsUnavailable(t *testing.T) {
	pgtest.Need(t)
	c, err := pgtest.Start()
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			c.Stop()
		}
	}()
	ctx := context.Background()
	s, err := pgstore.Open(ctx, c.URL("postgres"), &pgstore.Options{Migrate: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.CreateToken(ctx, "ws", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Page(ctx, store.PageQuery{Workspace: "ws"}); err != nil {
		t.Fatal(err)
	}
	stopped = true
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	qctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, err = s.Page(qctx, store.PageQuery{Workspace: "ws"})
	if !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("a page with the database down: %v, want store.ErrUnavailable", err)
	}
	if _, err := s.Heads(qctx, []string{"ws"}); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("heads with the database down: %v, want store.ErrUnavailable", err)
	}
}
