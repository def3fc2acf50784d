package engine

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/aslrun/aslrun/governance"
	"github.com/aslrun/aslrun/jsonpath"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/states"
)

// Pending returns the approvals an execution waits on, by ID.
func (x *Executor) Pending(ctx context.Context, id string) ([]PendingApproval, error) {
	if !x.durable {
		return nil, fmt.Errorf("execution %s: %w", id, ErrNotDurable)
	}
	e, err := x.store.Load(ctx, id)
	if err != nil {
		return nil, err
	}
	return PendingOf(e), nil
}

// PendingOf returns the approvals a loaded execution waits on, by ID.
func PendingOf(e *Execution) []PendingApproval {
	var out []PendingApproval
	for _, key := range pendingKeys(e) {
		out = append(out, *e.Progress.Scopes[key].Step.Approval)
	}
	return out
}

// pendingKeys lists the scopes of e waiting for a decision, sorted.
func pendingKeys(e *Execution) []string {
	return waitingKeys(e, func(st *StepProgress) bool { return st.Approval != nil && st.Approval.Decision == nil })
}

// waitingKeys lists, sorted, the scopes of e, a WAITING execution, whose
// state waits as waits says (for a decision, for feedback).
func waitingKeys(e *Execution, waits func(*StepProgress) bool) []string {
	if e.Status != StatusWaiting {
		return nil
	}
	var keys []string
	for key, s := range e.Progress.Scopes {
		if s != nil && !s.Done && s.Step != nil && waits(s.Step) {
			keys = append(keys, key)
		}
	}
	sort.Strings(keys)
	return keys
}

// Decide records a decision for a pending approval of execution id and
// continues the execution in this process, as Resume does: the result says
// how it ended or where it waits next. A refused decision (ErrDecisionRefused)
// leaves the execution waiting. A decision is applied exactly once: a
// second one for the same approval, sent at the same time or later, is
// refused (ErrBusy while the first is being applied).
func (x *Executor) Decide(ctx context.Context, id string, d Decision, opts ResumeOptions) (_ *Result, err error) {
	// Hold the execution before reading it, so that two decisions are
	// applied one after the other, the second seeing the first.
	ctx, release, err := x.hold(ctx, id, true)
	if err != nil {
		return nil, err
	}
	defer release()
	defer func() { err = stopped(ctx, id, err) }()
	e, m, err := x.load(ctx, id)
	if err != nil {
		return nil, err
	}
	key, pa, err := choosePending(e, d)
	if err != nil {
		return nil, err
	}
	st, err := approvalOf(m, pa)
	if err != nil {
		return nil, err
	}
	decision, err := decisionObject(st, pa, d)
	if err != nil {
		return nil, fmt.Errorf("execution %s approval %s: %w", id, pa.ID, err)
	}
	reg, err := x.agentsOf(e, opts)
	if err != nil {
		return nil, err
	}
	decided := *pa
	decided.Decision = decision
	scope := *e.Progress.Scopes[key]
	step := *scope.Step
	step.Approval = &decided
	scope.Step = &step
	e.Progress.Scopes[key] = &scope

	r := x.resumed(m, e, reg)
	detail := map[string]any{"approval": pa.ID}
	maps.Copy(detail, decision)
	r.ownEvent(Event{Type: EventApprovalDecided, State: pa.State, Document: scope.Doc, Detail: detail})
	if err := r.commit(ctx, nil, &Commit{Status: StatusRunning, Scopes: map[string]*Scope{key: &scope}}); err != nil {
		return nil, err
	}
	if opts.RecordOnly {
		return &Result{ID: id, Status: StatusRunning}, nil
	}
	return r.execute(ctx, e.Progress.Scopes[""])
}

// CheckDecision is a dry run of Decide: it returns nil when the decision
// would be accepted and its write pass the workflow's governance, an error
// wrapping ErrDecisionRefused when Decide would refuse it, or a
// *GovernanceError when governance would refuse the document it makes.
// Nothing is recorded. (Decide checks again: the document may change in
// between, and Choices, Assign and OutputPath are not run here.)
func (x *Executor) CheckDecision(ctx context.Context, id string, d Decision) error {
	if !x.durable {
		return fmt.Errorf("execution %s: %w", id, ErrNotDurable)
	}
	e, m, err := x.load(ctx, id)
	if err != nil {
		return err
	}
	key, pa, err := choosePending(e, d)
	if err != nil {
		return err
	}
	st, err := approvalOf(m, pa)
	if err != nil {
		return err
	}
	decision, err := decisionObject(st, pa, d)
	if err != nil {
		return fmt.Errorf("execution %s approval %s: %w", id, pa.ID, err)
	}
	raw := e.Progress.Scopes[key].Doc
	doc, err := decisionDocument(st, raw, decision)
	if err != nil {
		return fmt.Errorf("execution %s approval %s: the decision cannot be placed in the document: %v: %w", id, pa.ID, err, ErrDecisionRefused)
	}
	var v *governance.Violation
	if rules := m.Extensions; key == "" && rules != nil {
		v = rules.Governance.Check(raw, doc, st.Name)
	}
	if own := st.WritePolicy; v == nil && own != nil {
		v = own.Check(raw, doc, st.Name)
	}
	if v != nil {
		return fmt.Errorf("execution %s approval %s: %w", id, pa.ID, &GovernanceError{Violation: v})
	}
	return nil
}

