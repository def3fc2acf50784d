package store

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"runtime"
	"sync"

	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/klauspost/compress/zstd"
)

// Codec names how the payload of a snapshot record is compressed.
type Codec string

// The codecs. The zero Codec ("") means CodecZstd wherever a codec is
// chosen, so a configuration that leaves it empty gets the default.
const (
	// CodecZstd is Zstandard (github.com/klauspost/compress/zstd) at its
	// default level: the default codec.
	CodecZstd Codec = "zstd"
	// CodecGzip is gzip (compress/gzip) at its default level.
	CodecGzip Codec = "gzip"
	// CodecNone stores the payload as it is.
	CodecNone Codec = "none"
)

// ParseCodec returns the codec named s: "zstd", "gzip" or "none"; ""
// gives CodecZstd, the default. Anything else is an error.
func ParseCodec(s string) (Codec, error) {
	switch c := Codec(s); c {
	case "":
		return CodecZstd, nil
	case CodecZstd, CodecGzip, CodecNone:
		return c, nil
	}
	return "", fmt.Errorf("unknown snapshot codec %q (want zstd, gzip or none)", s)
}

// SnapshotVersion is the current format version of snapshot payloads: the
// version EncodeSnapshot writes and DecodeSnapshot migrates older records
// to. Raise it when the shape of what the store puts in a snapshot
// changes, and register the migration from the previous version.
const SnapshotVersion = 1

// MaxSnapshotSize is the largest payload (uncompressed JSON, in bytes) a
// snapshot record may hold. EncodeSnapshot refuses larger values and
// DecodeSnapshot refuses records that claim more, so a forged header cannot
// make it allocate more than this.
const MaxSnapshotSize = 1 << 30

// Errors of the snapshot codec and its migrations.
var (
	// ErrCorrupt reports snapshot data that is corrupt or truncated: a
	// wrong magic, a short record, a checksum mismatch, a payload that does
	// not decompress or is not JSON. Such data is never used.
	ErrCorrupt = errors.New("snapshot corrupt")
	// ErrUnsupported reports an intact snapshot record that this program
	// cannot read: a newer format version, or a codec or flags it does not
	// know (written by a newer aslrun).
	ErrUnsupported = errors.New("snapshot format not supported")
	// ErrNoMigration reports that no chain of registered migrations leads
	// from a record's format version to the one wanted.
	ErrNoMigration = errors.New("no migration")
)

// A snapshot record is a 64-byte header followed by the payload:
//
//	offset size  field
//	     0    8  magic "\x89aslsnap"
//	     8    2  format version of the payload (big-endian; 1 and up)
//	    10    1  codec: 1 none, 2 gzip, 3 zstd
//	    11    1  flags, 0 (no flag is defined yet)
//	    12    4  CRC-32C of the whole record, this field excepted
//	    16    8  length of the uncompressed payload
//	    24    8  length of the compressed payload (the bytes after the header)
//	    32   32  SHA-256 of the uncompressed payload
//	    64       compressed payload
//
// The uncompressed payload is jsonvalue.Marshal of the value. The CRC
// covers header and compressed payload, so any flipped bit is caught before
// decompression (the compressors' own framing, such as gzip's header, is
// not otherwise checked); the SHA-256 then proves the decompressed bytes
// are the ones written; the two lengths tell a truncated record from a
// damaged one and bound decompression. A change to this layout gets a new
// magic; the version only numbers the payload's shape.
const (
	headerSize = 64
	offVersion = 8
	offCodec   = 10
	offFlags   = 11
	offCRC     = 12
	offRawLen  = 16
	offDataLen = 24
	offSum     = 32
)

const magic = "\x89aslsnap"

// Codec ids as written in the header.
const (
	codecIDNone = 1
	codecIDGzip = 2
	codecIDZstd = 3
)

// Codecs encodes and decodes snapshot records, keeping the compressors it
// creates so that later calls reuse them: a Zstandard encoder and decoder
// (created on first use, then shared: their EncodeAll and DecodeAll are
// safe for concurrent use) and pools of gzip writers and readers.
//
// A store creates one Codecs when it opens and uses it for every snapshot;
// EncodeSnapshot and DecodeSnapshot, which create a throwaway Codecs each
// time, are for one-off use (a new Zstandard encoder costs some 3 MB of
// allocation, several times the work of encoding 50 KiB). A Codecs runs at
// most four Zstandard encodes and four decodes at a time (fewer with
// GOMAXPROCS below 4); further calls wait. It holds no goroutine and needs
// no closing. The zero value is ready to use. A Codecs is safe for
// concurrent use and must not be copied after first use.
type Codecs struct {
	zstdEnc     zstdOnce[*zstd.Encoder]
	zstdDec     zstdOnce[*zstd.Decoder]
	gzipWriters sync.Pool // of *gzip.Writer
	gzipReaders sync.Pool // of *gzip.Reader
}

