package store

import (
	"bytes"
	"context"
	"fmt"

	"go.etcd.io/bbolt"

	"github.com/aslrun/aslrun/engine"
)

// Bolt's feedback is one bucket, feedback, made by the first AddFeedback
// (a database that never had feedback has none, and lists none). Its
// parts, by the first byte of their keys:
//
//	'r' id                    the item's record (feedbackRecord, JSON)
//	'w' workflow NUL id       empty: the items of a workflow, by id
//	's' workflow NUL state NUL id
//	                          empty: the items of a workflow's state, by id
//	'x' execution NUL id      empty: the items of an execution, by id
//
// IDs are UUIDv7s, so every part lists in time order. A listing reads,
// from After, the execution's index when the filter names an execution,
// else the state's when it names a workflow and a state, else the
// workflow's when it names a workflow, else the records: it reads (and
// decodes) every item of what it reads that the other names do not
// select until it has Limit items. So a listing by execution costs the
// execution's items, by workflow (and state) only the items listed, but
// by state without a workflow every item up to the last one listed.
var bucketFeedback = []byte("feedback")

// boltFeedback is a transaction's feedback bucket.
type boltFeedback struct {
	records, wf, states, execs outboxPart
}

// openFeedback returns the transaction's feedback; nil when it has no
// bucket and create is false.
func openFeedback(t *bbolt.Tx, create bool) (*boltFeedback, error) {
	b := t.Bucket(bucketFeedback)
	if b == nil {
		if !create {
			return nil, nil
		}
		var err error
		if b, err = t.CreateBucket(bucketFeedback); err != nil {
			return nil, fmt.Errorf("create bucket %s: %w", bucketFeedback, err)
		}
	}
	return &boltFeedback{records: outboxPart{b, 'r'}, wf: outboxPart{b, 'w'}, states: outboxPart{b, 's'}, execs: outboxPart{b, 'x'}}, nil
}

var _ engine.FeedbackStore = (*Bolt)(nil)

// AddFeedback stores f and its indexes in one write of the commit loop;
// an ID kept already is engine.ErrExists.
func (b *Bolt) AddFeedback(ctx context.Context, f *engine.Feedback) error {
	p, err := PrepareFeedback(f)
	if err != nil {
		return err
	}
	data, err := encodeFeedback(p)
	if err != nil {
		return err
	}
	id := []byte(p.ID)
	return b.write(ctx, func(x *tx) error {
		t := x.heads.Tx()
		if fb, err := openFeedback(t, false); err != nil {
			return reject(err)
		} else if fb != nil && fb.records.Get(id) != nil {
			return reject(FeedbackExists(p.ID))
		}
		fb, err := openFeedback(t, true)
		if err != nil {
			return err
		}
		if err := fb.records.Put(id, data); err != nil {
			return err
		}
		if p.Workflow != "" {
			if err := fb.wf.Put(idKey(p.Workflow, p.ID), nil); err != nil {
				return err
			}
			if err := fb.states.Put(idKey(p.Workflow, string(idKey(p.State, p.ID))), nil); err != nil {
				return err
			}
		}
		if p.Execution != "" {
			if err := fb.execs.Put(idKey(p.Execution, p.ID), nil); err != nil {
				return err
			}
		}
		return nil
	})
}

// ListFeedback lists the feedback f selects, in ID order, reading an
// index when f names an execution or a workflow (and a state).
func (b *Bolt) ListFeedback(ctx context.Context, f engine.FeedbackFilter) ([]engine.Feedback, error) {
	if err := CheckFeedbackFilter(f); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out []engine.Feedback
	err := b.view(func(x *tx) error {
		fb, err := openFeedback(x.heads.Tx(), false)
		if err != nil || fb == nil {
			return err
		}
		// visit lists item id when f selects it; false once Limit items are.
		visit := func(id []byte) (bool, error) {
			if string(id) == f.After {
				return true, nil
			}
			data := fb.records.Get(id)
			if data == nil {
				return false, fmt.Errorf("bucket %s: an index names feedback %q, which has no record", bucketFeedback, id)
			}
			item, err := decodeFeedback(string(id), data)
			if err != nil {
				return false, err
			}
			if feedbackListed(&item, f) {
				out = append(out, item)
			}
			return f.Limit == 0 || len(out) < f.Limit, nil
		}
		// byIndex lists the ids of part under name.
		byIndex := func(part outboxPart, name string) error {
			prefix := idKey(name, "")
			return part.each(idKey(name, f.After), func(k []byte) (bool, error) {
				if !bytes.HasPrefix(k, prefix) {
					return false, nil
				}
				return visit(k[len(prefix):])
			})
		}
		switch {
		case f.Execution != "":
			return byIndex(fb.execs, f.Execution)
		case f.Workflow != "" && f.State != "":
			return byIndex(fb.states, string(idKey(f.Workflow, f.State)))
		case f.Workflow != "":
			return byIndex(fb.wf, f.Workflow)
		}
		return fb.records.each([]byte(f.After), func(k []byte) (bool, error) { return visit(k) })
	})
	if err != nil {
		return nil, fmt.Errorf("list feedback: %w", err)
	}
	return out, nil
}
