package postgres

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/states"
	"github.com/aslrun/aslrun/store/storetest"
)

// TestCheckpointLoadsVerify edits one checkpoint row with SQL and checks
// that Checkpoint refuses it, and ListCheckpoints and VerifyHistory too,
// each with an *IntegrityError naming the execution, the checkpoint and
// the field edited, while the checkpoints left alone load as before.
func TestCheckpointLoadsVerify(t *testing.T) {
	ts := time.Date(2025, 3, 14, 9, 0, 0, 0, time.UTC)
	// checkpointedRun writes "a" (bound to event 7) and "b" (event 5) of
	// execution "e"; unboundRun writes "free", which no event binds.
	tests := []struct {
		name, sql string
		id, cp    string
		field     string
	}{
		{"event of its earlier save", `UPDATE checkpoints SET event_seq = 3 WHERE execution = 'e' AND name = 'a'`, "e", "a", "event"},
		{"no event", `UPDATE checkpoints SET event_seq = NULL WHERE execution = 'e' AND name = 'b'`, "e", "b", "event"},
		{"beyond the history", `UPDATE checkpoints SET event_seq = 9 WHERE execution = 'e' AND name = 'a'`, "e", "a", "event"},
		{"document hash", `UPDATE checkpoints SET doc_hash = (SELECT doc_hash FROM checkpoints WHERE execution = 'e' AND name = 'b')
WHERE execution = 'e' AND name = 'a'`, "e", "a", "docHash"},
		{"blob", `UPDATE checkpoints SET blob = (SELECT blob FROM checkpoints WHERE execution = 'e' AND name = 'a')
WHERE execution = 'e' AND name = 'b'`, "e", "b", "blob"},
		{"expiry", `UPDATE checkpoints SET expires_ns = NULL WHERE execution = 'e' AND name = 'a'`, "e", "a", "expiresAt"},
		{"body edited", `UPDATE checkpoints SET body = body || '\x20'::bytea WHERE execution = 'e' AND name = 'b'`, "e", "b", "record"},
		{"row of another execution", `UPDATE checkpoints c SET (blob, doc_hash, event_seq, created_ns, expires_ns, body) =
  (SELECT blob, doc_hash, event_seq, created_ns, expires_ns, body FROM checkpoints WHERE execution = 'other' AND name = 'a')
WHERE c.execution = 'e' AND c.name = 'a'`, "e", "a", "record"},
		{"unbound row's document hash", `UPDATE checkpoints SET doc_hash = (SELECT doc_hash FROM checkpoints WHERE execution = 'e' AND name = 'a')
WHERE execution = 'free' AND name = 'free'`, "free", "free", "docHash"},
	}
	all := map[string][]string{"e": {"a", "b"}, "other": {"a", "b"}, "free": {"free"}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			db := openTest(t, Options{})
			checkpointedRun(t, db, "e", ts)
			checkpointedRun(t, db, "other", ts.Add(24*time.Hour))
			unboundRun(t, db, "free", ts)
			before := make(map[[2]string]*engine.Checkpoint)
			for id, names := range all {
				if _, err := db.ListCheckpoints(ctx, id); err != nil {
					t.Fatalf("ListCheckpoints(%s) before the edit = %v", id, err)
				}
				for _, name := range names {
					cp, err := db.Checkpoint(ctx, id, name)
					if err != nil {
						t.Fatalf("Checkpoint(%s, %s) before the edit = %v", id, name, err)
					}
					before[[2]string{id, name}] = cp
				}
			}
			tag, err := db.pool.Exec(ctx, tt.sql)
			if err != nil {
				t.Fatal(err)
			}
			if tag.RowsAffected() != 1 {
				t.Fatalf("the edit changed %d rows, want 1", tag.RowsAffected())
			}

			cp, err := db.Checkpoint(ctx, tt.id, tt.cp)
			if cp != nil {
				t.Errorf("Checkpoint(%s, %s) returned %+v with the edited row", tt.id, tt.cp, cp)
			}
			storetest.WantIntegrityError(t, "Checkpoint("+tt.id+", "+tt.cp+")", err, tt.id, tt.cp, tt.field)
			list, err := db.ListCheckpoints(ctx, tt.id)
			if list != nil {
				t.Errorf("ListCheckpoints(%s) returned %d checkpoints with an edited row", tt.id, len(list))
			}
			storetest.WantIntegrityError(t, "ListCheckpoints("+tt.id+")", err, tt.id, tt.cp, tt.field)
			storetest.WantIntegrityError(t, "VerifyHistory("+tt.id+")", db.VerifyHistory(ctx, tt.id), tt.id, tt.cp, tt.field)

			for id, names := range all {
				if id != tt.id {
					if list, err := db.ListCheckpoints(ctx, id); err != nil || len(list) != len(names) {
						t.Errorf("ListCheckpoints(%s), not edited = %d checkpoints, %v; want %d", id, len(list), err, len(names))
					}
				}
				for _, name := range names {
					if id == tt.id && name == tt.cp {
						continue
					}
					got, err := db.Checkpoint(ctx, id, name)
					if err != nil {
						t.Errorf("Checkpoint(%s, %s), not edited = %v", id, name, err)
						continue
					}
					if want := before[[2]string{id, name}]; !reflect.DeepEqual(got, want) {
						t.Errorf("Checkpoint(%s, %s), not edited = %+v, want %+v as before", id, name, got, want)
					}
				}
			}
		})
	}

	t.Run("missing", func(t *testing.T) {
		ctx := context.Background()
		db := openTest(t, Options{})
		checkpointedRun(t, db, "e", ts)
		for _, c := range []struct{ id, name string }{{"e", "c"}, {"nope", "a"}} {
			if _, err := db.Checkpoint(ctx, c.id, c.name); !errors.Is(err, engine.ErrNotFound) {
				t.Errorf("Checkpoint(%s, %s) = %v, want ErrNotFound", c.id, c.name, err)
			}
		}
		if _, err := db.ListCheckpoints(ctx, "nope"); !errors.Is(err, engine.ErrNotFound) {
			t.Errorf("ListCheckpoints(nope) = %v, want ErrNotFound", err)
		}
	})
}

