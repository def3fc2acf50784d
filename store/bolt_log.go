package store

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"hash/fnv"
	"io"
	"io/fs"
	"os"
	"sync/atomic"
	"time"

	"go.etcd.io/bbolt"
	bberrors "go.etcd.io/bbolt/errors"
)

// The write-ahead log (BoltOptions.Log). bbolt makes a transaction durable
// with two fdatasyncs and rewrites every page the transaction touched, a
// copy of each 16 KiB page from the changed leaf up to the root. With the
// log, a transaction of the commit loop is written to bbolt with NoSync
// (readers see it at once, nothing is synced) and its write set — the
// puts, deletes and sequence changes it made, bucket by bucket — is
// appended to the log beside the database as one framed, checksummed
// record, made durable with one fdatasync before bbolt commits. Every
// logMaxRecords records or logMaxBytes bytes, and at Close, a checkpoint
// syncs the database and starts the log afresh.
//
// Recovery. After a crash the database file may hold anything bbolt wrote
// since the last checkpoint, in part: its newest meta page may name pages
// that never reached the disk. But the state of the checkpoint is whole:
// the checkpoint synced it, and a read transaction opened at the
// checkpoint (the pin) keeps bbolt from reusing any page that state
// reaches until the next checkpoint (bbolt does reuse the pages that were
// both allocated and freed after the pin, so that pages written over and
// over between checkpoints are written to the disk once). The log's header
// holds a copy of the checkpoint's meta page. Opening a database whose log
// has a header, OpenBolt writes that meta into both meta pages (when the
// file's newest meta is another), which takes the database back to the
// checkpoint, then replays the log's records in order (puts, deletes and
// sequences are idempotent) in one synced transaction, and checkpoints. A
// record that is torn, cut short or fails its checksum ends the log: it
// and anything after it are dropped (Bolt.LogReport says where and why).
//
// What goes through the log. The write set is captured by the tx methods
// put, del and nextSequence, which write to bbolt and record the change.
// Create and Commit write only through them, except a commit that writes
// agent memory or outbox entries (those are written by code that calls
// bbolt directly). A request states whether it is logged (writeReq.logged);
// a transaction holding any request that is not (a commit with memory or
// outbox writes, GC, the registry, the cache, feedback, ...) is an ordinary
// synced bbolt transaction followed at once by a checkpoint, so that the
// log never has to hold it: recovery would otherwise take the database
// back past it.
//
// Ownership. The log file is locked (flock) for as long as the store is
// open, before the database itself is opened, so that no second process
// reads, restores or replays it; the database's random log id (the meta
// bucket's "logid") is in every log header, and a log of another database
// is refused.
//
// Limits. The pin holds bbolt's map lock, which bbolt takes to map a
// grown file anew: the log is used while the database is smaller than
// half its initial map (8 GiB), and is switched off for the rest of the
// session past that (the database synced, the log emptied).

const (
	logMagic     = "aslrunL1"
	logSlotSize  = 512  // two header slots, at 0 and 512
	logDataStart = 1024 // the first record
	logHeaderLen = 8 + 8 + 16 + 8 + 4 + metaSize + 4
	logFrameLen  = 8 // length u32, CRC32C u32
	maxLogRecord = 1 << 30
	metaOffset   = 16 // bbolt's page header
	metaSize     = 64 // bbolt's meta, its checksum last
	metaMagic    = 0xED0CDAED
	metaVersion  = 2
	logMaxBytes  = 8 << 20
	// logMaxRecords: between checkpoints, bbolt reuses the pages both
	// allocated and freed since the last one, which the page cache writes
	// to the disk once; a longer interval still wrote more
	// (BenchmarkCommitLog, one execution: written-B/commit 22.6 KB at 16
	// records, 15.4 KB at 64, 14.1 KB at 128, 15.0 KB at 256, 25 KB at
	// 1024, 51 KB at 8192), and each checkpoint costs two fdatasyncs.
	logMaxRecords = 128
)

// Write-set operations of a log record.
const (
	logPut    = 1
	logDelete = 2
	logSeq    = 3
)

