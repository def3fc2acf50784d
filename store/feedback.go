package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonvalue"
)

// Feedback on states' outputs (engine.FeedbackStore). Every store keeps
// the same rules, checked here:
//
//   - An item is kept under its ID, which must not be empty; adding an ID
//     kept already fails with engine.ErrExists and changes nothing.
//   - Its names (ID, Execution, Workflow, State, Step, By, Role, Type) are
//     UTF-8 text without NUL of at most MaxFeedbackName bytes, its Comment
//     UTF-8 text without NUL; its Value and Output are JSON values, kept
//     as their exact text (jsonvalue.Marshal), so that numbers and strings
//     come back as they were given.
//   - Its CreatedAt comes back in UTC (the zero time stays zero).
//   - Feedback is not tied to its execution's record: removing an
//     execution leaves its feedback.
//
// ListFeedback lists in ID order (byte order of the IDs, which for
// UUIDv7s is time order), after After, at most Limit (0: all).

// ErrFeedbackArgument reports an argument of a feedback call that a store
// refuses (the error says which and why).
var ErrFeedbackArgument = errors.New("invalid feedback argument")

// MaxFeedbackName bounds the length of a feedback's ID and names, in
// bytes.
const MaxFeedbackName = 4096

// feedbackText checks what must be UTF-8 text without NUL: not empty when
// need, at most max bytes (max 0: any length).
func feedbackText(what, v string, need bool, max int) error {
	switch {
	case v == "" && need:
		return fmt.Errorf("empty %s: %w", what, ErrFeedbackArgument)
	case max > 0 && len(v) > max:
		return fmt.Errorf("%s of %d bytes is longer than %d: %w", what, len(v), max, ErrFeedbackArgument)
	case !utf8.ValidString(v) || strings.IndexByte(v, 0) >= 0:
		return fmt.Errorf("%s %q is not UTF-8 text without NUL: %w", what, v, ErrFeedbackArgument)
	}
	return nil
}

// CheckFeedbackFilter checks ListFeedback's filter: names that are UTF-8
// text without NUL, a Limit of 0 (all) or more.
func CheckFeedbackFilter(f engine.FeedbackFilter) error {
	if f.Limit < 0 {
		return fmt.Errorf("list feedback: limit %d, want 0 (all) or more: %w", f.Limit, ErrFeedbackArgument)
	}
	for _, x := range []struct{ what, v string }{{"workflow", f.Workflow}, {"state", f.State}, {"execution", f.Execution}, {"after", f.After}} {
		if err := feedbackText(x.what, x.v, false, MaxFeedbackName); err != nil {
			return fmt.Errorf("list feedback: %w", err)
		}
	}
	return nil
}

// PreparedFeedback is a feedback item checked for storing: its fields as
// given (CreatedAt in UTC), and the exact JSON text of its Value and of
// its Output (nil when it has none).
type PreparedFeedback struct {
	engine.Feedback
	ValueJSON, OutputJSON []byte
}

// PrepareFeedback checks a feedback item AddFeedback is given and returns
// it prepared for storing; ErrFeedbackArgument for a nil item, an empty
// ID, names or a comment that are not UTF-8 text without NUL (or names
// longer than MaxFeedbackName), or a Value or Output that is not JSON.
func PrepareFeedback(f *engine.Feedback) (*PreparedFeedback, error) {
	if f == nil {
		return nil, fmt.Errorf("add feedback: no feedback: %w", ErrFeedbackArgument)
	}
	if err := feedbackText("id", f.ID, true, MaxFeedbackName); err != nil {
		return nil, fmt.Errorf("add feedback: %w", err)
	}
	for _, x := range []struct{ what, v string }{
		{"execution", f.Execution}, {"workflow", f.Workflow}, {"state", f.State}, {"step", f.Step},
		{"by", f.By}, {"role", f.Role}, {"type", f.Type},
	} {
		if err := feedbackText(x.what, x.v, false, MaxFeedbackName); err != nil {
			return nil, fmt.Errorf("add feedback %q: %w", f.ID, err)
		}
	}
	if err := feedbackText("comment", f.Comment, false, 0); err != nil {
		return nil, fmt.Errorf("add feedback %q: %w", f.ID, err)
	}
	p := &PreparedFeedback{Feedback: *f}
	p.CreatedAt = utc(f.CreatedAt)
	var err error
	if p.ValueJSON, err = jsonvalue.Marshal(f.Value); err != nil {
		return nil, fmt.Errorf("add feedback %q: value: %v: %w", f.ID, err, ErrFeedbackArgument)
	}
	if f.Output != nil {
		if p.OutputJSON, err = jsonvalue.Marshal(f.Output); err != nil {
			return nil, fmt.Errorf("add feedback %q: output: %v: %w", f.ID, err, ErrFeedbackArgument)
		}
	}
	return p, nil
}

