package states

import "sync"

// Cache remembers the machines of the definitions it parsed, by their
// text, so that the starts and resumes of one workflow parse it once: a
// Machine is never modified once parsed, and runs share it. It keeps at
// most maxCachedMachines machines of at most maxCachedText bytes of
// definitions together, and starts afresh when full. A definition that
// does not parse is not kept: its errors are made again. The zero Cache is
// ready to use; it is safe for concurrent use.
type Cache struct {
	mu       sync.Mutex
	machines map[string]*Machine
	text     int
}

// The bounds of a Cache.
const (
	maxCachedMachines = 256
	maxCachedText     = 16 << 20
)

// Parse returns Parse(data), from the cache when data was parsed before.
func (c *Cache) Parse(data []byte) (*Machine, error) {
	c.mu.Lock()
	m := c.machines[string(data)]
	c.mu.Unlock()
	if m != nil {
		return m, nil
	}
	m, err := Parse(data)
	if err != nil {
		return nil, err
	}
	if len(data) > maxCachedText {
		return m, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.machines == nil || len(c.machines) >= maxCachedMachines || c.text+len(data) > maxCachedText {
		c.machines, c.text = make(map[string]*Machine), 0
	}
	if _, ok := c.machines[string(data)]; !ok {
		c.machines[string(data)] = m
		c.text += len(data)
	}
	return m, nil
}