var (
	logIDKey = []byte("logid")
	crcTable = crc32.MakeTable(crc32.Castagnoli)
)

// LogReport says what OpenBolt found in the database's log.
type LogReport struct {
	// Replayed is how many records were applied to the database.
	Replayed int
	// Restored says that the database was taken back to the log's
	// checkpoint (its newest meta page was newer).
	Restored bool
	// Cut is how many bytes at the end of the log were dropped, and
	// CutReason why (a torn, short or corrupt record, at which offset).
	Cut       int64
	CutReason string
}

// LogReport returns what OpenBolt found in the database's log: the zero
// value when there was none.
func (b *Bolt) LogReport() LogReport { return b.logReport }

// logHeader is a header slot of the log: the checkpoint its records
// follow.
type logHeader struct {
	gen      uint64 // the checkpoint's number; records are checksummed with it
	id       [16]byte
	txid     uint64
	pageSize uint32
	meta     [metaSize]byte
}

func (h *logHeader) encode() []byte {
	b := make([]byte, 0, logHeaderLen)
	b = append(b, logMagic...)
	b = binary.LittleEndian.AppendUint64(b, h.gen)
	b = append(b, h.id[:]...)
	b = binary.LittleEndian.AppendUint64(b, h.txid)
	b = binary.LittleEndian.AppendUint32(b, h.pageSize)
	b = append(b, h.meta[:]...)
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, crcTable))
}

// decodeLogHeader decodes a header slot; ok is false when it is not a
// whole header.
func decodeLogHeader(b []byte) (h logHeader, ok bool) {
	if len(b) < logHeaderLen || string(b[:8]) != logMagic {
		return h, false
	}
	body := b[:logHeaderLen-4]
	if crc32.Checksum(body, crcTable) != binary.LittleEndian.Uint32(b[logHeaderLen-4:]) {
		return h, false
	}
	h.gen = binary.LittleEndian.Uint64(b[8:])
	copy(h.id[:], b[16:32])
	h.txid = binary.LittleEndian.Uint64(b[32:])
	h.pageSize = binary.LittleEndian.Uint32(b[40:])
	copy(h.meta[:], b[44:44+metaSize])
	return h, true
}

// bboltMeta is a meta page's meta as bbolt wrote it (native byte order).
type bboltMeta [metaSize]byte

func (m *bboltMeta) txid() uint64     { return binary.NativeEndian.Uint64(m[48:]) }
func (m *bboltMeta) pageSize() uint32 { return binary.NativeEndian.Uint32(m[8:]) }

// valid checks the meta as bbolt does: magic, version, checksum.
func (m *bboltMeta) valid() bool {
	if binary.NativeEndian.Uint32(m[0:]) != metaMagic || binary.NativeEndian.Uint32(m[4:]) != metaVersion {
		return false
	}
	h := fnv.New64a()
	h.Write(m[:56])
	return h.Sum64() == binary.NativeEndian.Uint64(m[56:])
}

// readMetas reads the two meta pages of the database file f.
func readMetas(f *os.File, pageSize int64) (m [2]bboltMeta, err error) {
	for i := range m {
		if _, err := f.ReadAt(m[i][:], int64(i)*pageSize+metaOffset); err != nil {
			return m, err
		}
	}
	return m, nil
}

// newest returns the newest valid meta of two, nil when neither is.
func newest(m *[2]bboltMeta) *bboltMeta {
	var best *bboltMeta
	for i := range m {
		if m[i].valid() && (best == nil || m[i].txid() > best.txid()) {
			best = &m[i]
		}
	}
	return best
}

// boltLog is the log of a Bolt; the commit loop alone uses it once the
// store is open (Close uses it after the loop has ended).
type boltLog struct {
	path string
	f    *os.File // locked
	dbf  *os.File // the database file, to read its meta pages
	hdr  logHeader
	has  bool  // hdr was read or written
	end  int64 // the end of the last record
	n    int   // records since the checkpoint

	pin      *bbolt.Tx // open at the checkpoint
	mapLimit int64     // the log is switched off past this database size
	size     int64     // the database's size as of the last transaction
	off      bool      // switched off (or recovery only)
	err      error     // a failed sync: every write fails with it

	maxRecords int
	maxBytes   int64
	buf        []byte

	pending [][]byte // records to replay, read at open
	report  LogReport

	checkpointed func() // BoltOptions.logCheckpointed

	// syncs counts the fdatasyncs of the log and of checkpoints (for
	// benchmarks).
	syncs atomic.Int64
}

