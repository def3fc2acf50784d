package engine

import (
	"fmt"
	"time"
)

// Durability is what an acknowledged commit of an execution promises.
//
// Whatever the mode, the guard and the write policy check every state's
// write and the history keeps every event; the modes differ in when the
// commits reach the store's disk:
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
