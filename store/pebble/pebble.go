//go:build pebble

package pebble

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/vfs"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/store"
)

// Options configure Open. The zero value works.
type Options struct {
	// LockTimeout is how long Open waits for another process (or another
	// Store of this process) to release the folder (default 1s) before
	// failing with store.ErrLocked.
	LockTimeout time.Duration
	// Codec compresses checkpoint snapshots (default store.CodecZstd).
	Codec store.Codec
	// Migrations upgrade snapshots of older formats when they are loaded
	// (default none).
	Migrations *store.Migrations

	// fs replaces the file system Pebble writes to, for the benchmarks
	// that count its syncs (nil: the operating system's).
	fs vfs.FS
}

// Store is a store.Store on a Pebble database folder. It is safe for
// concurrent use; one Store at a time may open a folder.
type Store struct {
	db   *pebble.DB
	path string
	rec  *store.Records
	lock *os.File

	life   sync.RWMutex // guards closed; held for reading by every call
	closed bool
	// mu is held for writing by the writes that read what other
	// executions' commits may write (agent memory, the outbox), by GC, the
	// registry, the cache and feedback; and for reading by the other
	// commits and creates, which the execution's stripe of execs
	// serialises. Commits of different executions so go on together, and
	// Pebble's commit pipeline shares their WAL syncs.
	mu    sync.RWMutex
	execs [64]sync.Mutex
	cache cacheState // guarded by mu
}

// lockExec locks what the writes of execution id need: s.mu for writing
// when exclusive, else for reading and id's stripe of s.execs. It
// returns the unlock.
func (s *Store) lockExec(id string, exclusive bool) func() {
	if exclusive {
		s.mu.Lock()
		return s.mu.Unlock
	}
	s.mu.RLock()
	h := fnv.New32a()
	h.Write([]byte(id))
	m := &s.execs[h.Sum32()%uint32(len(s.execs))]
	m.Lock()
	return func() {
		m.Unlock()
		s.mu.RUnlock()
	}
}

var _ store.Store = (*Store)(nil)

// formatKey holds formatValue in every database this package made.
var (
	formatKey   = []byte("mformat")
	formatValue = []byte("aslrun-pebble 1")
)

// lockName is the file in the folder that Open locks (flock), so that a
// second Open, in this process or another, fails with store.ErrLocked.
const lockName = "aslrun.lock"

// Open opens the Pebble database in the folder path, making it when it
// does not exist. A folder another Store holds is an error wrapping
// store.ErrLocked; a Pebble database this package did not make, one
// wrapping store.ErrNotOurs.
func Open(path string, opts Options) (*Store, error) {
	rec, err := store.NewRecords(opts.Codec, opts.Migrations)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if err := os.MkdirAll(path, 0o755); err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	lock, err := lockFolder(path, opts.LockTimeout)
	if err != nil {
		return nil, err
	}
	db, err := pebble.Open(path, &pebble.Options{Logger: quietLogger{}, FS: opts.fs})
	if err != nil {
		lock.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	s := &Store{db: db, path: path, rec: rec, lock: lock}
	if err := s.checkFormat(); err != nil {
		db.Close()
		lock.Close()
		return nil, err
	}
	return s, nil
}

// lockFolder takes the folder's lock file, trying every 50ms until
// timeout (default 1s).
func lockFolder(path string, timeout time.Duration) (*os.File, error) {
	if timeout <= 0 {
		timeout = time.Second
	}
	f, err := os.OpenFile(filepath.Join(path, lockName), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	deadline := time.Now().Add(timeout)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) || time.Now().Add(50*time.Millisecond).After(deadline) {
			f.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				return nil, fmt.Errorf("open %s: %w", path, store.ErrLocked)
			}
			return nil, fmt.Errorf("open %s: lock: %w", path, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// checkFormat writes the format marker in an empty database and checks
// it in another.
func (s *Store) checkFormat() error {
	v, ok, err := get(s.db, formatKey)
	switch {
	case err != nil:
		return fmt.Errorf("open %s: %w", s.path, err)
	case ok && !bytes.Equal(v, formatValue):
		return fmt.Errorf("open %s: format %q: %w", s.path, v, store.ErrNotOurs)
	case ok:
		return nil
	}
	it, err := s.db.NewIter(nil)
	if err != nil {
		return fmt.Errorf("open %s: %w", s.path, err)
	}
	empty := !it.First()
	if err := it.Close(); err != nil {
		return fmt.Errorf("open %s: %w", s.path, err)
	}
	if !empty {
		return fmt.Errorf("open %s: a Pebble database without the aslrun format marker: %w", s.path, store.ErrNotOurs)
	}
	if err := s.db.Set(formatKey, formatValue, pebble.Sync); err != nil {
		return fmt.Errorf("open %s: %w", s.path, err)
	}
	return nil
}

// Close closes the database; later calls fail with store.ErrClosed. It
// waits for the calls in flight.
func (s *Store) Close() error {
	s.life.Lock()
	defer s.life.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	err := s.db.Close()
	if lerr := s.lock.Close(); err == nil {
		err = lerr
	}
	if err != nil {
		return fmt.Errorf("close %s: %w", s.path, err)
	}
	return nil
}

// begin starts a call: it fails with store.ErrClosed after Close, else
// with ctx's error; on success the caller must call s.end.
func (s *Store) begin(ctx interface{ Err() error }) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.life.RLock()
	if s.closed {
		s.life.RUnlock()
		return store.ErrClosed
	}
	return nil
}

// end ends a call begin started.
func (s *Store) end() { s.life.RUnlock() }

// dbErr wraps an error of Pebble with the folder and what was being done.
func (s *Store) dbErr(doing string, err error) error {
	return fmt.Errorf("database %s: %s: %w", s.path, doing, err)
}

// quietLogger drops Pebble's informational messages.
type quietLogger struct{}

func (quietLogger) Infof(string, ...any) {}
func (quietLogger) Fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "pebble: "+format+"\n", args...)
	os.Exit(2)
}