// choosePending finds the pending approval a decision is for.
func choosePending(e *Execution, d Decision) (string, *PendingApproval, error) {
	keys := pendingKeys(e)
	if len(keys) == 0 {
		return "", nil, fmt.Errorf("execution %s is %s, not waiting for a decision: %w", e.ID, e.Status, ErrDecisionRefused)
	}
	var ids []string
	var match []string
	for _, k := range keys {
		pa := e.Progress.Scopes[k].Step.Approval
		ids = append(ids, pa.ID)
		if d.ApprovalID == "" || d.ApprovalID == pa.ID || d.ApprovalID == pa.State || d.ApprovalID == stateOfID(pa.ID) {
			match = append(match, k)
		}
	}
	switch {
	case len(match) == 1:
		return match[0], e.Progress.Scopes[match[0]].Step.Approval, nil
	case len(match) == 0:
		return "", nil, fmt.Errorf("execution %s has no pending approval %q; pending: %s: %w", e.ID, d.ApprovalID, strings.Join(ids, ", "), ErrDecisionRefused)
	}
	return "", nil, fmt.Errorf("execution %s waits on %d approvals (%s): say which: %w", e.ID, len(match), strings.Join(ids, ", "), ErrDecisionRefused)
}

// stateOfID is the state name in a pending approval's ID ("Review" in
// "Batch#1.0/3/Review#1").
func stateOfID(id string) string {
	if i := strings.LastIndex(id, "/"); i >= 0 {
		id = id[i+1:]
	}
	if i := strings.LastIndex(id, "#"); i >= 0 {
		id = id[:i]
	}
	return id
}

// approvalOf finds the Approval state of a pending approval.
func approvalOf(m *states.Machine, pa *PendingApproval) (*states.Approval, error) {
	name := stateOfID(pa.ID)
	var found *states.Approval
	m.Each(func(_, n string, st states.State) bool {
		if a, ok := st.(*states.Approval); ok && n == name {
			found = a
			return false
		}
		return true
	})
	if found == nil {
		return nil, fmt.Errorf("approval %s: the definition has no Approval state %q", pa.ID, name)
	}
	return found, nil
}

// decisionObject checks a decision against its pending approval and
// builds the decision object the state records.
func decisionObject(s *states.Approval, pa *PendingApproval, d Decision) (map[string]any, error) {
	if !slices.Contains(pa.Options, d.Approval) {
		return nil, fmt.Errorf("%q is not one of the options %s: %w", d.Approval, strings.Join(pa.Options, ", "), ErrDecisionRefused)
	}
	if d.Digest != "" && d.Digest != pa.Digest {
		return nil, fmt.Errorf("the digest %s does not match what is pending (%s): the approval changed since it was shown: %w", d.Digest, pa.Digest, ErrDecisionRefused)
	}
	out := map[string]any{"approval": d.Approval, "timestamp": formatTime(time.Now())}
	if d.Approver != "" {
		out["approver"] = d.Approver
	}
	if d.Comment != "" {
		out["comment"] = d.Comment
	}
	if d.Edit != nil {
		if s.Editable == nil {
			return nil, fmt.Errorf("the approval has no Editable fields, so an edit cannot be applied: %w", ErrDecisionRefused)
		}
		edit, err := jsonvalue.Normalize(d.Edit)
		if err != nil {
			return nil, fmt.Errorf("the edit is not JSON: %v: %w", err, ErrDecisionRefused)
		}
		if _, isObj := edit.(map[string]any); !isObj {
			return nil, fmt.Errorf("the edit must be an object shaped like the document, not %s: %w", jsonvalue.TypeName(edit), ErrDecisionRefused)
		}
		// Every value written must lie inside an Editable field.
		if outside := editOutside(edit, "$", s.Editable.Fields); outside != "" {
			return nil, fmt.Errorf("the edit writes %s, which is not inside the Editable fields (%s): %w", outside, fieldList(s.Editable.Fields), ErrDecisionRefused)
		}
		out["edited"] = edit
	}
	return out, nil
}

// insideEditable reports whether a written path (see jsonvalue.AppendMember)
// lies at or under one of the fields ("$.draft.text" under "$.draft"),
// compared in written form whichever way a field is spelled ("$.items.[0]",
// "$['draft']").
func insideEditable(fields []*jsonpath.Path, path string) bool {
	for _, f := range fields {
		steps, ok := f.Steps()
		if !ok {
			continue
		}
		src := steps.String()
		if path == src || strings.HasPrefix(path, src+".") || strings.HasPrefix(path, src+"[") {
			return true
		}
	}
	return false
}

func fieldList(fields []*jsonpath.Path) string {
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = f.String()
	}
	return strings.Join(names, ", ")
}

// editOutside returns the first path of v (keys in order) that lies
// outside every Editable field, or "" when all of v is inside them: a
// value inside a field is fine as a whole; otherwise its members are
// checked, and a scalar or an empty container outside is the answer.
func editOutside(v any, path string, fields []*jsonpath.Path) string {
	if path != "$" && insideEditable(fields, path) {
		return ""
	}
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 0 {
			return path
		}
		for _, k := range slices.Sorted(maps.Keys(x)) {
			if p := editOutside(x[k], string(jsonvalue.AppendMember([]byte(path), k)), fields); p != "" {
				return p
			}
		}
		return ""
	case []any:
		if len(x) == 0 {
			return path
		}
		for i, e := range x {
			if p := editOutside(e, string(jsonvalue.AppendIndex([]byte(path), i)), fields); p != "" {
				return p
			}
		}
		return ""
	}
	return path
}
