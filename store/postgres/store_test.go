package postgres

import (
	"testing"

	"github.com/aslrun/aslrun/store"
	"github.com/aslrun/aslrun/store/storetest"
)

// TestStore runs the store acceptance suite on PostgreSQL, each test in a
// fresh schema.
func TestStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return openTest(t, Options{}) })
}