// zstdOnce holds a Zstandard encoder or decoder created on first use.
type zstdOnce[T any] struct {
	once sync.Once
	v    T
	err  error
}

func (z *zstdOnce[T]) get(create func() (T, error)) (T, error) {
	z.once.Do(func() { z.v, z.err = create() })
	return z.v, z.err
}

// maxZstdConcurrency is how many Zstandard encodes, and decodes, a Codecs
// runs at once; more wait for their turn.
const maxZstdConcurrency = 4

func newZstdEncoder() (*zstd.Encoder, error) {
	// The record's CRC and SHA-256 already cover the data, so zstd's own
	// checksum would be a third one. Each encoder in use holds about 3 MB,
	// and snapshots are rare next to commits: four at a time is plenty.
	return zstd.NewWriter(nil,
		zstd.WithEncoderLevel(zstd.SpeedDefault),
		zstd.WithEncoderCRC(false),
		zstd.WithEncoderConcurrency(min(runtime.GOMAXPROCS(0), maxZstdConcurrency)))
}

func newZstdDecoder() (*zstd.Decoder, error) {
	// WithDecodeAllCapLimit makes DecodeAll stop at the capacity of the
	// buffer it is given, which Decode sizes from the header.
	return zstd.NewReader(nil,
		zstd.WithDecodeAllCapLimit(true),
		zstd.WithDecoderMaxMemory(MaxSnapshotSize),
		zstd.WithDecoderConcurrency(min(runtime.GOMAXPROCS(0), maxZstdConcurrency)))
}

// EncodeSnapshot encodes v, a value of jsonpath's model, as a snapshot
// record of the current format version compressed with codec ("" means
// CodecZstd). It is Codecs.Encode on a throwaway Codecs.
func EncodeSnapshot(v any, codec Codec) ([]byte, error) {
	var c Codecs
	return c.Encode(v, codec)
}

// DecodeSnapshot decodes a record written by EncodeSnapshot, migrating an
// older format version with m (nil: no migrations). It is Codecs.Decode on
// a throwaway Codecs.
func DecodeSnapshot(data []byte, m *Migrations) (any, error) {
	var c Codecs
	return c.Decode(data, m)
}

// Encode encodes v, a value of jsonpath's model, as a snapshot record of
// format version SnapshotVersion whose payload, jsonvalue.Marshal(v), is
// compressed with codec ("" means CodecZstd). The same value and codec
// always give the same bytes. It fails on an unknown codec, on a value
// Marshal rejects, and on a payload larger than MaxSnapshotSize.
func (c *Codecs) Encode(v any, codec Codec) ([]byte, error) {
	return c.encode(v, codec, SnapshotVersion)
}

func (c *Codecs) encode(v any, codec Codec, version int) ([]byte, error) {
	codec, err := ParseCodec(string(codec))
	if err != nil {
		return nil, err
	}
	// Marshal's own way, sizing first, but refusing a value too large
	// before writing any of it, and writing CodecNone's payload in place.
	n, ok := jsonvalue.SizeWithin(v, MaxSnapshotSize)
	if !ok {
		return nil, fmt.Errorf("encoding snapshot: payload exceeds the %d-byte limit", MaxSnapshotSize)
	}
	var rec, payload []byte
	var id byte
	if codec == CodecNone {
		id = codecIDNone
		if rec, err = jsonvalue.AppendJSON(make([]byte, headerSize, headerSize+n), v); err != nil {
			return nil, fmt.Errorf("encoding snapshot: %w", err)
		}
		payload = rec[headerSize:]
	} else if payload, err = jsonvalue.AppendJSON(make([]byte, 0, n), v); err != nil {
		return nil, fmt.Errorf("encoding snapshot: %w", err)
	}
	switch codec {
	case CodecGzip:
		id = codecIDGzip
		if rec, err = c.gzip(payload); err != nil {
			return nil, fmt.Errorf("encoding snapshot: gzip: %w", err)
		}
	case CodecZstd:
		id = codecIDZstd
		enc, err := c.zstdEnc.get(newZstdEncoder)
		if err != nil {
			return nil, fmt.Errorf("encoding snapshot: zstd: %w", err)
		}
		rec = enc.EncodeAll(payload, make([]byte, headerSize, headerSize+len(payload)/2+64))
	}
	sum := sha256.Sum256(payload)
	h := rec[:headerSize]
	copy(h, magic)
	binary.BigEndian.PutUint16(h[offVersion:], uint16(version))
	h[offCodec] = id
	h[offFlags] = 0
	binary.BigEndian.PutUint64(h[offRawLen:], uint64(len(payload)))
	binary.BigEndian.PutUint64(h[offDataLen:], uint64(len(rec)-headerSize))
	copy(h[offSum:], sum[:])
	binary.BigEndian.PutUint32(h[offCRC:], recordCRC(rec))
	return rec, nil
}

