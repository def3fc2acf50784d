//go:build pebble

package pebble

import (
	"sync/atomic"

	"github.com/cockroachdb/pebble/vfs"
)

// OpenCounting opens a Store whose files count their syncs (fsync,
// fdatasync) in syncs.
func OpenCounting(path string, opts Options, syncs *atomic.Int64) (*Store, error) {
	opts.fs = countingFS{FS: vfs.Default, syncs: syncs}
	return Open(path, opts)
}

// SettledSize flushes the memtable, compacts everything and returns the
// size of the live tables: the bytes the database stores.
func SettledSize(s *Store) (int64, error) {
	if err := s.db.Flush(); err != nil {
		return 0, err
	}
	if err := s.db.Compact([]byte{0}, []byte{0xff, 0xff}, false); err != nil {
		return 0, err
	}
	return s.db.Metrics().Total().Size, nil
}

// countingFS counts the syncs of the files it creates or opens.
type countingFS struct {
	vfs.FS
	syncs *atomic.Int64
}

func (f countingFS) wrap(file vfs.File, err error) (vfs.File, error) {
	if err != nil {
		return nil, err
	}
	return countingFile{File: file, syncs: f.syncs}, nil
}

func (f countingFS) Create(name string) (vfs.File, error) { return f.wrap(f.FS.Create(name)) }

func (f countingFS) ReuseForWrite(oldname, newname string) (vfs.File, error) {
	return f.wrap(f.FS.ReuseForWrite(oldname, newname))
}

func (f countingFS) OpenReadWrite(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	return f.wrap(f.FS.OpenReadWrite(name, opts...))
}

func (f countingFS) OpenDir(name string) (vfs.File, error) { return f.wrap(f.FS.OpenDir(name)) }

// countingFile counts its syncs.
type countingFile struct {
	vfs.File
	syncs *atomic.Int64
}

func (f countingFile) Sync() error {
	f.syncs.Add(1)
	return f.File.Sync()
}

func (f countingFile) SyncData() error {
	f.syncs.Add(1)
	return f.File.SyncData()
}

func (f countingFile) SyncTo(length int64) (bool, error) {
	f.syncs.Add(1)
	return f.File.SyncTo(length)
}
