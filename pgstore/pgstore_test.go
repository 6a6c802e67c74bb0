package pgstore_test

import (
	"context"
	"os"
	"testing"

	"github.com/crosscode/crosscode-mcp/hub"
	"github.com/crosscode/crosscode-mcp/internal/pgtest"
	"github.com/crosscode/crosscode-mcp/internal/storetest"
	"github.com/crosscode/crosscode-mcp/pgstore"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// open opens a migrated store on a fresh database.
func open(t *testing.T) *pgstore.Store {
	t.Helper()
	s, err := pgstore.Open(context.Background(), pgtest.NewDB(t), &pgstore.Options{Migrate: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestConformance runs the service's shared store suite on PostgreSQL.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Store { return open(t) })
}

var _ hub.Shared = (*pgstore.Store)(nil)
