package store_test

import (
	"testing"

	"github.com/aslrun/aslrun/store"
	"github.com/aslrun/aslrun/store/storetest"
)

func TestMemory(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		m := store.NewMemory()
		t.Cleanup(func() { m.Close() })
		return store.TamperMemory{Memory: m}
	})
}
