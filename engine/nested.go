package engine

import (
	"context"
	"errors"

	"github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/states"
)

// nested runs machine m of a Map item or Parallel branch in scope child,
// whose key names it durably, on input (of at most size bytes). When the
// execution was resumed, a machine that had finished is not run again (its
// recorded output or failure is returned) and one that had started goes on
// from where it was committed. A finished machine's outcome is committed,
// so that a later resume does not run it again.
func (h *stateRun) nested(ctx context.Context, m *states.Machine, child *scope, input any, size int) (any, error) {
	r := h.r
	next, doc := m.StartAt, input
	if s := r.loaded[child.key]; s != nil {
		if s.Done {
			if s.Failed {
				return nil, &asl.Error{Name: asl.ErrorName(s.Error), Cause: s.Cause}
			}
			return s.Output, nil
		}
		next, doc, size = s.Next, s.Doc, unknownSize
		child.vars, child.visits, child.resume = s.Vars, s.Visits, s.Step
	}
	// A turn of the executor's fair share (fair.go); without one (ctx
	// ended while waiting) the machine stops at once, as it would.
	turn, terr := r.x.fair.acquire(ctx, r.exec.ID)
	mctx := ctx
	if terr == nil {
		mctx = withTurn(ctx, turn)
	}
	out, err := r.machine(mctx, m, child, next, doc, size)
	if terr == nil {
		r.x.fair.release(turn)
	}
	if err != nil {
		var ae *asl.Error
		if errors.As(err, &ae) {
			// The machine failed: its calls are counted, with their usage,
			// by the enclosing scope's next commit (the failure's), so
			// that a redrive's calls continue their invocation numbers.
			h.sc.adopt(child)
		}
		return nil, err
	}
	if !r.x.durable {
		return out, nil
	}
	done := &Scope{Done: true, Output: out}
	if child.discard {
		done.Output = nil
	}
	c := child.settle(&Commit{Scopes: map[string]*Scope{child.key: done}, nestedEnd: true})
	if err := r.commit(ctx, nil, c); err != nil {
		return nil, err
	}
	return out, nil
}

// failedNested commits that a nested machine failed and its failure was
// tolerated (a Map item within ToleratedFailureCount/Percentage), so that a
// resumed Map counts it again without running it.
func (h *stateRun) failedNested(ctx context.Context, child *scope, ae *asl.Error) error {
	s := &Scope{Done: true, Failed: true, Error: string(ae.Name), Cause: ae.Cause}
	return h.r.commit(ctx, nil, child.settle(&Commit{Scopes: map[string]*Scope{child.key: s}}))
}

// adopt hands the uncommitted calls, usage and budget notices of a failed
// nested scope to s, to be committed with s's next commit.
func (s *scope) adopt(child *scope) {
	calls, usage, notices := child.calls, child.usage, child.notices
	child.calls, child.usage, child.notices = nil, nil, nil
	s.callsMu.Lock()
	defer s.callsMu.Unlock()
	for agent, n := range calls {
		if s.calls == nil {
			s.calls = make(map[string]int)
		}
		s.calls[agent] += n
	}
	if usage != nil {
		if s.usage == nil {
			s.usage = &Usage{}
		}
		s.usage.Add(usage)
	}
	s.notices = append(s.notices, notices...)
}
