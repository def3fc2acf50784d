package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonvalue"
)

// TestFeedbackTwoHandles: feedback one process adds is listed by another
// (two DBs on one database) at once, and an id taken through either is
// refused through the other; of two processes adding one id at once,
// exactly one succeeds.
func TestFeedbackTwoHandles(t *testing.T) {
	ctx := context.Background()
	url := testServer.Schema(t)
	var dbs [2]*DB
	for i := range dbs {
		db, err := Open(ctx, url, Options{Migrate: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		dbs[i] = db
	}
	value, err := jsonvalue.Decode([]byte(`{"accuracy":5,"big":12345678901234567890123,"s":"e\u0301"}`))
	if err != nil {
		t.Fatal(err)
	}
	f := &engine.Feedback{ID: "0195a3b4-0000-7000-8000-000000000001", Execution: "e1", Workflow: "triage", State: "Classify",
		Step: "Classify#1", By: "alice", Role: "reviewer", Type: "structured", Value: value,
		CreatedAt: time.Unix(1_700_000_000, 123456789)}
	if err := dbs[0].AddFeedback(ctx, f); err != nil {
		t.Fatal(err)
	}
	got, err := dbs[1].ListFeedback(ctx, engine.FeedbackFilter{Workflow: "triage", State: "Classify"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].ID != f.ID || !got[0].CreatedAt.Equal(f.CreatedAt) {
		t.Fatalf("the other handle lists %+v", got)
	}
	if b, _ := jsonvalue.Marshal(got[0].Value); string(b) != "{\"accuracy\":5,\"big\":12345678901234567890123,\"s\":\"e\u0301\"}" {
		t.Errorf("value through the other handle = %s", b)
	}
	if err := dbs[1].AddFeedback(ctx, f); !errors.Is(err, engine.ErrExists) {
		t.Errorf("AddFeedback of the id through the other handle = %v, want ErrExists", err)
	}

	// Both handles add the same ids at once.
	const n = 20
	var wg sync.WaitGroup
	var mu sync.Mutex
	added := make(map[string]int)
	for i, db := range dbs {
		wg.Go(func() {
			for k := range n {
				id := fmt.Sprintf("0195a3b4-0000-7000-8000-1%011d", k)
				err := db.AddFeedback(ctx, &engine.Feedback{ID: id, Workflow: "race", By: fmt.Sprint("server-", i), Type: "thumbs", Value: "up"})
				switch {
				case err == nil:
					mu.Lock()
					added[id]++
					mu.Unlock()
				case !errors.Is(err, engine.ErrExists):
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	for k := range n {
		if id := fmt.Sprintf("0195a3b4-0000-7000-8000-1%011d", k); added[id] != 1 {
			t.Errorf("%s added %d times", id, added[id])
		}
	}
	for _, db := range dbs {
		got, err := db.ListFeedback(ctx, engine.FeedbackFilter{Workflow: "race"})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != n {
			t.Errorf("listed %d of the race's items, want %d", len(got), n)
		}
	}
}

// TestFeedbackQueries: a listing's statement names only the filter's
// columns, and a filtered one can read the indexes of migration 0009.
func TestFeedbackQueries(t *testing.T) {
	tests := []struct {
		f     engine.FeedbackFilter
		query string
		args  int
		index string
	}{
		{engine.FeedbackFilter{}, `WHERE id > $1 ORDER BY id`, 1, "feedback_pkey"},
		{engine.FeedbackFilter{Workflow: "w", State: "S", Limit: 10}, `WHERE id > $1 AND workflow = $2 AND state = $3 ORDER BY id LIMIT $4`, 4, "feedback_workflow"},
		{engine.FeedbackFilter{Workflow: "w"}, `WHERE id > $1 AND workflow = $2 ORDER BY id`, 2, "feedback_workflow"},
		{engine.FeedbackFilter{Execution: "e", After: "x"}, `WHERE id > $1 AND execution = $2 ORDER BY id`, 2, "feedback_execution"},
		{engine.FeedbackFilter{State: "S", Execution: "e", Limit: 1}, `WHERE id > $1 AND state = $2 AND execution = $3 ORDER BY id LIMIT $4`, 4, ""},
	}
	db := openTest(t, Options{})
	ctx := context.Background()
	conn, err := db.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SET enable_seqscan = off`); err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		q, args := listFeedbackQuery(tt.f)
		if !strings.HasSuffix(q, " FROM feedback "+tt.query) || len(args) != tt.args {
			t.Errorf("%+v: %s with %d arguments, want … %s with %d", tt.f, q, len(args), tt.query, tt.args)
			continue
		}
		if tt.index == "" {
			continue
		}
		var plan strings.Builder
		rows, err := conn.Query(ctx, "EXPLAIN "+q, args...)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			plan.WriteString(line + "\n")
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(plan.String(), tt.index) {
			t.Errorf("%+v: the plan reads no %s:\n%s", tt.f, tt.index, plan.String())
		}
	}
}
