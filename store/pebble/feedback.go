//go:build pebble

package pebble

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/store"
)

// Feedback (engine.FeedbackStore), with package store's rules
// (store.PrepareFeedback and the rest): an item is a feedbackRow as JSON
// under 'f' id; a listing walks the items in id order. Feedback is not
// tied to its execution's records.

// kindFeedback is the kind of the feedback's keys.
const kindFeedback = 'f'

var _ engine.FeedbackStore = (*Store)(nil)

// feedbackRow is a stored feedback item, without its ID (the key); its
// value and output are their exact JSON text.
type feedbackRow struct {
	Execution string    `json:"execution,omitempty"`
	Workflow  string    `json:"workflow,omitempty"`
	State     string    `json:"state,omitempty"`
	Step      string    `json:"step,omitempty"`
	By        string    `json:"by,omitempty"`
	Role      string    `json:"role,omitempty"`
	Type      string    `json:"type,omitempty"`
	Comment   string    `json:"comment,omitempty"`
	Value     string    `json:"value"`
	Output    *string   `json:"output,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
}

// AddFeedback stores f; an ID kept already is engine.ErrExists.
func (s *Store) AddFeedback(ctx context.Context, f *engine.Feedback) error {
	p, err := store.PrepareFeedback(f)
	if err != nil {
		return err
	}
	if err := s.begin(ctx); err != nil {
		return err
	}
	defer s.end()
	row := feedbackRow{Execution: p.Execution, Workflow: p.Workflow, State: p.State, Step: p.Step, By: p.By, Role: p.Role, Type: p.Type,
		Comment: p.Comment, Value: string(p.ValueJSON), CreatedAt: p.CreatedAt}
	if p.OutputJSON != nil {
		out := string(p.OutputJSON)
		row.Output = &out
	}
	data, err := json.Marshal(row)
	if err != nil {
		return fmt.Errorf("add feedback %q: %w", p.ID, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := key(kindFeedback, p.ID)
	_, ok, err := get(s.db, k)
	switch {
	case err != nil:
		return s.dbErr(fmt.Sprintf("adding feedback %q", p.ID), err)
	case ok:
		return store.FeedbackExists(p.ID)
	}
	if err := s.db.Set(k, data, pebble.Sync); err != nil {
		return s.dbErr(fmt.Sprintf("adding feedback %q", p.ID), err)
	}
	return nil
}

// ListFeedback lists the feedback f selects, in ID order.
func (s *Store) ListFeedback(ctx context.Context, f engine.FeedbackFilter) ([]engine.Feedback, error) {
	if err := store.CheckFeedbackFilter(f); err != nil {
		return nil, err
	}
	if err := s.begin(ctx); err != nil {
		return nil, err
	}
	defer s.end()
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{kindFeedback}, UpperBound: []byte{kindFeedback + 1}})
	if err != nil {
		return nil, s.dbErr("listing feedback", err)
	}
	defer it.Close()
	ok := it.First()
	if f.After != "" {
		ok = it.SeekGE(append(key(kindFeedback, f.After), 0))
	}
	var out []engine.Feedback
	for ; ok && (f.Limit == 0 || len(out) < f.Limit); ok = it.Next() {
		id := string(it.Key()[1:])
		var row feedbackRow
		if err := json.Unmarshal(it.Value(), &row); err != nil {
			return nil, fmt.Errorf("feedback %q: %w: %w", id, store.ErrDatabaseCorrupt, err)
		}
		if f.Workflow != "" && row.Workflow != f.Workflow || f.State != "" && row.State != f.State || f.Execution != "" && row.Execution != f.Execution {
			continue
		}
		var output []byte
		if row.Output != nil {
			output = []byte(*row.Output)
		}
		fb, err := store.FeedbackFromJSON(engine.Feedback{ID: id, Execution: row.Execution, Workflow: row.Workflow, State: row.State, Step: row.Step,
			By: row.By, Role: row.Role, Type: row.Type, Comment: row.Comment, CreatedAt: row.CreatedAt}, []byte(row.Value), output)
		if err != nil {
			return nil, err
		}
		out = append(out, fb)
	}
	if err := it.Error(); err != nil {
		return nil, s.dbErr("listing feedback", err)
	}
	return out, nil
}
