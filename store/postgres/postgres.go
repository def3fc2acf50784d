package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/aslrun/aslrun/store"
)

// Defaults of Options.
const (
	// DefaultStatementTimeout bounds every statement: a statement that
	// waits on a lock or a sick server fails instead of hanging a commit.
	DefaultStatementTimeout = 30 * time.Second
	// DefaultConnectTimeout bounds each attempt to connect.
	DefaultConnectTimeout = 10 * time.Second
)

// Options configure Open. The zero value works.
type Options struct {
	// MaxConns is the size of the connection pool: at most this many
	// statements run at once. 0 means pgxpool's default, the greater of 4
	// and the number of CPUs. The Notifier's connection is apart from it.
	MaxConns int32
	// StatementTimeout is the server-side statement_timeout of every
	// connection. 0 means DefaultStatementTimeout; negative means none.
	StatementTimeout time.Duration
	// ConnectTimeout bounds each connection attempt. 0 means
	// DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// Migrate applies the migrations the database lacks before checking
	// its schema version. Without it, Open refuses a database that lacks
	// some (run `aslrun migrate`).
	Migrate bool
	// Codec compresses checkpoint snapshots ("": store.CodecZstd).
	Codec store.Codec
	// Migrations migrate checkpoint snapshots of older formats.
	Migrations *store.Migrations
	// LeaseTTL is how long the leases the executor takes (DB.Lease) last
	// unless renewed; 0 means DefaultLeaseTTL.
	LeaseTTL time.Duration
	// LeaseOwner names this process in the leases it takes; "" means its
	// host name, process id and a random suffix. Two DBs with the same
	// owner are one process to each other.
	LeaseOwner string
	// Logger receives what the database does on its own, outside any
	// call: a renewal of a lease that failed (and is tried again at the
	// next tick). nil means slog.Default().
	Logger *slog.Logger
}

// DB is an aslrun database on PostgreSQL: a connection pool whose schema
// Open has checked. It is safe for concurrent use.
type DB struct {
	pool *pgxpool.Pool
	// url is the database's URL without its password, for messages.
	url string

	rec     *store.Records
	hist    recordCodec // history records as stored (records.go)
	heads   headCache
	defs    knownDefinitions
	closed  atomic.Bool
	fenceMu sync.Mutex
	fences  map[string]int64      // execution → epoch its commits check
	held    map[string]*heldLease // execution → its lease (Lease, Claim)
	group   committer             // group commit (group.go)

	owner    string        // this process, in the leases it takes
	leaseTTL time.Duration // of the leases it takes
	log      *slog.Logger  // Options.Logger

	// wakeCh and stopCh are the notification channels of its schema.
	wakeCh, stopCh string
	// suffix is what its schema adds to channels' names (channelSuffix).
	suffix string

	sweptMu sync.Mutex
	swept   time.Time // when Claim last ran sweepQuery
}

// Errors of Open.
var (
	// ErrSchemaNewer reports a database migrated by a newer aslrun than
	// this one.
	ErrSchemaNewer = errors.New("database schema is newer than this aslrun")
	// ErrNotMigrated reports a database that lacks migrations this aslrun
	// needs, opened without Options.Migrate.
	ErrNotMigrated = errors.New("database schema is not migrated")
)

// IsURL reports whether s names a PostgreSQL database (a postgres:// or
// postgresql:// URL) rather than a file.
func IsURL(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// Redact returns the URL s with its password, if any, replaced by
// "xxxxx", for messages and logs.
func Redact(s string) string {
	if !IsURL(s) {
		// A file name, or a keyword/value connection string, which may
		// hold a password anywhere.
		if strings.Contains(strings.ToLower(s), "password") {
			return "(a database string that holds a password)"
		}
		return s
	}
	u, err := url.Parse(s)
	if err != nil {
		// An unparsable URL is not shown at all: it may hold a password.
		return "(a database URL that does not parse)"
	}
	if q := u.Query(); q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}

// password returns the password s holds, "" when none.
func password(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return ""
	}
	if pw, ok := u.User.Password(); ok {
		return pw
	}
	return u.Query().Get("password")
}

// scrubbedError is an error whose message had a password taken out.
type scrubbedError struct {
	msg string
	err error
}

func (e *scrubbedError) Error() string { return e.msg }
func (e *scrubbedError) Unwrap() error { return e.err }

