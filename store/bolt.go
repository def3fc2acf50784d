package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/bbolt"
	bberrors "go.etcd.io/bbolt/errors"

	"github.com/aslrun/aslrun/engine"
)

// The format of the database: the meta bucket holds formatKey =
// formatMarker and versionKey = formatVersion (decimal), written when the
// database is created. Format 7 had no outbox (OpenBolt adds its
// buckets). Format 6 wrote history records of format 1, whose
// events held their documents, and heads as sealed JSON. Format 5 had no workflow registry and no machines
// index, format 4 also stored heads and checkpoints as bare JSON (no seal,
// no binding to the history), format 3 had no namespaces bucket either,
// format 2 no agent memory; format 1 also kept each history event under
// its own key in bucket history. OpenBolt converts them all (migrateV1,
// the new buckets, migrateV5, migrateV6, migrateV7).
const (
	formatMarker  = "aslrun"
	formatVersion = 8
)

var (
	formatKey  = []byte("format")
	versionKey = []byte("version")
)

// The buckets (doc.go describes their keys and values).
var (
	bucketMeta        = []byte("meta")
	bucketExecutions  = []byte("executions")
	bucketHeads       = []byte("heads")
	bucketStatus      = []byte("status")
	bucketStarted     = []byte("started")
	bucketScopes      = []byte("scopes")
	bucketEvents      = []byte("events")
	bucketTimers      = []byte("timers")
	bucketCheckpoints = []byte("checkpoints")
	bucketExpiry      = []byte("expiry")
	bucketDefinitions = []byte("definitions")
	bucketBlobs       = []byte("blobs")
	bucketBlobRefs    = []byte("blobrefs")
	bucketOrphans     = []byte("orphans")
	bucketMemory      = []byte("memory")
	bucketMemExpiry   = []byte("memexpiry")
	bucketNamespaces  = []byte("namespaces")
	bucketMachines    = []byte("machines")
	bucketWorkflows   = []byte("workflows")

	bucketHistoryV1 = []byte("history") // format 1's history, see migrateV1
)

// appendFill is the FillPercent of the buckets whose keys only or mostly
// grow: the history records and the start-time index, and the buckets
// keyed by execution id (executions, heads, scopes), whose ids are
// time-ordered UUIDs unless a user names them. A page split there leaves
// full pages behind, so that fewer pages hold the same records and a
// transaction that changes many executions rewrites fewer pages; the
// default (one half) suits keys inserted anywhere, as in the indexes.
const appendFill = 1.0

// BoltOptions configures OpenBolt. The zero value works.
type BoltOptions struct {
	// LockTimeout is how long OpenBolt waits for another process to
	// release the database file (default 1s) before failing with
	// ErrLocked.
	LockTimeout time.Duration
	// Codec compresses checkpoint snapshots (default CodecZstd).
	Codec Codec
	// Migrations upgrade snapshots of older formats when they are loaded
	// (default none).
	Migrations *Migrations
	// ReadOnly opens an existing database for reading only (Export, and
	// every read), sharing its lock with other readers: a process that
	// holds it for writing makes OpenBolt fail with ErrLocked, and none can
	// take it for writing meanwhile. A database of an older format is
	// refused (it cannot be converted), and every write fails.
	ReadOnly bool
	// Log writes each commit through a write-ahead log beside the
	// database (its path + "-log"): one fdatasync per transaction instead
	// of bbolt's two, the database synced at checkpoints (bolt_log.go).
	// Default false. Commits without agent memory or outbox writes, and
	// Create, go through the log; any other write is a synced bbolt
	// transaction followed by a checkpoint (three fdatasyncs instead of
	// two). A database is recovered from its log whenever it has one, Log
	// or not; opened without Log, the log is then removed.
	Log bool

	// logMaxRecords and logMaxBytes bound the log between checkpoints
	// (defaults logMaxRecords, logMaxBytes), for the tests.
	logMaxRecords int
	logMaxBytes   int64
	// logCheckpointed is called after each checkpoint, in the commit
	// loop, for the tests.
	logCheckpointed func()

	// bbolt replaces boltOptions, for the benchmarks that choose them.
	bbolt *bbolt.Options
}

// bboltOptions are the bbolt options OpenBolt uses.
func (o *BoltOptions) bboltOptions() *bbolt.Options {
	if o.bbolt == nil {
		return boltOptions(o.LockTimeout)
	}
	c := *o.bbolt
	c.Timeout = o.LockTimeout
	return &c
}