// logPath is the path of the log of the database at path.
func logPath(path string) string { return path + "-log" }

// openLog locks and reads the log of the database at path, and takes the
// database back to the log's checkpoint when its file went further.
// There is nothing to do (nil, nil) without a log and without opts.Log. A
// read-only open refuses a log that has records to replay.
func openLog(path string, opts *BoltOptions) (*boltLog, error) {
	lp := logPath(path)
	flag := os.O_RDWR
	if opts.ReadOnly {
		flag = os.O_RDONLY
	} else if opts.Log {
		flag |= os.O_CREATE
	}
	f, err := os.OpenFile(lp, flag, 0o600)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, dbErr(path, "open log: %w", err)
	}
	l := &boltLog{path: path, f: f, maxRecords: opts.logMaxRecords, maxBytes: opts.logMaxBytes, off: !opts.Log, checkpointed: opts.logCheckpointed}
	if l.maxRecords <= 0 {
		l.maxRecords = logMaxRecords
	}
	if l.maxBytes <= 0 {
		l.maxBytes = logMaxBytes
	}
	if err := lockFile(f, !opts.ReadOnly, opts.LockTimeout); err != nil {
		f.Close()
		if errors.Is(err, errWouldBlock) {
			return nil, dbErr(path, "log %s in use by another process: %w", lp, ErrLocked)
		}
		return nil, dbErr(path, "lock log %s: %w", lp, err)
	}
	if err := l.read(opts.ReadOnly); err != nil {
		f.Close()
		return nil, err
	}
	if !l.has {
		if opts.ReadOnly || !opts.Log {
			f.Close() // an empty log: nothing to do
			return nil, nil
		}
		return l, nil
	}
	if err := l.restore(opts); err != nil {
		f.Close()
		return nil, err
	}
	return l, nil
}

// read reads the header and the records of the log; a torn or corrupt
// record ends it (cut off, unless readOnly).
func (l *boltLog) read(readOnly bool) error {
	lp := logPath(l.path)
	data, err := io.ReadAll(l.f)
	if err != nil {
		return dbErr(l.path, "read log %s: %w", lp, err)
	}
	var slots []logHeader
	for _, off := range []int{0, logSlotSize} {
		if len(data) >= off+logHeaderLen {
			if h, ok := decodeLogHeader(data[off:]); ok {
				slots = append(slots, h)
			}
		}
	}
	if len(slots) == 0 {
		// Records are only ever written after a header is durable: a file
		// without one holds none (it was being created).
		return nil
	}
	l.hdr, l.has = slots[0], true
	if len(slots) == 2 && slots[1].gen > slots[0].gen {
		l.hdr = slots[1]
	}
	off := int64(logDataStart)
	var reason string
	for off < int64(len(data)) {
		rest := data[off:]
		if len(rest) < logFrameLen {
			reason = fmt.Sprintf("record at offset %d: its length is cut short (%d bytes)", off, len(rest))
			break
		}
		n := int64(binary.LittleEndian.Uint32(rest))
		if n > maxLogRecord || logFrameLen+n > int64(len(rest)) {
			reason = fmt.Sprintf("record at offset %d: torn (length %d, %d bytes left)", off, n, len(rest)-logFrameLen)
			break
		}
		payload := rest[logFrameLen : logFrameLen+n]
		if binary.LittleEndian.Uint32(rest[4:]) != l.recordCRC(payload) {
			reason = fmt.Sprintf("record at offset %d: checksum mismatch", off)
			break
		}
		l.pending = append(l.pending, payload)
		off += logFrameLen + n
	}
	l.end = off
	if cut := int64(len(data)) - off; cut > 0 {
		l.report.Cut, l.report.CutReason = cut, fmt.Sprintf("log %s: %s; %d bytes dropped", lp, reason, cut)
	}
	if readOnly {
		if len(l.pending) > 0 {
			return dbErr(l.path, "log %s has %d records to replay: open the database for writing once", lp, len(l.pending))
		}
		return nil
	}
	if l.report.Cut > 0 {
		if err := l.f.Truncate(off); err != nil {
			return dbErr(l.path, "cut log %s: %w", lp, err)
		}
		if err := fdatasync(l.f); err != nil {
			return dbErr(l.path, "sync log %s: %w", lp, err)
		}
	}
	return nil
}

