package postgres

import (
	"bytes"
	"fmt"
	"runtime"
	"sync"

	"github.com/klauspost/compress/zstd"

	"github.com/aslrun/aslrun/store"
)

// History records are stored compressed with Zstandard (migration 13):
// a record of the loop's turn, 2.2 KB, takes 1,290 bytes so, against
// 1,390 compressed by PostgreSQL with lz4 and 1,410 with pglz. A record
// stored before, as the store encodes it, starts with its format byte (1
// or 2), never with Zstandard's magic number: both read back.

// zstdMagic starts every Zstandard frame.
var zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}

// maxRecordSize bounds a history record decompressed: PostgreSQL's bytea
// holds at most 1 GB.
const maxRecordSize = 1 << 30

// recordCodecs runs at most this many Zstandard encodes, and decodes, at
// once; more wait for their turn (each encoder in use holds some MB).
const recordCodecs = 4

// recordCodec compresses and decompresses history records. The zero value
// is ready to use: its encoder and decoder are made on first use. It is
// safe for concurrent use and must not be copied after first use.
type recordCodec struct {
	encOnce sync.Once
	enc     *zstd.Encoder
	encErr  error
	decOnce sync.Once
	dec     *zstd.Decoder
	decErr  error
}

func (c *recordCodec) encoder() (*zstd.Encoder, error) {
	c.encOnce.Do(func() {
		// The record's hashes cover its bytes: no checksum of zstd's.
		c.enc, c.encErr = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderCRC(false),
			zstd.WithEncoderConcurrency(min(runtime.GOMAXPROCS(0), recordCodecs)))
	})
	return c.enc, c.encErr
}

func (c *recordCodec) decoder() (*zstd.Decoder, error) {
	c.decOnce.Do(func() {
		c.dec, c.decErr = zstd.NewReader(nil, zstd.WithDecoderMaxMemory(maxRecordSize),
			zstd.WithDecoderConcurrency(min(runtime.GOMAXPROCS(0), recordCodecs)))
	})
	return c.dec, c.decErr
}

// pack returns a history record of execution id as it is stored:
// compressed, or as it is when compressing does not make it smaller (a
// record of one small event); nil for nil.
func (c *recordCodec) pack(id string, rec []byte) ([]byte, error) {
	if rec == nil {
		return nil, nil
	}
	enc, err := c.encoder()
	if err != nil {
		return nil, fmt.Errorf("execution %s: compressing a history record: %w", id, err)
	}
	if packed := enc.EncodeAll(rec, make([]byte, 0, len(rec)/2)); len(packed) < len(rec) {
		return packed, nil
	}
	return rec, nil
}

// unpack returns a stored history record of execution id as the store
// encoded it: decompressed, or as it is when it was stored before
// migration 13.
func (c *recordCodec) unpack(id string, v []byte) ([]byte, error) {
	if !bytes.HasPrefix(v, zstdMagic) {
		return v, nil
	}
	dec, err := c.decoder()
	if err != nil {
		return nil, fmt.Errorf("execution %s: decompressing a history record: %w", id, err)
	}
	rec, err := dec.DecodeAll(v, nil)
	if err != nil {
		return nil, fmt.Errorf("execution %s: a history record does not decompress (%v): %w", id, err, store.ErrTampered)
	}
	return rec, nil
}

// unpackAll unpacks stored history records of execution id in place.
func (c *recordCodec) unpackAll(id string, vs [][]byte) error {
	for i, v := range vs {
		rec, err := c.unpack(id, v)
		if err != nil {
			return err
		}
		vs[i] = rec
	}
	return nil
}