// openOptions are the bbolt options of opening an existing database.
func (o *BoltOptions) openOptions() *bbolt.Options {
	c := o.bboltOptions()
	c.ReadOnly = o.ReadOnly
	return c
}

// Bolt is the store on a bbolt database file: every commit is durable
// (fsynced) when it returns, and concurrent commits share transactions
// (group commit). A Bolt is safe for concurrent use; one process at a time
// may open a database file.
type Bolt struct {
	db         *bbolt.DB
	path       string
	codec      Codec
	codecs     Codecs
	migrations *Migrations

	mu       sync.RWMutex // guards closed, and sending on queue
	closed   bool
	queue    chan *writeReq
	loopDone chan struct{}

	// batches counts the write transactions and batched the requests they
	// carried (for benchmarks).
	batches, batched atomic.Int64

	// heads is the commit loop's cache of heads; only the loop uses it.
	heads headCache
	// docs knows the documents of the executions' histories.
	docs docCache

	// log is the write-ahead log (BoltOptions.Log), nil without it; only
	// the loop uses it. logWS is the loop's write set. [log]
	log       *boltLog
	logWS     writeSet
	logReport LogReport
}

var _ Store = (*Bolt)(nil)

// OpenBolt opens the database at path, creating it when the file does not
// exist. A database held by another process fails with ErrLocked after
// opts.LockTimeout; a file that is empty, is not a bbolt database, or is a
// bbolt database that is not aslrun's or is of a newer format, fails with
// ErrNotOurs naming the file and is left untouched. A new database is
// written beside path and linked into place once its buckets exist, so
// that no process sees it half made. An existing file is read through first (every page its
// buckets reach, as bbolt itself does when it opens a file for writing),
// and one with damaged pages fails with ErrDatabaseCorrupt. A database of
// an older format is converted to the current one.
func OpenBolt(path string, opts BoltOptions) (*Bolt, error) {
	if opts.LockTimeout <= 0 {
		opts.LockTimeout = time.Second
	}
	if opts.Codec == "" {
		opts.Codec = CodecZstd
	}
	if opts.Migrations == nil {
		opts.Migrations = &Migrations{}
	}
	info, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) && !opts.ReadOnly {
		create := opts.bboltOptions()
		create.InitialMmapSize = 0 // a short open: the file grows as it needs
		if err := createDatabase(path, create); err != nil {
			return nil, dbErr(path, "create: %w", err)
		}
		info, err = os.Stat(path)
	}
	if err != nil {
		return nil, dbErr(path, "open: %w", err)
	}
	if info.Size() == 0 {
		return nil, dbErr(path, "the file is empty: %w", ErrNotOurs)
	}
	// [log] The log is locked, and the database taken back to its
	// checkpoint, before the database is opened.
	lg, err := openLog(path, &opts)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*Bolt, error) {
		if lg != nil {
			lg.close()
		}
		return nil, err
	}
	if err := checkPages(path, opts.LockTimeout); err != nil {
		return fail(openError(path, err))
	}
	var db *bbolt.DB
	err = guard(path, func() error {
		var err error
		db, err = bbolt.Open(path, 0o600, opts.openOptions())
		return err
	})
	if err != nil {
		return fail(openError(path, err))
	}
	db.AllocSize = growStep(int64(info.Size()))
	if err := guard(path, func() error { return checkFormat(db, path, opts.ReadOnly) }); err != nil {
		db.Close()
		return fail(err)
	}
	b := &Bolt{
		db: db, path: path, codec: opts.Codec, migrations: opts.Migrations,
		queue: make(chan *writeReq, queueLen), loopDone: make(chan struct{}),
		heads: newHeadCache(),
	}
	if lg != nil { // [log]
		if opts.ReadOnly {
			lg.close() // bbolt's shared lock keeps writers out
		} else if err := lg.start(db, int64(opts.bboltOptions().InitialMmapSize)/2); err != nil {
			lg.shut(db)
			db.Close()
			return nil, err
		} else {
			b.logReport = lg.report
			if !lg.off {
				b.log = lg
			}
		}
	}
	go b.loop()
	return b, nil
}

// pageSize is the page size of the databases Bolt creates (bbolt keeps the
// page size a file was created with). bbolt writes each page it changes
// with a write call of its own, so a commit costs a few calls per page
// whatever the page holds: with larger pages a transaction of many
// commits makes far fewer calls, and a history record fits in one page.
const pageSize = 16 << 10

