package governance

import (
	"strings"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/internal/schemaword"
)

// The error names of governance violations (the asl package's, named here
// for convenience). They are ordinary ASL errors: Retry and Catch match
// them by name and by States.ALL.
const (
	// ErrSchemaViolation is raised when a document does not match
	// Governance.Guard.Schema.
	ErrSchemaViolation = asl.ErrGovernanceSchemaViolation
	// ErrTransitionViolation is raised when a proposed document breaks a
	// rule of Governance.Guard.Transitions.
	ErrTransitionViolation = asl.ErrGovernanceTransitionViolation
	// ErrWriteDenied is raised when a write policy denies one of a state's
	// writes.
	ErrWriteDenied = asl.ErrGovernanceWriteDenied
	// ErrInvalidJSON is raised when a document holds a value outside the
	// JSON model (a NaN or infinite float, a Go type, nesting deeper than
	// jsonvalue.MaxDepth).
	ErrInvalidJSON = asl.ErrGovernanceInvalidJSON
)

// Violation is a document or a transition that governance refuses. Name and
// Cause make the ASL error the engine raises; Detail is the same refusal in
// structured form, for the history event and for an agent that is run again
// and may correct itself.
type Violation struct {
	// Name is one of ErrSchemaViolation, ErrTransitionViolation,
	// ErrWriteDenied and ErrInvalidJSON.
	Name asl.ErrorName
	// Cause is one line saying what was refused and why. A schema
	// violation lists every problem found, separated by "; ".
	Cause string
	// Detail describes the first problem.
	Detail Detail
	// Err is the Go error behind the violation, or nil: a *BudgetError
	// when a write-policy rule overran its evaluation budget.
	Err error
}

// Error returns "Name: Cause".
func (v *Violation) Error() string { return string(v.Name) + ": " + v.Cause }

// Unwrap returns Err.
func (v *Violation) Unwrap() error { return v.Err }

// Detail is one refused value in structured form.
type Detail struct {
	// Rule names the rule that refused it, like "Guard.Schema",
	// "Guard.Transitions.ImmutablePaths", "WritePolicy.Deny[0]",
	// "WritePolicy.Allow", "WritePolicy.Rules[1]" or "JSON" (a value outside
	// the JSON model).
	Rule string
	// Path is where, in the syntax of written paths ($.a.b[2]); an item of a
	// keyed array is named by its key, like $.tasks[id="task-1"].label.
	Path string
	// Old is the previous value at Path, nil when there is none or the rule
	// does not compare documents.
	Old any
	// New is the proposed value at Path, nil when there is none.
	New any
	// Reason is the problem in one line, the way it reads in the Cause.
	Reason string
}

// JSON returns the detail as a JSON object with the keys rule, path, old,
// new and reason (old and new are null when there is no value), for history
// events and for an agent that is given the refusal. Old and New are shared
// with the documents, not copied: callers must not modify them.
func (d Detail) JSON() map[string]any {
	return map[string]any{
		"rule":   d.Rule,
		"path":   d.Path,
		"old":    d.Old,
		"new":    d.New,
		"reason": d.Reason,
	}
}

func violation(name asl.ErrorName, d Detail) *Violation {
	return &Violation{Name: name, Cause: d.Reason, Detail: d}
}

// Problem is one thing wrong with a Governance block or a WritePolicy.
type Problem struct {
	// Pointer is the RFC 6901 JSON Pointer of the offending value inside the
	// block that was compiled, like /Guard/Transitions/ImmutablePaths/0; ""
	// is the block itself.
	Pointer string
	// Msg says what is wrong.
	Msg string
}

// Error returns "/pointer: message" ("/" for the block itself).
func (p *Problem) Error() string {
	ptr := p.Pointer
	if ptr == "" {
		ptr = "/"
	}
	return ptr + ": " + p.Msg
}

// Problems is every problem found in a block, sorted by pointer (problems
// at one pointer keep the order they were found in).
type Problems []*Problem

// Error joins the problems, one per line.
func (ps Problems) Error() string {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.Error()
	}
	return strings.Join(lines, "\n")
}

// show writes a value for a message: compact JSON, cut after 80 bytes.
func show(v any) string { return schemaword.Show(v) }