// TestRollbackFromEditedCheckpoint: the executor's Rollback and Fork from
// a checkpoint whose row was edited fail with the load's *IntegrityError
// and write nothing; from a checkpoint left alone they run.
func TestRollbackFromEditedCheckpoint(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, Options{})
	x := engine.New(engine.Config{Store: db})
	m, err := states.Parse([]byte(storetest.TwoCheckpoints))
	if err != nil {
		t.Fatal(err)
	}
	if res, err := x.Run(ctx, m, map[string]any{}, engine.StartOptions{ID: "run"}); err != nil || res.Status != engine.StatusSucceeded {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	if _, err := db.pool.Exec(ctx, `UPDATE checkpoints SET body = body || '\x20'::bytea WHERE execution = 'run' AND name = 'first'`); err != nil {
		t.Fatal(err)
	}
	events := len(historyHashes(t, db, "run"))

	tests := []struct {
		name string
		call func() (*engine.Result, error)
	}{
		{"rollback", func() (*engine.Result, error) { return x.Rollback(ctx, "run", "first", engine.ResumeOptions{}) }},
		{"fork", func() (*engine.Result, error) {
			return x.Fork(ctx, "run", "first", engine.ResumeOptions{ForkID: "forked"})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := tt.call()
			if res != nil {
				t.Errorf("%s from the edited checkpoint = %+v, want no result", tt.name, res)
			}
			storetest.WantIntegrityError(t, tt.name, err, "run", "first", "record")
			if got := len(historyHashes(t, db, "run")); got != events {
				t.Errorf("the history has %d events after the %s, want %d", got, tt.name, events)
			}
			if _, err := db.Load(ctx, "forked"); !errors.Is(err, engine.ErrNotFound) {
				t.Errorf("Load(forked) = %v, want ErrNotFound", err)
			}
		})
	}

	t.Run("untouched checkpoint", func(t *testing.T) {
		res, err := x.Rollback(ctx, "run", "second", engine.ResumeOptions{})
		if err != nil || res.Status != engine.StatusSucceeded {
			t.Fatalf("Rollback(second) = %+v, %v", res, err)
		}
		if got := len(historyHashes(t, db, "run")); got <= events {
			t.Errorf("the history has %d events after the rollback, want more than %d", got, events)
		}
	})
}