// boltOptions are the options of the bbolt databases Bolt opens.
func boltOptions(lockTimeout time.Duration) *bbolt.Options {
	return &bbolt.Options{
		Timeout:        lockTimeout,
		NoFreelistSync: true,
		FreelistType:   bbolt.FreelistMapType,
		PageSize:       pageSize,
		// InitialMmapSize: see initialMmap.
		InitialMmapSize: initialMmap,
	}
}

// createDatabase makes a new database at path, which did not exist: it
// writes it to a temporary file beside path, with its buckets, and links
// it to path (when another process made path meanwhile, that one stays).
func createDatabase(path string, options *bbolt.Options) error {
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*.new")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	if err := f.Close(); err != nil {
		return err
	}
	db, err := bbolt.Open(tmp, 0o600, options)
	if err != nil {
		return err
	}
	err = db.Update(createBuckets)
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Link(tmp, path); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	// The link is durable once the directory is.
	dir, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer dir.Close()
	return dir.Sync()
}

// openError says why bbolt could not open the file at path.
func openError(path string, err error) error {
	var pe *fs.PathError
	switch {
	case errors.Is(err, ErrDatabaseCorrupt):
		return err
	case errors.Is(err, bberrors.ErrTimeout):
		return dbErr(path, "in use by another process: %w", ErrLocked)
	case errors.As(err, &pe):
		return dbErr(path, "open: %w", err)
	}
	return dbErr(path, "not a bbolt database (%v): %w", err, ErrNotOurs)
}

// checkFormat checks the meta bucket of an open database, and converts
// one of an older format (unless readOnly: then it is refused). A
// database that is not ours is not written to.
func checkFormat(db *bbolt.DB, path string, readOnly bool) error {
	var version []byte
	err := db.View(func(tx *bbolt.Tx) error {
		if meta := tx.Bucket(bucketMeta); meta != nil {
			if string(meta.Get(formatKey)) != formatMarker {
				return dbErr(path, "its meta bucket has no aslrun format marker: %w", ErrNotOurs)
			}
			version = bytes.Clone(meta.Get(versionKey))
		}
		return nil
	})
	if err != nil {
		return err
	}
	if version == nil {
		// OpenBolt creates databases whole (createDatabase): a bbolt file
		// without our meta bucket is another program's.
		return dbErr(path, "a bbolt database without aslrun's meta bucket: %w", ErrNotOurs)
	}
	v, err := strconv.Atoi(string(version))
	switch {
	case err != nil || v < 1:
		return dbErr(path, "format version %q is not valid: %w", version, ErrNotOurs)
	case v > formatVersion:
		return dbErr(path, "format version %d is newer than this program's (%d): %w", v, formatVersion, ErrNotOurs)
	case v < formatVersion && readOnly:
		return dbErr(path, "format version %d is older than this program's (%d) and opened read-only: open it once for writing (any aslrun command on it) to convert it", v, formatVersion)
	case v < formatVersion:
		err := db.Update(func(t *bbolt.Tx) error {
			if v == 1 {
				if err := migrateV1(t); err != nil {
					return err
				}
			}
			// Formats 3 and 4 added agent memory and the namespaces each
			// execution used, format 8 the outbox.
			for _, name := range append([][]byte{bucketMemory, bucketMemExpiry, bucketNamespaces}, outboxBuckets...) {
				if _, err := t.CreateBucketIfNotExists(name); err != nil {
					return err
				}
			}
			if v < 5 {
				if err := migrateV5(t); err != nil {
					return err
				}
			}
			if v < 6 {
				if err := migrateV6(t); err != nil {
					return err
				}
			}
			if v < 7 {
				if err := migrateV7(t); err != nil {
					return err
				}
			}
			return t.Bucket(bucketMeta).Put(versionKey, []byte(strconv.Itoa(formatVersion)))
		})
		if err != nil {
			return dbErr(path, "convert format %d to %d: %w", v, formatVersion, err)
		}
	}
	return nil
}

// createBuckets makes the buckets of a new database and writes its format.
func createBuckets(tx *bbolt.Tx) error {
	for _, name := range append([][]byte{
		bucketMeta, bucketExecutions, bucketHeads, bucketStatus, bucketStarted, bucketScopes, bucketEvents,
		bucketTimers, bucketCheckpoints, bucketExpiry, bucketDefinitions, bucketBlobs, bucketBlobRefs, bucketOrphans,
		bucketMemory, bucketMemExpiry, bucketNamespaces, bucketMachines, bucketWorkflows,
	}, outboxBuckets...) {
		if _, err := tx.CreateBucketIfNotExists(name); err != nil {
			return fmt.Errorf("create bucket %s: %w", name, err)
		}
	}
	meta := tx.Bucket(bucketMeta)
	if err := meta.Put(formatKey, []byte(formatMarker)); err != nil {
		return err
	}
	return meta.Put(versionKey, []byte(strconv.Itoa(formatVersion)))
}

