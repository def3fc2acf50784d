package store

import (
	"strconv"
	"testing"
)

// TestScopeBasesBounded: the last document of each scope (the base of the
// next delta) is kept for a bounded number of scopes, however many Map
// items an execution runs.
func TestScopeBasesBounded(t *testing.T) {
	e := &execDocs{stored: map[[32]byte]docPlace{}}
	for batch := range 10 {
		w := &docWriter{}
		for i := range 300 {
			w.last = append(w.last, scopeDoc{scope: "Map#1.0/" + strconv.Itoa(batch*300+i) + "/"})
		}
		e.committed(w, newDocMemo())
		if len(e.last) > maxCachedScopes {
			t.Fatalf("after %d items, %d scopes' bases kept, want at most %d", (batch+1)*300, len(e.last), maxCachedScopes)
		}
	}
	if len(e.last) == 0 {
		t.Error("no scope's base kept")
	}
}
