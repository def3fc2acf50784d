package postgres

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/store/storetest"
)

// checkpointedRun commits execution id, started at ts: checkpoint "a"
// saved (event 3), "b" saved (event 5), "a" saved again (event 7), then
// the execution succeeds (event 8).
func checkpointedRun(t *testing.T, db *DB, id string, ts time.Time) {
	t.Helper()
	ctx := t.Context()
	input, commits := storetest.CheckpointedRun(t, id, ts)
	if err := db.Create(ctx, &engine.Execution{ID: id, MachineName: "m", StartedAt: ts, Input: input}); err != nil {
		t.Fatal(err)
	}
	for _, c := range commits {
		if err := db.Commit(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
}

// unboundRun commits execution id with checkpoint "free" in a commit
// without events, which no history event binds.
func unboundRun(t *testing.T, db *DB, id string, ts time.Time) {
	t.Helper()
	ctx := t.Context()
	if err := db.Create(ctx, &engine.Execution{ID: id, MachineName: "m", StartedAt: ts, Input: map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	if err := db.Commit(ctx, benchStoreCommit(id, 1)); err != nil {
		t.Fatal(err)
	}
	err := db.Commit(ctx, &engine.Commit{Execution: id, Seq: 2, Status: engine.StatusRunning, LastEvent: 3,
		Checkpoint: &engine.Checkpoint{Name: "free", State: "Save", Next: "After", Document: storetest.Doc(t, `{"free":true}`), CreatedAt: ts}})
	if err != nil {
		t.Fatal(err)
	}
}

// TestVerifyHistoryCheckpoints edits checkpoint rows with SQL, one at a
// time, and checks that VerifyHistory names the execution, the
// checkpoint and the field edited, while the executions left alone
// still verify.
func TestVerifyHistoryCheckpoints(t *testing.T) {
	ts := time.Date(2025, 3, 14, 9, 0, 0, 0, time.UTC)
	// The statements edit execution "e" ("free" for the row no event
	// binds); "other" ran the same steps a day later.
	tests := []struct {
		name, sql string
		id, cp    string
		field     string
	}{
		{"no event", `UPDATE checkpoints SET event_seq = NULL WHERE execution = 'e' AND name = 'a'`, "e", "a", "event"},
		{"the event of its earlier save", `UPDATE checkpoints SET event_seq = 3 WHERE execution = 'e' AND name = 'a'`, "e", "a", "event"},
		{"an event that binds nothing", `UPDATE checkpoints SET event_seq = 1 WHERE execution = 'e' AND name = 'a'`, "e", "a", "event"},
		{"another checkpoint's event", `UPDATE checkpoints SET event_seq = 7 WHERE execution = 'e' AND name = 'b'`, "e", "b", "event"},
		{"beyond the history", `UPDATE checkpoints SET event_seq = 9 WHERE execution = 'e' AND name = 'a'`, "e", "a", "event"},
		{"document hash", `UPDATE checkpoints SET doc_hash = (SELECT doc_hash FROM checkpoints WHERE execution = 'e' AND name = 'b')
WHERE execution = 'e' AND name = 'a'`, "e", "a", "docHash"},
		{"blob", `UPDATE checkpoints SET blob = (SELECT blob FROM checkpoints WHERE execution = 'e' AND name = 'b')
WHERE execution = 'e' AND name = 'a'`, "e", "a", "blob"},
		{"created", `UPDATE checkpoints SET created_ns = created_ns + 1 WHERE execution = 'e' AND name = 'b'`, "e", "b", "createdAt"},
		{"expiry", `UPDATE checkpoints SET expires_ns = NULL WHERE execution = 'e' AND name = 'a'`, "e", "a", "expiresAt"},
		{"body edited", `UPDATE checkpoints SET body = body || '\x20'::bytea WHERE execution = 'e' AND name = 'a'`, "e", "a", "record"},
		{"body not JSON", `UPDATE checkpoints SET body = '\x7b'::bytea WHERE execution = 'e' AND name = 'b'`, "e", "b", "record"},
		{"document hash in the body", `UPDATE checkpoints SET body = convert_to(replace(convert_from(body, 'UTF8'), encode(doc_hash, 'hex'), repeat('0', 64)), 'UTF8')
WHERE execution = 'e' AND name = 'a'`, "e", "a", "docHash"},
		{"row of another execution", `UPDATE checkpoints c SET (blob, doc_hash, event_seq, created_ns, expires_ns, body) =
  (SELECT blob, doc_hash, event_seq, created_ns, expires_ns, body FROM checkpoints WHERE execution = 'other' AND name = 'a')
WHERE c.execution = 'e' AND c.name = 'a'`, "e", "a", "record"},
		{"row copied under another name", `INSERT INTO checkpoints (execution, name, blob, doc_hash, event_seq, created_ns, expires_ns, body)
SELECT execution, 'c', blob, doc_hash, event_seq, created_ns, expires_ns, body FROM checkpoints WHERE execution = 'e' AND name = 'a'`, "e", "c", "record"},
		{"unbound row's document hash", `UPDATE checkpoints SET doc_hash = (SELECT doc_hash FROM checkpoints WHERE execution = 'e' AND name = 'a')
WHERE execution = 'free' AND name = 'free'`, "free", "free", "docHash"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			db := openTest(t, Options{})
			checkpointedRun(t, db, "e", ts)
			checkpointedRun(t, db, "other", ts.Add(24*time.Hour))
			unboundRun(t, db, "free", ts)
			ids := []string{"e", "other", "free"}
			for _, id := range ids {
				if err := db.VerifyHistory(ctx, id); err != nil {
					t.Fatalf("VerifyHistory(%s) before the edit = %v", id, err)
				}
			}
			tag, err := db.pool.Exec(ctx, tt.sql)
			if err != nil {
				t.Fatal(err)
			}
			if tag.RowsAffected() != 1 {
				t.Fatalf("the edit changed %d rows, want 1", tag.RowsAffected())
			}
			storetest.WantIntegrityError(t, "VerifyHistory("+tt.id+")", db.VerifyHistory(ctx, tt.id), tt.id, tt.cp, tt.field)
			for _, id := range ids {
				if id == tt.id {
					continue
				}
				if err := db.VerifyHistory(ctx, id); err != nil {
					t.Errorf("VerifyHistory(%s), not edited = %v", id, err)
				}
			}
		})
	}

	t.Run("missing execution", func(t *testing.T) {
		db := openTest(t, Options{})
		if err := db.VerifyHistory(context.Background(), "nope"); !errors.Is(err, engine.ErrNotFound) {
			t.Errorf("VerifyHistory(nope) = %v, want ErrNotFound", err)
		}
	})
}