// keysOf lists a bucket's keys, so that a migration can rewrite the
// bucket while it goes through them.
func keysOf(b *bbolt.Bucket) ([]string, error) {
	var keys []string
	err := b.ForEach(func(k, _ []byte) error {
		keys = append(keys, string(k))
		return nil
	})
	return keys, err
}

// migrateV1 converts a database of format 1, which kept each history event
// under "id \x00 n" in bucket history, to the current format: each event
// becomes a history record of its own, linked to the one before.
func migrateV1(t *bbolt.Tx) error {
	old := t.Bucket(bucketHistoryV1)
	events, err := t.CreateBucketIfNotExists(bucketEvents)
	if err != nil {
		return fmt.Errorf("create bucket %s: %w", bucketEvents, err)
	}
	heads := t.Bucket(bucketHeads)
	if old == nil || heads == nil {
		return fmt.Errorf("bucket %s or %s is missing", bucketHistoryV1, bucketHeads)
	}
	events.FillPercent = appendFill
	ids, err := keysOf(heads)
	if err != nil {
		return err
	}
	for _, id := range ids {
		h, err := decodeHeadJSON(id, heads.Get([]byte(id)))
		if err != nil {
			return err
		}
		h.LastRecord = 0
		n := int64(0)
		err = scanPrefix(old, idKey(id, ""), func(_, v []byte) error {
			n++
			key, err := events.NextSequence()
			if err != nil {
				return err
			}
			rec := encodeHistoryRecord(id, h.LastRecord, n, [][]byte{v})
			if err := events.Put(recordKey(key), rec); err != nil {
				return err
			}
			h.LastRecord = key
			return nil
		})
		if err != nil {
			return fmt.Errorf("execution %s: history event %d: %w", id, n, err)
		}
		// Heads stay JSON, as format 4 had them, for migrateV5.
		body, err := marshalRecord(h)
		if err != nil {
			return err
		}
		if err := heads.Put([]byte(id), body); err != nil {
			return err
		}
	}
	return t.DeleteBucket(bucketHistoryV1)
}

// migrateV5 converts a database of format 4 or older, whose heads and
// checkpoint records were bare JSON, to format 5: each checkpoint value
// gets its binding prefix, bound to the head (no history event of an older
// format records a checkpoint's hash), and each head lists its execution's
// checkpoints and is sealed. The history is not changed.
func migrateV5(t *bbolt.Tx) error {
	heads, checkpoints := t.Bucket(bucketHeads), t.Bucket(bucketCheckpoints)
	if heads == nil || checkpoints == nil {
		return fmt.Errorf("bucket %s or %s is missing", bucketHeads, bucketCheckpoints)
	}
	var keys, values [][]byte
	if err := checkpoints.ForEach(func(k, v []byte) error {
		keys, values = append(keys, bytes.Clone(k)), append(values, bytes.Clone(v))
		return nil
	}); err != nil {
		return err
	}
	unbound := make(map[string]map[string]string)
	for i, k := range keys {
		id, name, ok := bytes.Cut(k, []byte{0})
		if !ok {
			return fmt.Errorf("bucket %s: malformed key %q", bucketCheckpoints, k)
		}
		m := unbound[string(id)]
		if m == nil {
			m = make(map[string]string)
			unbound[string(id)] = m
		}
		m[string(name)] = checkpointHash(string(id), string(name), values[i])
		if err := checkpoints.Put(k, encodeCheckpointValue(checkpointBinding{}, values[i])); err != nil {
			return err
		}
	}
	ids, err := keysOf(heads)
	if err != nil {
		return err
	}
	for _, id := range ids {
		h, err := decodeHeadJSON(id, heads.Get([]byte(id)))
		if err != nil {
			return err
		}
		h.Unbound = unbound[id]
		if err := heads.Put([]byte(id), encodeSealedHead(id, h)); err != nil {
			return err
		}
	}
	return nil
}

