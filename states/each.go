package states

import (
	"maps"
	"slices"
	"strconv"
)

// Each calls f for every state of m and of the machines nested in it (Map
// item processors, Parallel branches), in name order, a nested machine's
// states after the state that holds it; within is where the state is
// nested ("" at the top, "Fan/" in a Map's processor, "Both/1/" in a
// Parallel's second branch). It stops, and returns false, when f does.
func (m *Machine) Each(f func(within, name string, s State) bool) bool {
	return m.each("", f)
}

func (m *Machine) each(within string, f func(within, name string, s State) bool) bool {
	if m == nil {
		return true
	}
	for _, name := range slices.Sorted(maps.Keys(m.States)) {
		st := m.States[name]
		if !f(within, name, st) {
			return false
		}
		switch s := st.(type) {
		case *Map:
			if !s.Processor.each(within+name+"/", f) {
				return false
			}
		case *Parallel:
			for i, b := range s.Branches {
				if !b.each(within+name+"/"+strconv.Itoa(i)+"/", f) {
					return false
				}
			}
		}
	}
	return true
}
