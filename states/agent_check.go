package states

import (
	"sort"
	"strconv"
)

// checkDefinition runs the checks that span the whole definition, nested
// machines included, once every machine has been read: checkpoint names
// are unique, the categories a Tools block names exist in ToolCategories.
// It also gives every Task without Tools the workflow's DefaultTools.
func (p *parser) checkDefinition(m *Machine) {
	var ext Extensions
	if m.Extensions != nil {
		ext = *m.Extensions
	}
	p.checkTools(ext.DefaultTools, ext.ToolCategories)
	checkpoints := make(map[string]*Checkpoint)
	var walk func(m *Machine)
	walk = func(m *Machine) {
		if m == nil {
			return
		}
		for _, name := range sortedStateNames(m) {
			switch s := m.States[name].(type) {
			case *Task:
				if s.Tools == nil {
					s.Tools = ext.DefaultTools
				} else {
					p.checkTools(s.Tools, ext.ToolCategories)
				}
			case *Checkpoint:
				if s.CheckpointName == "" {
					continue
				}
				if first, dup := checkpoints[s.CheckpointName]; dup {
					p.errorf(s.ptr, s.Name, "checkpoint name %q is already used by state %q (%s)", s.CheckpointName, first.Name, first.ptr)
					continue
				}
				checkpoints[s.CheckpointName] = s
			case *Map:
				walk(s.Processor)
			case *Parallel:
				for _, b := range s.Branches {
					walk(b)
				}
			}
		}
	}
	walk(m)
}

// checkTools reports categories of t that ToolCategories does not define,
// and gives t the categories to resolve names with.
func (p *parser) checkTools(t *ToolsConfig, categories map[string][]string) {
	if t == nil {
		return
	}
	t.categories = categories
	for i, c := range t.AllowedCategories {
		if _, ok := categories[c]; !ok && i < len(t.categoryIndex) {
			p.errorf(t.ptr+"/AllowedCategories/"+strconv.Itoa(t.categoryIndex[i]), t.state, "AllowedCategories names %q, which ToolCategories does not define", c)
		}
	}
}

func sortedStateNames(m *Machine) []string {
	names := make([]string, 0, len(m.States))
	for n := range m.States {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
