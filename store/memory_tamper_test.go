package store

import (
	"fmt"

	"github.com/aslrun/aslrun/engine"
)

// TamperCheckpoint changes execution id's stored checkpoint name as
// change says: its record, or a field kept beside it.
func (m TamperMemory) TamperCheckpoint(id, name string, change func(cp *CheckpointWrite)) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	x, err := m.lookup(id)
	if err != nil {
		return err
	}
	cp, ok := x.checkpoints[name]
	if !ok {
		return fmt.Errorf("execution %s checkpoint %q: %w", id, name, engine.ErrNotFound)
	}
	change(&cp)
	x.checkpoints[name] = cp
	return nil
}
