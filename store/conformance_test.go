package store_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/crosscode/crosscode-mcp/internal/testing/storetest"
	"github.com/crosscode/crosscode-mcp/store"
)

// TestConformance runs the service's shared store suite on SQLite.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Store {
		s, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "hub.db"), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}

// TestInstances runs the suite's tests of several instances (here, several
// processes' stores on one file) on SQLite.
func TestInstances(t *testing.T) {
	storetest.RunInstances(t, func(t *testing.T, ttl time.Duration) func() storetest.InstanceStore {
		path := filepath.Join(t.TempDir(), "hub.db")
		return func() storetest.InstanceStore {
			s, err := store.Open(context.Background(), path, &store.Options{InstanceTTL: ttl})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}
	})
}
