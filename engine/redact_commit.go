package engine

import (
	"github.com/aslrun/aslrun/jsonvalue"
	"maps"
	"reflect"
	"unsafe"
)

// docs calls f with a pointer to every document a commit carries: the
// scopes' positions, the history's events, memory writes, the checkpoint,
// the execution's end. Only on a copy (copyForStore): it writes the
// variables' maps back.
func (c *Commit) docs(f func(*any)) {
	for _, sc := range c.Scopes {
		sc.docs(f)
	}
	for i := range c.Events {
		ev := &c.Events[i]
		f(&ev.Input)
		f(&ev.Output)
		f(&ev.Detail)
		f(&ev.Document)
	}
	for i := range c.Memory {
		f(&c.Memory[i].Value)
	}
	if cp := c.Checkpoint; cp != nil {
		f(&cp.Document)
		f(&cp.Context)
		f(&cp.Memory)
		vars(cp.Variables, f)
	}
	f(&c.Output)
}

// docs calls f with a pointer to every document of a scope.
func (sc *Scope) docs(f func(*any)) {
	if sc == nil {
		return
	}
	f(&sc.Doc)
	f(&sc.Output)
	vars(sc.Vars, f)
	if st := sc.Step; st != nil {
		f(&st.Journal)
		f(&st.Debate)
		if a := st.Approval; a != nil {
			f(&a.Prompt)
			f(&a.Editable)
			mapDoc(&a.Decision, f)
		}
		if cb := st.Callback; cb != nil {
			f(&cb.Input)
			mapDoc(&cb.Outcome, f)
		}
		if pf := st.Feedback; pf != nil {
			f(&pf.Output)
			if g := pf.Given; g != nil {
				f(&g.Value)
				f(&g.Output)
			}
		}
	}
}

// vars calls f for every variable's value (the map is the caller's copy).
func vars(m map[string]any, f func(*any)) {
	for k, v := range m {
		f(&v)
		m[k] = v
	}
}

// mapDoc calls f with an object-valued document, kept an object.
func mapDoc(m *map[string]any, f func(*any)) {
	if *m == nil {
		return
	}
	var v any = *m
	f(&v)
	if o, ok := v.(map[string]any); ok {
		*m = o
	}
}

// copyForStore returns a copy of c whose documents may be replaced without
// changing c's: the scopes (their steps, approvals, callbacks and
// variables), events, memory writes and checkpoint are copied; the
// documents themselves are shared until replaced.
func (c *Commit) copyForStore() *Commit {
	out := *c
	if c.Scopes != nil {
		out.Scopes = make(map[string]*Scope, len(c.Scopes))
		for k, sc := range c.Scopes {
			if sc == nil {
				out.Scopes[k] = nil
				continue
			}
			s := *sc
			s.Vars = maps.Clone(sc.Vars)
			if sc.Step != nil {
				st := *sc.Step
				if st.Approval != nil {
					a := *st.Approval
					st.Approval = &a
				}
				if st.Callback != nil {
					cb := *st.Callback
					st.Callback = &cb
				}
				if st.Feedback != nil {
					pf := *st.Feedback
					if pf.Given != nil {
						g := *pf.Given
						pf.Given = &g
					}
					st.Feedback = &pf
				}
				s.Step = &st
			}
			out.Scopes[k] = &s
		}
	}
	out.Events = append([]Event(nil), c.Events...)
	out.Memory = append([]MemoryWrite(nil), c.Memory...)
	if c.Checkpoint != nil {
		cp := *c.Checkpoint
		cp.Variables = maps.Clone(cp.Variables)
		out.Checkpoint = &cp
	}
	return &out
}

// commit returns c as it may be written: every document with the
// execution's secrets replaced by their sealed markers, and the texts that
// can quote them (errors and causes) masked. A value first seen in one
// document is hidden in all of them: every document is read for secrets
// before any is written. c is not changed.
func (s *secrets) commit(c *Commit) *Commit {
	if s == nil {
		return c
	}
	out := c.copyForStore()
	// The same document is often in several places of a commit (a
	// scope's position, its events' documents): each is read and
	// replaced once.
	learned := map[docID]bool{}
	out.docs(func(v *any) {
		id, ok := idOf(*v)
		if ok && learned[id] {
			return
		}
		learned[id] = ok
		s.learn(*v)
	})
	stored := map[docID]any{}
	out.docs(func(v *any) {
		id, ok := idOf(*v)
		if r, done := stored[id]; ok && done {
			*v = r
			return
		}
		*v = s.stored(*v)
		if ok {
			stored[id] = *v
		}
	})
	for _, sc := range out.Scopes {
		if sc == nil {
			continue
		}
		sc.Error, sc.Cause = s.text(sc.Error), s.text(sc.Cause)
		if st := sc.Step; st != nil && st.Feedback != nil && st.Feedback.Given != nil {
			st.Feedback.Given.Comment = s.text(st.Feedback.Given.Comment)
		}
	}
	for i := range out.Events {
		ev := &out.Events[i]
		ev.Error, ev.Cause = s.text(ev.Error), s.text(ev.Cause)
	}
	out.Error, out.Cause = s.text(out.Error), s.text(out.Cause)
	for i := range out.Memory {
		out.Memory[i].Key = s.text(out.Memory[i].Key)
	}
	return out
}

// unsealer returns a function that replaces the sealed values of the
// document it is given in place, and the first error it met (after which
// it does nothing).
func (s *secrets) unsealer() (func(*any), *error) {
	var err error
	return func(v *any) {
		if err != nil {
			return
		}
		var nv any
		if nv, _, err = s.unseal(*v); err == nil {
			*v = nv
		}
	}, &err
}

// unsealExecution replaces the sealed values of an execution as loaded by
// their values, which become its secrets again.
func (s *secrets) unsealExecution(e *Execution) error {
	if s == nil {
		return nil
	}
	f, err := s.unsealer()
	f(&e.Input)
	f(&e.Output)
	for _, sc := range e.Progress.Scopes {
		sc.docs(f)
	}
	return *err
}

// unsealCheckpoint replaces the sealed values of a checkpoint as loaded.
func (s *secrets) unsealCheckpoint(cp *Checkpoint) error {
	if s == nil || cp == nil {
		return nil
	}
	f, err := s.unsealer()
	f(&cp.Document)
	f(&cp.Context)
	f(&cp.Memory)
	vars(cp.Variables, f)
	return *err
}

// docID is the identity of an object or array document: the same map, or
// the same elements of the same length.
type docID struct {
	p unsafe.Pointer
	n int
}

// idOf returns the identity of v, false for a value that is no object or
// array (a string, a number: replaced at no cost worth saving).
func idOf(v any) (docID, bool) {
	switch t := v.(type) {
	case map[string]any:
		return docID{p: reflect.ValueOf(t).UnsafePointer(), n: -1}, t != nil
	case []any:
		return docID{p: unsafe.Pointer(unsafe.SliceData(t)), n: len(t)}, len(t) > 0
	case *jsonvalue.Packed:
		return docID{p: unsafe.Pointer(t), n: -2}, t != nil
	}
	return docID{}, false
}
