package postgres

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aslrun/aslrun/engine"
)

// TestCommitOutcome: how the store learns whether a commit whose answer
// was lost was written (commitApplied), and that an execution whose commit
// outcome stays unknown has its later commits refused until it is
// unfenced (doubt).
func TestCommitOutcome(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, Options{})
	if err := db.Create(ctx, &engine.Execution{ID: "e1", MachineName: "m", StartedAt: time.Unix(1_700_000_000, 0), Input: map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	if err := db.Commit(ctx, benchStoreCommit("e1", 1)); err != nil {
		t.Fatal(err)
	}
	var head []byte
	var seq int64
	if err := db.pool.QueryRow(ctx, `SELECT head, commit_seq FROM executions WHERE id = 'e1'`).Scan(&head, &seq); err != nil {
		t.Fatal(err)
	}
	other := append([]byte{}, head...)
	other[len(other)-1] ^= 1
	for _, tc := range []struct {
		name string
		id   string
		seq  int64
		head []byte
		want bool
	}{
		{"written", "e1", seq - 1, head, true},
		{"another commit's head", "e1", seq - 1, other, false},
		{"not the next commit", "e1", seq, head, false},
		{"an earlier commit", "e1", seq - 2, head, false},
		{"no such execution", "nope", 0, head, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := db.commitApplied(ctx, tc.id, tc.seq, tc.head)
			if err != nil || got != tc.want {
				t.Errorf("commitApplied = %v, %v; want %v", got, err, tc.want)
			}
		})
	}

	db.doubt("e1")
	if err := db.Commit(ctx, benchStoreCommit("e1", 2)); !errors.Is(err, ErrFenced) || !strings.Contains(err.Error(), "outcome of an earlier commit of it is unknown") {
		t.Fatalf("commit of an execution in doubt = %v, want ErrFenced saying why", err)
	}
	if e, err := db.Load(ctx, "e1"); err != nil || e.Seq != 1 {
		t.Fatalf("Load: seq %v, %v; want 1: the refused commit wrote nothing", e.Seq, err)
	}
	db.Unfence("e1")
	if err := db.Commit(ctx, benchStoreCommit("e1", 2)); err != nil {
		t.Fatalf("commit once unfenced: %v", err)
	}
}
