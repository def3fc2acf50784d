package store

import (
	"bytes"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"go.etcd.io/bbolt"
)

// Damaged database files. bbolt reads pages straight from its memory map
// and panics (or faults) on a page it cannot make sense of. Every bbolt
// call of Bolt runs under guard, which turns that into an error wrapping
// ErrDatabaseCorrupt; the transaction is rolled back, so nothing already
// committed is lost, and what is still readable can still be read.
//
// One walk cannot be guarded: opening a database for writing, bbolt
// rebuilds its free list (the store does not sync it) by visiting every
// page from a goroutine of its own, where a panic ends the process (it
// does the same to roll back a transaction whose commit failed or that
// panicked). So OpenBolt first reads the same pages, read-only and
// guarded (checkPages), and reports a damaged file before bbolt walks it.
// A page damaged while the database is open can still end the process if
// a write transaction then fails.

// DatabaseError is an error about the database file at Path: it cannot be
// created, opened or written, or it is not an aslrun database (the error
// then wraps ErrNotOurs), or, when Corrupt, its pages or records are
// damaged (the error then matches ErrDatabaseCorrupt).
type DatabaseError struct {
	Path    string
	Corrupt bool
	Err     error
}

// Error names the file: "database PATH: …", or "database PATH is
// corrupt: …".
func (e *DatabaseError) Error() string {
	if e.Corrupt {
		return fmt.Sprintf("database %s is corrupt: %v", e.Path, e.Err)
	}
	return fmt.Sprintf("database %s: %v", e.Path, e.Err)
}

// Is makes a Corrupt error match ErrDatabaseCorrupt.
func (e *DatabaseError) Is(target error) bool { return e.Corrupt && target == ErrDatabaseCorrupt }

// Unwrap returns the error about the file.
func (e *DatabaseError) Unwrap() error { return e.Err }

// dbErr is a DatabaseError about the file at path.
func dbErr(path, format string, args ...any) error {
	return &DatabaseError{Path: path, Err: fmt.Errorf(format, args...)}
}

// corruptDB is a Corrupt DatabaseError about the file at path.
func corruptDB(path string, err error) error {
	return &DatabaseError{Path: path, Corrupt: true, Err: err}
}

// dbError returns err as the error of a Bolt call on the database at path:
// a record that does not decode (a recordError) means the file is
// damaged, and gives an error wrapping ErrDatabaseCorrupt; a snapshot that
// does not decode (ErrCorrupt) is said to be in the file.
func dbError(path string, err error) error {
	var re *recordError
	switch {
	case errors.Is(err, ErrDatabaseCorrupt):
	case errors.As(err, &re):
		return corruptDB(path, err)
	case errors.Is(err, ErrCorrupt):
		return &DatabaseError{Path: path, Err: err}
	}
	return err
}

// guard runs f, which uses the database at path, and returns its error; a
// panic, or a memory fault on the database's map, becomes an error
// wrapping ErrDatabaseCorrupt.
func guard(path string, f func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = corruptDB(path, fmt.Errorf("%v", r))
		}
	}()
	return f()
}

// checkPages opens the database at path read-only and reads every page its
// buckets reach (branch and leaf pages, and every key, checking their
// order), under guard. It fails as bbolt.Open does (a file that is not a
// bbolt database, a lock held by another process), and with an error
// wrapping ErrDatabaseCorrupt when a page is damaged.
func checkPages(path string, timeout time.Duration) error {
	var db *bbolt.DB
	err := guard(path, func() error {
		var err error
		db, err = bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true, Timeout: timeout})
		return err
	})
	if err != nil {
		return err
	}
	defer db.Close()
	return guard(path, func() error {
		err := db.View(func(t *bbolt.Tx) error {
			return t.ForEach(checkBucket)
		})
		if err != nil {
			return corruptDB(path, err)
		}
		return nil
	})
}

// checkBucket reads every key of a bucket, and of the buckets inside it,
// checking that they are in order.
func checkBucket(name []byte, b *bbolt.Bucket) error {
	var prev []byte
	c := b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if prev != nil && bytes.Compare(prev, k) >= 0 {
			return fmt.Errorf("bucket %q: key %q after %q is out of order", name, k, prev)
		}
		prev = k
		if v != nil {
			continue
		}
		if inner := b.Bucket(k); inner != nil {
			if err := checkBucket(k, inner); err != nil {
				return err
			}
		}
	}
	return nil
}