// migrateV6 converts a database of format 5 or older to format 6: it
// adds the workflow registry and the machines index, indexing every
// execution.
func migrateV6(t *bbolt.Tx) error {
	if _, err := t.CreateBucketIfNotExists(bucketWorkflows); err != nil {
		return fmt.Errorf("create bucket %s: %w", bucketWorkflows, err)
	}
	machines, err := t.CreateBucketIfNotExists(bucketMachines)
	if err != nil {
		return fmt.Errorf("create bucket %s: %w", bucketMachines, err)
	}
	execs := t.Bucket(bucketExecutions)
	if execs == nil {
		return fmt.Errorf("bucket %s is missing", bucketExecutions)
	}
	var keys [][]byte
	err = execs.ForEach(func(k, v []byte) error {
		rec, err := decodeExec(string(k), v)
		if err != nil {
			return err
		}
		keys = append(keys, machineKey(&Summary{ID: string(k), MachineName: rec.MachineName, StartedAt: rec.StartedAt}))
		return nil
	})
	if err != nil {
		return err
	}
	for _, k := range keys {
		if err := machines.Put(k, nil); err != nil {
			return err
		}
	}
	return nil
}

// migrateV7 converts a database of format 6 or older to format 7: it
// rewrites every head in the binary form (heads of format 6 are sealed
// JSON). The history records of format 1 stay as they are: they are read
// as they were, and new commits append records of format 2 after them.
func migrateV7(t *bbolt.Tx) error {
	heads := t.Bucket(bucketHeads)
	if heads == nil {
		return fmt.Errorf("bucket %s is missing", bucketHeads)
	}
	ids, err := keysOf(heads)
	if err != nil {
		return err
	}
	for _, id := range ids {
		h, err := decodeSealedHead(id, heads.Get([]byte(id)))
		if err != nil {
			return err
		}
		if err := heads.Put([]byte(id), encodeSealedHead(id, h)); err != nil {
			return err
		}
	}
	return nil
}

// Close waits for the commits under way, then closes the database. Calls
// after Close fail with ErrClosed.
func (b *Bolt) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	close(b.queue)
	b.mu.Unlock()
	<-b.loopDone
	var lerr error
	if b.log != nil { // [log] a last checkpoint; the pin ends before bbolt closes
		lerr = b.log.shut(b.db)
	}
	if err := guard(b.path, b.db.Close); err != nil {
		return dbErr(b.path, "close: %w", err)
	}
	return lerr
}

// tx holds a transaction's buckets, and in the commit loop's transactions
// the loop's cache of heads (nil in read transactions).
type tx struct {
	executions, heads, status, started, scopes, events, timers *bbolt.Bucket
	checkpoints, expiry, definitions, blobs, blobRefs, orphans *bbolt.Bucket
	memory, memExpiry, namespaces, machines, workflows         *bbolt.Bucket
	cache                                                      *headCache
	ws                                                         *writeSet // [log] records put, del and nextSequence; nil when not logged
}

// bucketsOf returns the buckets of t; a missing one means the database is
// damaged.
func bucketsOf(t *bbolt.Tx) (*tx, error) {
	var x tx
	for _, b := range []struct {
		dst  **bbolt.Bucket
		name []byte
	}{
		{&x.executions, bucketExecutions}, {&x.heads, bucketHeads}, {&x.status, bucketStatus},
		{&x.started, bucketStarted}, {&x.scopes, bucketScopes}, {&x.events, bucketEvents},
		{&x.timers, bucketTimers}, {&x.checkpoints, bucketCheckpoints}, {&x.expiry, bucketExpiry},
		{&x.definitions, bucketDefinitions}, {&x.blobs, bucketBlobs}, {&x.blobRefs, bucketBlobRefs},
		{&x.orphans, bucketOrphans}, {&x.memory, bucketMemory}, {&x.memExpiry, bucketMemExpiry},
		{&x.namespaces, bucketNamespaces}, {&x.machines, bucketMachines}, {&x.workflows, bucketWorkflows},
	} {
		if *b.dst = t.Bucket(b.name); *b.dst == nil {
			return nil, fmt.Errorf("bucket %s is missing", b.name)
		}
	}
	for _, bkt := range []*bbolt.Bucket{x.events, x.started, x.heads, x.scopes, x.executions} {
		bkt.FillPercent = appendFill
	}
	return &x, nil
}

// view runs f in a read transaction.
func (b *Bolt) view(f func(x *tx) error) error {
	err := guard(b.path, func() error {
		return b.db.View(func(t *bbolt.Tx) error {
			x, err := bucketsOf(t)
			if err != nil {
				return err
			}
			return f(x)
		})
	})
	if errors.Is(err, bberrors.ErrDatabaseNotOpen) {
		return ErrClosed
	}
	return dbError(b.path, err)
}

