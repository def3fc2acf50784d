package store

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Migrations is a set of migration steps between format versions of
// snapshot payloads. A program builds one (there is no global registry),
// registers its steps once, and hands it to the store, which applies them
// when it loads a snapshot of an older version.
//
// Steps may go from any version to any other, forward or back; the graph
// they form may have cycles and dead ends. Apply follows the shortest
// chain of steps.
//
// The zero value is an empty set, ready to use, and a nil *Migrations is
// an empty set too for Path and Apply. Migrations is safe for concurrent
// use: Register may even run while Path and Apply do, though a program
// normally registers everything before the store opens. It must not be
// copied after first use.
type Migrations struct {
	mu    sync.RWMutex
	steps map[int]map[int]func(doc any) (any, error)
}

// MigrationError reports a migration step that failed: the step from
// version From to version To returned Err.
type MigrationError struct {
	From, To int
	Err      error
}

// Error names the step and its error.
func (e *MigrationError) Error() string {
	return fmt.Sprintf("migration step from version %d to %d: %v", e.From, e.To, e.Err)
}

// Unwrap returns the step's error.
func (e *MigrationError) Unwrap() error { return e.Err }

// Register adds the step fn that migrates a document of version from to
// version to. Versions are positive. It is an error to register a step
// whose versions are equal or not positive, a nil fn, or a second step
// between the same two versions.
//
// fn receives a document of jsonpath's value model that it owns (Decode
// hands it a freshly decoded value): it may change it in place and return
// it, or return a new value of that model.
func (m *Migrations) Register(from, to int, fn func(doc any) (any, error)) error {
	switch {
	case from < 1 || to < 1:
		return fmt.Errorf("registering migration from version %d to %d: versions must be positive", from, to)
	case from == to:
		return fmt.Errorf("registering migration from version %d to itself", from)
	case fn == nil:
		return fmt.Errorf("registering migration from version %d to %d: nil function", from, to)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, dup := m.steps[from][to]; dup {
		return fmt.Errorf("registering migration from version %d to %d: already registered", from, to)
	}
	if m.steps == nil {
		m.steps = make(map[int]map[int]func(any) (any, error))
	}
	if m.steps[from] == nil {
		m.steps[from] = make(map[int]func(any) (any, error))
	}
	m.steps[from][to] = fn
	return nil
}

// Path returns the shortest chain of registered steps from version from to
// version to, as the versions it goes through, from and to included:
// [1 2 4] means the steps 1→2 and 2→4; from == to gives [from]. It is
// found by breadth-first search, which visits the steps out of a version
// in increasing order of their target, so among chains of equal length the
// one through lower versions wins. When there is none the error wraps
// ErrNoMigration and names the versions that can be reached from from.
func (m *Migrations) Path(from, to int) ([]int, error) {
	if m == nil {
		return pathIn(nil, from, to)
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	return pathIn(m.steps, from, to)
}

func pathIn(steps map[int]map[int]func(any) (any, error), from, to int) ([]int, error) {
	if from == to {
		return []int{from}, nil
	}
	prev := map[int]int{from: from} // version → the version it was reached from
	queue := []int{from}
	for len(queue) > 0 {
		v := queue[0]
		queue = queue[1:]
		for _, next := range slices.Sorted(maps.Keys(steps[v])) {
			if _, seen := prev[next]; seen {
				continue
			}
			prev[next] = v
			if next == to {
				path := []int{to}
				for w := to; w != from; {
					w = prev[w]
					path = append(path, w)
				}
				slices.Reverse(path)
				return path, nil
			}
			queue = append(queue, next)
		}
	}
	reach := slices.Sorted(maps.Keys(prev))
	reach = slices.DeleteFunc(reach, func(v int) bool { return v == from })
	return nil, &noPathError{from: from, to: to, reachable: reach}
}

// noPathError reports that no chain of steps leads from one version to
// another, with the versions that can be reached.
type noPathError struct {
	from, to  int
	reachable []int
}

func (e *noPathError) Error() string {
	if len(e.reachable) == 0 {
		return fmt.Sprintf("no migration from version %d to %d (no version is reachable from %d)", e.from, e.to, e.from)
	}
	vs := make([]string, len(e.reachable))
	for i, v := range e.reachable {
		vs[i] = strconv.Itoa(v)
	}
	return fmt.Sprintf("no migration from version %d to %d (versions reachable from %d: %s)", e.from, e.to, e.from, strings.Join(vs, ", "))
}

func (e *noPathError) Unwrap() error { return ErrNoMigration }

// Apply migrates doc from version from to version to along Path(from, to),
// running each step on the previous one's result, and returns the last
// result; from == to returns doc as it is. No path gives an error wrapping
// ErrNoMigration; a failing step, a *MigrationError naming it (the steps
// after it do not run).
func (m *Migrations) Apply(doc any, from, to int) (any, error) {
	path, fns, err := m.chain(from, to)
	if err != nil {
		return nil, err
	}
	for i, fn := range fns {
		if doc, err = fn(doc); err != nil {
			return nil, &MigrationError{From: path[i], To: path[i+1], Err: err}
		}
	}
	return doc, nil
}

// chain returns Path(from, to) and the functions of its steps, so that
// Apply runs them without holding the lock.
func (m *Migrations) chain(from, to int) ([]int, []func(any) (any, error), error) {
	var steps map[int]map[int]func(any) (any, error)
	if m != nil {
		m.mu.RLock()
		defer m.mu.RUnlock()
		steps = m.steps
	}
	path, err := pathIn(steps, from, to)
	if err != nil {
		return nil, nil, err
	}
	fns := make([]func(any) (any, error), len(path)-1)
	for i := range fns {
		fns[i] = steps[path[i]][path[i+1]]
	}
	return path, fns, nil
}