// FeedbackExists is the error of adding feedback whose ID is kept
// already.
func FeedbackExists(id string) error {
	return fmt.Errorf("add feedback %q: id taken: %w", id, engine.ErrExists)
}

// FeedbackFromJSON returns a stored item whose Value and Output are JSON
// text (output nil: none), decoding them.
func FeedbackFromJSON(f engine.Feedback, value, output []byte) (engine.Feedback, error) {
	var err error
	if f.Value, err = jsonvalue.Decode(value); err != nil {
		return f, fmt.Errorf("feedback %q: value: %w", f.ID, err)
	}
	f.Output = nil
	if output != nil {
		if f.Output, err = jsonvalue.Decode(output); err != nil {
			return f, fmt.Errorf("feedback %q: output: %w", f.ID, err)
		}
	}
	f.CreatedAt = utc(f.CreatedAt)
	return f, nil
}

// feedbackRecord is how Memory and Bolt keep an item, under its ID.
type feedbackRecord struct {
	Execution string          `json:"execution,omitempty"`
	Workflow  string          `json:"workflow,omitempty"`
	State     string          `json:"state,omitempty"`
	Step      string          `json:"step,omitempty"`
	By        string          `json:"by,omitempty"`
	Role      string          `json:"role,omitempty"`
	Type      string          `json:"type,omitempty"`
	Value     json.RawMessage `json:"value"`
	Comment   string          `json:"comment,omitempty"`
	Output    json.RawMessage `json:"output,omitempty"`
	CreatedAt time.Time       `json:"createdAt,omitzero"`
}

// encodeFeedback is the record of a prepared item.
func encodeFeedback(p *PreparedFeedback) ([]byte, error) {
	data, err := marshalRecord(&feedbackRecord{
		Execution: p.Execution, Workflow: p.Workflow, State: p.State, Step: p.Step, By: p.By, Role: p.Role,
		Type: p.Type, Value: p.ValueJSON, Comment: p.Comment, Output: p.OutputJSON, CreatedAt: p.CreatedAt,
	})
	if err != nil {
		return nil, fmt.Errorf("add feedback %q: %w", p.ID, err)
	}
	return data, nil
}

// decodeFeedback reads the record of item id.
func decodeFeedback(id string, data []byte) (engine.Feedback, error) {
	var r feedbackRecord
	if err := json.Unmarshal(data, &r); err != nil {
		return engine.Feedback{}, fmt.Errorf("feedback record %q: %w", id, err)
	}
	return FeedbackFromJSON(engine.Feedback{
		ID: id, Execution: r.Execution, Workflow: r.Workflow, State: r.State, Step: r.Step, By: r.By, Role: r.Role,
		Type: r.Type, Comment: r.Comment, CreatedAt: r.CreatedAt,
	}, r.Value, r.Output)
}

// feedbackListed reports whether item fb matches f's names (not After
// nor Limit).
func feedbackListed(fb *engine.Feedback, f engine.FeedbackFilter) bool {
	return (f.Workflow == "" || fb.Workflow == f.Workflow) &&
		(f.State == "" || fb.State == f.State) &&
		(f.Execution == "" || fb.Execution == f.Execution)
}

var _ engine.FeedbackStore = (*Memory)(nil)

// AddFeedback stores f; an ID kept already is engine.ErrExists.
func (m *Memory) AddFeedback(ctx context.Context, f *engine.Feedback) error {
	p, err := PrepareFeedback(f)
	if err != nil {
		return err
	}
	data, err := encodeFeedback(p)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	if _, ok := m.feedback[p.ID]; ok {
		return FeedbackExists(p.ID)
	}
	if m.feedback == nil {
		m.feedback = make(map[string][]byte)
	}
	m.feedback[p.ID] = data
	return nil
}

// ListFeedback lists the feedback f selects, in ID order. It sorts every
// ID kept on each call: Memory is for tests and small runs.
func (m *Memory) ListFeedback(ctx context.Context, f engine.FeedbackFilter) ([]engine.Feedback, error) {
	if err := CheckFeedbackFilter(f); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return nil, ErrClosed
	}
	var out []engine.Feedback
	for _, id := range slices.Sorted(maps.Keys(m.feedback)) {
		if f.Limit > 0 && len(out) == f.Limit {
			break
		}
		if id <= f.After {
			continue
		}
		fb, err := decodeFeedback(id, m.feedback[id])
		if err != nil {
			return nil, err
		}
		if feedbackListed(&fb, f) {
			out = append(out, fb)
		}
	}
	return out, nil
}