// Keys. Execution ids and checkpoint names never contain NUL, so that
// "id\x00" prefixes select exactly one execution's keys.

// idKey is id, NUL, and rest.
func idKey(id, rest string) []byte {
	k := make([]byte, 0, len(id)+1+len(rest)+8)
	k = append(k, id...)
	k = append(k, 0)
	return append(k, rest...)
}

// recordKey is the key of a history record: 8 bytes, big-endian.
func recordKey(n uint64) []byte {
	return binary.BigEndian.AppendUint64(make([]byte, 0, 8), n)
}

// timedKey is a time's 8 bytes, NUL, and the parts joined by NUL.
func timedKey(t time.Time, parts ...string) []byte {
	k := binary.BigEndian.AppendUint64(make([]byte, 0, 64), timeKey(t))
	for _, p := range parts {
		k = append(k, 0)
		k = append(k, p...)
	}
	return k
}

// statusKey is the status index's key of an execution.
func statusKey(s engine.Status, id string) []byte {
	return append(append([]byte(s), 0), id...)
}

// scanPrefix calls f for each key of bkt that starts with prefix, in
// order. f must not change the bucket.
func scanPrefix(bkt *bbolt.Bucket, prefix []byte, f func(k, v []byte) error) error {
	c := bkt.Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		if err := f(k, v); err != nil {
			return err
		}
	}
	return nil
}

// Load returns an execution as last committed; ErrNotFound when there is
// none.
func (b *Bolt) Load(ctx context.Context, id string) (*engine.Execution, error) {
	var e *engine.Execution
	err := b.view(func(x *tx) error {
		rec, h, err := x.execution(id)
		if err != nil {
			return err
		}
		scopes := make(map[string]*engine.Scope)
		prefix := idKey(id, "")
		err = scanPrefix(x.scopes, prefix, func(k, v []byte) error {
			key := string(k[len(prefix):])
			s, err := decodeScope(v)
			if err != nil {
				return fmt.Errorf("execution %s: scope %q: %w", id, key, err)
			}
			scopes[key] = s
			return nil
		})
		if err != nil {
			return err
		}
		var def []byte
		if rec.DefinitionHash != "" {
			def = bytes.Clone(x.definitions.Get([]byte(rec.DefinitionHash)))
		}
		if e, err = execution(id, rec, h, def, scopes); err != nil {
			return err
		}
		return scanPrefix(x.namespaces, prefix, func(k, _ []byte) error {
			e.Progress.Namespaces = append(e.Progress.Namespaces, string(k[len(prefix):]))
			return nil
		})
	})
	return e, err
}

// execution reads an execution's records, checking its head as head does;
// ErrNotFound when there is none.
func (x *tx) execution(id string) (*execRecord, *headRecord, error) {
	xv := x.executions.Get([]byte(id))
	if xv == nil {
		return nil, nil, fmt.Errorf("execution %s: %w", id, engine.ErrNotFound)
	}
	h, err := x.head(id)
	if err != nil {
		return nil, nil, err
	}
	rec, err := decodeExec(id, xv)
	if err != nil {
		return nil, nil, err
	}
	return rec, h, nil
}

// head reads an execution's head and checks it: its seal, and that it
// agrees with its last history record (checkHeadChain). ErrNotFound when
// there is none; an *IntegrityError when it was changed.
func (x *tx) head(id string) (*headRecord, error) {
	h, sealErr := x.unsealedHead(id)
	if h == nil {
		return nil, sealErr
	}
	var rec []byte
	if h.LastRecord != 0 {
		rec = x.events.Get(recordKey(h.LastRecord))
	}
	// The history may name the field that was changed; else the seal
	// says that one was.
	if err := checkHeadChain(id, h, rec); err != nil {
		return nil, err
	}
	if sealErr != nil {
		return nil, sealErr
	}
	return h, nil
}

// unsealedHead reads an execution's head. It returns the head with the
// *IntegrityError of a seal that does not match, and a nil head with any
// other error.
func (x *tx) unsealedHead(id string) (*headRecord, error) {
	hv := x.heads.Get([]byte(id))
	if hv == nil {
		return nil, fmt.Errorf("execution %s: %w", id, engine.ErrNotFound)
	}
	h, err := decodeSealedHead(id, hv)
	var ie *IntegrityError
	if err != nil && !errors.As(err, &ie) {
		return nil, err
	}
	return h, err
}

