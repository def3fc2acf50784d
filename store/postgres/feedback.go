package postgres

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/store"
)

// Feedback (engine.FeedbackStore), in table feedback (migration 0009),
// with package store's rules (store.PrepareFeedback and the rest). An
// item is one INSERT; a listing one SELECT whose WHERE names only the
// columns the filter sets, so that the planner reads the (workflow, state,
// id) or (execution, id) index for a filtered listing. Feedback has no
// foreign key to its execution and outlives it.

var _ engine.FeedbackStore = (*DB)(nil)

// The feedback's statements.
const (
	feedbackColumns = `id, execution, workflow, state, step, by_name, role, type, value, comment, output, created_ns`

	insertFeedback = `INSERT INTO feedback (` + feedbackColumns + `)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`
)

// AddFeedback stores f; an ID kept already is engine.ErrExists.
func (db *DB) AddFeedback(ctx context.Context, f *engine.Feedback) error {
	p, err := store.PrepareFeedback(f)
	if err != nil {
		return err
	}
	if err := db.check(ctx); err != nil {
		return err
	}
	_, err = db.pool.Exec(ctx, insertFeedback, p.ID, p.Execution, p.Workflow, p.State, p.Step, p.By, p.Role, p.Type,
		p.ValueJSON, p.Comment, p.OutputJSON, nsOrNull(p.CreatedAt))
	var pe *pgconn.PgError
	switch {
	case errors.As(err, &pe) && pe.Code == "23505" && pe.ConstraintName == "feedback_pkey":
		return store.FeedbackExists(p.ID)
	case err != nil:
		return db.dbErr("adding feedback "+strconv.Quote(p.ID), err)
	}
	return nil
}

// ListFeedback lists the feedback f selects, in ID order.
func (db *DB) ListFeedback(ctx context.Context, f engine.FeedbackFilter) ([]engine.Feedback, error) {
	if err := store.CheckFeedbackFilter(f); err != nil {
		return nil, err
	}
	if err := db.check(ctx); err != nil {
		return nil, err
	}
	query, args := listFeedbackQuery(f)
	rows, err := db.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, db.dbErr("listing feedback", err)
	}
	out, err := pgx.CollectRows(rows, scanFeedback)
	if err != nil {
		return nil, db.dbErr("listing feedback", err)
	}
	return out, nil
}

// listFeedbackQuery is the SELECT of f and its arguments: a condition for
// each name f sets (at most eight forms of the statement).
func listFeedbackQuery(f engine.FeedbackFilter) (string, []any) {
	var q strings.Builder
	q.WriteString(`SELECT ` + feedbackColumns + ` FROM feedback WHERE id > $1`)
	args := []any{f.After}
	for _, c := range []struct{ column, v string }{{"workflow", f.Workflow}, {"state", f.State}, {"execution", f.Execution}} {
		if c.v != "" {
			args = append(args, c.v)
			q.WriteString(" AND " + c.column + " = $" + strconv.Itoa(len(args)))
		}
	}
	q.WriteString(" ORDER BY id")
	if f.Limit > 0 {
		args = append(args, f.Limit)
		q.WriteString(" LIMIT $" + strconv.Itoa(len(args)))
	}
	return q.String(), args
}

// scanFeedback reads a row of feedbackColumns.
func scanFeedback(r pgx.CollectableRow) (engine.Feedback, error) {
	var fb engine.Feedback
	var value, output []byte
	var created *int64
	if err := r.Scan(&fb.ID, &fb.Execution, &fb.Workflow, &fb.State, &fb.Step, &fb.By, &fb.Role, &fb.Type,
		&value, &fb.Comment, &output, &created); err != nil {
		return fb, err
	}
	fb.CreatedAt = nsTime(created)
	return store.FeedbackFromJSON(fb, value, output)
}