// gzip returns a record buffer: room for the header, then payload
// compressed with gzip.
func (c *Codecs) gzip(payload []byte) ([]byte, error) {
	buf := bytes.NewBuffer(make([]byte, headerSize, headerSize+len(payload)/2+64))
	w, _ := c.gzipWriters.Get().(*gzip.Writer)
	if w == nil {
		w = gzip.NewWriter(buf)
	} else {
		w.Reset(buf)
	}
	defer c.gzipWriters.Put(w)
	if _, err := w.Write(payload); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// recordCRC is the CRC-32C of rec without its CRC field.
func recordCRC(rec []byte) uint32 {
	table := crc32.MakeTable(crc32.Castagnoli) // made once, by package crc32
	crc := crc32.Update(0, table, rec[:offCRC])
	return crc32.Update(crc, table, rec[offCRC+4:])
}

// Decode decodes a snapshot record: it checks the magic, the lengths and
// the record's CRC, decompresses the payload into a buffer of the length
// the header gives (never more), verifies its length and SHA-256, decodes
// it with jsonvalue.Decode, and migrates a value of an older format version
// to SnapshotVersion with m (nil: no migrations).
//
// Damaged data gives an error wrapping ErrCorrupt that says what is wrong
// ("snapshot checksum mismatch: …", "snapshot truncated: …"); an intact
// record of a newer version, or with a codec or flags this program does
// not know, an error wrapping ErrUnsupported; an older version with no
// path of migrations, an error wrapping ErrNoMigration; a failing
// migration, a *MigrationError. Decode never returns a value with an
// error.
func (c *Codecs) Decode(data []byte, m *Migrations) (any, error) {
	return c.decode(data, m, SnapshotVersion)
}

// decode is Decode with current standing for SnapshotVersion, so that
// tests can try migrations.
func (c *Codecs) decode(data []byte, m *Migrations, current int) (any, error) {
	h, err := parseHeader(data, current)
	if err != nil {
		return nil, err
	}
	payload, err := c.inflate(h, data[headerSize:])
	if err != nil {
		return nil, err
	}
	if sum := sha256.Sum256(payload); sum != h.sum {
		return nil, corrupt(faultSum, nil, "snapshot checksum mismatch: payload sha-256 %x, header says %x", sum, h.sum)
	}
	v, err := jsonvalue.Decode(payload)
	if err != nil {
		return nil, corrupt(faultJSON, err, "snapshot payload is not valid JSON")
	}
	if h.version == current {
		return v, nil
	}
	v, err = m.Apply(v, h.version, current)
	if err != nil {
		return nil, fmt.Errorf("migrating snapshot from format version %d: %w", h.version, err)
	}
	return v, nil
}

// header is a parsed and checked record header.
type header struct {
	version int
	codec   byte
	rawLen  int
	sum     [sha256.Size]byte
}

// parseHeader checks everything that can be checked before decompressing.
func parseHeader(data []byte, current int) (header, error) {
	var h header
	if n := min(len(data), len(magic)); string(data[:n]) != magic[:n] {
		return h, corrupt(faultMagic, nil, "not an aslrun snapshot (it starts with %q)", data[:n])
	}
	if len(data) < headerSize {
		return h, corrupt(faultTruncated, nil, "snapshot truncated: %d bytes, shorter than its %d-byte header", len(data), headerSize)
	}
	rawLen := binary.BigEndian.Uint64(data[offRawLen:])
	dataLen := binary.BigEndian.Uint64(data[offDataLen:])
	if have := uint64(len(data) - headerSize); have < dataLen {
		return h, corrupt(faultTruncated, nil, "snapshot truncated: payload has %d of its %d bytes", have, dataLen)
	} else if have > dataLen {
		return h, corrupt(faultTrailing, nil, "snapshot has %d bytes after its %d-byte payload", have-dataLen, dataLen)
	}
	if crc, want := recordCRC(data), binary.BigEndian.Uint32(data[offCRC:]); crc != want {
		return h, corrupt(faultCRC, nil, "snapshot checksum mismatch: record crc-32c %08x, header says %08x", crc, want)
	}
	// The record is as it was written; what remains is whether this
	// program can read it.
	if f := data[offFlags]; f != 0 {
		return h, unsupported(faultFlags, "snapshot flags %#02x not supported", f)
	}
	h.codec = data[offCodec]
	if h.codec < codecIDNone || h.codec > codecIDZstd {
		return h, unsupported(faultCodec, "snapshot codec %d not supported", h.codec)
	}
	h.version = int(binary.BigEndian.Uint16(data[offVersion:]))
	switch {
	case h.version == 0:
		return h, corrupt(faultVersion, nil, "snapshot format version 0 is invalid")
	case h.version > current:
		return h, unsupported(faultVersion, "snapshot format version %d is newer than this program's %d", h.version, current)
	}
	if rawLen == 0 || rawLen > MaxSnapshotSize {
		return h, corrupt(faultLength, nil, "snapshot payload length %d is out of range (1 to %d)", rawLen, MaxSnapshotSize)
	}
	if h.codec == codecIDNone && rawLen != dataLen {
		return h, corrupt(faultLength, nil, "snapshot payload length %d, header says %d", dataLen, rawLen)
	}
	h.rawLen = int(rawLen)
	copy(h.sum[:], data[offSum:])
	return h, nil
}

// inflate decompresses src into a buffer of h.rawLen bytes, failing if it
// holds more or fewer.
func (c *Codecs) inflate(h header, src []byte) ([]byte, error) {
	var out []byte
	switch h.codec {
	case codecIDNone:
		return src, nil
	case codecIDGzip:
		var err error
		if out, err = c.gunzip(src, h.rawLen); err != nil {
			return nil, err
		}
	case codecIDZstd:
		dec, err := c.zstdDec.get(newZstdDecoder)
		if err != nil {
			return nil, fmt.Errorf("decoding snapshot: zstd: %w", err)
		}
		out, err = dec.DecodeAll(src, make([]byte, 0, h.rawLen))
		if errors.Is(err, zstd.ErrDecoderSizeExceeded) {
			return nil, corrupt(faultInflate, nil, "snapshot payload inflates beyond its declared %d bytes", h.rawLen)
		}
		if err != nil {
			return nil, corrupt(faultDecompress, err, "snapshot payload does not decompress (zstd)")
		}
	}
	if len(out) != h.rawLen {
		return nil, corrupt(faultLength, nil, "snapshot payload inflates to %d bytes, header says %d", len(out), h.rawLen)
	}
	return out, nil
}

// gunzip decompresses one gzip stream that must be all of src, reading at
// most limit bytes of output and one more to tell that there are more.
func (c *Codecs) gunzip(src []byte, limit int) ([]byte, error) {
	in := bytes.NewReader(src)
	r, _ := c.gzipReaders.Get().(*gzip.Reader)
	var err error
	if r == nil {
		r, err = gzip.NewReader(in)
	} else {
		err = r.Reset(in)
	}
	if err != nil {
		return nil, corrupt(faultDecompress, err, "snapshot payload does not decompress (gzip)")
	}
	defer c.gzipReaders.Put(r)
	r.Multistream(false)
	out := make([]byte, limit)
	n, err := io.ReadFull(r, out)
	switch {
	case err == io.EOF || err == io.ErrUnexpectedEOF:
		return out[:n], nil // short: the caller reports the length
	case err != nil:
		return nil, corrupt(faultDecompress, err, "snapshot payload does not decompress (gzip)")
	}
	// The stream must end here, with its trailer checked, and so must src.
	var one [1]byte
	if k, err := r.Read(one[:]); k > 0 {
		return nil, corrupt(faultInflate, nil, "snapshot payload inflates beyond its declared %d bytes", limit)
	} else if err != io.EOF {
		return nil, corrupt(faultDecompress, err, "snapshot payload does not decompress (gzip)")
	}
	if in.Len() > 0 {
		return nil, corrupt(faultDecompress, nil, "snapshot payload has %d bytes after its gzip stream", in.Len())
	}
	return out, nil
}

// fault says what is wrong with a record; tests check it.
type fault int

const (
	faultMagic fault = iota + 1
	faultTruncated
	faultTrailing
	faultCRC
	faultFlags
	faultCodec
	faultVersion
	faultLength
	faultDecompress
	faultInflate
	faultSum
	faultJSON
)

// formatError is an error of Decode about the record itself: kind is
// ErrCorrupt or ErrUnsupported, err the decompressor's or JSON decoder's
// error if any.
type formatError struct {
	kind  error
	fault fault
	msg   string
	err   error
}

func corrupt(f fault, err error, format string, args ...any) error {
	return &formatError{kind: ErrCorrupt, fault: f, msg: fmt.Sprintf(format, args...), err: err}
}

func unsupported(f fault, format string, args ...any) error {
	return &formatError{kind: ErrUnsupported, fault: f, msg: fmt.Sprintf(format, args...)}
}

func (e *formatError) Error() string {
	if e.err != nil {
		return e.msg + ": " + e.err.Error()
	}
	return e.msg
}

func (e *formatError) Unwrap() []error {
	if e.err != nil {
		return []error{e.kind, e.err}
	}
	return []error{e.kind}
}
