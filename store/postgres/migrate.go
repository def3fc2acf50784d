package postgres

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The migrations, NNNN_name.sql, applied in order of NNNN (1, 2, … with no
// gaps). A released file is never edited: the checksum recorded when it
// was applied must match (checkApplied). A change of schema is a new file.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrationName is the form of a migration file's name.
var migrationName = regexp.MustCompile(`^([0-9]{4})_([a-z0-9_]+)\.sql$`)

// migration is one embedded migration file.
type migration struct {
	version int
	name    string
	sql     string
	sum     [sha256.Size]byte
}

// migrations returns the embedded migrations in order, checking that their
// names number them 1, 2, … with no gap.
func migrations() ([]migration, error) {
	return parseMigrations(migrationFiles, "migrations")
}

// parseMigrations reads the migrations in dir of fsys.
func parseMigrations(fsys fs.FS, dir string) ([]migration, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("migrations: %w", err)
	}
	var ms []migration
	for _, e := range entries { // sorted by name
		m := migrationName.FindStringSubmatch(e.Name())
		if m == nil {
			return nil, fmt.Errorf("migrations: file %s: want a name like 0001_name.sql", e.Name())
		}
		v, _ := strconv.Atoi(m[1])
		if v != len(ms)+1 {
			return nil, fmt.Errorf("migrations: file %s: want version %04d next", e.Name(), len(ms)+1)
		}
		data, err := fs.ReadFile(fsys, path.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("migrations: %w", err)
		}
		ms = append(ms, migration{version: v, name: m[2], sql: string(data), sum: sha256.Sum256(data)})
	}
	if len(ms) == 0 {
		return nil, errors.New("migrations: none embedded")
	}
	return ms, nil
}

// migrationLock is the key of the advisory lock that serializes migration
// steps across every process migrating the same database ("aslrunmg").
const migrationLock int64 = 0x61736c72756e6d67

// createMigrationsTable makes the table that records applied migrations.
// The runner makes it itself, under the lock, before the first migration.
const createMigrationsTable = `CREATE TABLE IF NOT EXISTS schema_migrations (
    version    integer PRIMARY KEY,
    name       text NOT NULL,
    checksum   bytea NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
)`

// appliedMigration is a row of schema_migrations.
type appliedMigration struct {
	version int
	name    string
	sum     []byte
}

// applied returns the migrations applied to the database, in order; none
// when it has no schema_migrations table.
func (db *DB) applied(ctx context.Context, q querier) ([]appliedMigration, error) {
	var exists bool
	if err := q.QueryRow(ctx, `SELECT to_regclass('schema_migrations') IS NOT NULL`).Scan(&exists); err != nil {
		return nil, fmt.Errorf("database %s: reading the schema version: %w", db.url, err)
	}
	if !exists {
		return nil, nil
	}
	rows, err := q.Query(ctx, `SELECT version, name, checksum FROM schema_migrations ORDER BY version`)
	if err != nil {
		return nil, fmt.Errorf("database %s: reading the schema version: %w", db.url, err)
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (appliedMigration, error) {
		var a appliedMigration
		err := r.Scan(&a.version, &a.name, &a.sum)
		return a, err
	})
	if err != nil {
		return nil, fmt.Errorf("database %s: reading the schema version: %w", db.url, err)
	}
	return list, nil
}

// checkApplied checks that the migrations applied to the database (up to
// the last one this program knows) are this program's, byte for byte.
func checkApplied(url string, ms []migration, applied []appliedMigration) error {
	for i, a := range applied {
		if a.version != i+1 {
			return fmt.Errorf("database %s: schema_migrations lists version %d where %d was expected: the table was edited by hand", url, a.version, i+1)
		}
		if a.version > len(ms) {
			break
		}
		m := ms[a.version-1]
		if a.name != m.name || !bytes.Equal(a.sum, m.sum[:]) {
			return fmt.Errorf("database %s: migration %d was applied from another file (%s, checksum %x) than this aslrun's %04d_%s.sql (checksum %x)",
				url, a.version, a.name, a.sum, m.version, m.name, m.sum)
		}
	}
	return nil
}