// urlError wraps err with the redacted URL and what was being done,
// taking the password out of err's message in case a driver quoted it.
func urlError(rawURL, doing string, err error) error {
	msg := fmt.Sprintf("database %s: %s: %v", Redact(rawURL), doing, err)
	if pw := password(rawURL); pw != "" {
		msg = strings.ReplaceAll(msg, pw, "xxxxx")
	}
	return &scrubbedError{msg: msg, err: err}
}

// poolConfig parses rawURL into a pool configuration with opts applied.
func poolConfig(rawURL string, opts Options) (*pgxpool.Config, error) {
	if !IsURL(rawURL) {
		return nil, fmt.Errorf("database %s: want a postgres:// URL", Redact(rawURL))
	}
	cfg, err := pgxpool.ParseConfig(rawURL)
	if err != nil {
		return nil, urlError(rawURL, "invalid URL", err)
	}
	if opts.MaxConns < 0 {
		return nil, fmt.Errorf("database %s: pool size %d: want 0 (the default) or more", Redact(rawURL), opts.MaxConns)
	}
	if opts.MaxConns > 0 {
		cfg.MaxConns = opts.MaxConns
	}
	cfg.ConnConfig.ConnectTimeout = orDefault(opts.ConnectTimeout, DefaultConnectTimeout)
	params := cfg.ConnConfig.RuntimeParams
	switch {
	case opts.StatementTimeout == 0:
		params["statement_timeout"] = strconv.FormatInt(DefaultStatementTimeout.Milliseconds(), 10)
	case opts.StatementTimeout > 0:
		params["statement_timeout"] = strconv.FormatInt(max(1, opts.StatementTimeout.Milliseconds()), 10)
	default:
		params["statement_timeout"] = "0"
	}
	if params["application_name"] == "" {
		params["application_name"] = "aslrun"
	}
	return cfg, nil
}

// orDefault returns d, or def when d is 0.
func orDefault(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// Open connects to the PostgreSQL database at rawURL (a postgres:// URL)
// and checks its schema: a database newer than this program is refused
// (ErrSchemaNewer), and so is one that lacks migrations (ErrNotMigrated)
// unless opts.Migrate is set, in which case they are applied. Every error
// names the URL without its password.
func Open(ctx context.Context, rawURL string, opts Options) (*DB, error) {
	cfg, err := poolConfig(rawURL, opts)
	if err != nil {
		return nil, err
	}
	ttl, err := leaseTTL(opts.LeaseTTL)
	if err != nil {
		return nil, err
	}
	rec, err := store.NewRecords(opts.Codec, opts.Migrations)
	if err != nil {
		return nil, err
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, urlError(rawURL, "connecting", err)
	}
	owner := opts.LeaseOwner
	if owner == "" {
		owner = defaultOwner()
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	db := &DB{pool: pool, url: Redact(rawURL), rec: rec, owner: owner, leaseTTL: ttl, log: log}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, urlError(rawURL, "connecting", err)
	}
	if opts.Migrate {
		if _, err := db.Migrate(ctx); err != nil {
			pool.Close()
			return nil, err
		}
	}
	if err := db.checkSchema(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	var schema string
	if err := pool.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		pool.Close()
		return nil, urlError(rawURL, "reading the schema", err)
	}
	db.wakeCh, db.stopCh = channelsOf(schema)
	db.suffix = channelSuffix(schema)
	return db, nil
}

// Close closes the pool, waiting for the connections in use to be
// returned; later calls of the store fail with store.ErrClosed.
func (db *DB) Close() error {
	if !db.closed.Swap(true) {
		db.pool.Close()
	}
	return nil
}

// URL returns the database's URL without its password.
func (db *DB) URL() string { return db.url }

// checkSchema compares the database's schema version with this program's.
func (db *DB) checkSchema(ctx context.Context) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	known := ms[len(ms)-1].version
	applied, err := db.applied(ctx, db.pool)
	if err != nil {
		return err
	}
	have := 0
	if len(applied) > 0 {
		have = applied[len(applied)-1].version
	}
	switch {
	case have > known:
		return fmt.Errorf("database %s: %w: database schema version %d is newer than this aslrun (%d): upgrade aslrun", db.url, ErrSchemaNewer, have, known)
	case have < known:
		return fmt.Errorf("database %s: %w: database schema version %d, this aslrun needs %d: run `aslrun migrate --db %s`", db.url, ErrNotMigrated, have, known, db.url)
	}
	return checkApplied(db.url, ms, applied)
}

// querier is what both a pool and a transaction run statements with.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}
