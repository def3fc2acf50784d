package postgres

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

func TestRedact(t *testing.T) {
	tests := []struct{ in, want string }{
		{"postgres://app:s3cret@db.example:5432/aslrun?sslmode=require", "postgres://app:xxxxx@db.example:5432/aslrun?sslmode=require"},
		{"postgres://app@db.example/aslrun", "postgres://app@db.example/aslrun"},
		{"postgresql://db.example/aslrun?password=s3cret&user=app", "postgresql://db.example/aslrun?password=xxxxx&user=app"},
		{"postgres://app:s3cret@db.example:bad port/x", "(a database URL that does not parse)"},
		{"host=db.example password=s3cret", "(a database string that holds a password)"},
		{"aslrun.db", "aslrun.db"},
	}
	for _, tt := range tests {
		if got := Redact(tt.in); got != tt.want {
			t.Errorf("Redact(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestIsURL(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{"postgres://h/db", true},
		{"postgresql://h/db", true},
		{"aslrun.db", false},
		{":memory:", false},
		{"/var/lib/postgres://x", false},
		{"host=h dbname=db", false},
	}
	for _, tt := range tests {
		if got := IsURL(tt.in); got != tt.want {
			t.Errorf("IsURL(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

// TestOpenRefuses checks what Open refuses before it reaches a database,
// and that no message shows the password.
func TestOpenRefuses(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tests := []struct {
		name, url string
		opts      Options
		want      string
	}{
		{"a file", "aslrun.db", Options{}, "database aslrun.db: want a postgres:// URL"},
		{"keyword form", "host=h password=s3cret", Options{}, "want a postgres:// URL"},
		{"bad port", "postgres://app:s3cret@127.0.0.1:notaport/x", Options{}, "database (a database URL that does not parse)"},
		{"bad option", "postgres://app:s3cret@127.0.0.1/x?sslmode=sometimes", Options{}, "database postgres://app:xxxxx@127.0.0.1/x?sslmode=sometimes: invalid URL"},
		{"negative pool", "postgres://app:s3cret@127.0.0.1/x", Options{MaxConns: -1}, "pool size -1"},
		// Port 1 on loopback: nothing listens there.
		{"unreachable", "postgres://app:s3cret@127.0.0.1:1/x?sslmode=disable", Options{ConnectTimeout: 2 * time.Second}, "database postgres://app:xxxxx@127.0.0.1:1/x?sslmode=disable: connecting: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db, err := Open(ctx, tt.url, tt.opts)
			if err == nil {
				db.Close()
				t.Fatalf("Open(%q) = nil error, want %q", tt.url, tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Open(%q) = %q, want it to contain %q", tt.url, err, tt.want)
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Errorf("Open(%q) = %q: shows the password", tt.url, err)
			}
			if _, err := Migrate(ctx, tt.url, tt.opts); err == nil || strings.Contains(err.Error(), "s3cret") {
				t.Errorf("Migrate(%q) = %v, want an error without the password", tt.url, err)
			}
		})
	}
}

func TestOpenRefusesUnmigrated(t *testing.T) {
	ctx := context.Background()
	u := testServer.Schema(t)
	_, err := Open(ctx, u, Options{})
	if !errors.Is(err, ErrNotMigrated) {
		t.Fatalf("Open(unmigrated) = %v, want ErrNotMigrated", err)
	}
	want := fmt.Sprintf("database schema version 0, this aslrun needs %d: run `aslrun migrate --db %s`", len(mustMigrations(t)), Redact(u))
	if !strings.Contains(err.Error(), want) {
		t.Errorf("Open(unmigrated) = %q, want it to contain %q", err, want)
	}
	db, err := Open(ctx, u, Options{Migrate: true})
	if err != nil {
		t.Fatalf("Open(Migrate) = %v", err)
	}
	db.Close()
	db, err = Open(ctx, u, Options{})
	if err != nil {
		t.Fatalf("Open(migrated) = %v", err)
	}
	db.Close()
}

func TestOpenRefusesNewer(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, Options{})
	known := len(mustMigrations(t))
	if _, err := db.pool.Exec(ctx, `INSERT INTO schema_migrations (version, name, checksum) VALUES ($1, 'from_the_future', '\x00')`, known+1); err != nil {
		t.Fatal(err)
	}
	u := schemaURL(t, db)
	want := fmt.Sprintf("database schema version %d is newer than this aslrun (%d): upgrade aslrun", known+1, known)
	for _, opts := range []Options{{}, {Migrate: true}} {
		_, err := Open(ctx, u, opts)
		if !errors.Is(err, ErrSchemaNewer) || !strings.Contains(err.Error(), want) {
			t.Errorf("Open(%+v) = %v, want ErrSchemaNewer saying %q", opts, err, want)
		}
	}
	if _, err := Migrate(ctx, u, Options{}); !errors.Is(err, ErrSchemaNewer) {
		t.Errorf("Migrate = %v, want ErrSchemaNewer", err)
	}
}

func TestOpenRefusesEditedMigration(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, Options{})
	if _, err := db.pool.Exec(ctx, `UPDATE schema_migrations SET checksum = '\xdead' WHERE version = 1`); err != nil {
		t.Fatal(err)
	}
	u := schemaURL(t, db)
	_, err := Open(ctx, u, Options{})
	if err == nil || !strings.Contains(err.Error(), "migration 1 was applied from another file") {
		t.Errorf("Open = %v, want a migration applied from another file", err)
	}
	if _, err := Migrate(ctx, u, Options{}); err == nil || !strings.Contains(err.Error(), "migration 1 was applied from another file") {
		t.Errorf("Migrate = %v, want a migration applied from another file", err)
	}
}

// schemaURL returns the URL db was opened with (the test schema's).
func schemaURL(t *testing.T, db *DB) string {
	t.Helper()
	cfg := db.pool.Config().ConnConfig
	u := &url.URL{Scheme: "postgres", User: url.User(cfg.User), Host: fmt.Sprintf("%s:%d", cfg.Host, cfg.Port), Path: "/" + cfg.Database}
	q := url.Values{}
	q.Set("sslmode", "disable")
	q.Set("search_path", cfg.RuntimeParams["search_path"])
	u.RawQuery = q.Encode()
	return u.String()
}

func mustMigrations(t *testing.T) []migration {
	t.Helper()
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

// TestMigrateConcurrent starts many servers' migrations at once on one
// database: each migration is applied once, and all of them succeed.
func TestMigrateConcurrent(t *testing.T) {
	ctx := context.Background()
	u := testServer.Schema(t)
	const n = 8
	results := make([]*MigrateResult, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { results[i], errs[i] = Migrate(ctx, u, Options{}) })
	}
	wg.Wait()
	ms := mustMigrations(t)
	applied := map[int]int{}
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("Migrate #%d = %v", i, errs[i])
		}
		if results[i].Version != len(ms) {
			t.Errorf("Migrate #%d: version %d, want %d", i, results[i].Version, len(ms))
		}
		for _, v := range results[i].Applied {
			applied[v]++
		}
	}
	for _, m := range ms {
		if applied[m.version] != 1 {
			t.Errorf("migration %d applied %d times, want once", m.version, applied[m.version])
		}
	}
	db, err := Open(ctx, u, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var rows int
	if err := db.pool.QueryRow(ctx, `SELECT count(*) FROM schema_migrations`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != len(ms) {
		t.Errorf("schema_migrations has %d rows, want %d", rows, len(ms))
	}
	again, err := Migrate(ctx, u, Options{})
	if err != nil || len(again.Applied) != 0 || again.Version != len(ms) {
		t.Errorf("Migrate(up to date) = %+v, %v, want nothing applied at version %d", again, err, len(ms))
	}
}

// TestMigrationFailureApplied checks that a migration that fails leaves
// nothing of itself: not its statements before the failure, not its row.
func TestMigrationFailureAppliesNothing(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, Options{})
	known := mustMigrations(t)
	ms := append(known, migration{version: len(known) + 1, name: "broken", sql: "CREATE TABLE half_done (x int); SELECT no_such_function();"})
	_, _, err := db.migrateStep(ctx, ms)
	broken := fmt.Sprintf("migration %04d_broken.sql", len(ms))
	if err == nil || !strings.Contains(err.Error(), broken) {
		t.Fatalf("migrateStep(broken) = %v, want an error naming %s", err, broken)
	}
	var exists bool
	if err := db.pool.QueryRow(ctx, `SELECT to_regclass('half_done') IS NOT NULL`).Scan(&exists); err != nil {
		t.Fatal(err)
	}
	if exists {
		t.Error("the failed migration's first statement was kept")
	}
	applied, err := db.applied(ctx, db.pool)
	if err != nil {
		t.Fatal(err)
	}
	if len(applied) != len(known) {
		t.Errorf("applied = %v, want the %d migrations before the broken one", applied, len(known))
	}
}

func TestParseMigrations(t *testing.T) {
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	tests := []struct {
		name  string
		files fstest.MapFS
		want  string // error text; "" for none
	}{
		{"two", fstest.MapFS{"m/0001_a.sql": file("x"), "m/0002_b_c.sql": file("y")}, ""},
		{"gap", fstest.MapFS{"m/0001_a.sql": file("x"), "m/0003_c.sql": file("y")}, "file 0003_c.sql: want version 0002 next"},
		{"no first", fstest.MapFS{"m/0002_b.sql": file("y")}, "file 0002_b.sql: want version 0001 next"},
		{"bad name", fstest.MapFS{"m/0001_A.sql": file("x")}, "file 0001_A.sql: want a name like 0001_name.sql"},
		{"not sql", fstest.MapFS{"m/0001_a.txt": file("x")}, "want a name like"},
		{"none", fstest.MapFS{"m/README": nil}, "want a name like"},
		{"empty", fstest.MapFS{"m": &fstest.MapFile{Mode: 0o755 | 1<<31}}, "none embedded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseMigrations(tt.files, "m")
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("parseMigrations = %v, want no error", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("parseMigrations = %v, want %q", err, tt.want)
			}
		})
	}
	ms := mustMigrations(t)
	if ms[0].version != 1 || ms[0].name != "schema" {
		t.Errorf("first migration = %d %s, want 1 schema", ms[0].version, ms[0].name)
	}
}

// TestSchema checks that the migrations make every table the store
// needs.
func TestSchema(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, Options{})
	rows, err := db.pool.Query(ctx, `SELECT tablename FROM pg_tables WHERE schemaname = current_schema() ORDER BY tablename`)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		got = append(got, name)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	want := []string{"agent_memory", "cache_claims", "cache_totals", "checkpoints", "definitions", "executions", "feedback", "history_records", "leases", "memory_namespaces", "outbox", "ready", "result_cache", "schema_migrations", "scopes", "snapshot_blobs", "stop_requests", "workflow_aliases", "workflows"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("tables = %v, want %v", got, want)
	}
}

func TestStatementTimeout(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, Options{StatementTimeout: 50 * time.Millisecond})
	_, err := db.pool.Exec(ctx, `SELECT pg_sleep(5)`)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "57014" { // query_canceled
		t.Errorf("a statement past the timeout = %v, want query_canceled (57014)", err)
	}
}