// recordCRC is the checksum of a record of the current checkpoint.
func (l *boltLog) recordCRC(payload []byte) uint32 {
	var gen [8]byte
	binary.LittleEndian.PutUint64(gen[:], l.hdr.gen)
	return crc32.Update(crc32.Checksum(gen[:], crcTable), crcTable, payload)
}

// restore takes the database file back to the log's checkpoint when its
// newest meta is another, after checking that the log is the database's.
func (l *boltLog) restore(opts *BoltOptions) error {
	lp := logPath(l.path)
	flag := os.O_RDWR
	if opts.ReadOnly {
		flag = os.O_RDONLY
	}
	dbf, err := os.OpenFile(l.path, flag, 0)
	if err != nil {
		return dbErr(l.path, "open: %w", err)
	}
	metas, err := readMetas(dbf, int64(l.hdr.pageSize))
	if err != nil {
		dbf.Close()
		return dbErr(l.path, "read meta pages: %w", err)
	}
	if err := l.check(&metas, opts.LockTimeout); err != nil {
		dbf.Close()
		return err
	}
	if m := newest(&metas); m != nil && *m == l.hdr.meta {
		l.dbf = dbf
		return nil
	}
	if opts.ReadOnly {
		dbf.Close()
		return dbErr(l.path, "log %s: the database went past its checkpoint (transaction %d) and must be recovered: open it for writing once", lp, l.hdr.txid)
	}
	// No process may have the database open meanwhile (bbolt's lock is an
	// flock of the file too).
	if err := lockFile(dbf, true, opts.LockTimeout); err != nil {
		dbf.Close()
		if errors.Is(err, errWouldBlock) {
			return dbErr(l.path, "in use by another process: %w", ErrLocked)
		}
		return dbErr(l.path, "lock: %w", err)
	}
	defer unlockFile(dbf)
	// Both meta pages get the checkpoint's meta: neither may be left newer.
	for i := range 2 {
		if _, err := dbf.WriteAt(l.hdr.meta[:], int64(i)*int64(l.hdr.pageSize)+metaOffset); err != nil {
			dbf.Close()
			return dbErr(l.path, "restore meta page %d from log %s: %w", i, lp, err)
		}
		if err := fdatasync(dbf); err != nil {
			dbf.Close()
			return dbErr(l.path, "sync: %w", err)
		}
	}
	l.dbf = dbf
	l.report.Restored = true
	return nil
}

// check refuses a log that is not the database's: a database older than
// its checkpoint, of another page size, whose meta of the checkpoint's
// transaction differs, or whose log id (when the database can be read) is
// another.
func (l *boltLog) check(metas *[2]bboltMeta, timeout time.Duration) error {
	lp := logPath(l.path)
	m := newest(metas)
	switch {
	case m == nil:
		return corruptDB(l.path, fmt.Errorf("no valid meta page"))
	case m.pageSize() != l.hdr.pageSize:
		return dbErr(l.path, "log %s is of another database (page size %d, the database's %d): %w", lp, l.hdr.pageSize, m.pageSize(), ErrNotOurs)
	case m.txid() < l.hdr.txid:
		return dbErr(l.path, "log %s is of another database or a newer copy (its checkpoint is transaction %d, the database is at %d): %w", lp, l.hdr.txid, m.txid(), ErrNotOurs)
	}
	for i := range metas {
		if metas[i].valid() && metas[i].txid() == l.hdr.txid && metas[i] != l.hdr.meta {
			return dbErr(l.path, "log %s is of another database (transaction %d differs): %w", lp, l.hdr.txid, ErrNotOurs)
		}
	}
	// The database as it is may not be readable (a crash left its newest
	// meta naming pages that were never written); then the id is checked
	// after the restore.
	id, err := readLogID(l.path, timeout)
	if errors.Is(err, bberrors.ErrTimeout) {
		return dbErr(l.path, "in use by another process: %w", ErrLocked)
	}
	if err == nil && id != l.hdr.id {
		return dbErr(l.path, "log %s is of another database (log id %x, the database's %x): %w", lp, l.hdr.id, id, ErrNotOurs)
	}
	return nil
}

