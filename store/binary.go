package store

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"math"
	"time"
)

// The binary records (heads, events, history records' documents) are
// written with these helpers: integers as varints, strings and byte
// strings as their length (uvarint) and bytes, times as Unix seconds
// (varint) and nanoseconds (uvarint), which holds any time exactly.

func appendStr(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendBytes(b, s []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendTime(b []byte, t time.Time) []byte {
	b = binary.AppendVarint(b, t.Unix())
	return binary.AppendUvarint(b, uint64(t.Nanosecond()))
}

// errShort reports a binary record that ends within a field.
var errShort = errors.New("record is cut short")

// reader reads a binary record; the first error sticks, and every read
// after it returns zero values.
type reader struct {
	b   []byte
	err error
}

func (r *reader) fail(err error) {
	if r.err == nil {
		r.err = err
	}
	r.b = nil
}

func (r *reader) byte() byte {
	if len(r.b) < 1 {
		r.fail(errShort)
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *reader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail(errShort)
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) varint() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.fail(errShort)
		return 0
	}
	r.b = r.b[n:]
	return v
}

// bytes reads a length and that many bytes, a part of the record.
func (r *reader) bytes() []byte {
	n := r.uvarint()
	if n > uint64(len(r.b)) {
		r.fail(errShort)
		return nil
	}
	s := r.b[:n:n]
	r.b = r.b[n:]
	return s
}

func (r *reader) str() string { return string(r.bytes()) }

// fixed reads n bytes, a part of the record.
func (r *reader) fixed(n int) []byte {
	if len(r.b) < n {
		r.fail(errShort)
		return nil
	}
	s := r.b[:n:n]
	r.b = r.b[n:]
	return s
}

func (r *reader) time() time.Time {
	sec, nsec := r.varint(), r.uvarint()
	if nsec >= 1e9 {
		r.fail(errors.New("nanoseconds out of range"))
		return time.Time{}
	}
	return time.Unix(sec, int64(nsec)).UTC()
}

func (r *reader) float() float64 {
	b := r.fixed(8)
	if b == nil {
		return 0
	}
	return math.Float64frombits(binary.BigEndian.Uint64(b))
}

// A hash reference (an event's document hash, or its input's or output's)
// is a tag byte, then for refSum the SHA-256 itself (the hex hashes the
// store computes), for refString any other string as written.
const (
	refNone   = 0 // absent
	refSum    = 1 // 32 bytes
	refSame   = 2 // the event's document hash (an input or output that is the document)
	refString = 3 // a string
)

// appendRef appends a reference to the hex hash s; same is the hash refSame
// stands for ("" for the document hash itself).
func appendRef(b []byte, s, same string, present bool) []byte {
	switch {
	case !present:
		return append(b, refNone)
	case same != "" && s == same:
		return append(b, refSame)
	case len(s) == 64:
		var sum [32]byte
		if _, err := hex.Decode(sum[:], []byte(s)); err == nil && hex.EncodeToString(sum[:]) == s {
			return append(append(b, refSum), sum[:]...)
		}
	}
	return appendStr(append(b, refString), s)
}

// ref reads a reference written by appendRef; ok is false when absent.
func (r *reader) ref(same string) (s string, ok bool) {
	switch tag := r.byte(); tag {
	case refNone:
		return "", false
	case refSum:
		return hex.EncodeToString(r.fixed(32)), true
	case refSame:
		return same, true
	case refString:
		return r.str(), true
	default:
		r.fail(errors.New("unknown hash reference"))
		return "", false
	}
}

func appendUvarint(b []byte, n uint64) []byte { return binary.AppendUvarint(b, n) }
