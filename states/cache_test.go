package states

import (
	"fmt"
	"sync"
	"testing"
)

func TestCache(t *testing.T) {
	var c Cache
	def := []byte(`{"StartAt":"A","States":{"A":{"Type":"Pass","End":true}}}`)
	m1, err := c.Parse(def)
	if err != nil {
		t.Fatal(err)
	}
	m2, err := c.Parse(append([]byte(nil), def...))
	if err != nil || m2 != m1 {
		t.Errorf("Parse of the same text again = %p, %v; want the machine parsed first, %p", m2, err, m1)
	}
	other, err := c.Parse([]byte(`{"StartAt":"B","States":{"B":{"Type":"Pass","End":true}}}`))
	if err != nil || other == m1 || other.StartAt != "B" {
		t.Errorf("Parse of another definition = %+v, %v; want its own machine", other, err)
	}
	// A definition that does not parse gives its errors every time.
	bad := []byte(`{"StartAt":"Nowhere","States":{"A":{"Type":"Pass","End":true}}}`)
	for range 2 {
		if _, err := c.Parse(bad); err == nil {
			t.Fatal("Parse of a definition whose StartAt names no state: no error")
		}
	}
	// Past its bound it starts afresh, and still answers.
	for i := range maxCachedMachines + 1 {
		if _, err := c.Parse(fmt.Appendf(nil, `{"StartAt":"S%d","States":{"S%d":{"Type":"Pass","End":true}}}`, i, i)); err != nil {
			t.Fatal(err)
		}
	}
	c.mu.Lock()
	n := len(c.machines)
	c.mu.Unlock()
	if n > maxCachedMachines {
		t.Errorf("%d machines kept, want at most %d", n, maxCachedMachines)
	}
	if m, err := c.Parse(def); err != nil || m.StartAt != "A" {
		t.Errorf("Parse after the cache started afresh = %+v, %v", m, err)
	}
}

func TestCacheConcurrent(t *testing.T) {
	var c Cache
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 50 {
				def := fmt.Appendf(nil, `{"StartAt":"S","States":{"S":{"Type":"Pass","Result":%d,"End":true}}}`, (i+j)%5)
				if _, err := c.Parse(def); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}
