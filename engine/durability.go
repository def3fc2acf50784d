package engine

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/states"
)

// Durability is what an acknowledged commit of an execution promises.
//
// Whatever the mode, the guard and the write policy check every state's
// write and the history keeps every event (but the events of Distributed
// Map children, dropped as Config.KeepChildHistory says); the modes
// differ in when the commits reach the store's disk:
//
//   - DurabilityStrict: a commit returns once the store has made it
//     durable (bbolt: fdatasync). What an execution acknowledged survives a
//     power cut; an agent's result is durable before the next agent is
//     called.
//   - DurabilityBatched: an execution's commits are written together at most
//     Config.BatchWindow after they were made, each write one atomic store
//     transaction. A crash may lose the last window (and a resumed
//     execution may call again the agents whose results were in it), never
//     a half-written transition. How an execution ends, where it parks
//     (a Wait, an Approval) and its checkpoints are written at once, as in
//     strict mode.
//   - DurabilityNone: no store at all. Executions run in memory and cannot
//     be resumed; a workflow that could park (an Approval, a top-level Wait
//     longer than Config.ParkAfter) is refused at start.
//
// In every durable mode the states that have no effect (Pass, Choice,
// Succeed, Fail, a Wait that does not park) are committed together with the
// next step that has one: a resumed execution runs them again, and they
// give the same result (a state that reads a value that could differ —
// the context object, States.UUID, States.MathRandom without a seed — is
// committed at once instead).
type Durability string

// The durability modes.
const (
	DurabilityStrict  Durability = "strict"
	DurabilityBatched Durability = "batched"
	DurabilityNone    Durability = "none"
)

// DefaultBatchWindow is how long a batched execution's commits may wait
// before they are written.
const DefaultBatchWindow = 10 * time.Millisecond

// ParseDurability reads a durability mode by its name; "" is strict.
func ParseDurability(s string) (Durability, error) {
	switch d := Durability(s); d {
	case "":
		return DurabilityStrict, nil
	case DurabilityStrict, DurabilityBatched, DurabilityNone:
		return d, nil
	}
	return "", fmt.Errorf("durability %q: want strict, batched or none", s)
}

// ErrDurability is returned (wrapped) by Run when an execution's
// durability cannot be had: a mode the executor cannot give, or a workflow
// that could park under DurabilityNone.
var ErrDurability = errors.New("durability")

// Durability returns the durability of the executions that do not choose
// their own.
func (x *Executor) Durability() Durability { return x.durability }

// durabilityOf checks the durability asked for a new execution of m (""
// for the executor's) and returns what the execution records: what was
// asked, "" when nothing was (or without a store).
func (x *Executor) durabilityOf(m *states.Machine, asked Durability, reg *agents.Registry) (Durability, error) {
	if asked != "" {
		if _, err := ParseDurability(string(asked)); err != nil {
			return "", fmt.Errorf("%w: %w", ErrDurability, err)
		}
	}
	switch {
	case !x.durable && asked != "" && asked != DurabilityNone:
		return "", fmt.Errorf("%w: the execution asks for %s durability, but the executor has no store (durability none)", ErrDurability, asked)
	case x.durable && asked == DurabilityNone:
		return "", fmt.Errorf("%w: the execution asks for durability none, but the executor keeps every execution in its store; run one without a store for none", ErrDurability)
	case !x.durable:
		if where := parksAt(m, x.parkAfter, reg); where != "" {
			return "", fmt.Errorf("%w: %s, which needs a store to wait; durability none keeps nothing (give a database)", ErrDurability, where)
		}
		return "", nil
	}
	return asked, nil
}

// parksAt names the first place where an execution of m could stop to wait
// (and so needs a store): an Approval state or a callback Task anywhere, or a top-level Wait
// whose Seconds is longer than parkAfter (and than the execution's
// TimeoutSeconds). "" when there is none. (A Wait whose time comes from its
// input or a timestamp sleeps without a store.)
func parksAt(m *states.Machine, parkAfter time.Duration, reg *agents.Registry) string {
	if t := m.TimeoutSeconds; t > 0 && time.Duration(t)*time.Second <= parkAfter {
		// It times out before any Wait could park.
		return approvalIn(m, reg)
	}
	for _, name := range slices.Sorted(maps.Keys(m.States)) {
		if w, ok := m.States[name].(*states.Wait); ok && w.HasSeconds && time.Duration(w.Seconds)*time.Second > parkAfter {
			return fmt.Sprintf("state %q waits %d seconds (longer than %s)", name, w.Seconds, parkAfter)
		}
	}
	return approvalIn(m, reg)
}

// approvalIn names the first state of m or of a machine nested in it that
// waits for an answer from outside (an Approval, a .waitForTaskToken
// Task, a Task that waits for feedback, a Task of an activity that reg runs with no agent), its name qualified by where it is nested; "" when there is none.
func approvalIn(m *states.Machine, reg *agents.Registry) string {
	where := ""
	m.Each(func(within, name string, st states.State) bool {
		switch s := st.(type) {
		case *states.Approval:
			where = fmt.Sprintf("state %q is an Approval", within+name)
			return false
		case *states.Task:
			if s.Resource.WaitsForTaskToken() {
				where = fmt.Sprintf("state %q waits for its task token (.waitForTaskToken)", within+name)
				return false
			}
			if fb := s.Feedback; fb != nil && fb.Collect && fb.Wait {
				where = fmt.Sprintf("state %q waits for feedback (Feedback Wait)", within+name)
				return false
			}
			if isActivity(s) && !mappedActivity(reg, s) {
				where = fmt.Sprintf("state %q waits for a worker of activity %s", within+name, s.Resource.Name)
				return false
			}
		}
		return true
	})
	return where
}