// checkpointValue reads a stored checkpoint and checks it against what
// binds it (integrity.go), for execution head h. full is as for
// decodeCheckpoint.
func (x *tx) checkpointValue(id, name string, h *headRecord, v []byte, full bool) (*engine.Checkpoint, *checkpointRecord, error) {
	b, record, err := splitCheckpointValue(id, name, v)
	if err != nil {
		return nil, nil, err
	}
	cp, r, err := decodeCheckpoint(id, name, record, full)
	if err != nil {
		return nil, nil, err
	}
	if b.key == 0 {
		err = checkUnboundCheckpoint(id, name, h, record)
	} else {
		err = checkBoundCheckpoint(id, name, b, record, r.DocHash, x.events.Get(recordKey(b.key)))
	}
	if err != nil {
		return nil, nil, err
	}
	return cp, r, nil
}

// Checkpoint returns the named checkpoint of an execution, its document
// decoded; ErrNotFound when there is none, ErrCorrupt when its snapshot
// does not decode. Expired checkpoints are returned until GC removes them.
func (b *Bolt) Checkpoint(ctx context.Context, id, name string) (*engine.Checkpoint, error) {
	var rec, blob []byte
	var found bool
	err := b.view(func(x *tx) error {
		h, err := x.head(id)
		if err != nil {
			return err
		}
		v := x.checkpoints.Get(idKey(id, name))
		if v == nil {
			return fmt.Errorf("execution %s checkpoint %q: %w", id, name, engine.ErrNotFound)
		}
		_, r, err := x.checkpointValue(id, name, h, v, false)
		if err != nil {
			return err
		}
		_, record, _ := splitCheckpointValue(id, name, v)
		rec = bytes.Clone(record)
		bv := x.blobs.Get([]byte(r.Blob))
		found = bv != nil
		blob = bytes.Clone(bv)
		return nil
	})
	if err != nil {
		return nil, err
	}
	cp, err := loadCheckpoint(id, name, rec, blob, found, &b.codecs, b.migrations)
	return cp, dbError(b.path, err)
}