// readLogID reads the log id of the database at path, read-only.
func readLogID(path string, timeout time.Duration) (id [16]byte, err error) {
	err = guard(path, func() error {
		db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true, Timeout: timeout})
		if err != nil {
			return err
		}
		defer db.Close()
		return db.View(func(t *bbolt.Tx) error {
			meta := t.Bucket(bucketMeta)
			if meta == nil {
				return errors.New("no meta bucket")
			}
			copy(id[:], meta.Get(logIDKey))
			return nil
		})
	})
	return id, err
}

// start replays the records read at open into db, then either starts the
// log (a checkpoint) or, when the store is opened without it, empties and
// removes it.
func (l *boltLog) start(db *bbolt.DB, mapLimit int64) error {
	lp := logPath(l.path)
	if l.has {
		var id [16]byte
		err := guard(l.path, func() error {
			return db.View(func(t *bbolt.Tx) error {
				copy(id[:], t.Bucket(bucketMeta).Get(logIDKey))
				return nil
			})
		})
		if err != nil {
			return err
		}
		if id != l.hdr.id {
			return dbErr(l.path, "log %s is of another database (log id %x, the database's %x): %w", lp, l.hdr.id, id, ErrNotOurs)
		}
	}
	if len(l.pending) > 0 {
		err := guard(l.path, func() error {
			return db.Update(func(t *bbolt.Tx) error {
				for i, rec := range l.pending {
					if err := replayRecord(t, rec); err != nil {
						return fmt.Errorf("log %s: record %d: %w", lp, i+1, err)
					}
				}
				return nil
			})
		})
		if err != nil {
			return dbError(l.path, err)
		}
		l.report.Replayed = len(l.pending)
		l.pending = nil
	}
	if l.off {
		return l.remove()
	}
	if l.dbf == nil {
		dbf, err := os.Open(l.path)
		if err != nil {
			return dbErr(l.path, "open: %w", err)
		}
		l.dbf = dbf
	}
	if !l.has {
		// A new log: the database gets its id, in a synced transaction.
		if _, err := rand.Read(l.hdr.id[:]); err != nil {
			return err
		}
		err := guard(l.path, func() error {
			return db.Update(func(t *bbolt.Tx) error {
				meta := t.Bucket(bucketMeta)
				if v := meta.Get(logIDKey); len(v) == len(l.hdr.id) {
					copy(l.hdr.id[:], v)
					return nil
				}
				return meta.Put(logIDKey, l.hdr.id[:])
			})
		})
		if err != nil {
			return dbError(l.path, err)
		}
	}
	l.mapLimit = mapLimit
	return l.checkpoint(db)
}

// replayRecord applies a record's write set in t.
func replayRecord(t *bbolt.Tx, rec []byte) error {
	bad := errors.New("malformed record")
	next := func() ([]byte, bool) {
		n, k := binary.Uvarint(rec)
		if k <= 0 || uint64(len(rec)-k) < n {
			return nil, false
		}
		v := rec[k : k+int(n)]
		rec = rec[k+int(n):]
		return v, true
	}
	for len(rec) > 0 {
		op := rec[0]
		rec = rec[1:]
		name, ok := next()
		if !ok {
			return bad
		}
		bkt := t.Bucket(name)
		if bkt == nil {
			return fmt.Errorf("bucket %s is missing", name)
		}
		switch op {
		case logPut, logDelete:
			k, ok := next()
			if !ok {
				return bad
			}
			if op == logDelete {
				if err := bkt.Delete(k); err != nil {
					return err
				}
				continue
			}
			v, ok := next()
			if !ok {
				return bad
			}
			if err := bkt.Put(bytes.Clone(k), bytes.Clone(v)); err != nil {
				return err
			}
		case logSeq:
			if len(rec) < 8 {
				return bad
			}
			if err := bkt.SetSequence(binary.LittleEndian.Uint64(rec)); err != nil {
				return err
			}
			rec = rec[8:]
		default:
			return fmt.Errorf("unknown operation %d", op)
		}
	}
	return nil
}

