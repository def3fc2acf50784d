package store

// TEMPORARY: this file stands in for the snapshot codec (store/snapshot.go
// and store/migrate.go) that is written on another branch. It has the same
// names (Codecs included, which the stores use to keep their compressors);
// delete it when the codec is merged.

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"

	"github.com/aslrun/aslrun/jsonpath"
)

// Codec names a snapshot compression (stub: no compression at all).
type Codec string

// The snapshot codecs.
const (
	CodecZstd Codec = "zstd"
	CodecGzip Codec = "gzip"
	CodecNone Codec = "none"
)

// ErrCorrupt reports a snapshot record that is corrupt or truncated.
var ErrCorrupt = errors.New("corrupt snapshot")

// Migrations holds the snapshot format migrations (stub: none).
type Migrations struct{}

// stubMagic starts every stub record.
var stubMagic = []byte("ASLSTUB1")

// Codecs encodes and decodes snapshot records (stub: no state).
type Codecs struct{}

// Encode is EncodeSnapshot.
func (c *Codecs) Encode(v any, codec Codec) ([]byte, error) { return EncodeSnapshot(v, codec) }

// Decode is DecodeSnapshot.
func (c *Codecs) Decode(data []byte, m *Migrations) (any, error) { return DecodeSnapshot(data, m) }

// EncodeSnapshot writes v as a snapshot record (stub: magic, SHA-256 and
// the JSON text).
func EncodeSnapshot(v any, codec Codec) ([]byte, error) {
	payload, err := jsonpath.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode snapshot: %w", err)
	}
	sum := sha256.Sum256(payload)
	out := make([]byte, 0, len(stubMagic)+len(sum)+len(payload))
	out = append(out, stubMagic...)
	out = append(out, sum[:]...)
	return append(out, payload...), nil
}

// DecodeSnapshot reads a record written by EncodeSnapshot.
func DecodeSnapshot(data []byte, m *Migrations) (any, error) {
	n := len(stubMagic) + sha256.Size
	if len(data) < n || !bytes.Equal(data[:len(stubMagic)], stubMagic) {
		return nil, fmt.Errorf("snapshot truncated or not a snapshot: %w", ErrCorrupt)
	}
	payload := data[n:]
	if sum := sha256.Sum256(payload); !bytes.Equal(sum[:], data[len(stubMagic):n]) {
		return nil, fmt.Errorf("snapshot checksum mismatch: %w", ErrCorrupt)
	}
	v, err := jsonpath.Decode(payload)
	if err != nil {
		return nil, fmt.Errorf("snapshot payload: %v: %w", err, ErrCorrupt)
	}
	return v, nil
}