func TestPoolSize(t *testing.T) {
	db := openTest(t, Options{MaxConns: 3})
	if got := db.pool.Config().MaxConns; got != 3 {
		t.Errorf("MaxConns = %d, want 3", got)
	}
}

// FuzzRedact: any database string gets through Redact without a panic,
// and a URL that parses comes out with no password but xxxxx.
func FuzzRedact(f *testing.F) {
	for _, s := range []string{
		"postgres://app:s3cret@db.example:5432/aslrun?sslmode=require",
		"postgresql://db.example/aslrun?password=s3cret&user=app",
		"postgres://app:s3cret@db.example:bad port/x",
		"host=h password=s3cret",
		"postgres://%zz@h/x",
		"aslrun.db",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := Redact(s)
		if !IsURL(s) {
			return
		}
		u, err := url.Parse(got)
		if err != nil {
			if got != "(a database URL that does not parse)" {
				t.Errorf("Redact(%q) = %q, which does not parse: %v", s, got, err)
			}
			return
		}
		if pw, ok := u.User.Password(); ok && pw != "xxxxx" {
			t.Errorf("Redact(%q) = %q, with password %q", s, got, pw)
		}
		if pw := u.Query()["password"]; len(pw) > 0 && (len(pw) != 1 || pw[0] != "xxxxx") {
			t.Errorf("Redact(%q) = %q, with password %q", s, got, pw)
		}
	})
}
