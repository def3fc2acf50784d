package store

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/klauspost/compress/zstd"
)

var allCodecs = []Codec{CodecZstd, CodecGzip, CodecNone}

func TestParseCodec(t *testing.T) {
	tests := []struct {
		in      string
		want    Codec
		wantErr bool
	}{
		{in: "zstd", want: CodecZstd},
		{in: "gzip", want: CodecGzip},
		{in: "none", want: CodecNone},
		{in: "", want: CodecZstd},
		{in: "ZSTD", wantErr: true},
		{in: "lz4", wantErr: true},
		{in: "zlib", wantErr: true},
		{in: " zstd", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseCodec(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParseCodec(%q) error = %v, want error %v", tt.in, err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("ParseCodec(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// nested returns depth arrays, one inside the other, around "x".
func nested(depth int) any {
	var v any = "x"
	for range depth {
		v = []any{v}
	}
	return v
}

// roundTripDocs are documents that must come back exactly as they went
// in: same types, same number text, same strings.
var roundTripDocs = []struct {
	name string
	doc  any
}{
	{"null", nil},
	{"true", true},
	{"string", "plain"},
	{"zero", json.Number("0")},
	{"empty object", map[string]any{}},
	{"empty array", []any{}},
	{"20-digit integers", map[string]any{
		"big":      json.Number("12345678901234567890"),
		"negative": json.Number("-98765432109876543210"),
		"beyond":   json.Number("123456789012345678901234567890"),
		"in array": []any{json.Number("18446744073709551617"), json.Number("9007199254740993")},
	}},
	{"decimals", map[string]any{
		"tenth":     json.Number("0.1"),
		"one point": json.Number("1.0"),
		"trailing":  json.Number("2.50"),
		"huge":      json.Number("1e400"),
		"tiny":      json.Number("-1E-400"),
		"long":      json.Number("123.4567890123456789"),
		"minus 0":   json.Number("-0.0"),
	}},
	{"strings", map[string]any{
		"nfc é":         "caf\u00e9",
		"decomposed":    "cafe\u0301", // kept as written, not normalized
		"han":           "\u6f22\u5b57",
		"emoji":         "\U0001F600 ok",
		"controls":      "tab\tnl\ncr\rnul\x00bell\x07",
		"quotes":        `"\/<>&`,
		"\u00e9t\u00e9": "key with accents",
		"":              "empty key",
	}},
	{"deepest nesting", nested(jsonvalue.MaxDepth)},
	{"agent document", agentDoc(8 << 10)},
}

func TestSnapshotRoundTrip(t *testing.T) {
	var c Codecs
	for _, codec := range allCodecs {
		for _, tt := range roundTripDocs {
			t.Run(string(codec)+"/"+tt.name, func(t *testing.T) {
				data, err := c.Encode(tt.doc, codec)
				if err != nil {
					t.Fatalf("Encode: %v", err)
				}
				got, err := c.Decode(data, nil)
				if err != nil {
					t.Fatalf("Decode: %v", err)
				}
				if !reflect.DeepEqual(got, tt.doc) {
					t.Errorf("Decode(Encode(v)) = %#v, want %#v", got, tt.doc)
				}
				// The functions agree with the methods.
				data2, err := EncodeSnapshot(tt.doc, codec)
				if err != nil {
					t.Fatalf("EncodeSnapshot: %v", err)
				}
				if !bytes.Equal(data2, data) {
					t.Errorf("EncodeSnapshot gave %d bytes unlike Codecs.Encode's %d", len(data2), len(data))
				}
				got, err = DecodeSnapshot(data, &Migrations{})
				if err != nil {
					t.Fatalf("DecodeSnapshot: %v", err)
				}
				if !reflect.DeepEqual(got, tt.doc) {
					t.Errorf("DecodeSnapshot(data) = %#v, want %#v", got, tt.doc)
				}
			})
		}
	}
}

func TestSnapshotGoNumbers(t *testing.T) {
	// Go numbers are written as jsonvalue.Marshal writes them and come back
	// as json.Number.
	in := map[string]any{"i": 42, "u": uint64(math.MaxUint64), "f": 0.1, "g": float32(1.5)}
	want := map[string]any{"i": json.Number("42"), "u": json.Number("18446744073709551615"), "f": json.Number("0.1"), "g": json.Number("1.5")}
	for _, codec := range allCodecs {
		t.Run(string(codec), func(t *testing.T) {
			data, err := EncodeSnapshot(in, codec)
			if err != nil {
				t.Fatalf("EncodeSnapshot: %v", err)
			}
			got, err := DecodeSnapshot(data, nil)
			if err != nil {
				t.Fatalf("DecodeSnapshot: %v", err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("DecodeSnapshot = %#v, want %#v", got, want)
			}
		})
	}
}

func TestSnapshotHeader(t *testing.T) {
	doc := agentDoc(4 << 10)
	raw, err := jsonvalue.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		codec Codec
		id    byte
	}{
		{CodecZstd, codecIDZstd},
		{"", codecIDZstd},
		{CodecGzip, codecIDGzip},
		{CodecNone, codecIDNone},
	}
	for _, tt := range tests {
		t.Run(string(tt.codec), func(t *testing.T) {
			data, err := EncodeSnapshot(doc, tt.codec)
			if err != nil {
				t.Fatal(err)
			}
			if got := string(data[:len(magic)]); got != magic {
				t.Errorf("magic = %q, want %q", got, magic)
			}
			if got := data[offCodec]; got != tt.id {
				t.Errorf("codec id = %d, want %d", got, tt.id)
			}
			if got := binary.BigEndian.Uint16(data[offVersion:]); got != SnapshotVersion {
				t.Errorf("version = %d, want %d", got, SnapshotVersion)
			}
			if got := binary.BigEndian.Uint64(data[offRawLen:]); got != uint64(len(raw)) {
				t.Errorf("uncompressed length = %d, want %d", got, len(raw))
			}
			if got := binary.BigEndian.Uint64(data[offDataLen:]); got != uint64(len(data)-headerSize) {
				t.Errorf("compressed length = %d, want %d", got, len(data)-headerSize)
			}
			if got, want := [32]byte(data[offSum:offSum+32]), sha256.Sum256(raw); got != want {
				t.Errorf("sha-256 = %x, want %x", got, want)
			}
			if tt.id != codecIDNone && len(data) >= headerSize+len(raw) {
				t.Errorf("record is %d bytes for %d bytes of JSON: not compressed", len(data), len(raw))
			}
		})
	}
}

func TestEncodeSnapshotDeterministic(t *testing.T) {
	doc := agentDoc(16 << 10)
	var shared Codecs
	for _, codec := range allCodecs {
		t.Run(string(codec), func(t *testing.T) {
			first, err := shared.Encode(doc, codec)
			if err != nil {
				t.Fatal(err)
			}
			for i := range 3 {
				again, err := shared.Encode(doc, codec)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(again, first) {
					t.Fatalf("encoding %d differs from the first", i+2)
				}
			}
			fresh, err := EncodeSnapshot(doc, codec)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(fresh, first) {
				t.Errorf("a fresh Codecs encodes differently from a used one")
			}
		})
	}
}

func TestEncodeSnapshotErrors(t *testing.T) {
	tests := []struct {
		name  string
		doc   any
		codec Codec
	}{
		{"unknown codec", map[string]any{}, "lz4"},
		{"go type", map[string]any{"c": make(chan int)}, CodecZstd},
		{"nan", []any{math.NaN()}, CodecGzip},
		{"infinity", math.Inf(1), CodecNone},
		{"bad number", json.Number("01"), CodecZstd},
		{"too deep", nested(jsonvalue.MaxDepth + 1), CodecZstd},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data, err := EncodeSnapshot(tt.doc, tt.codec)
			if err == nil {
				t.Fatalf("EncodeSnapshot = %d bytes, want an error", len(data))
			}
			if data != nil {
				t.Errorf("EncodeSnapshot = %d bytes with error %v, want none", len(data), err)
			}
			if errors.Is(err, ErrCorrupt) {
				t.Errorf("EncodeSnapshot error %v wraps ErrCorrupt", err)
			}
		})
	}
}

// smallDoc gives small records, so that every truncation and bit flip can
// be tried.
var smallDoc = map[string]any{"n": json.Number("12345678901234567890"), "s": "h\u00e9llo", "a": []any{true, nil}}

// faultOf returns the fault of a Decode error, 0 if it has none.
func faultOf(err error) fault {
	var fe *formatError
	if errors.As(err, &fe) {
		return fe.fault
	}
	return 0
}

// decodeFails decodes data and fails the test unless Decode gives no value
// and an error wrapping kind.
func decodeFails(t *testing.T, c *Codecs, data []byte, kind error) error {
	t.Helper()
	v, err := c.Decode(data, nil)
	if err == nil {
		t.Fatalf("Decode = %#v, want an error", v)
	}
	if v != nil {
		t.Errorf("Decode = %#v with error %v, want no value", v, err)
	}
	if !errors.Is(err, kind) {
		t.Errorf("Decode error %v does not wrap %v", err, kind)
	}
	return err
}

func TestDecodeSnapshotTruncated(t *testing.T) {
	var c Codecs
	for _, codec := range allCodecs {
		t.Run(string(codec), func(t *testing.T) {
			data, err := c.Encode(smallDoc, codec)
			if err != nil {
				t.Fatal(err)
			}
			for n := range len(data) {
				err := decodeFails(t, &c, data[:n:n], ErrCorrupt)
				if f := faultOf(err); f != faultTruncated {
					t.Errorf("Decode(first %d of %d bytes): fault %d (%v), want %d (truncated)", n, len(data), f, err, faultTruncated)
				}
			}
			err = decodeFails(t, &c, append(data[:len(data):len(data)], 0), ErrCorrupt)
			if f := faultOf(err); f != faultTrailing {
				t.Errorf("Decode(record and one byte): fault %d (%v), want %d (trailing)", f, err, faultTrailing)
			}
		})
	}
}

func TestDecodeSnapshotBitFlips(t *testing.T) {
	var c Codecs
	for _, codec := range allCodecs {
		t.Run(string(codec), func(t *testing.T) {
			data, err := c.Encode(smallDoc, codec)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s record: %d bytes", codec, len(data))
			bad := make([]byte, len(data))
			for i := range len(data) * 8 {
				copy(bad, data)
				bad[i/8] ^= 1 << (i % 8)
				err := decodeFails(t, &c, bad, ErrCorrupt)
				// A flip in the magic is a wrong magic, one in the
				// compressed length makes the record look truncated or
				// extended, any other is caught by the CRC.
				f := faultOf(err)
				switch at := i / 8; {
				case at < len(magic):
					if f != faultMagic {
						t.Errorf("bit %d: fault %d (%v), want %d (magic)", i, f, err, faultMagic)
					}
				case at >= offDataLen && at < offDataLen+8:
					if f != faultTruncated && f != faultTrailing {
						t.Errorf("bit %d: fault %d (%v), want %d or %d (length)", i, f, err, faultTruncated, faultTrailing)
					}
				default:
					if f != faultCRC {
						t.Errorf("bit %d: fault %d (%v), want %d (crc)", i, f, err, faultCRC)
					}
				}
			}
		})
	}
}

// record builds a record field by field, with a correct CRC.
func record(version uint16, codecID, flags byte, rawLen uint64, sum [32]byte, payload []byte) []byte {
	rec := make([]byte, headerSize, headerSize+len(payload))
	copy(rec, magic)
	binary.BigEndian.PutUint16(rec[offVersion:], version)
	rec[offCodec] = codecID
	rec[offFlags] = flags
	binary.BigEndian.PutUint64(rec[offRawLen:], rawLen)
	binary.BigEndian.PutUint64(rec[offDataLen:], uint64(len(payload)))
	copy(rec[offSum:], sum[:])
	rec = append(rec, payload...)
	return reseal(rec)
}

// reseal rewrites the CRC of rec after a change.
func reseal(rec []byte) []byte {
	binary.BigEndian.PutUint32(rec[offCRC:], recordCRC(rec))
	return rec
}

// modified returns a copy of a record with change applied and its CRC
// rewritten.
func modified(rec []byte, change func(rec []byte) []byte) []byte {
	return reseal(change(bytes.Clone(rec)))
}

func gzipped(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	// The fastest level: TestDecodeSnapshotBounded's 64 MiB of zeros take
	// a fifth of the default's time, and still make an 80 KB stream.
	w, err := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func zstded(t *testing.T, b []byte) []byte {
	t.Helper()
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	return enc.EncodeAll(b, nil)
}

func TestDecodeSnapshotFaults(t *testing.T) {
	var c Codecs
	enc := func(codec Codec) []byte {
		data, err := c.Encode(smallDoc, codec)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	zstdRec, gzipRec, noneRec := enc(CodecZstd), enc(CodecGzip), enc(CodecNone)
	raw := noneRec[headerSize:]
	rawSum := sha256.Sum256(raw)
	setRawLen := func(n uint64) func([]byte) []byte {
		return func(rec []byte) []byte { binary.BigEndian.PutUint64(rec[offRawLen:], n); return rec }
	}
	appendToPayload := func(extra []byte) func([]byte) []byte {
		return func(rec []byte) []byte {
			rec = append(rec, extra...)
			binary.BigEndian.PutUint64(rec[offDataLen:], uint64(len(rec)-headerSize))
			return rec
		}
	}
	notJSON := []byte(`{"a":1,"a":2}`)

	tests := []struct {
		name  string
		data  []byte
		kind  error
		fault fault
	}{
		{"nil", nil, ErrCorrupt, faultTruncated},
		{"plain JSON", []byte(`{"n":1}`), ErrCorrupt, faultMagic},
		{"gzip stream", gzipped(t, raw), ErrCorrupt, faultMagic},
		{"zstd frame", zstded(t, raw), ErrCorrupt, faultMagic},
		{"magic in lower case", modified(noneRec, func(r []byte) []byte { r[1] = 'A'; return r }), ErrCorrupt, faultMagic},
		{"crc zeroed", func() []byte { r := bytes.Clone(zstdRec); clear(r[offCRC : offCRC+4]); return r }(), ErrCorrupt, faultCRC},
		{"unknown codec", modified(zstdRec, func(r []byte) []byte { r[offCodec] = 9; return r }), ErrUnsupported, faultCodec},
		{"codec zero", modified(noneRec, func(r []byte) []byte { r[offCodec] = 0; return r }), ErrUnsupported, faultCodec},
		{"future version", modified(zstdRec, func(r []byte) []byte { binary.BigEndian.PutUint16(r[offVersion:], SnapshotVersion+1); return r }), ErrUnsupported, faultVersion},
		{"far future version", modified(gzipRec, func(r []byte) []byte { binary.BigEndian.PutUint16(r[offVersion:], math.MaxUint16); return r }), ErrUnsupported, faultVersion},
		{"version zero", modified(noneRec, func(r []byte) []byte { binary.BigEndian.PutUint16(r[offVersion:], 0); return r }), ErrCorrupt, faultVersion},
		{"flags", modified(zstdRec, func(r []byte) []byte { r[offFlags] = 1; return r }), ErrUnsupported, faultFlags},
		{"raw length zero", modified(zstdRec, setRawLen(0)), ErrCorrupt, faultLength},
		{"raw length over the limit", modified(zstdRec, setRawLen(MaxSnapshotSize+1)), ErrCorrupt, faultLength},
		{"raw length huge", modified(gzipRec, setRawLen(math.MaxUint64)), ErrCorrupt, faultLength},
		{"none: raw length short", modified(noneRec, setRawLen(uint64(len(raw)-1))), ErrCorrupt, faultLength},
		{"none: raw length long", modified(noneRec, setRawLen(uint64(len(raw)+1))), ErrCorrupt, faultLength},
		{"zstd: inflates beyond raw length", modified(zstdRec, setRawLen(uint64(len(raw)-1))), ErrCorrupt, faultInflate},
		{"zstd: inflates short of raw length", modified(zstdRec, setRawLen(uint64(len(raw)+1))), ErrCorrupt, faultLength},
		{"gzip: inflates beyond raw length", modified(gzipRec, setRawLen(uint64(len(raw)-1))), ErrCorrupt, faultInflate},
		{"gzip: inflates short of raw length", modified(gzipRec, setRawLen(uint64(len(raw)+1))), ErrCorrupt, faultLength},
		{"zstd: a second frame", modified(zstdRec, appendToPayload(zstded(t, []byte("more")))), ErrCorrupt, faultInflate},
		{"zstd: trailing garbage", modified(zstdRec, appendToPayload([]byte("garbage"))), ErrCorrupt, faultDecompress},
		{"gzip: a second stream", modified(gzipRec, appendToPayload(gzipped(t, []byte("more")))), ErrCorrupt, faultDecompress},
		{"gzip: trailing garbage", modified(gzipRec, appendToPayload([]byte("garbage"))), ErrCorrupt, faultDecompress},
		{"zstd: garbage payload", record(1, codecIDZstd, 0, uint64(len(raw)), rawSum, bytes.Repeat([]byte{0xA5}, 40)), ErrCorrupt, faultDecompress},
		{"gzip: garbage payload", record(1, codecIDGzip, 0, uint64(len(raw)), rawSum, bytes.Repeat([]byte{0xA5}, 40)), ErrCorrupt, faultDecompress},
		{"gzip: payload cut short", record(1, codecIDGzip, 0, uint64(len(raw)), rawSum, gzipped(t, raw)[:20]), ErrCorrupt, 0},
		{"gzip: wrong trailer", record(1, codecIDGzip, 0, uint64(len(raw)), rawSum, func() []byte {
			g := gzipped(t, raw)
			g[len(g)-8] ^= 1 // the CRC-32 of the uncompressed data
			return g
		}()), ErrCorrupt, faultDecompress},
		{"none: payload changed", modified(noneRec, func(r []byte) []byte { r[headerSize+2] ^= 0x20; return r }), ErrCorrupt, faultSum},
		{"zstd: checksum changed", modified(zstdRec, func(r []byte) []byte { r[offSum] ^= 1; return r }), ErrCorrupt, faultSum},
		{"gzip: checksum changed", modified(gzipRec, func(r []byte) []byte { r[offSum+31] ^= 0x80; return r }), ErrCorrupt, faultSum},
		{"zstd: other content", record(1, codecIDZstd, 0, 4, rawSum, zstded(t, []byte("null"))), ErrCorrupt, faultSum},
		{"none: not JSON", record(1, codecIDNone, 0, uint64(len(notJSON)), sha256.Sum256(notJSON), notJSON), ErrCorrupt, faultJSON},
		{"zstd: not JSON", record(1, codecIDZstd, 0, 3, sha256.Sum256([]byte("nul")), zstded(t, []byte("nul"))), ErrCorrupt, faultJSON},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := decodeFails(t, &c, tt.data, tt.kind)
			if f := faultOf(err); tt.fault != 0 && f != tt.fault {
				t.Errorf("Decode: fault %d (%v), want %d", f, err, tt.fault)
			}
			if errors.Is(err, ErrCorrupt) && errors.Is(err, ErrUnsupported) {
				t.Errorf("Decode error %v wraps both ErrCorrupt and ErrUnsupported", err)
			}
			t.Logf("%v", err)
		})
	}
}

// TestDecodeSnapshotBounded checks that a record whose payload inflates
// far beyond its declared length is refused without inflating it.
func TestDecodeSnapshotBounded(t *testing.T) {
	const bomb = 64 << 20
	zeros := make([]byte, bomb)
	doc := []byte(`"` + strings.Repeat("a", 100) + `"`)
	sum := sha256.Sum256(doc)
	tests := []struct {
		name string
		data []byte
	}{
		{"zstd", record(1, codecIDZstd, 0, uint64(len(doc)), sum, zstded(t, zeros))},
		{"gzip", record(1, codecIDGzip, 0, uint64(len(doc)), sum, gzipped(t, zeros))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c Codecs
			// Warm the codec up, so that its own buffers are not counted.
			if _, err := c.Decode(mustEncode(t, &c, smallDoc, Codec(tt.name)), nil); err != nil {
				t.Fatal(err)
			}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			err := decodeFails(t, &c, tt.data, ErrCorrupt)
			runtime.ReadMemStats(&after)
			if f := faultOf(err); f != faultInflate {
				t.Errorf("Decode: fault %d (%v), want %d (inflate)", f, err, faultInflate)
			}
			t.Logf("allocated %d bytes", after.TotalAlloc-before.TotalAlloc)
			if got := after.TotalAlloc - before.TotalAlloc; got > bomb/8 {
				t.Errorf("Decode of a %d-byte record allocated %d bytes for a payload declared as %d", len(tt.data), got, len(doc))
			}
		})
	}
}

func mustEncode(t testing.TB, c *Codecs, v any, codec Codec) []byte {
	t.Helper()
	data, err := c.Encode(v, codec)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestDecodeSnapshotMigrates decodes records of older format versions with
// a current version of 3.
func TestDecodeSnapshotMigrates(t *testing.T) {
	errBoom := errors.New("boom")
	step := func(tag string) func(any) (any, error) {
		return func(doc any) (any, error) {
			m := doc.(map[string]any)
			m["steps"] = append(m["steps"].([]any), tag)
			return m, nil
		}
	}
	var good Migrations
	for _, s := range []struct{ from, to int }{{1, 2}, {2, 3}, {1, 4}, {4, 3}} {
		if err := good.Register(s.from, s.to, step(fmt.Sprintf("%d>%d", s.from, s.to))); err != nil {
			t.Fatal(err)
		}
	}
	var failing Migrations
	if err := failing.Register(1, 2, step("1>2")); err != nil {
		t.Fatal(err)
	}
	if err := failing.Register(2, 3, func(any) (any, error) { return nil, errBoom }); err != nil {
		t.Fatal(err)
	}
	var deadEnd Migrations
	if err := deadEnd.Register(1, 2, step("1>2")); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name      string
		version   int
		m         *Migrations
		want      []any // the steps taken
		wantErr   error
		wantStep  *MigrationError
		wantReach []int
	}{
		{name: "current", version: 3, m: nil, want: []any{}},
		{name: "one behind", version: 2, m: &good, want: []any{"2>3"}},
		{name: "two behind", version: 1, m: &good, want: []any{"1>2", "2>3"}},
		{name: "no migrations", version: 1, m: nil, wantErr: ErrNoMigration, wantReach: nil},
		{name: "empty migrations", version: 2, m: &Migrations{}, wantErr: ErrNoMigration, wantReach: nil},
		{name: "dead end", version: 1, m: &deadEnd, wantErr: ErrNoMigration, wantReach: []int{2}},
		{name: "failing step", version: 1, m: &failing, wantErr: errBoom, wantStep: &MigrationError{From: 2, To: 3}},
	}
	for _, codec := range allCodecs {
		for _, tt := range tests {
			t.Run(string(codec)+"/"+tt.name, func(t *testing.T) {
				var c Codecs
				data, err := c.encode(map[string]any{"steps": []any{}}, codec, tt.version)
				if err != nil {
					t.Fatal(err)
				}
				got, err := c.decode(data, tt.m, 3)
				if tt.wantErr != nil {
					if !errors.Is(err, tt.wantErr) {
						t.Fatalf("decode = %v, %v; want an error wrapping %v", got, err, tt.wantErr)
					}
					if got != nil {
						t.Errorf("decode = %#v with an error, want no value", got)
					}
					if tt.wantStep != nil {
						var me *MigrationError
						if !errors.As(err, &me) || me.From != tt.wantStep.From || me.To != tt.wantStep.To {
							t.Errorf("decode error %v: MigrationError %+v, want step %d to %d", err, me, tt.wantStep.From, tt.wantStep.To)
						}
					}
					var np *noPathError
					if errors.As(err, &np) && !slicesEqual(np.reachable, tt.wantReach) {
						t.Errorf("decode error %v: reachable %v, want %v", err, np.reachable, tt.wantReach)
					}
					t.Logf("%v", err)
					return
				}
				if err != nil {
					t.Fatalf("decode: %v", err)
				}
				if want := map[string]any{"steps": tt.want}; !reflect.DeepEqual(got, want) {
					t.Errorf("decode = %#v, want %#v", got, want)
				}
			})
		}
	}
}

func slicesEqual(a, b []int) bool {
	return len(a) == len(b) && (len(a) == 0 || reflect.DeepEqual(a, b))
}

func TestCodecsConcurrent(t *testing.T) {
	var c Codecs
	docs := []any{smallDoc, agentDoc(4 << 10), agentDoc(20 << 10)}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			for i := range 30 {
				doc := docs[(g+i)%len(docs)]
				codec := allCodecs[(g*7+i)%len(allCodecs)]
				data, err := c.Encode(doc, codec)
				if err != nil {
					errs <- fmt.Errorf("goroutine %d: Encode: %w", g, err)
					return
				}
				got, err := c.Decode(data, nil)
				if err != nil {
					errs <- fmt.Errorf("goroutine %d: Decode: %w", g, err)
					return
				}
				if !reflect.DeepEqual(got, doc) {
					errs <- fmt.Errorf("goroutine %d: %s round trip changed the document", g, codec)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestCodecsNoGoroutines checks that a Codecs leaves no goroutine behind,
// so that it needs no Close.
func TestCodecsNoGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	for range 3 {
		var c Codecs
		for _, codec := range allCodecs {
			if _, err := c.Decode(mustEncode(t, &c, smallDoc, codec), nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	if after := runtime.NumGoroutine(); after > before {
		t.Errorf("%d goroutines after using three Codecs, want %d", after, before)
	}
}

// FuzzDecodeSnapshot checks that Decode never panics, that it fails with
// ErrCorrupt or ErrUnsupported on anything but an intact record, and that
// whatever it accepts is exactly what Encode writes for the value it
// returns.
func FuzzDecodeSnapshot(f *testing.F) {
	var c Codecs
	for _, codec := range allCodecs {
		for _, doc := range []any{smallDoc, nil, json.Number("0.1"), agentDoc(2 << 10)} {
			f.Add(mustEncode(f, &c, doc, codec))
		}
	}
	f.Add([]byte(magic))
	f.Add([]byte(`{"not":"a snapshot"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := c.Decode(data, nil)
		if err != nil {
			if v != nil {
				t.Errorf("Decode = %#v with error %v, want no value", v, err)
			}
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrUnsupported) {
				t.Errorf("Decode error %v wraps neither ErrCorrupt nor ErrUnsupported", err)
			}
			return
		}
		codec := map[byte]Codec{codecIDNone: CodecNone, codecIDGzip: CodecGzip, codecIDZstd: CodecZstd}[data[offCodec]]
		again, err := c.Encode(v, codec)
		if err != nil {
			t.Fatalf("Encode of a decoded value: %v", err)
		}
		if !bytes.Equal(again, data) {
			t.Errorf("Decode accepted %d bytes that Encode of its value does not give (%d bytes)", len(data), len(again))
		}
	})
}

// FuzzDecodeSnapshotResealed gets past the CRC, which random changes
// cannot: it repairs the compressed length and the CRC of what it is
// given, and for codec none the payload length and SHA-256 too, so that
// the checks behind them and the decompressors and the JSON decoder see
// fuzzed input. Decode must not panic, must fail with ErrCorrupt or
// ErrUnsupported, and may only accept what decodes to the payload.
func FuzzDecodeSnapshotResealed(f *testing.F) {
	var c Codecs
	for _, codec := range allCodecs {
		f.Add(mustEncode(f, &c, smallDoc, codec))
	}
	f.Add(record(1, codecIDNone, 0, 0, [32]byte{}, []byte(` {"a" : [1, 2.50, "\u00e9"]} `)))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) >= headerSize {
			data = bytes.Clone(data)
			binary.BigEndian.PutUint64(data[offDataLen:], uint64(len(data)-headerSize))
			if data[offCodec] == codecIDNone {
				binary.BigEndian.PutUint64(data[offRawLen:], uint64(len(data)-headerSize))
				sum := sha256.Sum256(data[headerSize:])
				copy(data[offSum:], sum[:])
			}
			reseal(data)
		}
		v, err := c.Decode(data, nil)
		if err != nil {
			if v != nil {
				t.Errorf("Decode = %#v with error %v, want no value", v, err)
			}
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrUnsupported) {
				t.Errorf("Decode error %v wraps neither ErrCorrupt nor ErrUnsupported", err)
			}
			return
		}
		if _, err := jsonvalue.Marshal(v); err != nil {
			t.Errorf("Decode returned a value Marshal rejects: %v", err)
		}
		if data[offCodec] == codecIDNone {
			want, err := jsonvalue.Decode(data[headerSize:])
			if err != nil || !reflect.DeepEqual(v, want) {
				t.Errorf("Decode = %#v, want the payload's value %#v (%v)", v, want, err)
			}
		}
	})
}

// agentDoc builds a deterministic agent-like document (a conversation
// with messages, tool calls, retrieved documents with scores, usage
// figures) whose JSON is at least size bytes.
func agentDoc(size int) any {
	r := rand.New(rand.NewPCG(1, 2))
	words := strings.Fields(`the a of to and in for on with is be by this that it as are from at or
		order refund invoice customer account shipping delivery payment card balance policy
		request ticket status pending approved rejected escalated agent tool search query
		document result summary answer question context memory budget tokens cost model
		retrieve classify extract validate draft review approve notify schedule update
		product warranty return exchange damaged missing late address email phone priority
		europe germany france berlin paris monday tuesday march april week month year`)
	sentence := func(n int) string {
		var b strings.Builder
		for i := range n {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(words[r.IntN(len(words))])
		}
		b.WriteByte('.')
		return b.String()
	}
	num := func(max int) json.Number { return json.Number(fmt.Sprint(r.IntN(max))) }
	score := func() json.Number { return json.Number(fmt.Sprintf("0.%04d", r.IntN(10000))) }
	stamp := func(i int) string {
		return fmt.Sprintf("2025-03-%02dT%02d:%02d:%02d.%03dZ", 1+i%28, i%24, r.IntN(60), r.IntN(60), r.IntN(1000))
	}
	tools := []string{"search_orders", "get_customer", "refund_payment", "retrieve_documents", "send_email"}

	var messages []any
	doc := map[string]any{
		"execution": "0195f3c2-7d1e-7c4a-9b1e-3f6c2d8a9e10",
		"ticket":    map[string]any{"id": "T-48213", "customer": "C-99812", "priority": "high", "category": "refund", "amount": json.Number("129.90"), "currency": "EUR"},
		"agent":     map[string]any{"name": "Support", "model": "claude-sonnet", "temperature": json.Number("0.2"), "max_tokens": json.Number("4096")},
		"budget":    map[string]any{"tokens": json.Number("0"), "cost": json.Number("0.0"), "limit_cost": json.Number("2.50")},
		"memory":    map[string]any{"preferences": map[string]any{"language": "de", "channel": "email"}, "facts": []any{sentence(12), sentence(9)}},
	}
	for i := 0; ; i++ {
		msg := map[string]any{"role": []string{"user", "assistant", "tool"}[i%3], "content": sentence(15 + r.IntN(40)), "at": stamp(i), "id": fmt.Sprintf("msg_%06d", i)}
		if i%3 == 1 {
			msg["tool_calls"] = []any{map[string]any{
				"id": fmt.Sprintf("call_%08x", r.Uint32()), "name": tools[r.IntN(len(tools))],
				"arguments": map[string]any{"query": sentence(6), "limit": num(20), "customer": "C-99812"},
			}}
			msg["usage"] = map[string]any{"input_tokens": num(4000), "output_tokens": num(800), "cost": json.Number(fmt.Sprintf("0.00%04d", r.IntN(10000)))}
		}
		if i%3 == 2 {
			var docs []any
			for j := range 3 {
				docs = append(docs, map[string]any{
					"id": fmt.Sprintf("kb-%05d", r.IntN(100000)), "title": sentence(5), "snippet": sentence(30),
					"score": score(), "rank": json.Number(fmt.Sprint(j + 1)), "source": "https://kb.example.com/articles/" + fmt.Sprint(r.IntN(9000)),
				})
			}
			msg["retrieved"] = docs
		}
		messages = append(messages, msg)
		doc["messages"] = messages
		doc["budget"].(map[string]any)["tokens"] = num(100000)
		if i%8 == 7 && jsonvalue.Size(doc) >= size {
			return doc
		}
	}
}

// benchDoc is the ~50 KiB agent-like document of the benchmarks.
func benchDoc(b *testing.B) (doc any, raw int) {
	b.Helper()
	doc = agentDoc(50 << 10)
	return doc, jsonvalue.Size(doc)
}

// BenchmarkSnapshot50KiB stores and loads a ~50 KiB agent-like document
// with each codec (one Encode and one Decode per op, on a shared Codecs)
// and reports the record's size: bytes, raw-bytes (the JSON) and ratio
// (raw-bytes / bytes).
func BenchmarkSnapshot50KiB(b *testing.B) {
	doc, raw := benchDoc(b)
	var c Codecs
	for _, codec := range allCodecs {
		b.Run(string(codec), func(b *testing.B) {
			data := mustEncode(b, &c, doc, codec)
			b.ReportAllocs()
			b.SetBytes(int64(raw))
			for b.Loop() {
				data = mustEncode(b, &c, doc, codec)
				if _, err := c.Decode(data, nil); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(data)), "bytes")
			b.ReportMetric(float64(raw), "raw-bytes")
			b.ReportMetric(float64(raw)/float64(len(data)), "ratio")
		})
	}
}

// BenchmarkSnapshotEncode encodes the ~50 KiB document with a shared
// Codecs, and with EncodeSnapshot ("oneshot": a new Codecs each time).
func BenchmarkSnapshotEncode(b *testing.B) {
	doc, raw := benchDoc(b)
	var c Codecs
	for _, codec := range allCodecs {
		b.Run(string(codec), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(raw))
			for b.Loop() {
				mustEncode(b, &c, doc, codec)
			}
		})
	}
	for _, codec := range []Codec{CodecZstd, CodecGzip} {
		b.Run(string(codec)+"-oneshot", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(raw))
			for b.Loop() {
				if _, err := EncodeSnapshot(doc, codec); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSnapshotDecode decodes (verifies, decompresses, parses) the
// ~50 KiB document's record with a shared Codecs, and with DecodeSnapshot
// ("oneshot").
func BenchmarkSnapshotDecode(b *testing.B) {
	doc, raw := benchDoc(b)
	var c Codecs
	for _, codec := range allCodecs {
		data := mustEncode(b, &c, doc, codec)
		b.Run(string(codec), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(raw))
			for b.Loop() {
				if _, err := c.Decode(data, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	for _, codec := range []Codec{CodecZstd, CodecGzip} {
		data := mustEncode(b, &c, doc, codec)
		b.Run(string(codec)+"-oneshot", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(raw))
			for b.Loop() {
				if _, err := DecodeSnapshot(data, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
