package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/aslrun/aslrun/engine"
)

// migrateTo applies the first n migrations to the database at url.
func migrateTo(t *testing.T, url string, n int) {
	t.Helper()
	ctx := t.Context()
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	db := &DB{pool: pool, url: Redact(url)}
	ms := mustMigrations(t)[:n]
	for {
		v, _, err := db.migrateStep(ctx, ms)
		if err != nil {
			t.Fatal(err)
		}
		if v == 0 {
			return
		}
	}
}

// scopeCommit is a commit of execution id at seq setting the scopes of
// keys, each to a document naming its key and seq, without events.
func scopeCommit(id string, seq int64, keys ...string) *engine.Commit {
	c := &engine.Commit{Execution: id, Seq: seq, Status: engine.StatusRunning, LastEvent: 3 * (seq - 1), Scopes: map[string]*engine.Scope{}}
	for _, k := range keys {
		c.Scopes[k] = &engine.Scope{Next: "T", Doc: map[string]any{"key": k, "seq": float64(seq)}}
	}
	return c
}

// TestMigrateBytesForward copies an execution written at the current
// schema into a database at schema version 10 (what a database of the
// previous release holds), migrates it forward, and checks that the
// execution reads back the same and verifies, that its commits go on (a
// commit that adds scopes, one that updates them), that the tables have
// their new layout, and that deleting the execution still deletes its
// history and scopes.
func TestMigrateBytesForward(t *testing.T) {
	ctx := context.Background()
	src := openTest(t, Options{})
	id := "e"
	if err := src.Create(ctx, &engine.Execution{ID: id, MachineName: "m", StartedAt: time.Unix(1_700_000_000, 0), Input: map[string]any{"doc": "input"}}); err != nil {
		t.Fatal(err)
	}
	for seq := int64(1); seq <= 3; seq++ {
		if err := src.Commit(ctx, benchStoreCommit(id, seq)); err != nil {
			t.Fatal(err)
		}
	}

	old := testServer.Schema(t)
	migrateTo(t, old, 10)
	pool, err := pgxpool.New(ctx, old)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var from string
	if err := src.pool.QueryRow(ctx, `SELECT current_schema()`).Scan(&from); err != nil {
		t.Fatal(err)
	}
	// The rows as version 10 holds them (executions' columns by name:
	// their order is what changed).
	for _, q := range []string{
		`INSERT INTO definitions SELECT * FROM %s.definitions`,
		`INSERT INTO executions (id, machine_name, definition_hash, status, started_ns, stopped_ns, wake_ns, waiting_for, parent,
  parent_checkpoint, input_hash, output_hash, error, cause, commit_seq, event_count, last_hash, spec, head)
SELECT id, machine_name, definition_hash, status, started_ns, stopped_ns, wake_ns, waiting_for, parent,
  parent_checkpoint, input_hash, output_hash, error, cause, commit_seq, coalesce(event_count, 0), last_hash, spec, head FROM %s.executions`,
		`INSERT INTO history_records SELECT * FROM %s.history_records`,
		`INSERT INTO scopes SELECT * FROM %s.scopes`,
	} {
		if _, err := pool.Exec(ctx, fmt.Sprintf(q, pgx.Identifier{from}.Sanitize())); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}

	dst, err := Open(ctx, old, Options{Migrate: true})
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	want, err := src.Load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	got, err := dst.Load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Load after the migration = %+v, want %+v", got, want)
	}
	if err := dst.VerifyHistory(ctx, id); err != nil {
		t.Errorf("VerifyHistory after the migration = %v", err)
	}
	wantH, _ := src.History(ctx, id)
	if gotH, err := dst.History(ctx, id); err != nil || len(gotH) != len(wantH) || len(gotH) != 9 {
		t.Errorf("History after the migration: %d events, %v; want %d", len(gotH), err, len(wantH))
	}

	// Commits go on: one adds a scope and updates the top level's, the
	// next updates both.
	if err := dst.Commit(ctx, scopeCommit(id, 4, "", "P#1.0/")); err != nil {
		t.Fatal(err)
	}
	if err := dst.Commit(ctx, scopeCommit(id, 5, "", "P#1.0/")); err != nil {
		t.Fatal(err)
	}
	e, err := dst.Load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Progress.Scopes) != 2 {
		t.Fatalf("after the commits: scopes %v, want 2", e.Progress.Scopes)
	}
	for _, k := range []string{"", "P#1.0/"} {
		s := e.Progress.Scopes[k]
		if s == nil {
			t.Errorf("scope %q after the commits: none", k)
			continue
		}
		doc, _ := json.Marshal(s.Doc)
		if want, _ := json.Marshal(map[string]any{"key": k, "seq": 5}); string(doc) != string(want) {
			t.Errorf("scope %q after the commits: document %s, want %s (commit 5's)", k, doc, want)
		}
	}
	if err := dst.VerifyHistory(ctx, id); err != nil {
		t.Errorf("VerifyHistory after more commits = %v", err)
	}

	// The new layout: spec last but for history_dropped (migration 12),
	// which changes once in an execution's life.
	var last []string
	if err := pool.QueryRow(ctx, `SELECT ARRAY(SELECT attname::text FROM pg_attribute
WHERE attrelid = 'executions'::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum DESC LIMIT 2)`).Scan(&last); err != nil || !reflect.DeepEqual(last, []string{"history_dropped", "spec"}) {
		t.Errorf("executions' last columns, last first = %q, %v; want [history_dropped spec]", last, err)
	}
	for _, table := range []string{"executions", "scopes"} {
		var opts []string
		if err := pool.QueryRow(ctx, `SELECT coalesce(reloptions, '{}') FROM pg_class WHERE oid = $1::regclass`, table).Scan(&opts); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(opts, []string{"fillfactor=50"}) {
			t.Errorf("%s's options = %v, want fillfactor=50", table, opts)
		}
	}
	var fks int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_constraint WHERE conrelid = 'history_records'::regclass AND contype = 'f'`).Scan(&fks); err != nil || fks != 0 {
		t.Errorf("history_records has %d foreign keys, %v; want none", fks, err)
	}

	// Deleting the execution deletes its history and its scopes.
	if _, err := pool.Exec(ctx, `DELETE FROM executions WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}
	var records, scopes int
	if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM history_records), (SELECT count(*) FROM scopes)`).Scan(&records, &scopes); err != nil {
		t.Fatal(err)
	}
	if records != 0 || scopes != 0 {
		t.Errorf("after deleting the execution: %d history records, %d scopes; want none", records, scopes)
	}
}