// The kinds of keys (see the package doc).
const (
	kindSpec       = 's'
	kindHead       = 'h'
	kindScope      = 'c'
	kindHistory    = 'r'
	kindCheckpoint = 'k'
	kindNamespace  = 'n'
	kindBlob       = 'b'
	kindDefinition = 'd'
	kindMemory     = 'a'
	kindWorkflow   = 'w'
	kindAlias      = 'v'
	kindList       = 'l'
	kindDue        = 'q'
	kindRunning    = 'u'
)

// key is kind followed by s.
func key(kind byte, s string) []byte {
	return append([]byte{kind}, s...)
}

// under is the prefix of the keys of kind under s: kind, s, NUL.
func under(kind byte, s string) []byte {
	return append(key(kind, s), 0)
}

// pair is kind, a, NUL, b.
func pair(kind byte, a, b string) []byte {
	return append(under(kind, a), b...)
}

// numbered is kind, s, NUL and n big-endian.
func numbered(kind byte, s string, n uint64) []byte {
	return binary.BigEndian.AppendUint64(under(kind, s), n)
}

// timeIDKey is kind, ns big-endian and id.
func timeIDKey(kind byte, ns int64, id string) []byte {
	return append(binary.BigEndian.AppendUint64([]byte{kind}, uint64(ns)), id...)
}

// prefixEnd is the first key after every key that starts with p (nil:
// none).
func prefixEnd(p []byte) []byte {
	end := bytes.Clone(p)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

// get reads a key's value (a copy); ok false when there is none.
func get(r pebble.Reader, k []byte) ([]byte, bool, error) {
	v, closer, err := r.Get(k)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	out := bytes.Clone(v)
	if out == nil {
		out = []byte{}
	}
	return out, true, closer.Close()
}

// scan calls f with each key (without prefix) and value (copies) that
// start with prefix, in order.
func scan(r pebble.Reader, prefix []byte, f func(k, v []byte) error) error {
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)})
	if err != nil {
		return err
	}
	for ok := it.First(); ok; ok = it.Next() {
		if err := f(bytes.Clone(it.Key()[len(prefix):]), bytes.Clone(it.Value())); err != nil {
			it.Close()
			return err
		}
	}
	return it.Close()
}

// Durability flags of a head envelope.
const (
	syncAlways  = 0
	syncAtPause = 1 // batched: sync only the commits that park, end or checkpoint
)

// envelope is a head as stored: the head record with what the indexes
// and the commit's sync need beside it.
type envelope struct {
	sync   byte
	wake   int64 // wakeKey(WakeAt)
	status engine.Status
	head   []byte
}

func (e *envelope) encode() []byte {
	b := make([]byte, 0, 10+len(e.status)+len(e.head))
	b = append(b, e.sync)
	b = binary.BigEndian.AppendUint64(b, uint64(e.wake))
	b = append(b, byte(len(e.status)))
	b = append(b, e.status...)
	return append(b, e.head...)
}

func decodeEnvelope(id string, b []byte) (*envelope, error) {
	if len(b) < 10 || len(b) < 10+int(b[9]) {
		return nil, fmt.Errorf("execution %s: head record of %d bytes is cut short: %w", id, len(b), store.ErrDatabaseCorrupt)
	}
	n := int(b[9])
	return &envelope{sync: b[0], wake: int64(binary.BigEndian.Uint64(b[1:9])), status: engine.Status(b[10 : 10+n]), head: b[10+n:]}, nil
}

// wakeKey is store.TimeKey(t) plus 1 (so that a time before 1970 is not
// none), 0 for the zero time.
func wakeKey(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return store.TimeKey(t) + 1
}

// syncOf is the durability flag of an execution of durability d.
func syncOf(d engine.Durability) byte {
	if d == engine.DurabilityBatched {
		return syncAtPause
	}
	return syncAlways
}