// remove empties the log (durably) and removes it: the database is
// written without it from now on.
func (l *boltLog) remove() error {
	lp := logPath(l.path)
	if err := l.f.Truncate(0); err != nil {
		return dbErr(l.path, "empty log %s: %w", lp, err)
	}
	if err := fdatasync(l.f); err != nil {
		return dbErr(l.path, "sync log %s: %w", lp, err)
	}
	os.Remove(lp) // an empty log is no log: a file left behind is harmless
	l.close()
	return nil
}

// close releases the log's files (and its lock).
func (l *boltLog) close() {
	if l.dbf != nil {
		l.dbf.Close()
		l.dbf = nil
	}
	if l.f != nil {
		l.f.Close()
		l.f = nil
	}
}

// checkpoint syncs the database and starts the log afresh after its state,
// which a new pin keeps whole until the next checkpoint. Nothing is done
// when nothing was written since the last one.
func (l *boltLog) checkpoint(db *bbolt.DB) error { return l.checkpointSynced(db, false) }

// checkpointSynced is checkpoint; synced says that the database file was
// just synced whole (a synced bbolt transaction: bbolt's fdatasync covers
// what earlier NoSync transactions wrote too), which saves the sync.
func (l *boltLog) checkpointSynced(db *bbolt.DB, synced bool) error {
	if l.err != nil {
		return l.err
	}
	if l.pin != nil && l.n == 0 && uint64(l.pin.ID()) == l.hdr.txid {
		var cur uint64
		if err := db.View(func(t *bbolt.Tx) error { cur = uint64(t.ID()); return nil }); err == nil && cur == l.hdr.txid {
			return nil
		}
	}
	if err := l.checkpointOnce(db, synced); err != nil {
		l.err = err
		return err
	}
	return nil
}

func (l *boltLog) checkpointOnce(db *bbolt.DB, synced bool) error {
	lp := logPath(l.path)
	if !synced {
		if err := db.Sync(); err != nil {
			return dbErr(l.path, "sync: %w", err)
		}
		l.syncs.Add(1)
	}
	pin, err := db.Begin(false)
	if err != nil {
		return dbErr(l.path, "checkpoint: %w", err)
	}
	pageSize := db.Info().PageSize
	metas, err := readMetas(l.dbf, int64(pageSize))
	if err != nil {
		pin.Rollback()
		return dbErr(l.path, "checkpoint: read meta pages: %w", err)
	}
	m := newest(&metas)
	if m == nil || m.txid() != uint64(pin.ID()) {
		pin.Rollback()
		return corruptDB(l.path, fmt.Errorf("checkpoint: no valid meta page of transaction %d", pin.ID()))
	}
	h := logHeader{gen: l.hdr.gen + 1, id: l.hdr.id, txid: m.txid(), pageSize: uint32(pageSize), meta: *m}
	if _, err := l.f.WriteAt(h.encode(), int64(h.gen%2)*logSlotSize); err != nil {
		pin.Rollback()
		return dbErr(l.path, "write log %s: %w", lp, err)
	}
	if err := fdatasync(l.f); err != nil {
		pin.Rollback()
		return dbErr(l.path, "sync log %s: %w", lp, err)
	}
	l.syncs.Add(1)
	// The old records fail their checksums under the new header's
	// number: the truncation needs no sync of its own.
	if err := l.f.Truncate(logDataStart); err != nil {
		pin.Rollback()
		return dbErr(l.path, "truncate log %s: %w", lp, err)
	}
	if l.pin != nil {
		l.pin.Rollback()
	}
	l.pin, l.hdr, l.has, l.end, l.n = pin, h, true, logDataStart, 0
	if l.checkpointed != nil {
		l.checkpointed()
	}
	return nil
}

