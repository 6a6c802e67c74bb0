package store_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/crosscode/crosscode-mcp/internal/storetest"
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