// MigrateResult says what Migrate did.
type MigrateResult struct {
	// Applied are the versions this call applied, in order; none when the
	// database was up to date (or another process applied them first).
	Applied []int
	// Version is the database's schema version afterwards.
	Version int
}

// Migrate applies to the database at rawURL the migrations it lacks, in
// order, each in a transaction of its own, and returns what it did. Many
// processes may call it at once on the same database: an advisory lock
// makes each migration apply once. A database whose schema is newer than
// this program is refused (ErrSchemaNewer) and left as it is.
func Migrate(ctx context.Context, rawURL string, opts Options) (*MigrateResult, error) {
	cfg, err := poolConfig(rawURL, opts)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = 1
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, urlError(rawURL, "connecting", err)
	}
	defer pool.Close()
	db := &DB{pool: pool, url: Redact(rawURL)}
	if err := pool.Ping(ctx); err != nil {
		return nil, urlError(rawURL, "connecting", err)
	}
	return db.Migrate(ctx)
}

// Migrate applies the migrations the database lacks, as the function
// Migrate does.
func (db *DB) Migrate(ctx context.Context) (*MigrateResult, error) {
	ms, err := migrations()
	if err != nil {
		return nil, err
	}
	res := &MigrateResult{}
	for {
		v, have, err := db.migrateStep(ctx, ms)
		if err != nil {
			return nil, err
		}
		if v == 0 {
			res.Version = have
			return res, nil
		}
		res.Applied = append(res.Applied, v)
	}
}

// migrateStep applies the next migration the database lacks, if any, in
// one transaction holding the migration lock, and returns its version (0
// when there was none) and the version the database had before.
func (db *DB) migrateStep(ctx context.Context, ms []migration) (applied, had int, err error) {
	tx, err := db.pool.Begin(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("database %s: migrating: %w", db.url, err)
	}
	defer tx.Rollback(ctx) // a no-op once committed
	// A migration may wait for the lock, and for the locks of the tables
	// it alters, longer than a statement is allowed; ctx bounds it.
	if _, err := tx.Exec(ctx, `SET LOCAL statement_timeout = 0`); err != nil {
		return 0, 0, fmt.Errorf("database %s: migrating: %w", db.url, err)
	}
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, migrationLock); err != nil {
		return 0, 0, fmt.Errorf("database %s: migrating: waiting for the migration lock: %w", db.url, err)
	}
	if _, err := tx.Exec(ctx, createMigrationsTable); err != nil {
		return 0, 0, fmt.Errorf("database %s: migrating: %w", db.url, err)
	}
	done, err := db.applied(ctx, tx)
	if err != nil {
		return 0, 0, err
	}
	known := ms[len(ms)-1].version
	have := len(done)
	if have > 0 {
		have = done[have-1].version
	}
	if have > known {
		return 0, 0, fmt.Errorf("database %s: %w: database schema version %d is newer than this aslrun (%d): upgrade aslrun", db.url, ErrSchemaNewer, have, known)
	}
	if err := checkApplied(db.url, ms, done); err != nil {
		return 0, 0, err
	}
	if have == known {
		return 0, have, nil
	}
	m := ms[have]
	if _, err := tx.Exec(ctx, m.sql); err != nil {
		return 0, 0, fmt.Errorf("database %s: migration %04d_%s.sql: %w", db.url, m.version, m.name, err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name, checksum) VALUES ($1, $2, $3)`, m.version, m.name, m.sum[:]); err != nil {
		return 0, 0, fmt.Errorf("database %s: migration %04d_%s.sql: %w", db.url, m.version, m.name, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, 0, fmt.Errorf("database %s: migration %04d_%s.sql: committing: %w", db.url, m.version, m.name, err)
	}
	return m.version, have, nil
}