// due says whether the log has grown enough for a checkpoint.
func (l *boltLog) due() bool { return l.n >= l.maxRecords || l.end-logDataStart >= l.maxBytes }

// usable says whether a transaction of the database, now size bytes, may
// be written through the log.
func (l *boltLog) usable(size int64) bool {
	return !l.off && l.err == nil && size < l.mapLimit
}

// switchOff stops using the log for the rest of the session: the
// database is synced and the log emptied (nothing in it is needed), and
// the pin released, so that bbolt may map the file anew.
func (l *boltLog) switchOff(db *bbolt.DB) error {
	if l.off {
		return nil
	}
	if err := db.Sync(); err != nil {
		return dbErr(l.path, "sync: %w", err)
	}
	if err := l.f.Truncate(0); err != nil {
		return dbErr(l.path, "empty log: %w", err)
	}
	if err := fdatasync(l.f); err != nil {
		return dbErr(l.path, "sync log: %w", err)
	}
	if l.pin != nil {
		l.pin.Rollback()
		l.pin = nil
	}
	l.off, l.has = true, false
	return nil
}

// append writes a record and syncs it.
func (l *boltLog) append(payload []byte) error {
	if l.err != nil {
		return l.err
	}
	n := logFrameLen + len(payload)
	l.buf = binary.LittleEndian.AppendUint32(l.buf[:0], uint32(len(payload)))
	l.buf = binary.LittleEndian.AppendUint32(l.buf, l.recordCRC(payload))
	l.buf = append(l.buf, payload...)
	if _, err := l.f.WriteAt(l.buf, l.end); err != nil {
		return l.undo(dbErr(l.path, "write log: %w", err))
	}
	if err := fdatasync(l.f); err != nil {
		// The page cache may no longer hold what was written (a failed
		// fsync): nothing more is written.
		l.err = dbErr(l.path, "sync log: %w", err)
		return l.err
	}
	l.syncs.Add(1)
	l.end += int64(n)
	l.n++
	return nil
}

// undo drops what append may have written past the log's end, and
// returns err.
func (l *boltLog) undo(err error) error {
	if terr := l.f.Truncate(l.end); terr != nil {
		l.err = err
	}
	return err
}

// unappend drops the last record (its transaction did not commit).
func (l *boltLog) unappend(size int) {
	l.end -= int64(size)
	l.n--
	if err := l.f.Truncate(l.end); err != nil {
		l.err = dbErr(l.path, "drop log record: %w", err)
		return
	}
	if err := fdatasync(l.f); err != nil {
		l.err = dbErr(l.path, "sync log: %w", err)
	}
}

// shut ends the log at Close: a checkpoint (unless writing failed), then
// the pin and the files are released.
func (l *boltLog) shut(db *bbolt.DB) error {
	var err error
	if !l.off && l.err == nil {
		err = l.checkpoint(db)
	}
	if l.pin != nil {
		l.pin.Rollback()
		l.pin = nil
	}
	l.close()
	return err
}

// writeSet records a transaction's changes as a log record's payload.
type writeSet struct {
	buf []byte
	bad bool // a write to a bucket put and del do not know
}

func (w *writeSet) op(op byte, bucket, key []byte) {
	w.buf = append(w.buf, op)
	w.buf = binary.AppendUvarint(w.buf, uint64(len(bucket)))
	w.buf = append(w.buf, bucket...)
	if op != logSeq {
		w.buf = binary.AppendUvarint(w.buf, uint64(len(key)))
		w.buf = append(w.buf, key...)
	}
}

// put writes k = v in bkt, recording it in the transaction's write set.
func (x *tx) put(bkt *bbolt.Bucket, k, v []byte) error {
	if err := bkt.Put(k, v); err != nil {
		return err
	}
	if x.ws != nil {
		x.ws.op(logPut, x.nameOf(bkt), k)
		x.ws.buf = binary.AppendUvarint(x.ws.buf, uint64(len(v)))
		x.ws.buf = append(x.ws.buf, v...)
	}
	return nil
}

