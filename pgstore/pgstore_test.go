package pgstore_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/crosscode/crosscode-mcp/hub"
	"github.com/crosscode/crosscode-mcp/internal/testing/pgtest"
	"github.com/crosscode/crosscode-mcp/internal/testing/storetest"
	"github.com/crosscode/crosscode-mcp/pgstore"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// open opens a migrated store on a fresh database.
func open(t *testing.T) *pgstore.Store {
	t.Helper()
	return openAt(t, pgtest.NewDB(t), nil)
}

// openAt opens a store on the database at db (one instance of several, if
// called again), migrating it, and closes it when the test ends.
func openAt(t *testing.T, db string, opts *pgstore.Options) *pgstore.Store {
	t.Helper()
	o := pgstore.Options{}
	if opts != nil {
		o = *opts
	}
	o.Migrate = true
	s, err := pgstore.Open(context.Background(), db, &o)
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

// TestInstances runs the suite's tests of several instances on one
// PostgreSQL database.
func TestInstances(t *testing.T) {
	storetest.RunInstances(t, func(t *testing.T, ttl time.Duration) func() storetest.InstanceStore {
		db := pgtest.NewDB(t)
		return func() storetest.InstanceStore { return openAt(t, db, &pgstore.Options{InstanceTTL: ttl}) }
	})
}