// ListCheckpoints returns an execution's checkpoints without their
// documents, oldest first.
func (b *Bolt) ListCheckpoints(ctx context.Context, id string) ([]*engine.Checkpoint, error) {
	var out []*engine.Checkpoint
	err := b.view(func(x *tx) error {
		h, err := x.head(id)
		if err != nil {
			return err
		}
		prefix := idKey(id, "")
		return scanPrefix(x.checkpoints, prefix, func(k, v []byte) error {
			cp, _, err := x.checkpointValue(id, string(k[len(prefix):]), h, v, false)
			if err != nil {
				return err
			}
			out = append(out, cp)
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	sortCheckpoints(out)
	return out, nil
}

// Due returns the WAITING executions whose WakeAt is at or before now,
// earliest first: a scan of the timers index up to now.
func (b *Bolt) Due(ctx context.Context, now time.Time) ([]string, error) {
	var out []string
	limit := timeKey(now)
	err := b.view(func(x *tx) error {
		c := x.timers.Cursor()
		for k, _ := c.First(); k != nil; k, _ = c.Next() {
			if len(k) < 9 || binary.BigEndian.Uint64(k) > limit {
				break
			}
			out = append(out, string(k[9:]))
		}
		return nil
	})
	return out, err
}

// Unfinished returns the RUNNING executions, by id: a prefix scan of the
// status index.
func (b *Bolt) Unfinished(ctx context.Context) ([]string, error) {
	var out []string
	prefix := statusKey(engine.StatusRunning, "")
	err := b.view(func(x *tx) error {
		return scanPrefix(x.status, prefix, func(k, _ []byte) error {
			out = append(out, string(k[len(prefix):]))
			return nil
		})
	})
	return out, err
}

// History returns an execution's history in order.
func (b *Bolt) History(ctx context.Context, id string) ([]engine.Event, error) {
	var out []engine.Event
	err := b.view(func(x *tx) error {
		// The events are shown even when the head was changed: History
		// does not trust it beyond where its history ends.
		h, err := x.unsealedHead(id)
		if h == nil {
			return err
		}
		records, err := x.historyRecords(id, h)
		if err != nil {
			return err
		}
		out, err = readHistory(id, records)
		return err
	})
	return out, err
}

// VerifyHistory checks an execution's history, its head and its
// checkpoints: every event's hash and link (ErrTampered names the first
// event that does not verify), then the head and the checkpoints against
// the chain (an *IntegrityError names the record and the field).
func (b *Bolt) VerifyHistory(ctx context.Context, id string) error {
	return b.view(func(x *tx) error {
		h, sealErr := x.unsealedHead(id)
		if h == nil {
			return sealErr
		}
		records, err := x.historyRecords(id, h)
		if err != nil {
			return err
		}
		parsed := make([]historyRecord, len(records))
		keys := make(map[uint64]bool, len(records))
		for i, r := range records {
			parsed[i] = r.historyRecord
			keys[r.key] = true
		}
		if err := verifyHistory(id, parsed, h); err != nil {
			return err
		}
		if sealErr != nil {
			return sealErr
		}
		prefix := idKey(id, "")
		return scanPrefix(x.checkpoints, prefix, func(k, v []byte) error {
			name := string(k[len(prefix):])
			bd, _, err := splitCheckpointValue(id, name, v)
			if err != nil {
				return err
			}
			if bd.key != 0 && !keys[bd.key] {
				return &IntegrityError{Execution: id, Checkpoint: name, Field: "record", Detail: fmt.Sprintf("history record %d that binds it is not in the execution's history", bd.key)}
			}
			_, _, err = x.checkpointValue(id, name, h, v, false)
			return err
		})
	})
}

// storedRecord is a history record as stored, with its key.
type storedRecord struct {
	key   uint64
	value []byte
	historyRecord
}

// historyRecords returns an execution's history records, oldest first, by
// following their links back from its head's last record. Their values
// are the transaction's memory. A link that leads elsewhere is an error
// wrapping ErrTampered.
func (x *tx) historyRecords(id string, h *headRecord) ([]storedRecord, error) {
	var out []storedRecord
	next := int64(0) // the first position of the record read before (0: none)
	for key := h.LastRecord; key != 0; {
		bad := func(format string, args ...any) error {
			return fmt.Errorf("execution %s: history record %d: %s: %w", id, key, fmt.Sprintf(format, args...), ErrTampered)
		}
		v := x.events.Get(recordKey(key))
		if v == nil {
			return nil, bad("missing")
		}
		r, err := parseHistoryRecord(v)
		if err != nil {
			return nil, fmt.Errorf("execution %s: history record %d: %w", id, key, err)
		}
		end := r.first + int64(len(r.events))
		switch {
		case string(r.id) != id:
			return nil, bad("it belongs to execution %q", r.id)
		case next != 0 && end != next:
			return nil, bad("its events end before event %d, want %d", end, next)
		case r.prev >= key:
			// Links go to smaller keys, so that following them ends.
			return nil, bad("its previous record is %d", r.prev)
		}
		out = append(out, storedRecord{key: key, value: v, historyRecord: r})
		next, key = r.first, r.prev
	}
	if next > 1 {
		return nil, fmt.Errorf("execution %s: history starts at event %d: %w", id, next, ErrTampered)
	}
	slices.Reverse(out)
	return out, nil
}

// Definition returns the definition text stored under hash.
func (b *Bolt) Definition(ctx context.Context, hash string) ([]byte, error) {
	var def []byte
	err := b.view(func(x *tx) error {
		def = bytes.Clone(x.definitions.Get([]byte(hash)))
		if def == nil {
			return fmt.Errorf("definition %s: %w", hash, engine.ErrNotFound)
		}
		return nil
	})
	return def, err
}

// growStep is how much a database of size bytes grows by when it is full:
// an eighth of it, from 64 KiB to 16 MiB (bbolt's AllocSize, which it
// applies as one step whatever the size once the map is larger than it,
// as initialMmap's is: a new database would be 16 MiB at once). Each step
// costs a truncate and an fsync.
func growStep(size int64) int {
	return int(min(max(size/8, 64<<10), 16<<20))
}

// initialMmap is the size of the address space a database is mapped into
// when it opens (address space only: the file grows as it fills, and
// memory is used as pages are read). bbolt maps the file anew whenever it
// outgrows its map, and a new map waits for every read transaction to end
// while stopping new ones and the commit under way: with a small first
// map, a database growing by hundreds of megabytes beside a big Map
// stalled every read and commit for up to 1.6 s at each doubling. Past
// this size a database still grows, a map at a time (a gibibyte each).
const initialMmap = 1 << (30 + 3*(strconv.IntSize/64)) // 8 GiB; 1 GiB on 32-bit