// del deletes k from bkt, recording it in the transaction's write set.
func (x *tx) del(bkt *bbolt.Bucket, k []byte) error {
	if err := bkt.Delete(k); err != nil {
		return err
	}
	if x.ws != nil {
		x.ws.op(logDelete, x.nameOf(bkt), k)
	}
	return nil
}

// nextSequence is bkt.NextSequence, recorded in the transaction's write
// set.
func (x *tx) nextSequence(bkt *bbolt.Bucket) (uint64, error) {
	n, err := bkt.NextSequence()
	if err != nil {
		return 0, err
	}
	if x.ws != nil {
		x.ws.op(logSeq, x.nameOf(bkt), nil)
		x.ws.buf = binary.LittleEndian.AppendUint64(x.ws.buf, n)
	}
	return n, nil
}

// deletePrefix deletes every key of bkt that starts with prefix,
// recording it.
func (x *tx) deletePrefix(bkt *bbolt.Bucket, prefix []byte) error {
	var keys [][]byte
	err := scanPrefix(bkt, prefix, func(k, _ []byte) error {
		keys = append(keys, bytes.Clone(k))
		return nil
	})
	if err != nil {
		return err
	}
	for _, k := range keys {
		if err := x.del(bkt, k); err != nil {
			return err
		}
	}
	return nil
}

// nameOf is the name of one of the transaction's buckets.
func (x *tx) nameOf(bkt *bbolt.Bucket) []byte {
	for _, b := range []struct {
		b    *bbolt.Bucket
		name []byte
	}{
		{x.executions, bucketExecutions}, {x.heads, bucketHeads}, {x.status, bucketStatus},
		{x.started, bucketStarted}, {x.scopes, bucketScopes}, {x.events, bucketEvents},
		{x.timers, bucketTimers}, {x.checkpoints, bucketCheckpoints}, {x.expiry, bucketExpiry},
		{x.definitions, bucketDefinitions}, {x.blobs, bucketBlobs}, {x.blobRefs, bucketBlobRefs},
		{x.orphans, bucketOrphans}, {x.memory, bucketMemory}, {x.memExpiry, bucketMemExpiry},
		{x.namespaces, bucketNamespaces}, {x.machines, bucketMachines}, {x.workflows, bucketWorkflows},
	} {
		if b.b == bkt {
			return b.name
		}
	}
	// Only the buckets above are written through put and del; another
	// one would be a programming error, and the record fails to replay.
	x.ws.bad = true
	return []byte("?")
}

// errUnlogged ends a transaction whose write set is incomplete: the loop
// writes it again without the log.
var errUnlogged = errors.New("a write the log does not record")

// logTx prepares the commit loop's next transaction: the write set to
// record it in, nil when it is not written through the log (no log, a
// request that is not logged, forceSync, or a database grown past the
// log's limit, which switches the log off).
func (b *Bolt) logTx(live []*writeReq, forceSync bool) *writeSet {
	if b.log == nil {
		return nil
	}
	if !b.log.off && b.log.size >= b.log.mapLimit {
		if err := b.log.switchOff(b.db); err != nil {
			b.log.err = err
		}
	}
	use := !forceSync && b.log.usable(b.log.size)
	for _, r := range live {
		use = use && r.logged
	}
	b.db.NoSync = use
	if !use {
		return nil
	}
	b.logWS.buf, b.logWS.bad = b.logWS.buf[:0], false
	return &b.logWS
}

// logCommitted follows a transaction that committed: one written through
// the log checkpoints when the log is due (its requests are durable
// whatever the checkpoint does); a synced one checkpoints at once, as the
// log does not hold it, and fails when that fails (recovery would take
// the database back past it).
func (b *Bolt) logCommitted(viaLog bool) error {
	if b.log.off {
		return nil
	}
	if viaLog {
		if b.log.due() {
			b.log.checkpoint(b.db) // on failure b.log.err fails what follows
		}
		return nil
	}
	return b.log.checkpointSynced(b.db, true)
}
